"""Issue 36: rollouts keep their signal. Real containers and real grading; the replies come from a SCRIPTED
generator (not a model: fixed texts as token ids), so which episode does what is known.
- an episode that runs out of turns or tokens is graded on its diff and keeps its loss (submit_at_limit);
- an infrastructure failure (a session whose container was removed under it) gets reward None, and TRL's
  own advantage computation leaves it out of its group's mean (one real GRPO step with a tiny model);
- a group whose rewards are all equal is skipped (no loss) and counted."""

from __future__ import annotations

import copy

import pytest

from bugforge.sandbox.runtime import Runtime
from bugforge.training import GRPOTrainConfig

FIX = "```bash\necho fixed > NOTES.txt\n```"
LS = "```bash\nls\n```"
SUBMIT = "```bash\nsubmit\n```"


class ScriptedGenerator:
    """SCRIPTED, NOT A MODEL: the k-th episode to start (episodes one at a time) replies with `scripts[k]`'s
    texts in turn (its last one forever), as token ids ending with the end token, logprob -1 each."""

    def __init__(self, tok, scripts: list[list[str]]):
        self.tok, self.scripts, self.k, self.turn, self.prev = tok, scripts, -1, 0, None

    def generate(self, ids, max_new, temperature):
        if self.prev is None or list(ids[: len(self.prev)]) != self.prev:
            self.k, self.turn = self.k + 1, 0
        script = self.scripts[self.k % len(self.scripts)]
        reply = script[min(self.turn, len(script) - 1)]
        self.turn += 1
        new = (self.tok.encode(reply, add_special_tokens=False) + [self.tok.eos_token_id])[:max_new]
        self.prev = list(ids) + new
        return new, [-1.0] * len(new)


class LosesThirdContainer:
    """The real in-process sandbox, except that the third session's container is removed (`docker rm -f`)
    right after it starts: a real infrastructure failure mid-episode."""

    def __init__(self, box):
        self.box, self.n = box, 0

    def create(self, **kw):
        s = self.box.create(**kw)
        self.n += 1
        if self.n == 3:
            s.container.remove(force=True)
        return s


@pytest.fixture(scope="module")
def box():
    rt = Runtime()
    yield rt
    rt.shutdown()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, make_tiny_model):
    from bugforge.agent.model import load

    return load(str(make_tiny_model(tmp_path_factory.mktemp("tiny"))))


def cfg_of(tmp_path, **kw) -> GRPOTrainConfig:
    base = dict(num_generations=2, agent_steps=2, turn_tokens=64, max_completion_tokens=800, rollout_workers=1)
    return GRPOTrainConfig(**{**base, "output_dir": str(tmp_path / "grpo"), **kw})


def test_a_truncated_episode_is_graded(easy_instance, box, tiny, tmp_path):
    from bugforge.training.grpo import SWERollout
    from bugforge.training.rollout import prompt_messages, run_episode

    tok, _ = tiny
    cfg = cfg_of(tmp_path)
    gen = ScriptedGenerator(tok, [[FIX, LS], [SUBMIT]])  # fixes, then runs out of turns / submits nothing
    rollout = SWERollout([easy_instance], tok, cfg, box, generator=gen)
    out = rollout([prompt_messages(easy_instance, cfg)] * 2, None)
    hit, empty = rollout.episodes
    assert (hit.exit_reason, hit.truncated, hit.filtered) == ("max_steps", True, False)
    assert "NOTES.txt" in hit.patch and hit.resolved and hit.reward == 1.0  # graded on its diff
    assert 1 in hit.env_mask  # and it keeps its loss
    assert (empty.exit_reason, empty.reward) == ("submitted", 0.0)
    assert out["episode_reward"] == [1.0, 0.0] and rollout.last["truncated_share"] == 0.5
    assert rollout.last["skipped_groups"] == 0
    # the token limit: the same, with the whole episode's token budget spent after the first turn
    session = box.create(image=easy_instance["image"])
    try:
        gen = ScriptedGenerator(tok, [[FIX, LS]])
        ep = run_episode(easy_instance, gen, tok, session, cfg_of(tmp_path, max_completion_tokens=30, agent_steps=5))
    finally:
        session.close()
    assert (ep.exit_reason, ep.truncated, ep.filtered) == ("max_tokens", True, False)
    assert "NOTES.txt" in ep.patch and len(ep.completion_ids) <= 30
    # DeepSWE's overlong filtering stays available: submit_at_limit = false
    session = box.create(image=easy_instance["image"])
    try:
        ep = run_episode(
            easy_instance, ScriptedGenerator(tok, [[FIX, LS]]), tok, session, cfg_of(tmp_path, submit_at_limit=False)
        )
    finally:
        session.close()
    assert ep.truncated and ep.filtered and set(ep.env_mask) == {0}


def test_infra_failure_out_of_group_statistics_and_equal_group_skipped(easy_instance, box, tiny, tmp_path):
    from bugforge.training.grpo import build_trainer

    tok, model = tiny
    other = copy.deepcopy(easy_instance)
    other["instance_id"] += "-2"
    other["problem_statement"] = "Write the word fixed into NOTES.txt (in /testbed), then submit."
    cfg = cfg_of(tmp_path, num_generations=4, tasks_per_step=2, max_steps=1, learning_rate=1e-3, agent_steps=3)
    trainer, rollout = build_trainer([easy_instance, other], model, tok, cfg, LosesThirdContainer(box))
    # group 1: fix, nothing, fix (its container is removed: infrastructure), fix; group 2: nothing x4
    rollout.gen = ScriptedGenerator(tok, [[FIX, SUBMIT], [SUBMIT], [FIX, SUBMIT], [FIX, SUBMIT]] + [[SUBMIT]] * 4)
    trainer.train()
    eps = rollout.episodes
    assert [e.infra for e in eps] == [False, False, True, False] + [False] * 4
    assert eps[2].exit_reason == "sandbox_error" and "gone" in eps[2].error
    assert [e.reward for e in eps] == [1.0, 0.0, 0.0, 1.0] + [0.0] * 4
    assert set(eps[2].env_mask) == {0}  # no loss on the failed episode
    # TRL's own advantages: the failed episode is out of its group's mean (2/3 over three, not 1/2 over
    # four) and gets advantage 0; the all-equal group has advantage 0 everywhere
    adv = list(trainer._logs["advantages"])[-8:]
    assert adv[:4] == pytest.approx([1 / 3, -2 / 3, 0.0, 1 / 3], abs=1e-5)
    assert adv[4:] == pytest.approx([0.0] * 4)
    # dynamic sampling: the all-equal group is skipped (no loss) and counted
    assert all(e.skipped and set(e.env_mask) == {0} for e in eps[4:])
    assert not any(e.skipped for e in eps[:4])
    last = rollout.last
    assert (last["groups"], last["skipped_groups"], last["infra_failures"]) == (2, 1, 1)
