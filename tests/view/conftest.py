"""A runs directory as the pipeline lays it out (env.json, candidates/validations, an export, two agents'
trajectories and predictions, their evaluation reports made by bugforge's own run_report, a training
run's metrics.jsonl), written with the real record types; plus one malformed and one half-written line.
The viewer only reads files, so no container is needed to make them. `view_server` serves it with
uvicorn on 127.0.0.1 in a thread; `browser` is Debian's headless Chromium driven by Playwright."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from bugforge.records import (
    Candidate,
    EnvRecord,
    Prediction,
    Recipe,
    TaskInstance,
    TestOutcome,
    Trajectory,
    Turn,
    Validation,
    append_jsonl,
    to_dict,
    write_json,
)
from bugforge.view.headless import CHROMIUM, CHROMIUM_ARGS

STRATEGIES = ("op_swap", "remove_cond", "wrong_default", "combine")
N = 60  # instances: more than one page (50)


def bug_diff(i: int) -> str:
    return (
        f"diff --git a/textkit/mod{i % 3}.py b/textkit/mod{i % 3}.py\n--- a/textkit/mod{i % 3}.py\n"
        f"+++ b/textkit/mod{i % 3}.py\n@@ -10,3 +10,3 @@ def fn{i}(text):\n     words = text.split()\n"
        f"-    return len(words) + {i}\n+    return len(words) - {i}\n     # end\n"
    )


def gold_of(diff: str) -> str:
    out = []
    for line in diff.splitlines():
        if line.startswith("-") and not line.startswith("---"):
            out.append("+" + line[1:])
        elif line.startswith("+") and not line.startswith("+++"):
            out.append("-" + line[1:])
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def instance(i: int, cand: Candidate, val: Validation) -> TaskInstance:
    return TaskInstance(
        instance_id=f"textkit.{cand.strategy}.{cand.id[:8]}",
        repo="bugforge/textkit",
        base_commit=f"{i:040x}",
        patch=gold_of(cand.patch),
        test_patch="",
        problem_statement=f"count_words{i} returns the wrong number.\n\nAssertionError: assert {i} == 3",
        FAIL_TO_PASS=json.dumps(val.FAIL_TO_PASS),
        PASS_TO_PASS=json.dumps(val.PASS_TO_PASS),
        version="1.0",
        created_at="2026-01-01T00:00:00+00:00",
        image=f"bugforge/task.textkit:{cand.strategy}-{cand.id[:10]}-abcdef12",
        eval_script="#!/bin/bash\ncd /testbed\npytest -rA tests\n",
        log_parser="parse_log_pytest",
        eval_type="pass_and_fail",
        strategy=cand.strategy,
        bug_patch=cand.patch,
        files=cand.files,
        function=cand.function,
        difficulty=("easy", "medium", "hard")[i % 3],
        env_image="bugforge/env.textkit:abc",
    )


def trajectory(row: TaskInstance, model: str, solved: bool) -> Trajectory:
    """Three turns as agent/loop.py records them: a command, a reply with no action (format error), submit."""
    task = [
        {"role": "system", "content": "You are a software engineer..."},
        {"role": "user", "content": "Fix this issue"},
    ]
    cmds = ["grep -n return textkit/mod0.py", None, "submit"]
    t = Trajectory(row.instance_id, model, messages=list(task))
    for n, cmd in enumerate(cmds):
        content = f"Step {n + 1}.\n```bash\n{cmd}\n```" if cmd else "I think the bug is in fn0."
        t.turns.append(
            Turn(content, completion_token_ids=list(range(20 + n)), prompt_token_ids=list(range(300)), seconds=0.5)
        )
        t.messages.append({"role": "assistant", "content": content})
        if cmd is None:
            t.messages.append({"role": "user", "content": "Format error: no ```bash block in the reply"})
        elif cmd != "submit":
            out = f"exit code: 0\n12:    return len(words) - 0  # obs-{row.instance_id}"
            t.messages.append({"role": "user", "content": out})
            t.steps.append({"tool": "bash", "input": {"command": cmd}, "output": out, "exit_code": 0, "seconds": 0.02})
    t.exit_reason, t.tokens, t.seconds = "submitted", 63, 2.5
    t.patch = row.patch if solved else ""
    return t


def build_runs(root: Path) -> dict:
    from bugforge.sandbox.evaluate import run_report

    env_dir = root / "textkit"
    tests = {f"tests/test_mod.py::test_{k}": TestOutcome("passed", 0.01) for k in range(12)}
    env = EnvRecord(
        "textkit", "examples/textkit", "a" * 40, "b" * 40, str(env_dir / "repo"), "bugforge/env.textkit:abc",
        "bugforge/base:py3.11", Recipe(install=["pip install -e ."]), tests, 0.4, 3, "testmap.json.gz", "k" * 16,
    )  # fmt: skip
    write_json(env_dir / "env.json", env)
    rows = []
    for i in range(N):
        cand = Candidate(f"{i:08x}cafe", STRATEGIES[i % 4], bug_diff(i), [f"textkit/mod{i % 3}.py"], {}, f"fn{i}")
        f2p = [f"tests/test_mod.py::test_{k}" for k in range(1 + i % 7)]
        val = Validation(cand.id, "valid", f2p, ["tests/test_mod.py::test_11"], "selected", 3, 0.25)
        append_jsonl(env_dir / "candidates.jsonl", cand)
        append_jsonl(env_dir / "validations.jsonl", val)
        rows.append(instance(i, cand, val))
    append_jsonl(env_dir / "validations.jsonl", Validation("deadbeef00", "no_failures", mode="selected", seconds=0.3))
    data = env_dir / "instances.jsonl"
    for r in rows[:30]:
        append_jsonl(data, r)
    with open(data, "a") as f:
        f.write('{"instance_id": "textkit.broken", "problem_statement": \n')  # line 31: malformed
    for r in rows[30:]:
        append_jsonl(data, r)
    with open(data, "a") as f:
        f.write('{"instance_id": "textkit.half", "repo": "bugfor')  # line 62: half written
    evaluated = rows[:8]
    runs = {"model-a": {0, 1, 2, 3}, "model-b": {2, 3, 4, 5}}
    for model, solved in runs.items():
        preds = {}
        for i, r in enumerate(evaluated):
            append_jsonl(env_dir / f"trajectories.{model}.jsonl", trajectory(r, model, i in solved))
            preds[r.instance_id] = Prediction(r.instance_id, r.patch if i in solved else "x", model)
        reports = {r.instance_id: {"resolved": i in solved} for i, r in enumerate(evaluated)}
        rep = run_report([to_dict(r) for r in evaluated], preds, reports)
        (env_dir / f"{model}.run1.json").write_text(json.dumps(rep, indent=4))
    (env_dir / "broken.run1.json").write_text('{"resolved_ids": [], "submitted_ids": [')  # half-written report
    train = root / "train" / "grpo"
    train.mkdir(parents=True)
    with open(train / "metrics.jsonl", "w") as f:
        for step in range(1, 6):
            f.write(json.dumps(metrics_row(step)) + "\n")
    return {"rows": rows, "evaluated": evaluated, "runs": runs, "data": data, "metrics": train / "metrics.jsonl"}


def metrics_row(step: int) -> dict:
    return {
        "step": step,
        "loss": 0.1 / step,
        "reward": 0.1 * step,
        "reward_std": 0.05,
        "rollout_seconds": 30.0 + step,
        "update_seconds": 5.0,
        "resolve_rate": 0.1 * step,
        "filtered_share": 0.5 - 0.05 * step,
        "tokens": 1000 + 10 * step,
        "model_tokens": 900,
        "exit_reasons": {"submitted": 3, "max_steps": 1},
    }


@pytest.fixture(scope="session", name="metrics_row")
def metrics_row_fixture():
    """`metrics_row(step)`: a training step's row as training/grpo.py writes it."""
    return metrics_row


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("runs")
    return root, build_runs(root)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(root: Path):
    """(base URL, server) for the viewer over `root`, uvicorn on 127.0.0.1 in a daemon thread."""
    import uvicorn

    from bugforge.view.app import create_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(root), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the viewer did not start in 30 s")
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server


@pytest.fixture(scope="session")
def view_server(runs_dir):
    url, server = serve(runs_dir[0])
    yield url
    server.should_exit = True


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup.sh (it installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    outside = []
    pg.on(
        "request",
        lambda r: outside.append(r.url) if not r.url.startswith(("http://127.0.0.1", "data:", "about:")) else None,
    )
    yield pg
    ctx.close()
    assert not outside, f"the page fetched from outside localhost: {outside}"
