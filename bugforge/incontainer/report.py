"""The probe's report and limits. Report sends the run's records through the monitor (monitor.py) to
the collector (channel.py): `start` (with the time the previous test's passed teardown took), `phase`
(a test's call, and its setup or teardown only when it did not simply pass: each as pytest reported it,
with what pytest's call of it did), `collect_error`, `timeout`, `finish`. The monitor ends a test (an
`end` record) when the next one starts or the session finishes: a phase that passed and a test's end
cost the test process no handoff to the monitor. The collector, out of the test process's reach, folds
a test's phases into its outcome and writes the `test` records, so a killed run still tells which tests
finished and which one was running. Limits holds the per-test limit (CPU-seconds of the test thread, or
three times as many wall-seconds) and the run's budget, and its watchdog thread ends the run with 124
past either. docs/probe.md. Python 3.9, standard library only."""

import os
import sys
import threading
import time

from .channel import sender
from .monitor import RECORD


class Report:
    """The run's records, sent as they happen; nothing about an outcome is kept here."""

    def __init__(self, root):
        self.root = root
        self.channel = False  # whether the run has a verdict channel (the test server's own process has none)
        self.unsent = [0.0]  # seconds of passed setups and teardowns not yet sent (a duration only: no verdict)

    def open(self):
        """Hand the run's channel (BUGFORGE_CHANNEL), if any, to the monitor."""
        self.channel = sender()

    def emit(self, record, _audit=sys.audit, _trace=sys.gettrace, _profile=sys.getprofile):
        """Send a record through the monitor (only this function's code may; it drops it without a channel),
        with this thread's trace and profile functions (the monitor's own thread cannot read them)."""
        _audit(RECORD, record, _trace(), _profile())

    def start(self, nodeid):
        """A test starts; the record carries the seconds the previous test's passed teardown took."""
        self.emit({"event": "start", "nodeid": nodeid, "t": time.time(), "before": self.take_unsent()})

    def finish(self, exitstatus):
        self.emit({"event": "finish", "exitstatus": int(exitstatus), "before": self.take_unsent()})

    def take_unsent(self):
        seconds, self.unsent[0] = self.unsent[0], 0.0
        return seconds

    def phase(self, nodeid, when, report, raised, failure):
        """One phase of a test, as pytest's report of it says, with what pytest's call of it did (raised;
        raised a failure, not a skip or xfail): the collector checks the one against the other. A setup
        or teardown that simply passed is not sent (the collector counts an unreported one as passed):
        only its duration is kept, for the next record. The decision is made here, on pytest's report as
        it leaves the outermost hook wrapper, before any code of the tree runs again."""
        if when != "call" and str(report.outcome) == "passed" and not raised and not hasattr(report, "wasxfail"):
            self.unsent[0] += float(report.duration)
            return
        self.emit(
            {
                "event": "phase",
                "nodeid": nodeid,
                "when": when,
                "outcome": str(report.outcome),
                "wasxfail": hasattr(report, "wasxfail"),
                "duration": float(report.duration) + self.take_unsent(),
                "message": self.message(report) if report.failed else "",
                "raised": raised,
                "failure": failure,
            }
        )

    def collectreport(self, report):
        if report.failed:
            self.emit({"event": "collect_error", "nodeid": report.nodeid, "message": self.message(report)})

    def message(self, report):
        crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
        if crash is not None:
            where = os.path.relpath(crash.path, self.root) if crash.path else ""
            return "%s:%s: %s" % (where, crash.lineno, crash.message)
        return str(getattr(report, "longrepr", ""))[-2000:]


def cpu():
    """CPU seconds of the thread running the tests (not of the process: a library's worker threads, or a
    thread an earlier test left running, would make the label depend on the machine or on the mode)."""
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(threading.main_thread().ident))
    except (AttributeError, OSError):
        return time.process_time()


class Limits:
    """The limits this run's environment names (BUGFORGE_TEST_LIMIT, BUGFORGE_TEST_LIMITS,
    BUGFORGE_RUN_BUDGET), the test running now, and the watchdog that enforces them."""

    def __init__(self, report):
        self.report = report
        self.limit = 0.0  # seconds one test may take (0: no limit) ...
        self.limits = {}  # ... or, for the node ids here, these
        self.budget = 0.0  # wall-seconds the run's tests may take together (0: no budget)
        self.spent = 0.0  # wall-seconds the run's finished tests took
        self.current = ""  # the node id of the test running now
        self.started = (0.0, 0.0)  # when it started: (wall, CPU) seconds

    def load(self):
        self.limit, self.limits = float(os.environ.get("BUGFORGE_TEST_LIMIT") or 0), {}
        self.budget, self.spent = float(os.environ.get("BUGFORGE_RUN_BUDGET") or 0), 0.0
        path = os.environ.get("BUGFORGE_TEST_LIMITS")
        if path and self.limit > 0:
            with open(path) as f:
                for line in f:
                    nodeid, _, seconds = line.rstrip("\n").rpartition("\t")
                    if nodeid:
                        self.limits[nodeid] = float(seconds)

    def watching(self):
        return self.limit > 0 or self.budget > 0

    def start_watchdog(self):
        threading.Thread(target=self._watchdog, name="bugforge-watchdog", daemon=True).start()

    def start_test(self, nodeid):
        self.started = (time.monotonic(), cpu())
        self.current = nodeid

    def end_test(self):
        self.current = ""
        self.spent += time.monotonic() - self.started[0]

    def _watchdog(self):
        """A test past its limit, or tests past the run's budget, end the run: record it, then exit (the
        caller kills what is left)."""
        while True:
            time.sleep(min(0.05, self.limit / 10) if self.limit > 0 else 0.05)
            nodeid, (wall, cpu_then) = self.current, self.started
            limit = self.limits.get(nodeid, self.limit)
            if nodeid and limit > 0 and (cpu() - cpu_then > limit or time.monotonic() - wall > 3 * limit):
                self.report.emit({"event": "timeout", "nodeid": nodeid, "limit": limit})
                os._exit(124)
            if self.budget > 0 and self.spent + (time.monotonic() - wall if nodeid else 0) > self.budget:
                self.report.emit({"event": "timeout", "nodeid": nodeid, "budget": self.budget})
                os._exit(124)
