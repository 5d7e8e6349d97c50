"""A whole run as the graders start it (launch.py: the collector, start.py, the probe and its monitor),
on this machine's Python and pytest: real processes, real sockets, a real pytest run. Correct tests of
every common shape report their outcomes and no tampering (no false alarms), and the record a run leaves
is the collector's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bugforge import incontainer

SUITE = """
import unittest

import pytest


class Case(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(1, 1)

    def test_fails(self):
        self.assertEqual(1, 2)


class TestPlain:
    def test_method(self):
        assert True


@pytest.mark.parametrize("x", [1, 2])
def test_param(x):
    assert x


@pytest.mark.xfail(strict=True)
def test_expected_to_fail():
    assert 0


def test_skipped():
    pytest.skip("no")
"""


def test_a_run_of_every_common_test_shape_has_no_false_alarm(tmp_path):
    tree = tmp_path / "tree"  # the tree, and the tools outside it (as /testbed and /opt/bugforge)
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "test_shapes.py").write_text(SUITE)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "bugforge_incontainer").symlink_to(Path(incontainer.__file__).parent)
    report = tmp_path / "out" / "report.jsonl"
    report.parent.mkdir()
    env = {**os.environ, "BUGFORGE_ROOT": str(tree), "PYTHONPATH": str(tools), "PYTHONDONTWRITEBYTECODE": "1"}
    launch = [sys.executable, "-I", "-S", str(tools / "bugforge_incontainer" / "launch.py"), str(report), "--"]
    args = ["-p", "bugforge_incontainer.probe", "-q", "-p", "no:cacheprovider", "-W", "error::pytest.PytestWarning"]
    r = subprocess.run([*launch, *args, "tests"], cwd=tree, env=env, capture_output=True, text=True, timeout=120)
    records = [json.loads(line) for line in report.read_text().splitlines()]
    assert [x["reason"] for x in records if x["event"] == "tamper"] == [], r.stdout[-2000:]
    outcomes = {x["nodeid"].split("::", 1)[1]: x["outcome"] for x in records if x["event"] == "test"}
    assert outcomes == {
        "Case::test_equal": "passed",
        "Case::test_fails": "failed",
        "TestPlain::test_method": "passed",
        "test_param[1]": "passed",
        "test_param[2]": "passed",
        "test_expected_to_fail": "xfailed",
        "test_skipped": "skipped",
    }
    assert records[-1] == {"event": "finish", "exitstatus": 1} and r.returncode == 1
