"""Warm grading: many predictions for instances of one environment, in one warm container of the
environment image (a Workbench), instead of a fresh container of each instance image.

Per prediction the test server puts the instance's bug in place (`git apply`, then `git add -A`, so
the index holds the buggy state as in the instance image), applies the model patch with SWE-bench's
fallbacks, sweeps the tree as every grader does (bugforge.testing.tamper), and reports the tree's diff
against the environment's commit with git's own list of the paths it changes (CAPTURE); only the tests
that can see that diff run (bugforge.testing.selection), unprivileged and guarded; the others keep their
baseline outcome. Every test runs when the paths read from the diff are not git's (`agrees`). Then
bugforge.testing.grading.grade. docs/warm-grading.md states the guarantees; docs/security.md the sweep."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from bugforge.records import EnvRecord
from bugforge.sandbox.grader import GradeResult, grade_patch, labels_of, setup_script, suspicious
from bugforge.testing import tamper
from bugforge.testing.grading import grade
from bugforge.testing.patches import changes_of_diff, files_of, git_lines
from bugforge.testing.selection import selection_for
from bugforge.testing.testmap import TestMap
from bugforge.testing.testrun import OUT, RESTORE, Workbench

DIFF = "git diff --cached --no-color --no-ext-diff --no-renames HEAD"
# the tree's change and git's own list of the paths it changes, in one output (format: split_capture)
CAPTURE = f"git add -A && git diff --cached --no-renames --name-only -z HEAD && printf '\\0' && {DIFF}"


def split_capture(captured: str) -> tuple[list[str], str] | None:
    """(git's changed paths, git's diff) of CAPTURE's output; None when it is not in CAPTURE's format (a
    git command failed: its output stops before the separator).

    The format is NAMES "\\0" DIFF. NAMES is `git diff --name-only -z`: each changed path followed by a
    NUL, never quoted; a path is never empty and never holds a NUL, so the first empty field (a NUL
    right after another, or at the start) ends NAMES whatever the files hold. DIFF is all the rest, git's
    diff: nothing in it is read as a name. (git shows a file with a NUL in its first 8,000 bytes as
    binary, but a later NUL, or a `diff` attribute, puts one in a text diff: it splits nothing here.)"""
    names, at = [], 0
    while (end := captured.find("\0", at)) >= 0:
        if end == at:
            return names, captured[end + 1 :]
        names.append(captured[at:end])
        at = end + 1
    return None


def agrees(names: list[str], changed: dict[str, set[int]], whole: dict[str, str]) -> bool:
    """Whether git's list of changed paths (`names`) is exactly the set of paths changes_of_diff read
    from its diff (the files it edits and those it changes whole). A disagreement (a misread diff, a
    name git quotes in the diff) means the walk cannot be trusted to select tests: all of them run."""
    return set(names) == set(changed) | set(whole)


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

    def tests_to_run(self, captured: str, tests: list[str]) -> tuple[list[str], list[str] | None]:
        """(the tests to run, the changed files when coverage decided: a preloaded server may run them),
        given CAPTURE's output. None runs when git lists no path and its diff is empty (the baseline's
        tree); every test runs when the output is not CAPTURE's, when there is no map, or when git's
        paths and the ones read from its diff disagree (`agrees`; no path with a diff included)."""
        capture = split_capture(captured)
        if capture == ([], ""):
            return [], None  # the tree is the baseline's: every test keeps its baseline outcome
        if capture is None or not capture[0] or self.testmap is None:  # (no path, yet a diff: not git's)
            return tests, None
        names, diff = capture
        changed, whole = changes_of_diff(diff)
        if not agrees(names, changed, whole):
            return tests, None
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
            line.split()[1].split("..")[0] for line in git_lines(patch) if line.startswith("index ") and ".." in line
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
                "capture": CAPTURE,
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
