"""Issue 6: action parsing (both formats, malformed replies), the editor and its errors, episode limits,
a model server that dies mid-run, resume, and our evaluator against the official SWE-bench harness.
Real sandboxes, real model servers (a tiny model built here), real harness."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from bugforge.agent import AgentConfig, ChatPolicy, OraclePolicy, run_episode
from bugforge.agent.run import run_dataset
from bugforge.agent.tools import Editor, FormatError, parse_text, parse_tool_calls
from bugforge.cli.demo import free_port
from bugforge.errors import BugforgeError
from bugforge.records import read_jsonl
from bugforge.sandbox.evaluate import evaluate, find_environments
from bugforge.sandbox.harness import run_harness
from bugforge.sandbox.runtime import Runtime, SandboxConfig

# --- parsing ----------------------------------------------------------------------------------


def test_text_format_parsing():
    assert parse_text("Let me look.\n```bash\nls -la\n```").args == {"command": "ls -la"}
    assert parse_text("```\ngrep -n x y\n```").args == {"command": "grep -n x y"}
    assert parse_text("Done.\n```bash\nsubmit\n```").tool == "submit"
    for bad, why in [
        ("no block here", "found 0"),
        ("```bash\nls\n```\n```bash\npwd\n```", "found 2"),
        ("```bash\n\n```", "empty"),
        ("", "found 0"),
    ]:
        with pytest.raises(FormatError, match=why):
            parse_text(bad)


def test_tool_call_parsing():
    call = lambda name, args: {"id": "c1", "function": {"name": name, "arguments": args}}  # noqa: E731
    assert parse_tool_calls([call("bash", '{"command": "ls"}')])[0].args == {"command": "ls"}
    assert parse_tool_calls([call("submit", "")])[0].tool == "submit"
    for calls, why in [
        ([], "Call one of the tools"),
        ([call("rm_rf", "{}")], "Unknown tool"),
        ([call("bash", "{not json")], "not valid JSON"),
        ([call("bash", "[1]")], "JSON object"),
        ([call("bash", '{"cmd": "ls"}')], "string argument `command`"),
    ]:
        with pytest.raises(FormatError, match=why):
            parse_tool_calls(calls)


# --- the editor, on a real session ---------------------------------------------------------------


@pytest.fixture
def session(instances):
    rt = Runtime(SandboxConfig(owner="pytest-agent"))
    s = rt.create(instances[0]["image"])
    yield s
    rt.shutdown()


def test_editor_operations_and_errors(session):
    ed = Editor(session)
    assert ed({"command": "create", "path": "pkg/new.py", "file_text": "a = 1\nb = 2\n"}) == "Created pkg/new.py."
    with pytest.raises(BugforgeError, match="already exists"):
        ed({"command": "create", "path": "pkg/new.py", "file_text": "x"})
    assert ed({"command": "view", "path": "pkg/new.py"}) == "     1\ta = 1\n     2\tb = 2"
    assert ed({"command": "view", "path": "pkg/new.py", "view_range": [2, 2]}) == "     2\tb = 2"
    assert "new.py" in ed({"command": "view", "path": "pkg"})
    assert "Edited pkg/new.py" in ed(
        {"command": "str_replace", "path": "pkg/new.py", "old_str": "b = 2", "new_str": "b = 3"}
    )
    with pytest.raises(BugforgeError, match="not found"):
        ed({"command": "str_replace", "path": "pkg/new.py", "old_str": "zzz", "new_str": "y"})
    session.write("pkg/dup.py", "x\nx\n")
    with pytest.raises(BugforgeError, match="occurs 2 times"):
        ed({"command": "str_replace", "path": "pkg/dup.py", "old_str": "x", "new_str": "y"})
    ed({"command": "insert", "path": "pkg/new.py", "insert_line": 1, "new_str": "c = 4"})
    assert session.read("pkg/new.py") == "a = 1\nc = 4\nb = 3\n"
    with pytest.raises(BugforgeError, match="between 0 and 3"):
        ed({"command": "insert", "path": "pkg/new.py", "insert_line": 9, "new_str": "x"})
    ed({"command": "undo_edit", "path": "pkg/new.py"})
    ed({"command": "undo_edit", "path": "pkg/new.py"})
    assert session.read("pkg/new.py") == "a = 1\nb = 2\n"
    with pytest.raises(BugforgeError, match="no edit of pkg/new.py to undo"):
        ed({"command": "undo_edit", "path": "pkg/new.py"})
    with pytest.raises(BugforgeError, match="unknown editor command"):
        ed({"command": "delete", "path": "pkg/new.py"})
    with pytest.raises(BugforgeError, match="outside the workspace"):
        ed({"command": "view", "path": "/etc/passwd"})


# --- limits ------------------------------------------------------------------------------------


def test_limits_end_episodes_with_the_right_reason(session, instances, scripted):
    inst = instances[0]
    t = run_episode(inst, scripted(["```bash\necho hi\n```"]), session, AgentConfig(max_steps=3))
    assert t.exit_reason == "max_steps" and len(t.turns) == 3 and t.steps[0]["output"] == "exit code: 0\nhi\n"
    t = run_episode(inst, scripted(["I think the bug is here."]), session, AgentConfig(max_format_errors=2))
    assert t.exit_reason == "format_errors" and len(t.turns) == 2
    assert "exactly one ```bash" in t.messages[-1]["content"]
    t = run_episode(inst, scripted(["```bash\necho " + "x" * 400 + "\n```"]), session, AgentConfig(max_tokens=150))
    assert t.exit_reason == "max_tokens"
    t = run_episode(inst, scripted(["```bash\nsleep 0.3\n```"]), session, AgentConfig(max_seconds=0.5))
    assert t.exit_reason == "max_seconds"
    t = run_episode(
        inst, scripted(["```bash\nsleep 5\n```", "```bash\nsubmit\n```"]), session, AgentConfig(command_timeout=1)
    )
    assert t.exit_reason == "submitted" and "interrupted" in t.steps[0]["output"]


def test_oracle_in_both_formats_resolves(session, instances):
    from bugforge.sandbox.grader import grade_patch

    inst = instances[0]
    for mode in ("text", "tools"):
        session.run("cd /testbed && git checkout -q -- . && git clean -fdq")
        t = run_episode(inst, OraclePolicy(inst["patch"], mode), session, AgentConfig(mode=mode))
        assert t.exit_reason == "submitted" and grade_patch(inst, t.patch).resolved


# --- a real model server that dies mid-run; resume --------------------------------------------------


def test_model_server_dying_mid_run_and_resume(instances, tmp_path, make_tiny_model):
    model = make_tiny_model(tmp_path / "tiny")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "bugforge.cli", "serve-model", "--model-dir", str(model), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    import httpx

    for _ in range(300):
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.2)
    policy = ChatPolicy(
        "tiny",
        f"http://127.0.0.1:{port}/v1",
        temperature=1.0,
        max_tokens=256,
        seed=0,
        return_token_ids=True,
        logprobs=True,
    )
    turn = policy.complete([{"role": "user", "content": "hello"}])
    assert turn.completion_token_ids and len(turn.logprobs) == len(turn.completion_token_ids)
    assert turn.prompt_token_ids
    preds, trajs = tmp_path / "preds.jsonl", tmp_path / "trajs.jsonl"
    box = Runtime(SandboxConfig(owner="pytest-agent"))

    class KillsTheServer:
        """The policy, with the model server killed right after its first answer in the run: mid-episode,
        however slowly the machine starts sessions."""

        def __init__(self, inner):
            self.inner, self.calls = inner, 0

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def complete(self, *args, **kwargs):
            turn = self.inner.complete(*args, **kwargs)
            self.calls += 1
            if self.calls == 1:
                os.killpg(server.pid, signal.SIGKILL)
            return turn

    dying = KillsTheServer(policy)
    try:
        run_dataset(
            instances,
            lambda r: dying,
            box,
            predictions=preds,
            trajectories=trajs,
            workers=1,
            config=AgentConfig(max_steps=500, max_format_errors=500),
            grade=False,
        )
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
        box.shutdown()
    rows = read_jsonl(trajs)
    assert {r["instance_id"] for r in rows} == {i["instance_id"] for i in instances}  # the run went on
    assert all(r["exit_reason"] == "model_error" and "Connection" in r["error"] for r in rows)
    assert any(len(r["turns"]) > 0 for r in rows)  # at least one died mid-episode, after real turns
    assert all(
        t["completion_token_ids"] and len(t["logprobs"]) == len(t["completion_token_ids"])
        for r in rows
        for t in r["turns"]
    )
    # failed episodes are recorded (trajectories) but not done: no prediction, so a rerun retries them
    assert read_jsonl(preds) == []
    box = Runtime(SandboxConfig(owner="pytest-agent"))
    try:
        again = run_dataset(instances, lambda r: OraclePolicy(r["patch"]), box, predictions=preds, workers=1)
    finally:
        box.shutdown()
    assert sorted(t.instance_id for t in again) == sorted(i["instance_id"] for i in instances)
    assert all(t.exit_reason == "submitted" and t.grade["resolved"] for t in again)
    # resume: finished instances are skipped, nothing written is lost or duplicated
    before = read_jsonl(preds)
    box = Runtime(SandboxConfig(owner="pytest-agent"))
    try:
        assert run_dataset(instances, lambda r: OraclePolicy(r["patch"]), box, predictions=preds, workers=1) == []
    finally:
        box.shutdown()
    assert read_jsonl(preds) == before and len(before) == len(instances)


# --- our evaluator == the official harness ----------------------------------------------------------


def test_evaluator_agrees_with_swebench_harness(instances, calc_runs, tmp_path):
    """Both of our isolation modes (warm: a shared guarded container of the environment image running
    only the tests that can see the change; fresh: a container of the instance image per prediction)
    give the official harness's id lists."""
    a, b = instances
    noop = (
        "diff --git a/NOTES.txt b/NOTES.txt\nnew file mode 100644\n--- /dev/null\n+++ b/NOTES.txt\n@@ -0,0 +1 @@\n+x\n"
    )
    cases = {
        "gold": {a["instance_id"]: a["patch"], b["instance_id"]: b["patch"]},
        "mixed": {a["instance_id"]: noop, b["instance_id"]: b["patch"]},
        "wrong": {a["instance_id"]: b["patch"], b["instance_id"]: ""},
        "other_bug": {a["instance_id"]: b["bug_patch"], b["instance_id"]: a["bug_patch"]},
        # a fix plus a file no test notices: warm grading runs no test for it
        "gold_and_notes": {a["instance_id"]: a["patch"] + noop, b["instance_id"]: noop + b["patch"]},
    }
    envs = find_environments(instances, calc_runs)
    assert len(envs) == 1 and envs[0][1] is not None
    # one run of each grader over every case: the rows under ids of their own (the same images)
    rows = [{**r, "instance_id": f"{r['instance_id']}__{name}"} for name in cases for r in instances]
    preds = [
        {"instance_id": f"{i}__{name}", "model_name_or_path": "m", "model_patch": p}
        for name, patches in cases.items()
        for i, p in patches.items()
    ]
    fresh, _ = evaluate(rows, preds, run_id="fresh", log_dir=tmp_path / "logs", report_dir=tmp_path)
    warm, _ = evaluate(rows, preds, run_id="warm", log_dir=tmp_path / "logs", report_dir=tmp_path, envs=envs)
    theirs = run_harness(rows, preds, cwd=tmp_path, run_id="h", wall=900)
    for key in ("resolved_ids", "unresolved_ids", "empty_patch_ids", "error_ids"):
        assert fresh[key] == theirs[key], (key, fresh[key], theirs[key])
        assert warm[key] == theirs[key], (key, warm[key], theirs[key])
    assert set(theirs["resolved_ids"]) == {f"{i}__{n}" for n in ("gold", "gold_and_notes") for i in cases[n]} | {
        f"{b['instance_id']}__mixed"
    }
    # the notes file is seen by no test (the probe recorded what each test opens and lists): nothing ran
    logs = list((tmp_path / "logs" / "warm").glob("*/*__gold_and_notes/test_output.txt"))
    assert len(logs) == 2 and all("warm grading: ran 0 of" in f.read_text() for f in logs)
