"""Validation: run a candidate bug against the tests and label it.

`selected` (default): a warm container per worker (bugforge.testing.testrun.Workbench) runs only the
tests that can see the change (bugforge.testing.selection), or the whole suite where the maps cannot
decide, and restores the tree. `full` (SWE-smith's way): a fresh container and the whole suite per
candidate. Both give the same labels (`bench/validation.py` checks it and measures the cost).
`validate_all` validates many, K workers at once, in threads here or as actors on a Ray cluster.
Modes, limits and labels: docs/bugs.md; which tests run: docs/test-selection.md."""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from bugforge.records import Candidate, EnvRecord, TestLimits, TestRun, Validation, append_jsonl
from bugforge.testing.grading import labels
from bugforge.testing.selection import selection_for
from bugforge.testing.testmap import TestMap
from bugforge.testing.testrun import Workbench, run_tests

MODES = ("selected", "full")


def test_limits(env: EnvRecord, floor: float = 10.0) -> TestLimits:
    """CPU-seconds each test may take before the candidate counts as a timeout: ten times the test's
    own baseline time, never under `floor` (docs/bugs.md, "Limits")."""
    return TestLimits(floor, {t: round(10 * o.duration, 1) for t, o in env.tests.items() if 10 * o.duration > floor})


def judge(cand: Candidate, env: EnvRecord, run: TestRun, ran: set[str], mode: str) -> Validation:
    passing = set(env.passing)
    v = Validation(cand.id, "", mode=mode, tests_run=len(run.outcomes), seconds=round(run.wall, 3))
    if run.timed_out:
        v.status = "timeout"
        if run.budget:
            v.messages = {run.running or "": "the tests together ran past five times the suite's time"}
        elif run.running:
            v.messages = {
                run.running: f"ran past its limit of {run.limit:g} CPU-seconds"
                if run.limit
                else "still running when the run's time was up"
            }
        else:
            v.messages = {"": "the run's time was up outside any test (start-up, collection or exit)"}
        return v
    if run.collect_errors and not run.outcomes:
        ran = passing  # nothing could even be collected: every selected test failed
    f2p, p2p = labels(passing, run.outcomes, ran)
    v.FAIL_TO_PASS, v.PASS_TO_PASS = f2p, p2p
    v.messages = {t: run.messages.get(t, "") or _collect_message(t, run) for t in f2p}
    v.status = "valid" if f2p else "no_failures"
    return v


def _collect_message(test: str, run: TestRun) -> str:
    path = test.split("::")[0]
    for where, msg in run.collect_errors.items():
        if where == path or not where:
            return msg.strip().splitlines()[-1] if msg.strip() else "error while collecting " + path
    return "test did not run"


class Validator:
    """Validates candidates of one environment. One instance per worker thread."""

    def __init__(
        self, env: EnvRecord, testmap: TestMap, mode: str = "selected", timeout: float = 60, test_limit: float = 10.0
    ):
        if mode not in MODES:
            raise ValueError(f"unknown validation mode {mode!r}; use one of {MODES}")
        self.env, self.testmap, self.mode = env, testmap, mode
        # a bug may slow tests down, and must not hang: besides each test's own limit, the tests may take
        # the suite's time five times over together. The probe watches that budget over the tests a run
        # runs, and a run gets it less the baseline time of the tests it leaves out (they cannot see the
        # change): every mode judges the same total, so a bug that slows many tests gets the same label.
        self.budget = max(timeout, 5 * env.suite_seconds + 10)
        self.durations = {t: o.duration for t, o in env.tests.items()}
        outside = max(0.0, env.suite_seconds - sum(self.durations.values()))  # start-up, collection, exit
        self.timeout = self.budget + max(30.0, 5 * outside)  # the whole run's: a backstop
        self.test_limit = test_limits(env, test_limit)  # (seconds for a test that is not slow)
        # one line per failure: outcomes and failure messages are the same, and a bug that fails hundreds
        # of tests no longer spends seconds per failure formatting tracebacks (pytest parses the source
        # of every frame for the long form)
        self.pytest_args = [*env.recipe.pytest_args, "--tb=line"]
        self.passing = set(env.passing)
        self.bench = (
            Workbench(env.image, self.pytest_args, preload=True, collect=env.recipe.test_files)
            if mode == "selected"
            else None
        )

    def limits(self, ran: list[str] | None) -> TestLimits:
        """The limits of a run of `ran` (None: the whole suite): each test's own, and the budget less what
        the tests left out took at baseline."""
        kept = set(ran or ())
        left_out = 0.0 if ran is None else sum(d for t, d in self.durations.items() if t not in kept)
        return dataclasses.replace(self.test_limit, budget=round(self.budget - left_out, 3))

    def validate(self, cand: Candidate) -> Validation:
        t0 = time.monotonic()
        if self.mode == "full":
            setup = "cd /testbed && git apply /tmp/bugforge-out/patch.diff || exit 97"
            run, _ = run_tests(
                self.env.image,
                self.pytest_args,
                timeout=self.timeout,
                setup=setup,
                files={"patch.diff": cand.patch.encode()},
                test_files=self.env.recipe.test_files,
                test_limit=self.limits(None),
            )
            if run.exit_code == 97 and not run.outcomes:
                return Validation(cand.id, "apply_failed", mode="full", seconds=round(time.monotonic() - t0, 3))
            v = judge(cand, self.env, run, self.passing, "full")
        else:
            sel = selection_for(cand.changed, self.testmap, self.passing, root=Path(self.env.repo_dir), diff=cand.patch)
            if sel == []:
                return Validation(cand.id, "unreached", mode="selected", seconds=round(time.monotonic() - t0, 3))
            hot = sorted(cand.changed) if sel is not None else None  # coverage decided: no import-time lines
            run, applied = self.bench.run(cand.patch, sel, timeout=self.timeout, hot=hot, test_limit=self.limits(sel))
            if not applied:
                return Validation(cand.id, "apply_failed", mode="selected", seconds=round(time.monotonic() - t0, 3))
            if sel is not None and run.collect_errors:  # the change reached import time after all: run them all
                sel = None
                run, _ = self.bench.run(cand.patch, None, timeout=self.timeout, test_limit=self.limits(None))
            v = judge(
                cand, self.env, run, self.passing if sel is None else set(sel), "suite" if sel is None else "selected"
            )
        v.seconds = round(time.monotonic() - t0, 3)
        return v

    def close(self) -> None:
        if self.bench:
            self.bench.close()


def validate_all(
    env: EnvRecord,
    testmap: TestMap,
    cands: list[Candidate],
    done: dict[str, Validation],
    *,
    mode: str,
    workers: int,
    path: Path,
    progress: Callable[[str, int, int], None],
    phase: str,
    ray: str | None = None,
) -> dict[str, Validation]:
    """Validate what is not yet in `done`, K warm workers at a time (on a Ray cluster: `ray` is its
    address); append each result as it lands."""
    todo = [c for c in cands if c.id not in done]
    total, finished = len(cands), len(cands) - len(todo)
    progress(phase, finished, total)
    if not todo:
        return done
    if ray is not None:
        from bugforge.cluster import fan_out

        make = functools.partial(Validator, env, testmap, mode)
        for _, v in fan_out(ray, make, validate_one, [(c.id, c) for c in todo], workers=workers, image=env.image):
            append_jsonl(path, v)
            done[v.candidate] = v
            finished += 1
            progress(phase, finished, total)
        return done
    local = threading.local()
    validators: list[Validator] = []
    lock = threading.Lock()

    def work(c: Candidate) -> Validation:
        if not hasattr(local, "v"):
            local.v = Validator(env, testmap, mode)
            with lock:
                validators.append(local.v)
        return validate_one(local.v, c)

    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for fut in as_completed([pool.submit(work, c) for c in todo]):
                v = fut.result()
                with lock:
                    append_jsonl(path, v)
                    done[v.candidate] = v
                    finished += 1
                progress(phase, finished, total)
    finally:
        for v in validators:
            v.close()
    return done


def validate_one(validator: Validator, c: Candidate) -> Validation:
    try:
        return validator.validate(c)
    except Exception as e:  # noqa: BLE001 - a worker: one broken candidate is recorded as an error; the run goes on
        msg = {"error": f"{type(e).__name__}: {e}"[:500]}
        return Validation(c.id, "error", mode=validator.mode, messages=msg)
