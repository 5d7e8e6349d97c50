"""bugforge's pytest plugin, copied into every environment image at /opt/bugforge/bugforge_probe.py and
loaded with `-p bugforge_probe`. It runs inside the container, under the image's Python (3.9+): keep it
free of bugforge imports and of newer syntax.

It writes a structured report (JSON lines, appended as tests finish, so a killed run still tells
which tests finished and which one was running) and, when asked, a per-test coverage map built with
coverage.py dynamic contexts (one context per test node id). With the coverage map it also records, per
context, which files of the repository the project's and the tests' code opened, checked (os.stat,
os.lstat, os.access: what os.path.exists and Path.is_file use) or listed, and which module names were
looked up past sys.modules, so a file added, deleted or replaced as a whole is seen only by the tests
that could notice it (bugforge.testing.testmap.TestMap.tests_noticing).

A lookup run (BUGFORGE_LOOKUPS set, no coverage) records instead which tests looked up each method of
the project's classes, so removing a method selects the tests that looked it up (TestMap.tests_seeing), and which classes
were built plainly (by `type` or ABCMeta, no base with __init_subclass__), whose bases only code that
holds the class can see.
As each class is built (builtins.__build_class__), its plain, static and class methods and properties
(not dunder names) are replaced in the class __dict__ by descriptors that note the lookup and give
what the original gives. Lookups before a test starts (imports, collection, a class body or decorator
reading a method) are noted outside any test. Not watched: a class whose metaclass is not `type` or
ABCMeta, or whose bases define __init_subclass__ (they could read the class body their own way), and
methods a base declares abstract. `dir()`, `vars()` and reads of `__dict__` bypass the descriptors.

Environment: BUGFORGE_REPORT (path of the JSONL report), BUGFORGE_COVERAGE (path of the coverage map
JSON; unset = no coverage), BUGFORGE_LOOKUPS (path of the lookup map JSON; unset = no lookup run), BUGFORGE_ROOT (source root, default /testbed), BUGFORGE_SELECT (a file of
node ids to run; unset = all collected), BUGFORGE_TEST_LIMIT (CPU-seconds of the test thread one test
may take, setup and teardown included, or three times as many wall-seconds for a test that waits; past it the run records a
`timeout` event naming the test and exits with 124), BUGFORGE_TEST_LIMITS (a file of `NODE ID<TAB>SECONDS`
lines: the tests allowed more than that, slow ones). CPU time, because wall time on a busy machine
varies with the load and the label must not. BUGFORGE_RUN_BUDGET (wall-seconds the run's tests may take
together, setup and teardown included; past it the run records a `timeout` event with the budget and
exits with 124).

The per-test limit is what makes validation's `timeout` label the same whichever tests a mode runs: a
test that hangs hangs in every run that includes it, and a test that does not run a changed line runs as
it did at baseline. It also finds a hang in seconds instead of after a whole-run deadline. A bug that
slows many tests, none past its own limit, is what the run budget is for: validation gives a run the
suite's budget less the baseline time of the tests it leaves out (those cannot see the change), so
every mode judges the same total.
"""

import abc
import builtins
import importlib._bootstrap
import json
import os
import pathlib
import sys
import threading
import time

import pytest

_report_path = os.environ.get("BUGFORGE_REPORT")
_cov_path = os.environ.get("BUGFORGE_COVERAGE")
_lookups_path = os.environ.get("BUGFORGE_LOOKUPS")
_tracking = bool(_cov_path or _lookups_path)  # contexts are switched per test and per wide fixture
_root = os.environ.get("BUGFORGE_ROOT", "/testbed")
_out = open(_report_path, "a", buffering=1) if _report_path else None
_cov = None
_results = {}
_current = [""]  # the node id of the test running now
_started = [0.0, 0.0]  # when it started: (wall, CPU) seconds
_limit = 0.0  # seconds one test may take (0: no limit) ...
_limits = {}  # ... or, for the node ids here, these (see _load_limits)
_budget = 0.0  # wall-seconds the run's tests may take together (0: no budget)
_spent = [0.0]  # wall-seconds the run's finished tests took
_fixture_users = {}  # fixture name -> node ids of the tests that use it

_context = [""]  # coverage's context now: a test's node id, "fixture:NAME", or "" (imports, collection)
_importer = [""]  # the test (or wide fixture) whose import of a module is running now, if any
_seen = {}  # "open:PATH" | "stat:PATH" | "list:DIR" | "import:MODULE" -> contexts (coverage runs only);
# "attr:FILE:CLASS.NAME" -> contexts (lookup runs only; every watched method has a key)
_STDLIB = os.path.dirname(os.path.dirname(json.__file__))  # .../lib/pythonX.Y
_IMPORTING = ("_find_and_load", "_find_and_load_unlocked")  # the import system at work
_order = []  # node ids in the order they ran (coverage runs only)
_TOOL_DIRS = [()]  # [_tool_dirs()], set once coverage is imported


def _tool_dirs():
    """Where pytest, pluggy, coverage and this probe live (all imported before any access is noted)."""
    out = [os.path.dirname(os.path.abspath(__file__)) + os.sep]
    for mod in ("_pytest", "pluggy", "coverage"):
        m = sys.modules.get(mod)
        if m is not None and getattr(m, "__file__", None):
            d = os.path.dirname(os.path.abspath(m.__file__)) + os.sep
            if not d.startswith(_root + "/"):  # the project under test may be one of them
                out.append(d)
    return tuple(out)


def _by_a_tool():
    """Whether the code asking is pytest's, coverage's, the probe's or the import system's (which look
    for names of their own: test files, venv markers, modules), not the project's. Walking out from
    the caller through the standard library, the first other frame decides; an import in progress
    (not a project module's body reading a file at import) is the import system's."""
    tools = _TOOL_DIRS[0]
    f = sys._getframe(3)
    while f is not None:
        name = f.f_code.co_filename
        if name.startswith("<frozen importlib") and f.f_code.co_name in _IMPORTING:
            return True
        if name.startswith(tools):
            return True
        if not ((name.startswith(_STDLIB) and "site-packages" not in name) or name.startswith("<frozen")):
            return False
        f = f.f_back
    return False


def _note(kind, key):
    contexts = _seen.get(kind + ":" + key)
    if contexts is None:
        contexts = _seen[kind + ":" + key] = set()
    # a method looked up by a module's code at import is import time, whichever test imported it; a file
    # or module name looked for is the importing test's (TestMap.tests_noticing takes every test after it)
    contexts.add(_context[0] if kind == "attr" else _importer[0] or _context[0])


def _note_path(kind, path):
    """Record an access to a path inside the repository, repository-relative."""
    try:
        path = os.fsdecode(os.fspath(path))
    except TypeError:
        return  # a file descriptor
    if not os.path.isabs(path):
        path = os.path.join(os.getcwd(), path)
    path = os.path.normpath(path)
    # outside a test, the tools only look for names of their own (TestMap never decides on those);
    # during a test, what they read (a pytester example, a lazily imported module) is the test's
    if (path == _root or path.startswith(_root + "/")) and (_context[0] or not _by_a_tool()):
        _note(kind, os.path.relpath(path, _root))


def _audit(event, args):
    """Which files each test opens and which directories it lists: a change to a file no test can
    reach (a new notes file, a script beside the package) cannot change any outcome."""
    if event == "open" and args and args[0] is not None:
        _note_path("open", args[0])
    elif event in ("os.listdir", "os.scandir"):
        _note_path("list", args[0] if args and args[0] is not None else ".")


class _ImportRecorder:
    """First on sys.meta_path: notes every module name looked up past sys.modules, found or not."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        _note("import", name)
        return None


def _stat_recorded(fn):
    def stat(path, *args, **kwargs):
        if not isinstance(path, int):
            _note_path("stat", path)
        return fn(path, *args, **kwargs)

    return stat


class _Watched:
    """Stands in a class __dict__ for a method: notes each lookup, then gives what the method gives."""

    __slots__ = ("method", "key")

    def __init__(self, method, key):
        self.method, self.key = method, key

    def __get__(self, obj, owner=None):
        _note("attr", self.key)
        return self.method.__get__(obj, owner)

    def __call__(self, *args, **kwargs):  # (code that took it from __dict__)
        _note("attr", self.key)
        return self.method(*args, **kwargs)

    def __getattr__(self, name):  # __isabstractmethod__, __func__, __wrapped__, fget, ...
        if name in _Watched.__slots__:  # (not set yet: a copy being made)
            raise AttributeError(name)
        return getattr(self.method, name)


class _WatchedProperty(_Watched):
    """A property is a data descriptor: so is what stands in for it."""

    __slots__ = ()

    def __set__(self, obj, value):
        _note("attr", self.key)
        self.method.__set__(obj, value)

    def __delete__(self, obj):
        _note("attr", self.key)
        self.method.__delete__(obj)


_WATCH = {type(_note): _Watched, staticmethod: _Watched, classmethod: _Watched, property: _WatchedProperty}
_TEST_FILE_PREFIXES = ("test_", "conftest.py")


def _watch(cls, filename):
    rel = os.path.relpath(filename, _root)
    name = os.path.basename(filename)
    if (
        rel.startswith("..")
        or "site-packages" in rel
        or name.startswith(_TEST_FILE_PREFIXES)
        or name.endswith("_test.py")
        or type(cls) not in (type, abc.ABCMeta)
        or any("__init_subclass__" in vars(b) for b in cls.__mro__[1:] if b is not object)
    ):
        return
    _seen.setdefault("class:%s:%s" % (rel, cls.__qualname__), set())  # built plainly: nothing read its bases
    abstract = set()
    for b in cls.__mro__[1:]:
        abstract.update(getattr(b, "__abstractmethods__", ()))
    for attr, value in list(vars(cls).items()):
        kind = _WATCH.get(type(value))
        if kind is None or (attr.startswith("__") and attr.endswith("__")) or attr in abstract:
            continue
        key = "%s:%s.%s" % (rel, cls.__qualname__, attr)
        _seen.setdefault("attr:" + key, set())
        type.__setattr__(cls, attr, kind(value, key))


def _build_class(func, name, *bases, **kwargs):
    cls = _plain_build_class(func, name, *bases, **kwargs)
    if isinstance(cls, type):
        try:
            _watch(cls, func.__code__.co_filename)
        except Exception:  # (a class this cannot watch stays as it was, unwatched)
            pass
    return cls


if _lookups_path:
    _plain_build_class = builtins.__build_class__
    builtins.__build_class__ = _build_class

if _cov_path:
    import coverage

    _cov = coverage.Coverage(data_file=None, config_file=False, source=[_root], branch=False)
    _cov.start()
    _TOOL_DIRS[0] = _tool_dirs()
    sys.addaudithook(_audit)
    sys.meta_path.insert(0, _ImportRecorder)
    # existence checks (os.path.exists, Path.is_file, ...) go through these; the import system's own
    # stat calls do not (it holds the posix module), and are covered by the import recorder
    _accessor = getattr(pathlib, "_NormalAccessor", None)  # Python < 3.11: pathlib holds its own stat
    for _name in ("stat", "lstat", "access"):
        _orig = getattr(os, _name)
        _wrapped = _stat_recorded(_orig)
        setattr(os, _name, _wrapped)
        for _support in (os.supports_follow_symlinks, os.supports_dir_fd, os.supports_fd, os.supports_effective_ids):
            if _orig in _support:
                _support.add(_wrapped)
        if _accessor is not None and _name != "access":
            setattr(_accessor, _name, staticmethod(_wrapped))


def _switch(context):
    _context[0] = context
    if _cov is not None:
        _cov.switch_context(context)


def _find_and_load(name, import_):
    """A module that a test imports first runs its body once for every test after it too: what runs
    while it loads (module and class bodies, functions they call, methods they look up) is import
    time, not the test's."""
    outer = _context[0]
    if not outer or _importer[0]:
        return _plain_find_and_load(name, import_)
    _importer[0] = outer
    _switch("")
    try:
        return _plain_find_and_load(name, import_)
    finally:
        _switch(outer)
        _importer[0] = ""


if _tracking:  # (every import goes through importlib's _find_and_load, looked up on the module each time)
    _plain_find_and_load = importlib._bootstrap._find_and_load
    importlib._bootstrap._find_and_load = _find_and_load


def _cpu():
    """CPU seconds of the thread running the tests (not of the process: a library's worker threads, or a
    thread an earlier test left running, would make the label depend on the machine or on the mode)."""
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(threading.main_thread().ident))
    except (AttributeError, OSError):
        return time.process_time()


def _load_limits():
    """The limits this run's environment names (BUGFORGE_TEST_LIMIT, BUGFORGE_TEST_LIMITS,
    BUGFORGE_RUN_BUDGET)."""
    global _limit, _limits, _budget
    _limit, _limits = float(os.environ.get("BUGFORGE_TEST_LIMIT") or 0), {}
    _budget, _spent[0] = float(os.environ.get("BUGFORGE_RUN_BUDGET") or 0), 0.0
    path = os.environ.get("BUGFORGE_TEST_LIMITS")
    if path and _limit > 0:
        with open(path) as f:
            for line in f:
                nodeid, _, seconds = line.rstrip("\n").rpartition("\t")
                if nodeid:
                    _limits[nodeid] = float(seconds)


_load_limits()


def watching():
    return _limit > 0 or _budget > 0


def _watchdog():
    """A test past its limit, or tests past the run's budget, end the run: record it, then exit (the
    caller kills what is left)."""
    while True:
        time.sleep(min(0.05, _limit / 10) if _limit > 0 else 0.05)
        nodeid, (wall, cpu) = _current[0], _started
        limit = _limits.get(nodeid, _limit)
        if nodeid and limit > 0 and (_cpu() - cpu > limit or time.monotonic() - wall > 3 * limit):
            _emit({"event": "timeout", "nodeid": nodeid, "limit": limit})
            os._exit(124)
        if _budget > 0 and _spent[0] + (time.monotonic() - wall if nodeid else 0) > _budget:
            _emit({"event": "timeout", "nodeid": nodeid, "budget": _budget})
            os._exit(124)


def pytest_sessionstart(session):
    if watching():
        threading.Thread(target=_watchdog, name="bugforge-watchdog", daemon=True).start()


def pytest_collection_modifyitems(session, config, items):
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


def _emit(record):
    if _out is not None:
        _out.write(json.dumps(record) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _emit({"event": "start", "nodeid": item.nodeid, "t": time.time()})
    if _tracking:
        for name in getattr(item, "fixturenames", ()):
            _fixture_users.setdefault(name, []).append(item.nodeid)
        _switch(item.nodeid)
        _order.append(item.nodeid)
    _started[:] = [time.monotonic(), _cpu()]
    _current[0] = item.nodeid
    yield
    _current[0] = ""
    _spent[0] += time.monotonic() - _started[0]
    if _tracking:
        _switch("")
    r = _results.pop(item.nodeid, None)
    if r is not None:
        _emit(r)


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """Lines run while setting up a fixture wider than one test belong to every test that uses it
    (they run once, in whichever test comes first); give them a context of their own."""
    wide = _tracking and fixturedef.scope != "function"
    if wide:
        _switch("fixture:" + fixturedef.argname)
    yield
    if wide:
        _switch(_current[0])


def pytest_runtest_logreport(report):
    r = _results.setdefault(
        report.nodeid, {"event": "test", "nodeid": report.nodeid, "outcome": "passed", "duration": 0.0, "message": ""}
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
        r["message"] = _message(report)


def pytest_collectreport(report):
    if report.failed:
        _emit({"event": "collect_error", "nodeid": report.nodeid, "message": _message(report)})


def _message(report):
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None:
        return "%s:%s: %s" % (os.path.relpath(crash.path, _root) if crash.path else "", crash.lineno, crash.message)
    return str(getattr(report, "longrepr", ""))[-2000:]


def pytest_sessionfinish(session, exitstatus):
    _emit({"event": "finish", "exitstatus": int(exitstatus)})
    if _lookups_path:
        with open(_lookups_path, "w") as f:
            json.dump({"seen": {k: sorted(v) for k, v in _seen.items()}, "fixtures": _fixture_users}, f)
    if _cov is None:
        return
    _cov.stop()
    data = _cov.get_data()
    files, import_lines = {}, {}
    for path in data.measured_files():
        if not path.startswith(_root + "/"):
            continue
        rel = os.path.relpath(path, _root)
        by_line = data.contexts_by_lineno(path)
        lines = {str(n): sorted(c for c in ctx if c) for n, ctx in by_line.items()}
        lines = {n: c for n, c in lines.items() if c}
        if lines:
            files[rel] = lines
        # lines run outside any test (imports, collection): a change there can affect every test
        outside = sorted(n for n, ctx in by_line.items() if "" in ctx)
        if outside:
            import_lines[rel] = outside
    with open(_cov_path, "w") as f:
        json.dump(
            {
                "files": files,
                "import_lines": import_lines,
                "fixtures": _fixture_users,
                "seen": {k: sorted(v) for k, v in _seen.items()},
                "order": _order,
            },
            f,
        )
