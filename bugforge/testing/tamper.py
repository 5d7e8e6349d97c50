"""What a patch may not change before tests run: one definition for every grader (fresh containers,
warm grading and the exported eval_script). The rules run inside the container
(bugforge/incontainer/sweep.py); this module gives the shell lines that run them. docs/security.md
states the guarantees and the known limits."""

from __future__ import annotations

import shlex

from bugforge.testing.testrun import OUT, PACKAGE, PROBE_DIR, selection_files

# test configuration: a bug may not touch these (warm grading keeps them from the environment's commit)
CONFIG_NAMES = ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
TAMPER_EXIT = 95  # the sweep's exit status when it found tampering (sweep.TAMPER)
PREFIX = "bugforge-tamper: "  # each reason's line
SWEEP = f"python -I -S {PROBE_DIR}/{PACKAGE}/sweep.py"
IMAGE_MANIFEST = "/etc/bugforge/baseline.manifest"  # an instance image's baseline, captured at export
RUN_MANIFEST = f"{OUT}/baseline.manifest"  # a grader's, captured before it applies the patch


def capture(manifest: str = RUN_MANIFEST) -> str:
    """Shell: record the tree's baseline (run in /testbed before a patch is applied)."""
    return f"{SWEEP} capture {manifest}"


def reset(manifest: str = RUN_MANIFEST) -> str:
    """Shell: undo a failed try at applying a patch (tracked files to the index, new files removed)."""
    return f"{SWEEP} reset {manifest}"


def check(commit: str, selection: list[str], manifest: str = RUN_MANIFEST) -> str:
    """Shell: the sweep and the audit after a patch, for the tests of `selection` (node ids); exits
    TAMPER_EXIT, one PREFIX line a reason."""
    return " ".join([SWEEP, "check", manifest, shlex.quote(commit), *map(shlex.quote, selection_files(selection))])


def reasons(log: str) -> list[str]:
    """The tampering a sweep reported in a log."""
    return [line.split(PREFIX, 1)[1].strip() for line in log.splitlines() if PREFIX in line]
