"""The probe's report and limits. Report writes the run's JSON lines (`start`, `test`, `collect_error`,
`timeout`, `finish` events), appended as tests finish, so a killed run still tells which tests finished
and which one was running. Limits holds the per-test limit (CPU-seconds of the test thread, or three
times as many wall-seconds) and the run's budget, and its watchdog thread ends the run with 124 past
either. docs/probe.md. Python 3.9, standard library only."""

import json
import os
import sys
import threading
import time

from .channel import sender
from .monitor import RECORD


class Report:
    """The run's report (BUGFORGE_REPORT), and each running test's outcome, folded from its phases."""

    def __init__(self, root):
        self.root = root
        self.out = None  # a file, in a run without the verdict channel
        self.channel = False  # records go to the monitor, which holds the channel (monitor.py)
        self.results = {}  # node id -> its `test` event, until the test ends

    def open(self, path):
        """The run's channel when it has one (BUGFORGE_CHANNEL), else the file `path` (None: no report)."""
        self.channel = sender()
        self.out = open(path, "a", buffering=1) if path and not self.channel else None

    def emit(self, record, _audit=sys.audit):
        """Send a record: through the monitor (only this function's code may), else to the file."""
        if self.channel:
            _audit(RECORD, record)
        elif self.out is not None:
            self.out.write(json.dumps(record) + "\n")

    def finish_test(self, nodeid):
        r = self.results.pop(nodeid, None)
        if r is not None:
            self.emit(r)

    def logreport(self, report):
        r = self.results.setdefault(
            report.nodeid,
            {"event": "test", "nodeid": report.nodeid, "outcome": "passed", "duration": 0.0, "message": ""},
        )
        r["duration"] += report.duration
        wasxfail = hasattr(report, "wasxfail")
        if report.when == "call":
            if wasxfail:
                r["outcome"] = "xpassed" if report.passed else "xfailed"
            elif report.skipped:
                r["outcome"] = "skipped"
            elif report.failed:
                r["outcome"] = "failed"
        elif report.failed and r["outcome"] in ("passed", "skipped"):
            r["outcome"] = "error"  # setup or teardown failed
        elif report.when == "setup" and report.skipped:
            r["outcome"] = "xfailed" if wasxfail else "skipped"
        if report.failed and not r["message"]:
            r["message"] = self.message(report)

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
