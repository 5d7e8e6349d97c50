"""Grade a patch against a task instance in a fresh container of the instance image (no network): the
patch applied with SWE-bench's fallbacks, the tree swept (bugforge.testing.tamper: tests and test
configuration restored, planted files removed, the patch audited), the FAIL_TO_PASS and PASS_TO_PASS
tests run with bugforge's structured report (not console text, which a patch can fake), then
bugforge.testing.grading.grade. Containers are removed with no stop wait. docs/security.md."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bugforge.records import TestRun
from bugforge.testing import tamper
from bugforge.testing.grading import Grade, grade
from bugforge.testing.testrun import OUT, TEST_USER, run_tests

Runner = Callable[..., tuple[TestRun, dict | None]]
"""run_tests's signature: (image, pytest_args, *, selection, timeout, setup, files, user) -> (run, None)."""

APPLY = [
    "git apply --verbose",
    "git apply --verbose --3way",
    "git apply --verbose --reject",
    "patch --batch --forward --fuzz=5 -p1 -i",
]


def labels_of(instance: dict) -> tuple[list[str], list[str]]:
    f2p, p2p = instance["FAIL_TO_PASS"], instance["PASS_TO_PASS"]
    return (json.loads(f2p) if isinstance(f2p, str) else list(f2p)), (
        json.loads(p2p) if isinstance(p2p, str) else list(p2p)
    )


@dataclass
class GradeResult:
    instance_id: str
    resolved: bool
    status: str
    """RESOLVED_FULL | RESOLVED_PARTIAL | RESOLVED_NO | EMPTY_PATCH | PATCH_FAILED | TIMEOUT | ERROR |
    SUSPICIOUS (the patch tampered with grading: never resolved, reward 0; `tamper` says how)"""
    patch_applied: bool = False
    FAIL_TO_PASS: dict = field(default_factory=dict)
    PASS_TO_PASS: dict = field(default_factory=dict)
    outcomes: dict = field(default_factory=dict)
    seconds: float = 0.0
    log: str = ""
    tamper: list[str] = field(default_factory=list)

    @property
    def f2p_fraction(self) -> float:
        n = len(self.FAIL_TO_PASS.get("success", [])) + len(self.FAIL_TO_PASS.get("failure", []))
        return len(self.FAIL_TO_PASS.get("success", [])) / n if n else 0.0


def suspicious(instance_id: str, why: list[str], seconds: float, log: str) -> GradeResult:
    """The grade of a patch that tampered with grading (docs/security.md): never resolved."""
    return GradeResult(instance_id, False, "SUSPICIOUS", True, seconds=seconds, log=log[-2000:], tamper=why)


def setup_script(instance: dict, commit: str | None = None, prepare: str = "") -> str:
    """Apply /tmp/bugforge-out/patch.diff like SWE-bench's harness, then sweep (bugforge.testing.tamper):
    tests and test configuration restored from `commit` (default: the instance's), planted files
    removed, the rest audited; tampering exits TAMPER_EXIT. `prepare` runs first (sandbox.envgrader
    puts the bug in place); the baseline is recorded after it."""
    commit = commit or instance.get("base_commit") or "HEAD"
    f2p, p2p = labels_of(instance)
    # each fallback starts from the tree as it was before the first try (a failed --reject leaves hunks behind)
    tries = " || ".join(
        f"({'' if i == 0 else tamper.reset() + ' && '}{cmd} {OUT}/patch.diff)" for i, cmd in enumerate(APPLY)
    )
    return "\n".join(
        [
            "cd /testbed",
            *([prepare] if prepare else []),
            tamper.capture(),
            f"if [ -s {OUT}/patch.diff ]; then {{ {tries} || git apply --check --reverse {OUT}/patch.diff; }}"
            f" > {OUT}/apply.log 2>&1 || {{ tail -n 20 {OUT}/apply.log; exit 97; }}; fi",
            tamper.check(commit, [*f2p, *p2p]),
            "export PYTHONNOUSERSITE=1",
        ]
    )


def grade_patch(instance: dict, patch: str, *, timeout: float = 600, runner: Runner | None = None) -> GradeResult:
    """Grade `patch` against `instance` (module docstring). `runner` runs the tests where the patch goes,
    with run_tests's arguments and result: default run_tests itself (a fresh container of the instance
    image); the process backend's gives a fresh private copy of the tree (sandbox/processgrade.py)."""
    iid = instance.get("instance_id", "")
    t0 = time.monotonic()
    f2p, p2p = labels_of(instance)
    if not patch or not patch.strip():
        return GradeResult(iid, False, "EMPTY_PATCH")
    args = instance.get("pytest_args") or ["-p", "no:cacheprovider"]
    run, _ = (runner or run_tests)(
        instance["image"],
        args,
        selection=sorted(set(f2p) | set(p2p)),
        timeout=timeout,
        setup=setup_script(instance),
        files={"patch.diff": (patch if patch.endswith("\n") else patch + "\n").encode()},
        user=TEST_USER,
    )
    secs = time.monotonic() - t0
    if run.exit_code == tamper.TAMPER_EXIT and not run.outcomes:
        return suspicious(iid, tamper.reasons(run.log_tail), secs, run.log_tail)
    if run.exit_code == 97 and not run.outcomes:
        return GradeResult(iid, False, "PATCH_FAILED", False, seconds=secs, log=run.log_tail[-2000:])
    if run.timed_out:
        return GradeResult(iid, False, "TIMEOUT", True, seconds=secs, log=run.log_tail[-2000:])
    why = run.suspicious()
    if why:
        return suspicious(iid, why, secs, run.log_tail)
    g: Grade = grade(f2p, p2p, run.outcomes, instance.get("gold_outcomes"))
    return GradeResult(
        iid, g.resolved, g.status, True, g.FAIL_TO_PASS, g.PASS_TO_PASS, g.outcomes, secs, run.log_tail[-2000:]
    )
