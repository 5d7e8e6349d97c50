"""bugforge's pytest plugin, loaded with `-p bugforge_incontainer.probe` (from /opt/bugforge inside a
container). Importing it builds one Probe from the environment and installs its instrumentation; the
module's pytest hooks are that Probe's methods, and the test server finds it as this module's `plugin`.

It writes a structured report (report.py: JSON lines as tests finish) and enforces the per-test limit
and the run's budget; with BUGFORGE_COVERAGE it writes a per-test coverage map, with what each test
opened, checked, listed and imported (tracking.py); with BUGFORGE_LOOKUPS (no coverage) a lookup map
of which tests looked up each method of the project's classes (lookups.py).

Environment: BUGFORGE_REPORT (the JSONL report), BUGFORGE_COVERAGE (the coverage map; unset = none),
BUGFORGE_LOOKUPS (the lookup map; unset = none), BUGFORGE_ROOT (source root, default /testbed),
BUGFORGE_SELECT (a file of node ids to run; unset = all collected), BUGFORGE_TEST_LIMIT (seconds one
test may take), BUGFORGE_TEST_LIMITS (`NODE ID<TAB>SECONDS` lines for slow tests), BUGFORGE_RUN_BUDGET
(wall-seconds the run's tests may take together). Past a limit the run records a `timeout` event and
exits with 124. A process still alive EXIT_GRACE seconds after its session finished (a non-daemon
thread a test left running) exits with the session's status. docs/probe.md describes the design.
Runs under the image's Python (3.9+): no bugforge imports, no newer syntax.
PYTEST_DONT_REWRITE: start.py imports this module before pytest marks `-p` plugins for assertion
rewriting, and pytest would warn that it is already imported (an error under `filterwarnings = error`)."""

import json
import os
import sys
import threading
import time
import unittest.case

import pytest

from . import casecode, witness
from .channel import sender
from .defined import classes_changed, collected
from .held import _Hold
from .installed import installed_dirs
from .integrity import Integrity, compare
from .lookups import Watcher
from .monitor import ASSERTER, CHANNEL, COMPILED, HELD, ITEMS, PIN, RECORD, REGISTERED, TAMPER, install
from .report import Limits, Report
from .tracking import Tracker

SKIP_LIKE = (pytest.skip.Exception, pytest.xfail.Exception)


class Probe:
    """The plugin's state and hooks for one pytest process (or one run of the held session)."""

    def __init__(self, environ):
        self.root = environ.get("BUGFORGE_ROOT", "/testbed")
        self.coverage_path = environ.get("BUGFORGE_COVERAGE")
        self.lookups_path = environ.get("BUGFORGE_LOOKUPS")
        self.report = Report(self.root)
        self.report.open()
        self.tracker = Tracker(self.root, bool(self.coverage_path or self.lookups_path))
        self.limits = Limits(self.report)
        self.integrity = Integrity(self.root, os.path.dirname(os.path.abspath(__file__)) + os.sep)
        self.test_modules = []  # (module, parsed file) of the collected tests (defined.py)

    def install(self):
        """Watch the classes built from now on (lookup runs), start coverage and access tracking
        (coverage runs), give imports their own context (both), and read the limits."""
        if self.lookups_path:
            Watcher(self.tracker).install()
        if self.coverage_path:
            self.tracker.start_coverage()
        if self.tracker.active:
            self.tracker.watch_imports()
        self.limits.load()

    def reopen(self):
        """In a child of the test server (which loaded this plugin without a report): this run's
        channel (or report) and limits, from its environment."""
        self.report.open()
        self.limits.load()

    def pin(self, _audit=sys.audit):
        """Hand the monitor what it checks before each test's start and end and the session's finish:
        the probe's own classes and state, whole, and the integrity snapshot with its comparison."""
        classes = (Probe, Report, Limits, Integrity, Tracker, Watcher)
        pinned = [(c.__name__, c.__dict__, None) for c in classes] + [
            ("plugin", vars(self), None),
            ("plugin.report", vars(self.report), None),
            ("probe", globals(), ("plugin", "Probe", "SKIP_LIKE", "sys", "Report", "Integrity")),
        ]
        _audit(PIN, pinned, self.integrity.snap, compare)

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config):
        self.integrity.configure(config)

    def pytest_sessionstart(self, session):
        if self.limits.watching():
            self.limits.start_watchdog()

    def pytest_collection_modifyitems(self, session, config, items):
        """BUGFORGE_SELECT names a file of node ids: run exactly those (the rest are deselected)."""
        path = os.environ.get("BUGFORGE_SELECT")
        if not path:
            return
        with open(path) as f:
            wanted = set(line.rstrip("\n") for line in f if line.strip())
        keep = [i for i in items if i.nodeid in wanted]
        drop = [i for i in items if i.nodeid not in wanted]
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session, _audit=sys.audit):
        """Hand the monitor the collected tests' functions (it checks each at its end), what the test
        files bind by importing installed code (held likewise), and why the collected functions are
        not the ones their files define (defined.py; reported with the run's finish)."""
        _, _, installed, root = self.integrity.snap
        items = tuple(session.items)  # (one list for both: the tree's code may change session.items meanwhile)
        reasons, bindings, tests, modules, shadows = collected(items, installed, root)
        self.test_modules[:] = modules  # (in place: the list is pinned)
        _audit(ITEMS, Integrity.collected(items), bindings, tuple(reasons), tests, shadows)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.report.start(item.nodeid)
        if self.tracker.active:
            self.tracker.start_test(item)
        self.limits.start_test(item.nodeid)
        yield
        self.limits.end_test()
        if self.tracker.active:
            self.tracker.switch("")
        self.integrity.outcome(item.nodeid)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        """Lines run while setting up a fixture wider than one test belong to every test that uses it
        (they run once, in whichever test comes first); give them a context of their own."""
        wide = self.tracker.active and fixturedef.scope != "function"
        if wide:
            self.tracker.switch("fixture:" + fixturedef.argname)
        yield
        if wide:
            self.tracker.switch(self.limits.current)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        """Each phase as pytest reports it (the outermost wrapper: what every other made of the report),
        with what pytest's call of it did, for the collector (channel.py): a phase that raised cannot be
        reported passed, nor one that raised a failure (not a skip or xfail) skipped."""
        outcome = yield
        exc = call.excinfo
        raised = exc is not None
        failure = raised and not isinstance(exc.value, SKIP_LIKE)
        report = outcome.get_result()  # (raises what the hook raised: no report, no phase)
        self.report.phase(item.nodeid, call.when, report, raised, failure)

    def pytest_collectreport(self, report):
        self.report.collectreport(report)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus, _audit=sys.audit):
        hooks = {name: globals()[name] for name in HOOKS}
        for reason in self.integrity.problems(session, exitstatus, hooks) + classes_changed(self.test_modules):
            _audit(TAMPER, reason)
        self.report.finish(exitstatus)
        if self.lookups_path:
            with open(self.lookups_path, "w") as f:
                json.dump({"seen": self.tracker.seen_lists(), "fixtures": self.tracker.fixture_users}, f)
        if self.tracker.cov is not None:
            self.tracker.write_coverage(self.coverage_path)
        if self.report.channel:  # a run read for its report (not the test server's own process):
            # everything it is read for is written; a thread a test left running (not a daemon) must not
            # keep the process alive until the run's timeout
            threading.Thread(target=_end, args=(int(exitstatus),), name="bugforge-end", daemon=True).start()


EXIT_GRACE = 5.0
"""Seconds the process may take to exit on its own after the session finished (atexit handlers)."""


def _end(status):
    time.sleep(EXIT_GRACE)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 (a stream the tree replaced: the exit goes on)
            pass
    os._exit(status)


import _pytest.assertion.rewrite  # noqa: E402

casecode.harden(unittest.case)  # (TestCase's lookups of its own methods: never an instance's)
casecode.watch_subtests()  # (a failed subtest of pytest's fixture: told to the monitor first)
_installed = installed_dirs(os.environ.get("BUGFORGE_ROOT", "/testbed").rstrip("/") + "/")
_rewrite = _pytest.assertion.rewrite._rewrite_test.__code__  # (pytest's own, which the witness calls: names.py)
witnessed = witness.install(_pytest.assertion.rewrite, _installed)  # test modules compiled with the witness
install(  # before the channel is opened, and before any code of the tree (start.py)
    os.environ.get("BUGFORGE_ROOT", "/testbed"),
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
    _installed,
    {
        RECORD: Report.emit.__code__,
        CHANNEL: sender.__code__,
        PIN: Probe.pin.__code__,
        ITEMS: Probe.pytest_collection_finish.__code__,
        COMPILED: witnessed,
        "rewrite": _rewrite,
        REGISTERED: unittest.case.TestCase.addTypeEqualityFunc.__code__,
        ASSERTER: casecode.vetted.__code__,
        HELD: tuple(  # (an assertion context's __init__ and __exit__s, an outcome's __init__, recompiled)
            f.__code__
            for f in (
                unittest.case._AssertRaisesBaseContext.__init__,
                unittest.case._AssertRaisesContext.__exit__,
                unittest.case._AssertWarnsContext.__exit__,
                unittest.case._Outcome.__init__,
                casecode.checked_result,
            )
        ),
        "watchdog": Limits._watchdog.__code__,
        "entry": frozenset((id(_Hold.pytest_runtestloop.__code__),)),  # (the test server's heap index: origin.py)
    },
)
plugin = Probe(os.environ)
plugin.install()

# the hooks pytest finds on this module
pytest_configure = plugin.pytest_configure
pytest_sessionstart = plugin.pytest_sessionstart
pytest_collection_modifyitems = plugin.pytest_collection_modifyitems
pytest_collection_finish = plugin.pytest_collection_finish
pytest_runtest_protocol = plugin.pytest_runtest_protocol
pytest_fixture_setup = plugin.pytest_fixture_setup
pytest_runtest_makereport = plugin.pytest_runtest_makereport
pytest_collectreport = plugin.pytest_collectreport
pytest_sessionfinish = plugin.pytest_sessionfinish
HOOKS = [n for n in dir() if n.startswith("pytest_")]
plugin.integrity.snapshot()  # last: this module is whole (integrity.py)
plugin.pin()
