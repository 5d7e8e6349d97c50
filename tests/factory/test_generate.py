"""Generation: selected == full validation on generated candidates, resume after a kill, history reverts
and combinations. Real containers and repositories."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from bugforge.factory import build_environment
from bugforge.factory.generate import generate
from bugforge.records import read_jsonl
from bugforge.testing.testrun import OWNER_PID


def test_selected_equals_full_on_generated_candidates(calc_env, tmp_path):
    import shutil

    envdir = Path(calc_env.testmap).parent
    reports = {}
    for mode in ("selected", "full"):
        d = tmp_path / mode
        shutil.copytree(envdir, d)
        generate(
            d,
            max_candidates=25,
            workers=2,
            mode=mode,
            log=lambda m: None,
            strategies=[
                "op_change",
                "remove_assign",
                "op_change_const",
                "remove_loop",
                "flip_operators",
                "wrong_default",
                "change_return",
                "swap_args",
            ],
        )
        reports[mode] = {r["candidate"]: r for r in read_jsonl(d / "validations.jsonl")}
    assert set(reports["selected"]) == set(reports["full"])
    for cid, a in reports["selected"].items():
        b = reports["full"][cid]
        a_valid, b_valid = a["status"] == "valid", b["status"] == "valid"
        assert a_valid == b_valid, (cid, a, b)
        assert a["FAIL_TO_PASS"] == b["FAIL_TO_PASS"]
        if a_valid:
            assert a["PASS_TO_PASS"] == b["PASS_TO_PASS"]


def test_generate_resumes_after_a_kill(calc_env, tmp_path):
    import shutil

    d = tmp_path / "env"
    shutil.copytree(Path(calc_env.testmap).parent, d)
    cmd = [
        sys.executable,
        "-m",
        "bugforge.cli",
        "factory",
        "generate",
        str(d),
        "--max-candidates",
        "30",
        "--workers",
        "1",
        "--strategies",
        "op_change,remove_assign,op_change_const,flip_operators,swap_args",
    ]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 900  # a bound for a stuck run, not a timing check: a loaded host is slow
    while time.monotonic() < deadline and p.poll() is None and len(read_jsonl(d / "validations.jsonl")) < 3:
        time.sleep(0.2)
    p.kill()
    p.wait()
    partial = read_jsonl(d / "validations.jsonl")
    assert 3 <= len(partial)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = read_jsonl(d / "validations.jsonl")
    ids = [x["candidate"] for x in rows]
    cands = read_jsonl(d / "candidates.jsonl")
    assert len(ids) == len(set(ids)) == len({c["id"] for c in cands})  # each validated exactly once
    assert [x["candidate"] for x in rows[: len(partial)]] == [x["candidate"] for x in partial]  # kept as they were
    # the killed run's warm container was removed by the next one
    from bugforge.engine import client

    assert client().containers.list(all=True, filters={"label": f"{OWNER_PID}={p.pid}"}) == []


def test_history_reverts_and_combinations(base_image, tmp_path, git_repo, calc_files):
    repo = git_repo(
        tmp_path / "hist",
        {
            **calc_files,
            "calc/ops.py": calc_files["calc/ops.py"].replace(
                "def sub(a, b):\n            return a - b", "def sub(a, b):\n            return a + (-b if b else 0)"
            ),
        },
        "first",
    )
    git_repo(
        repo,
        {
            "calc/ops.py": calc_files["calc/ops.py"],
            "tests/test_more.py": "from calc.ops import sub\n\n\ndef test_sub_zero():\n    assert sub(0, 0) == 0\n",
        },
        "simplify sub and test it",
    )
    env, _ = build_environment(str(repo), out=tmp_path / "runs", log=lambda m: None)
    assert env.history_dir
    rep = generate(
        tmp_path / "runs" / "hist",
        max_candidates=16,
        workers=2,
        log=lambda m: None,
        strategies=["history", "op_change", "remove_assign", "change_return", "combine"],
    )
    rows = read_jsonl(tmp_path / "runs" / "hist" / "candidates.jsonl")
    hist = [c for c in rows if c["strategy"] == "history"]
    assert len(hist) == 1 and hist[0]["meta"]["subject"] == "simplify sub and test it"
    assert "-    return a - b" in hist[0]["patch"] and "tests/" not in hist[0]["patch"]
    assert rep["history"].candidates == 1
    combos = [c for c in rows if c["strategy"] == "combine"]
    assert combos and all(2 <= len(c["parents"]) <= 3 for c in combos)
    assert rep["combine"].valid >= 1
