"""The probe's coverage and access tracking. Each test, and each fixture wider than one test, runs in a
context of its own (a coverage.py dynamic context); imports, collection and a module's body run at
import are the "" context. With coverage on, Tracker also notes which files of the repository each
context opened, checked (os.stat, os.lstat, os.access) or listed, and which module names it looked up
past sys.modules; it writes the coverage map at the session's finish. docs/probe.md.
Python 3.9, standard library (and coverage.py when asked) only."""

import importlib._bootstrap
import json
import os
import pathlib
import sys

STDLIB = os.path.dirname(os.path.dirname(json.__file__))  # .../lib/pythonX.Y
IMPORTING = ("_find_and_load", "_find_and_load_unlocked")  # the import system at work


class Tracker:
    """The context now and what each context touched: seen["open:PATH" | "stat:PATH" | "list:DIR" |
    "import:MODULE"] (coverage runs), seen["attr:FILE:CLASS.NAME" | "class:FILE:CLASS"] (lookup runs:
    lookups.py); the node ids in the order they ran; the tests using each fixture."""

    def __init__(self, root, active):
        self.root = root
        self.active = active  # contexts are switched per test and per wide fixture
        self.cov = None
        self.context = ""  # a test's node id, "fixture:NAME", or "" (imports, collection)
        self.importer = ""  # the test (or wide fixture) whose import of a module is running now, if any
        self.seen = {}
        self.order = []  # node ids in the order they ran
        self.fixture_users = {}  # fixture name -> node ids of the tests that use it
        self.tool_dirs = ()  # set once coverage is imported
        self.plain_find_and_load = None

    def start_coverage(self):
        """Start coverage.py and note accesses from now on."""
        import coverage

        self.cov = coverage.Coverage(data_file=None, config_file=False, source=[self.root], branch=False)
        self.cov.start()
        self.tool_dirs = self._tools()
        sys.addaudithook(self.audit)
        sys.meta_path.insert(0, _ImportRecorder(self))
        # existence checks (os.path.exists, Path.is_file, ...) go through these; the import system's own
        # stat calls do not (it holds the posix module), and are covered by the import recorder
        accessor = getattr(pathlib, "_NormalAccessor", None)  # Python < 3.11: pathlib holds its own stat
        for name in ("stat", "lstat", "access"):
            orig = getattr(os, name)
            wrapped = self._stat_recorded(orig)
            setattr(os, name, wrapped)
            for support in (os.supports_follow_symlinks, os.supports_dir_fd, os.supports_fd, os.supports_effective_ids):
                if orig in support:
                    support.add(wrapped)
            if accessor is not None and name != "access":
                setattr(accessor, name, staticmethod(wrapped))

    def watch_imports(self):
        """Every import goes through importlib's _find_and_load, looked up on the module each time."""
        self.plain_find_and_load = importlib._bootstrap._find_and_load
        importlib._bootstrap._find_and_load = self.find_and_load

    def _tools(self):
        """Where pytest, pluggy, coverage and this probe live (all imported before any access is noted)."""
        out = [os.path.dirname(os.path.abspath(__file__)) + os.sep]  # (the probe's whole package)
        for mod in ("_pytest", "pluggy", "coverage"):
            m = sys.modules.get(mod)
            if m is not None and getattr(m, "__file__", None):
                d = os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                if not d.startswith(self.root + "/"):  # the project under test may be one of them
                    out.append(d)
        return tuple(out)

    def switch(self, context):
        self.context = context
        if self.cov is not None:
            self.cov.switch_context(context)

    def start_test(self, item):
        for name in getattr(item, "fixturenames", ()):
            self.fixture_users.setdefault(name, []).append(item.nodeid)
        self.switch(item.nodeid)
        self.order.append(item.nodeid)

    def note(self, kind, key):
        contexts = self.seen.get(kind + ":" + key)
        if contexts is None:
            contexts = self.seen[kind + ":" + key] = set()
        # a method looked up by a module's code at import is import time, whichever test imported it; a file
        # or module name looked for is the importing test's (TestMap.tests_noticing takes every test after it)
        contexts.add(self.context if kind == "attr" else self.importer or self.context)

    def note_path(self, kind, path):
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
        if (path == self.root or path.startswith(self.root + "/")) and (self.context or not self.by_a_tool()):
            self.note(kind, os.path.relpath(path, self.root))

    def by_a_tool(self):
        """Whether the code asking is pytest's, coverage's, the probe's or the import system's (which look
        for names of their own: test files, venv markers, modules), not the project's. Walking out from
        the caller through the standard library, the first other frame decides; an import in progress
        (not a project module's body reading a file at import) is the import system's. (The caller is
        three frames out: the audit hook or stat wrapper, then note_path, then this.)"""
        tools = self.tool_dirs
        f = sys._getframe(3)
        while f is not None:
            name = f.f_code.co_filename
            if name.startswith("<frozen importlib") and f.f_code.co_name in IMPORTING:
                return True
            if name.startswith(tools):
                return True
            if not ((name.startswith(STDLIB) and "site-packages" not in name) or name.startswith("<frozen")):
                return False
            f = f.f_back
        return False

    def audit(self, event, args):
        """Which files each test opens and which directories it lists: a change to a file no test can
        reach (a new notes file, a script beside the package) cannot change any outcome."""
        if event == "open" and args and args[0] is not None:
            self.note_path("open", args[0])
        elif event in ("os.listdir", "os.scandir"):
            self.note_path("list", args[0] if args and args[0] is not None else ".")

    def _stat_recorded(self, fn):
        note_path = self.note_path

        def stat(path, *args, **kwargs):
            if not isinstance(path, int):
                note_path("stat", path)
            return fn(path, *args, **kwargs)

        return stat

    def find_and_load(self, name, import_):
        """A module that a test imports first runs its body once for every test after it too: what runs
        while it loads (module and class bodies, functions they call, methods they look up) is import
        time, not the test's."""
        outer = self.context
        if not outer or self.importer:
            return self.plain_find_and_load(name, import_)
        self.importer = outer
        self.switch("")
        try:
            return self.plain_find_and_load(name, import_)
        finally:
            self.switch(outer)
            self.importer = ""

    def seen_lists(self):
        return {k: sorted(v) for k, v in self.seen.items()}

    def write_coverage(self, path):
        """Stop coverage and write the coverage map: per file, the contexts that ran each line; the lines
        run outside any test; the fixtures' users; what each context touched; the order tests ran in."""
        self.cov.stop()
        data = self.cov.get_data()
        files, import_lines = {}, {}
        for measured in data.measured_files():
            if not measured.startswith(self.root + "/"):
                continue
            rel = os.path.relpath(measured, self.root)
            by_line = data.contexts_by_lineno(measured)
            lines = {str(n): sorted(c for c in ctx if c) for n, ctx in by_line.items()}
            lines = {n: c for n, c in lines.items() if c}
            if lines:
                files[rel] = lines
            # lines run outside any test (imports, collection): a change there can affect every test
            outside = sorted(n for n, ctx in by_line.items() if "" in ctx)
            if outside:
                import_lines[rel] = outside
        with open(path, "w") as f:
            json.dump(
                {
                    "files": files,
                    "import_lines": import_lines,
                    "fixtures": self.fixture_users,
                    "seen": self.seen_lists(),
                    "order": self.order,
                },
                f,
            )


class _ImportRecorder:
    """First on sys.meta_path: notes every module name looked up past sys.modules, found or not."""

    def __init__(self, tracker):
        self.tracker = tracker

    def find_spec(self, name, path=None, target=None):
        self.tracker.note("import", name)
        return None
