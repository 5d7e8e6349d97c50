"""The warm grader's choice of tests from its capture (sandbox/envgrader.py): CAPTURE's format, the
cross-check of git's changed paths against the paths read from git's diff, and `tests_to_run`'s
decision on real git output. No container engine: CAPTURE runs in a real repository here."""

from __future__ import annotations

import subprocess
import types
from pathlib import Path

import pytest

from bugforge.sandbox.envgrader import CAPTURE, EnvGrader, agrees, split_capture
from bugforge.testing.testmap import TestMap

M = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
TESTS = ["t.py::ta", "t.py::tb"]


def test_split_capture_ends_the_names_at_the_first_empty_field():
    assert split_capture("\0") == ([], "")
    assert split_capture("a\0b c\0\0diff --git x\n") == (["a", "b c"], "diff --git x\n")
    assert split_capture("a\0\0+x\0y\0\0z\n") == (["a"], "+x\0y\0\0z\n")  # a NUL in the diff splits nothing
    for cut in ("", "a", "a\0", "a\0b\0"):  # a git command failed before the separator
        assert split_capture(cut) is None


def test_agrees_only_on_exactly_the_same_paths():
    assert agrees(["m.py", "n"], {"m.py": {3}}, {"n": "added"})
    assert agrees([], {}, {})
    assert not agrees(["m.py", "n"], {"m.py": {3}}, {})  # a file the walk missed
    assert not agrees(["m.py"], {"m.py": {3}}, {"n": "added"})  # a file the walk made up
    assert not agrees(["a\tb.py"], {}, {'"a/a\\tb.py" "b/a\\tb.py"': "added"})  # a name git quotes


@pytest.fixture
def grader(tmp_path, git_repo):
    """An EnvGrader over a real checkout and a map: pkg/m.py's a() runs in ta, b() in tb. Built without
    __init__, which starts the environment's container; tests_to_run reads only `env.repo_dir` and
    `testmap`."""
    root = git_repo(tmp_path / "repo", {"pkg/m.py": M})
    g = EnvGrader.__new__(EnvGrader)
    g.env, g.user = types.SimpleNamespace(repo_dir=str(root)), "agent"
    g.testmap = TestMap(
        contexts=TESTS,
        files={"pkg/m.py": {1: [0, 1], 2: [0], 5: [0, 1], 6: [1]}},
        import_lines={"pkg/m.py": {1, 5}},
        seen={},
        lookups={},
    )
    return g


def _capture(root: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (root / name).write_bytes(text.encode())
    return subprocess.run(["bash", "-c", CAPTURE], cwd=root, capture_output=True, check=True).stdout.decode()


def test_the_red_teams_fake_hunk_header_selects_the_test_of_the_change(grader):
    root = Path(grader.env.repo_dir)
    captured = _capture(root, {"pkg/0_NOTES": "notes\x1c@@ -1,3 +1,3 @@\n", "pkg/m.py": M.replace("2", "3")})
    assert split_capture(captured)[0] == ["pkg/0_NOTES", "pkg/m.py"]
    assert grader.tests_to_run(captured, TESTS) == (["t.py::tb"], ["pkg/m.py"])


def test_a_disagreement_or_a_broken_capture_runs_every_test(grader):
    root = Path(grader.env.repo_dir)
    assert grader.tests_to_run(_capture(root, {}), TESTS) == ([], None)  # the baseline's tree
    captured = _capture(root, {"pkg/m.py": M.replace("2", "3"), "pkg/odd\tname": "x\n"})  # quoted by git
    assert grader.tests_to_run(captured, TESTS) == (TESTS, None)
    names, diff = split_capture(captured)
    assert grader.tests_to_run(diff, TESTS) == (TESTS, None)  # not CAPTURE's format
    assert grader.tests_to_run("\0" + diff, TESTS) == (TESTS, None)  # a diff git's list does not name
    assert grader.tests_to_run("\0garbage\n", TESTS) == (TESTS, None)  # the same, read as no path
    grader.testmap = None
    assert grader.tests_to_run(_capture(root, {"pkg/odd\tname": "y\n"}), TESTS) == (TESTS, None)
