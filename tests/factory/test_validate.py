"""Validation: exact labels in selected and full mode, hung and slowed bugs caught by the limits, and
problem statements that do not leak the diff. Real containers and repositories."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bugforge.factory.statement import leaks, write
from bugforge.factory.validate import Validator
from bugforge.testing.selection import selection_for
from bugforge.testing.testmap import TestMap


def test_labels_are_exact_in_both_modes(calc_env, edit):
    repo = Path(calc_env.repo_dir)
    tm = TestMap.load(Path(calc_env.testmap))
    cases = [  # (bug, expected FAIL_TO_PASS, expected mode in "selected")
        (edit(repo, "calc/ops.py", "return a - b", "return a + b"), ["tests/test_ops.py::test_sub"], "selected"),
        # add() runs in a test and in a module-scoped fixture: both users of the fixture see it
        (
            edit(repo, "calc/ops.py", "return a + b", "return a - b"),
            ["tests/test_ops.py::test_add", "tests/test_ops.py::test_uses_five"],
            "selected",
        ),
        # a module-level constant runs at import time: coverage cannot decide, the whole suite runs
        (edit(repo, "calc/ops.py", "SCALE = 10", "SCALE = 11"), ["tests/test_ops.py::test_scaled"], "suite"),
        # branches swapped: `return -1` and `else:` never ran, so they add no test to the one that ran `return 1`
        (
            edit(
                repo, "calc/ops.py", "return 1\n    else:\n        return -1", "return -1\n    else:\n        return 1"
            ),
            ["tests/test_ops.py::test_sign"],
            "selected",
        ),
        # lines inserted below the last line of the file: they extend sign()'s body, so its tests decide
        (
            edit(
                repo,
                "calc/ops.py",
                "return 1\n    else:\n        return -1\n",
                "return -1\n    else:\n        return -1\n    return 0\n",
            ),
            ["tests/test_ops.py::test_sign"],
            "selected",
        ),
    ]
    # a change confined to a branch no test takes: no test can see it, none runs
    cand = edit(repo, "calc/ops.py", "    else:\n        return -1", "    else:\n        return -2")
    assert selection_for(cand.changed, tm, set(calc_env.passing), root=repo) == []
    # a line that never ran decides only with the source at hand (its statement), and never at module level
    assert selection_for(cand.changed, tm, set(calc_env.passing)) is None
    selected, full = Validator(calc_env, tm, "selected"), Validator(calc_env, tm, "full")
    try:
        for cand, f2p, mode in cases:
            a, b = selected.validate(cand), full.validate(cand)
            assert a.status == b.status == "valid"
            assert a.FAIL_TO_PASS == b.FAIL_TO_PASS == f2p
            assert a.PASS_TO_PASS == b.PASS_TO_PASS == sorted(set(calc_env.passing) - set(f2p))
            assert a.mode == mode and b.mode == "full"
    finally:
        selected.close()
        full.close()


def test_infinite_loop_is_caught_by_the_timeout(calc_env, edit):
    repo = Path(calc_env.repo_dir)
    cand = edit(repo, "calc/ops.py", "        n -= 1\n", "        n -= 0\n")
    v = Validator(calc_env, TestMap.load(Path(calc_env.testmap)), "selected", timeout=5)
    v.timeout = 5
    try:
        result = v.validate(cand)  # a hang the limit missed never returns: the per-test timeout fails it
        assert result.status == "timeout", result
        # the workbench is usable afterwards
        ok = v.validate(edit(repo, "calc/ops.py", "return a - b", "return a * b"))
        assert ok.status == "valid"
    finally:
        v.close()
    # with a whole-run budget far away, the per-test limit catches the hang, in both modes alike; each test
    # may take ten times its own baseline time: a test recorded as slow (0.3 s) gets 3 s instead of the 2
    hang = "tests/test_ops.py::test_countdown"
    slow = dataclasses.replace(calc_env.tests[hang], duration=0.3)
    for env, limit in ((calc_env, 2), (dataclasses.replace(calc_env, tests={**calc_env.tests, hang: slow}), 3)):
        for mode in ("selected", "full"):
            v = Validator(env, TestMap.load(Path(env.testmap)), mode, test_limit=2)
            v.timeout = 300
            try:
                result = v.validate(cand)
                assert result.status == "timeout", (mode, result)
                assert result.messages == {hang: f"ran past its limit of {limit} CPU-seconds"}, (mode, result)
            finally:
                v.close()


SLOWPOKE = {
    "setup.py": "from setuptools import setup\nsetup(name='slowpoke', packages=['slowpoke'])\n",
    "slowpoke/__init__.py": "",
    "slowpoke/core.py": "import time\n\n\ndef nap(s):\n    time.sleep(s)\n    return s\n\n\n"
    "def inc(x):\n    return x + 1\n",
    "tests/test_a.py": "from slowpoke.core import nap\n\n\ndef test_slow():\n    assert nap(1.0) == 1.0\n",
    "tests/test_b.py": "from slowpoke.core import inc\n\n\ndef test_inc():\n    assert inc(1) == 2\n",
}


def test_a_bug_that_slows_the_run_is_judged_on_the_same_total_in_every_mode(environment_of, edit):
    """No test passes its own limit, but the tests together pass the run's budget in a full run: the
    selected run (test_inc alone) gets the budget less test_slow's baseline second, and agrees."""
    env = environment_of("slowpoke", SLOWPOKE)
    repo = Path(env.repo_dir)
    for nap, status in ((1.3, "timeout"), (0.3, "no_failures")):
        cand = edit(repo, "slowpoke/core.py", "return x + 1", f"return time.sleep({nap}) or x + 1")
        for mode in ("selected", "full"):
            v = Validator(env, TestMap.load(Path(env.testmap)), mode)
            v.budget = 2.0  # wall-seconds for the whole suite's tests (test_slow takes 1 at baseline)
            try:
                if mode == "selected":
                    assert selection_for(cand.changed, v.testmap, v.passing, root=repo) == ["tests/test_b.py::test_inc"]
                    # the budget less test_slow's baseline time (about 1 s, more on a loaded host): computed
                    # from the recorded time, not bounded by the clock
                    slow = v.durations["tests/test_a.py::test_slow"]
                    assert v.limits(["tests/test_b.py::test_inc"]).budget == round(2.0 - slow, 3)
                result = v.validate(cand)
                assert result.status == status, (nap, mode, result)
                if status == "timeout":
                    assert result.messages == {
                        "tests/test_b.py::test_inc": "the tests together ran past five times the suite's time"
                    }, (mode, result)
            finally:
                v.close()


def test_problem_statement_does_not_leak_the_diff(calc_env, edit):
    repo = Path(calc_env.repo_dir)
    cand = edit(repo, "calc/ops.py", "return a - b", "return a + b")
    v = Validator(calc_env, TestMap.load(Path(calc_env.testmap)), "selected")
    try:
        val = v.validate(cand)
    finally:
        v.close()
    text = write(cand, val)
    assert "tests/test_ops.py::test_sub" in text
    assert leaks(text, cand.patch) == [] and "a + b" not in text and "diff" not in text
