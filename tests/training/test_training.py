"""Issue 7: GRPO through TRL's rollout_func on real factory tasks in real containers with a tiny model
built here; SFT with the loss on assistant tokens only; bad input stopped before any compute."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bugforge.errors import BugforgeError
from bugforge.training import GRPOTrainConfig, SFTTrainConfig, load_config
from bugforge.training.sft import IGNORE, masked_loss, tokenize_conversation, train_sft

ECHO = "```bash\necho fixed > NOTES.txt\n```"
SUBMIT = "```bash\nsubmit\n```"


def primed_tiny_model(make_tiny_model, path: Path, instance: dict):
    """A tiny random model, then a few SFT steps so that its first reply to the task is one of two
    actions (write a file / submit): sampled episodes then differ, and so do their graded rewards. One submit
    and three writes make the first reply a write about half the time (measured: 30 of 60 samples at
    temperature 1, 31 of 60 at 0.7; two writes and one submit, as before, gave 15 of 60 at 1)."""
    from bugforge.agent.model import load
    from bugforge.training.rollout import prompt_messages

    make_tiny_model(path)
    tok, model = load(str(path))
    convo = lambda reply: prompt_messages(instance) + [{"role": "assistant", "content": reply}]  # noqa: E731
    examples = [tokenize_conversation(tok, convo(r), 8192) for r in (SUBMIT, ECHO, ECHO, ECHO)]
    train_sft(
        examples,
        model,
        tok,
        SFTTrainConfig(epochs=100, learning_rate=3e-3, output_dir=str(path / "prime")),
        log=lambda m: None,
    )
    return tok, model


def test_grpo_two_steps_then_resume(easy_instance, tmp_path, make_tiny_model):
    import torch

    from bugforge.training.grpo import train_grpo

    tok, model = primed_tiny_model(make_tiny_model, tmp_path / "tiny", easy_instance)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    # A step has a group with different rewards unless its episodes all end alike, and which episodes are
    # sampled depends on how concurrent turns batch (timing: a full-suite run samples others than a run
    # alone). Primed as above, at temperature 0.7, a third to a half of the episodes resolve (1.0 made
    # most replies malformed), 6 a group: no such group in ~3-12% of steps; a small learning rate keeps
    # the next steps' policy alike (lr 5e-3 broke it after one step), and all three steps count: <0.2%.
    # (Before: 4 episodes, one in four resolving, step 2's policy broken: no such group in ~1 run in 3.)
    cfg = GRPOTrainConfig(
        num_generations=6,
        tasks_per_step=1,
        max_steps=2,
        learning_rate=1e-4,
        agent_steps=3,
        turn_tokens=48,
        max_completion_tokens=600,
        save_steps=1,
        rollout_workers=6,
        seed=0,
        temperature=0.7,
        output_dir=str(tmp_path / "grpo"),
    )
    trainer, rollout = train_grpo([easy_instance], None, cfg, model=model, tok=tok)
    assert trainer.state.global_step == 2
    # env_mask: 0 exactly on tool output (and template glue), 1 on every token the model produced
    eps = rollout.episodes
    assert len(eps) == cfg.num_generations
    for ep in eps:
        assert len(ep.env_mask) == len(ep.completion_ids) == len(ep.logprobs)
        if ep.filtered:
            assert set(ep.env_mask) <= {0}
            continue
        zeros = {i for a, b in ep.env_segments for i in range(a, b)}
        assert {i for i, m in enumerate(ep.env_mask) if m == 0} == zeros
        for a, b in ep.env_segments:
            assert "exit code:" in tok.decode(ep.completion_ids[a:b]) or "Format error" in tok.decode(
                ep.completion_ids[a:b]
            )
        assert all(lp <= 0 for i, lp in enumerate(ep.logprobs) if ep.env_mask[i])
    # rewards came from grading: resolved <=> reward 1, and the trainer logged their mean
    assert all(ep.reward == (1.0 if ep.resolved else 0.0) for ep in eps)
    rows = [json.loads(l) for l in (tmp_path / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for key in ("reward", "resolve_rate", "filtered_share", "rollout_seconds", "update_seconds", "tokens"):
        assert key in rows[-1], key
    assert rows[-1]["reward"] == pytest.approx(sum(e.reward for e in eps) / len(eps))
    assert (tmp_path / "grpo" / "metrics.png").exists()
    # resume from the last checkpoint and go one step further
    assert (tmp_path / "grpo" / "checkpoint-2").is_dir()
    cfg.max_steps = 3
    trainer2, _ = train_grpo([easy_instance], None, cfg, model=trainer.model, tok=tok, resume=True)
    assert trainer2.state.global_step == 3
    rows = [json.loads(l) for l in (tmp_path / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert any(r["reward_std"] > 0 for r in rows if "reward_std" in r)  # a group with different rewards
    after = trainer2.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)  # weights changed


def test_sft_loss_only_on_assistant_tokens(tmp_path, make_tiny_model):
    import torch

    from bugforge.agent.model import load

    make_tiny_model(tmp_path / "m")
    tok, model = load(str(tmp_path / "m"))
    msgs = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "Fix this issue"},
        {"role": "assistant", "content": ECHO},
        {"role": "user", "content": "exit code: 0"},
        {"role": "assistant", "content": SUBMIT},
    ]
    ids, labels = tokenize_conversation(tok, msgs, 4096)
    learned = tok.decode([t for t, l in zip(ids, labels) if l != IGNORE])
    ignored = tok.decode([t for t, l in zip(ids, labels) if l == IGNORE])
    assert learned == f"<|assistant|>{ECHO}<|end|><|assistant|>{SUBMIT}<|end|>"
    assert "Fix this issue" in ignored and "exit code: 0" in ignored and "rules" in ignored
    assert ECHO not in ignored and SUBMIT not in ignored
    # the loss is the mean cross-entropy over exactly those tokens
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1]
        lp = torch.log_softmax(logits.float(), -1)
        pos = [i for i in range(1, len(ids)) if labels[i] != IGNORE]
        manual = -sum(lp[i - 1, ids[i]] for i in pos) / len(pos)
        assert masked_loss(model, ids, labels).item() == pytest.approx(manual.item(), rel=1e-4)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    losses = train_sft(
        [(ids, labels)],
        model,
        tok,
        SFTTrainConfig(epochs=3, learning_rate=1e-3, output_dir=str(tmp_path / "sft")),
        log=lambda m: None,
    )
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert (tmp_path / "sft" / "final" / "config.json").exists()


def test_config_keys_are_checked(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"num_generations": 4, "learnin_rate": 1e-6}))
    with pytest.raises(BugforgeError, match="unknown config key.*learnin_rate"):
        load_config(GRPOTrainConfig, str(bad))
    good = tmp_path / "good.toml"
    good.write_text('preset = "grpo"\nnum_generations = 8\n')
    assert load_config(GRPOTrainConfig, str(good)).num_generations == 8
    with pytest.raises(BugforgeError, match="unknown preset"):
        load_config(GRPOTrainConfig, None, {"preset": "ppo"})


@pytest.mark.parametrize(
    "case,expect",
    [
        ("missing_images", "instance image(s) of"),
        ("no_model", "model directory /nonexistent/model does not exist"),
        ("bad_key", "unknown config key(s) learnin_rate"),
    ],
)
def test_bad_input_stops_before_compute(instances, tmp_path, case, expect):
    ds = tmp_path / "ds.jsonl"
    rows = copy.deepcopy(instances)
    if case == "missing_images":
        rows[0]["image"] = "bugforge/task.nothing:missing"
    ds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"learnin_rate": 1} if case == "bad_key" else {"max_steps": 1}))
    args = ["train", "grpo", "--dataset", str(ds), "--config", str(cfg), "--out", str(tmp_path / "o")]
    if case == "no_model":
        args += ["--model", "/nonexistent/model"]
    r = subprocess.run([sys.executable, "-m", "bugforge.cli", *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") == 0 and expect in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()  # nothing produced
