"""Issue 36: the curriculum. Difficulty estimates from what the factory knows (lines, files, edit tokens,
strategy, whether the failure names the function); `bugforge train split --max-difficulty` selects by them;
the localized-repair stage starts the episode after the scripted expert's localization turns, in the engine
used by run-agent and by the rollouts. Real factory instances and containers."""

from __future__ import annotations

import json

from bugforge.agent import AgentConfig, run_episode
from bugforge.records import Turn, read_jsonl
from bugforge.sandbox.runtime import Runtime
from bugforge.training.curriculum import estimate, select

TWO_FILES = """--- a/pkg/a.py
+++ b/pkg/a.py
@@ -1,3 +1,3 @@
-x = compute(1)
-y = compute(2)
+x = compute(1, strict=True)
+y = compute(2, strict=True)
--- a/pkg/b.py
+++ b/pkg/b.py
@@ -1 +1,2 @@
-def g(): pass
+def g():
+    return helper(x, y) + 1
"""


def test_estimates_order_instances(instances):
    row = instances[0]
    d = estimate(row)
    lines = [l for l in row["patch"].splitlines() if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    assert (d.lines_changed, d.files_changed, d.strategy) == (len(lines), 1, row["strategy"])
    assert d.edit_tokens > 0 and 0 <= d.score <= 1 and d.level in ("easy", "medium", "hard")
    func = row["function"].split(".")[-1]
    assert estimate(row, failure_text=f"in {func}: assert 1 == 2").traceback_names_function is True
    assert estimate(row, failure_text="assert 1 == 2").traceback_names_function is False
    hard = {**row, "patch": TWO_FILES, "files": ["pkg/a.py", "pkg/b.py"], "strategy": "lm_rewrite"}
    h = estimate(hard)  # the failure text: the problem statement, as `select` reads it
    assert (h.lines_changed, h.files_changed) == (7, 2) and h.score > estimate(row).score
    assert select([hard, row], max_score=h.score - 1e-6) == [row]
    assert select([hard, row]) == [row, hard]  # easiest first


def test_split_selects_by_difficulty(instances, tmp_path, cli):
    ds = tmp_path / "ds.jsonl"
    ds.write_text("".join(json.dumps(r) + "\n" for r in instances))
    scores = sorted(estimate(r).score for r in instances)
    r = cli("train", "split", "--dataset", str(ds), "--out", str(tmp_path / "s"), "--max-difficulty", str(scores[0]))
    assert r.returncode == 0, r.stderr
    kept = read_jsonl(tmp_path / "s" / "train.jsonl") + read_jsonl(tmp_path / "s" / "held_out.jsonl")
    assert kept and all(k["difficulty_estimate"]["score"] <= scores[0] for k in kept)
    assert len(kept) == sum(s <= scores[0] for s in scores)
    assert json.loads((tmp_path / "s" / "splits.json").read_text())["max_difficulty"] == scores[0]
    r = cli("train", "split", "--dataset", str(ds), "--out", str(tmp_path / "t"), "--max-difficulty", "-1")
    assert r.returncode == 1 and "no instance has a difficulty estimate" in r.stderr


class FirstMoveIsTheFix:
    """SCRIPTED, NOT A MODEL: applies the gold patch, then submits; records what it was shown first."""

    model = "scripted-first-move"

    def __init__(self, patch: str):
        self.patch, self.first, self.n = patch, None, 0

    def complete(self, messages, tools=None) -> Turn:
        self.first = self.first or list(messages)
        self.n += 1
        if self.n > 1:
            return Turn(content="```bash\nsubmit\n```")
        cmd = f"cat > /tmp/fix.diff <<'EOF'\n{self.patch.rstrip()}\nEOF\ngit apply /tmp/fix.diff"
        return Turn(content=f"```bash\n{cmd}\n```")


def test_localized_repair_starts_after_the_experts_localization(instances, tmp_path, make_tiny_model):
    from bugforge.agent.model import load
    from bugforge.sandbox.grader import grade_patch
    from bugforge.training import GRPOTrainConfig
    from bugforge.training.rollout import run_episode as rollout_episode

    inst = instances[0]
    box = Runtime()
    try:
        policy = FirstMoveIsTheFix(inst["patch"])
        session = box.create(image=inst["image"])
        try:
            t = run_episode(inst, policy, session, AgentConfig(stage="localized-repair"))
        finally:
            session.close()
        shown = policy.first
        expert_turns = [m["content"] for m in shown if m["role"] == "assistant"]
        assert len(expert_turns) >= 2 and "pytest" in expert_turns[0]  # ran a failing test first
        assert "cat -n" in expert_turns[-1]  # and viewed the code: the edit is left to the model
        assert shown[-1]["role"] == "user" and shown[-1]["content"].startswith("exit code: 0")
        assert len(t.turns) == 2 and t.exit_reason == "submitted"  # the model's turns only
        assert grade_patch(inst, t.patch).resolved
        # the rollout's episodes start at the same point: the localization is part of the prompt
        tok, _ = load(str(make_tiny_model(tmp_path / "tiny")))

        class Submits:  # SCRIPTED generator, not a model
            def generate(self, ids, max_new, temperature):
                new = tok.encode("```bash\nsubmit\n```", add_special_tokens=False) + [tok.eos_token_id]
                return new, [-1.0] * len(new)

        session = box.create(image=inst["image"])
        try:
            cfg = GRPOTrainConfig(stage="localized-repair", output_dir=str(tmp_path / "g"))
            ep = rollout_episode(inst, Submits(), tok, session, cfg)
        finally:
            session.close()
        prompt = tok.decode(ep.prompt_ids)
        assert all(turn in prompt for turn in expert_turns) and ep.turns == 1
    finally:
        box.shutdown()
