"""Warm grading: many predictions for instances of one environment, in one warm container of the
environment image (a Workbench), instead of a fresh container of each instance image.

Per prediction the test server puts the instance's bug in place (`git apply`, then `git add -A`, so
the index holds the buggy state as in the instance image), applies the model patch with SWE-bench's
fallbacks, sweeps the tree as every grader does (bugforge.testing.tamper), and reports the tree's diff
against the environment's commit; only the tests that can see that diff run (bugforge.testing.selection),
unprivileged and guarded; the others keep their baseline outcome. Then bugforge.testing.grading.grade.
docs/warm-grading.md states the guarantees; docs/security.md the sweep."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from bugforge.records import EnvRecord
from bugforge.sandbox.grader import GradeResult, grade_patch, labels_of, setup_script, suspicious
from bugforge.testing import tamper
from bugforge.testing.grading import grade
from bugforge.testing.patches import changes_of_diff, files_of
from bugforge.testing.selection import selection_for
from bugforge.testing.testmap import TestMap
from bugforge.testing.testrun import OUT, RESTORE, Workbench

DIFF = "git add -A && git diff --cached --no-color --no-ext-diff --no-renames HEAD"


def warm_gradable(instance: dict, env: EnvRecord) -> bool:
    """A bugforge instance of `env` whose bug leaves tests and test configuration alone (so they are
    the same at the environment's commit as at the instance's)."""
    if instance.get("env_image") != env.image or not instance.get("bug_patch"):
        return False
    tests = set(instance.get("test_files") or [])
    return not any(f in tests or f.rsplit("/", 1)[-1] in tamper.CONFIG_NAMES for f in files_of(instance["bug_patch"]))


class EnvGrader:
    """Grades predictions for instances of one environment. One per worker thread."""

    def __init__(self, env: EnvRecord, testmap: TestMap | None, user: str = "agent"):
        self.env, self.testmap, self.user = env, testmap, user
        # one line per failure: grading reads outcomes, and pytest parses the source of every frame of a
        # failure for the long form (most of a short run's time when tests fail)
        self.bench = Workbench(
            env.image,
            [*env.recipe.pytest_args, "--tb=line"],
            preload=testmap is not None,
            guard=user,
            collect=env.recipe.test_files,
        )

    def tests_to_run(self, diff: str, tests: list[str]) -> tuple[list[str], list[str] | None]:
        """(the tests to run, the changed files when coverage decided: a preloaded server may run them)."""
        if not diff.strip():
            return [], None  # the tree is the baseline's: every test keeps its baseline outcome
        if self.testmap is None:
            return tests, None
        changed, whole = changes_of_diff(diff)
        for path, kind in list(whole.items()):  # a directory the change creates or empties is a change too
            parts = path.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])  # (the environment's checkout is the baseline tree)
                if kind == "deleted" or not (Path(self.env.repo_dir) / d).is_dir():
                    whole.setdefault(d, "other")
        # a prediction is untrusted: removed methods and bases are decided by what tests looked up and named,
        # which a hostile patch could steer around (dir(), names built at run time); those run every test
        sel = selection_for(changed, self.testmap, set(tests), whole, Path(self.env.repo_dir), diff, removals=False)
        return (tests, None) if sel is None else (sel, sorted(changed))

    def fixed_blobs(self, instance: dict) -> set[str]:
        """Blob ids of the fixed files: present here, deleted from the instance image on purpose."""
        out = set()
        for path in files_of(instance["bug_patch"]):
            r = subprocess.run(
                ["git", "-C", self.env.repo_dir, "rev-parse", f"HEAD:{path}"], capture_output=True, text=True
            )
            if r.returncode == 0:
                out.add(r.stdout.strip())
        return out

    def grade(self, instance: dict, patch: str, *, timeout: float = 600) -> GradeResult:
        iid = instance.get("instance_id", "")
        if not patch or not patch.strip():
            return GradeResult(iid, False, "EMPTY_PATCH")
        pre = {
            line.split()[1].split("..")[0] for line in patch.splitlines() if line.startswith("index ") and ".." in line
        }
        fixed = self.fixed_blobs(instance) if pre else set()
        if any(b.startswith(p) for p in pre if len(p) >= 7 for b in fixed):
            # `git apply --3way` could use a blob the instance image does not have: grade it there
            return grade_patch(instance, patch, timeout=timeout)
        t0 = time.monotonic()
        f2p, p2p = labels_of(instance)
        tests = sorted(set(f2p) | set(p2p))
        prepare = f"git apply {OUT}/bug.diff || exit 96\ngit add -A"
        resp = self.bench.request(
            {
                "files": {
                    f"{OUT}/bug.diff": instance["bug_patch"],
                    f"{OUT}/patch.diff": patch if patch.endswith("\n") else patch + "\n",
                },
                "before": RESTORE,
                "setup": "set -e\n" + setup_script(instance, "HEAD", prepare),
                "capture": DIFF,
            },
            timeout,
        )
        failed = _setup_failure(iid, resp, t0)
        if failed is not None:
            return failed
        outcomes = {t: "passed" for t in tests}  # baseline outcomes, for the tests that cannot see the change
        log = resp.get("setup_log", "")
        if resp.get("setup_rc"):
            outcomes = {}  # the setup failed after the patch applied: nothing ran (as in a fresh container)
            self.bench.request({"after": RESTORE}, timeout)
        else:
            run_these, hot = self.tests_to_run(resp.get("captured", ""), tests)
            req = {"after": RESTORE}
            if run_these:
                req.update(self.bench.pytest_request(run_these, timeout), user=self.user)
            resp = self.bench.request(req, timeout, hot)
            if run_these:
                run = Workbench.test_run(resp, time.monotonic() - t0)
                if run.timed_out:
                    return GradeResult(
                        iid, False, "TIMEOUT", True, seconds=time.monotonic() - t0, log=run.log_tail[-2000:]
                    )
                why = run.suspicious()
                if why:
                    return suspicious(iid, why, time.monotonic() - t0, run.log_tail)
                outcomes.update({t: run.outcomes.get(t, "missing") for t in run_these})
                log = run.log_tail
            log += f"\n[bugforge] warm grading: ran {len(run_these)} of {len(tests)} tests (the others cannot see the change)"
        g = grade(f2p, p2p, outcomes, instance.get("gold_outcomes"))
        return GradeResult(
            iid,
            g.resolved,
            g.status,
            True,
            g.FAIL_TO_PASS,
            g.PASS_TO_PASS,
            g.outcomes,
            time.monotonic() - t0,
            log[-2000:],
        )

    def close(self) -> None:
        self.bench.close()


def _setup_failure(iid: str, resp: dict, t0: float) -> GradeResult | None:
    """The grade when the bench was lost or the setup stopped before the tests: the bug does not apply
    (96), tampering (TAMPER_EXIT), the patch does not apply (97); None otherwise."""
    if resp.get("lost"):
        return GradeResult(iid, False, "ERROR", seconds=time.monotonic() - t0, log=resp["lost"])
    rc = resp.get("setup_rc")
    if rc == 96:
        return GradeResult(
            iid,
            False,
            "ERROR",
            seconds=time.monotonic() - t0,
            log="the instance's bug_patch does not apply to its environment image",
        )
    if rc == tamper.TAMPER_EXIT:
        log = resp.get("setup_log", "")
        return suspicious(iid, tamper.reasons(log), time.monotonic() - t0, log)
    if rc == 97:
        return GradeResult(
            iid, False, "PATCH_FAILED", False, seconds=time.monotonic() - t0, log=resp.get("setup_log", "")[-2000:]
        )
    return None
