"""A run of a tree's tests as the graders start it (launch.py, start.py, the probe and its monitor), on
this machine's Python and pytest: real processes, real sockets, a real pytest run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bugforge import incontainer
from bugforge.testing.tools import probe_args


class Launch:
    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path

    def __call__(self, files: dict[str, str], env: dict[str, str] | None = None):
        """Write FILES into a tree and run its tests (ENV: more of the run's environment); (records, the
        completed process)."""
        tree = self.tmp / "tree"  # the tree, and the tools outside it (as /testbed and /opt/bugforge)
        for name, text in files.items():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_text(text)
        tools = self.tmp / "tools"
        tools.mkdir()
        (tools / "bugforge_incontainer").symlink_to(Path(incontainer.__file__).parent)
        report = self.tmp / "out" / "report.jsonl"
        report.parent.mkdir()
        env = {
            **os.environ,
            "BUGFORGE_ROOT": str(tree),
            "PYTHONPATH": str(tools),
            "PYTHONDONTWRITEBYTECODE": "1",
            # (this machine's pytest plugins are not a task image's: loading them took most of a run)
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            **(env or {}),
        }
        launch = [sys.executable, "-I", "-S", str(tools / "bugforge_incontainer" / "launch.py"), str(report), "--"]
        args = probe_args(["-p", "no:cacheprovider", "-W", "error::pytest.PytestWarning"])
        r = subprocess.run([*launch, *args, "tests"], cwd=tree, env=env, capture_output=True, text=True, timeout=120)
        return [json.loads(line) for line in report.read_text().splitlines()], r

    def caught(self, files: dict[str, str]) -> None:
        """An attack in FILES is caught: tampering reported, or its failing test not passed."""
        records, r = self(files)
        ran = {k.rpartition("::")[2]: v for k, v in self.outcomes(records).items()}
        assert self.tampering(records) or ran.get("test_bug") != "passed", (ran, r.stdout[-2000:])

    @staticmethod
    def tampering(records):
        return [x["reason"] for x in records if x["event"] == "tamper"]

    @staticmethod
    def outcomes(records):
        return {x["nodeid"].split("::", 1)[1]: x["outcome"] for x in records if x["event"] == "test"}


@pytest.fixture
def launch(tmp_path):
    return Launch(tmp_path)
