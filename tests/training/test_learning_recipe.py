"""Issue 26: the expert demonstrator (SCRIPTED, not a model) resolves real factory instances in both
action formats in real containers; SFT on its trajectories lowers the loss on them (tiny model built
here); train / held-out splits share no function."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from bugforge.agent import EXPERT_MODEL, AgentConfig, ExpertPolicy, run_episode
from bugforge.records import append_jsonl
from bugforge.training import SFTTrainConfig
from bugforge.training.splits import function_key, split


@pytest.fixture(scope="module")
def demonstrations(instances, tmp_path_factory):
    """The expert's graded trajectories on every calc instance, in the text and the tool-call format."""
    from bugforge.sandbox.grader import grade_patch
    from bugforge.sandbox.runtime import Runtime, SandboxConfig

    rt = Runtime(SandboxConfig(owner="pytest-expert"))
    out = tmp_path_factory.mktemp("demos") / "trajectories.jsonl"
    trajs = []
    try:
        for inst in instances:
            for mode in ("text", "tools"):
                session = rt.create(inst["image"])
                try:
                    t = run_episode(inst, ExpertPolicy(inst, mode), session, AgentConfig(mode=mode))
                finally:
                    session.close()
                t.grade = asdict(grade_patch(inst, t.patch))
                append_jsonl(out, t)
                trajs.append((mode, t))
    finally:
        rt.shutdown()
    return out, trajs


def test_expert_resolves_in_both_formats(demonstrations):
    _, trajs = demonstrations
    assert {m for m, _ in trajs} == {"text", "tools"}
    for mode, t in trajs:
        assert t.exit_reason == "submitted" and t.grade["resolved"], (mode, t.instance_id, t.steps)
        assert t.scripted and t.model == EXPERT_MODEL  # never reported as a model
        tools = [s["tool"] for s in t.steps]
        commands = [s["input"].get("command", "") for s in t.steps]
        assert commands[0].startswith("python -m pytest") and commands[-1] == commands[0]  # run, ..., rerun
        if mode == "tools":
            assert "str_replace_editor" in tools
            assert any(s["input"].get("command") == "str_replace" for s in t.steps)
            assert all(m.get("tool_calls") for m in t.messages if m["role"] == "assistant")
        else:
            assert set(tools) == {"bash"}
            assert any(c.startswith(("sed -i", "python3 - <<")) for c in commands)
            assert t.messages[-1]["content"].rstrip().endswith("```bash\nsubmit\n```")


def test_sft_on_demonstrations_lowers_their_loss(demonstrations, tmp_path, make_tiny_model):
    import torch

    from bugforge.agent.model import load
    from bugforge.training.sft import IGNORE, examples_from, masked_loss, train_sft

    path, trajs = demonstrations
    make_tiny_model(tmp_path / "m")
    tok, model = load(str(tmp_path / "m"))
    cfg = SFTTrainConfig(epochs=6, learning_rate=3e-3, output_dir=str(tmp_path / "sft"))
    examples = examples_from(path, tok, cfg)
    assert len(examples) == len(trajs)
    tool_text = tok.decode([t for t, l in zip(*examples[1]) if l != IGNORE])  # the tool-call trajectory
    assert '<tool_call>[{"name": "bash"' in tool_text and "str_replace_editor" in tool_text

    def mean_loss():
        with torch.no_grad():
            return sum(masked_loss(model, ids, labels).item() for ids, labels in examples) / len(examples)

    before = mean_loss()
    train_sft(examples, model, tok, cfg, log=lambda m: None)
    model.eval()
    assert mean_loss() < 0.8 * before


def test_splits_share_no_function(tmp_path, cli):
    rows = []
    for repo in ("bugforge/textkit", "bugforge/cachetools", "bugforge/six"):
        for f in range(7):
            for k in range(1 + f % 3):  # several instances of one function
                rows.append(
                    {
                        "instance_id": f"{repo}.{f}.{k}",
                        "repo": repo,
                        "files": [f"src/m{f % 2}.py"],
                        "function": f"fn{f}" if f != 6 else "",
                    }
                )
    s = split(rows, 0.4, seed=3)
    side = {i: "train" for i in s.train} | {i: "held_out" for i in s.held_out}
    assert len(side) == len(rows) == len(s.train) + len(s.held_out)
    by_function: dict[str, set[str]] = {}
    for r in rows:
        by_function.setdefault(function_key(r), set()).add(side[r["instance_id"]])
    assert all(len(v) == 1 for v in by_function.values())  # no function on both sides
    for repo in {r["repo"] for r in rows}:  # every repo on both sides
        assert {side[r["instance_id"]] for r in rows if r["repo"] == repo} == {"train", "held_out"}
    assert split(rows, 0.4, seed=3) == s and split(rows, 0.4, seed=4) != s  # deterministic by seed
    # the command writes splits.json and one dataset per side; bad input is one clear line
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = cli("train", "split", "--dataset", str(data), "--out", str(tmp_path / "split"), "--seed", "3")
    assert r.returncode == 0, r.stderr
    saved = json.loads((tmp_path / "split" / "splits.json").read_text())
    assert saved["held_out"] == s.held_out
    assert len((tmp_path / "split" / "held_out.jsonl").read_text().splitlines()) == len(s.held_out)
    bad = cli("train", "split", "--dataset", str(data), "--out", str(tmp_path / "x"), "--held-out", "1.5")
    assert bad.returncode != 0 and "between 0 and 1" in bad.stderr and not (tmp_path / "x").exists()
