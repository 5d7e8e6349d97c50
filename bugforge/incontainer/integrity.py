"""Tamper evidence inside the test process: what the probe checks when the session finishes.

Integrity records, when the probe is imported (before any conftest or project module), the objects
pytest's reporting path is made of; at session finish it reports (`tamper` events) any of them
replaced or any function of pytest or pluggy running other code, any implementation of a reporting hook registered after pytest was configured that lives in the
project's non-test code (later hooks may come from installed plugins, this probe, conftest.py files
and test modules, which the sweep restores), the probe's own hooks no longer registered as installed, and any test that produced
more than one outcome, or, in a run that went to its end, none. docs/security.md says what this does and does not catch. Python 3.9."""

import os
import sys
import types

# pytest's reporting path: (module, attribute path) pairs whose objects must stay the ones imported
WATCHED = [
    ("_pytest.runner", "call_and_report"),
    ("_pytest.runner", "runtestprotocol"),
    ("_pytest.runner", "call_runtest_hook"),
    ("_pytest.runner", "CallInfo.from_call"),
    ("_pytest.runner", "pytest_runtest_makereport"),
    ("_pytest.reports", "TestReport.from_item_and_call"),
    ("_pytest.reports", "TestReport.__init__"),
    ("_pytest.reports", "BaseReport.passed"),
    ("_pytest.reports", "BaseReport.failed"),
    ("_pytest.python", "Function.runtest"),
    ("_pytest.python", "pytest_pyfunc_call"),
    ("_pytest.skipping", "pytest_runtest_makereport"),
    ("_pytest.main", "pytest_runtestloop"),
    ("_pytest.outcomes", "fail"),
    ("_pytest.outcomes", "skip"),
    ("pluggy._callers", "_multicall"),
    ("pluggy._hooks", "HookCaller.__call__"),
]
HOOKS = (
    "pytest_runtest_protocol",
    "pytest_runtest_setup",
    "pytest_runtest_call",
    "pytest_runtest_teardown",
    "pytest_runtest_makereport",
    "pytest_runtest_logreport",
    "pytest_report_teststatus",
    "pytest_pyfunc_call",
    "pytest_collection_modifyitems",
    "pytest_deselected",
    "pytest_sessionfinish",
)


def _function(obj):
    """The plain function behind a function, classmethod, staticmethod or property (else None)."""
    if isinstance(obj, (classmethod, staticmethod)):
        obj = obj.__func__
    elif isinstance(obj, property):
        obj = obj.fget
    return obj if isinstance(obj, types.FunctionType) else None


def _functions():
    """(module, qualified name) -> (function, its code object), for every function of pytest and pluggy."""
    out = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name in ("pytest", "pluggy") or name.startswith(("_pytest.", "pluggy."))):
            continue
        for key, obj in list(vars(module).items()):
            members = [(key, obj)]
            if isinstance(obj, type) and obj.__module__ == name:
                members += [(key + "." + k, v) for k, v in list(vars(obj).items())]
            for qual, member in members:
                fn = _function(member)
                if fn is not None:
                    out[(name, qual)] = (fn, fn.__code__)
    return out


def _lookup(module, path):
    obj = sys.modules.get(module)
    for name in path.split("."):
        if obj is None:
            return None
        obj = obj.__dict__.get(name) if hasattr(obj, "__dict__") else getattr(obj, name, None)
    return obj


class Integrity:
    def __init__(self, root, own_dir):
        self.root = root.rstrip("/") + "/"
        self.own_dir = own_dir
        self.watched = {}
        self.functions = {}
        self.configured = set()  # (hook, function) pairs registered when pytest was configured
        self.hookexec = None
        self.counts = {}  # node id -> outcomes reported

    def snapshot(self):
        import _pytest.main  # noqa: F401  (the modules whose objects are watched)
        import _pytest.python  # noqa: F401
        import _pytest.reports  # noqa: F401
        import _pytest.runner  # noqa: F401
        import _pytest.skipping  # noqa: F401

        self.watched = {(m, p): _lookup(m, p) for m, p in WATCHED}
        self.functions = _functions()

    def configure(self, config):
        """The hooks registered once pytest is configured: the project's own plugins among them."""
        self.hookexec = getattr(config.pluginmanager, "_inner_hookexec", None)
        for name in HOOKS:
            caller = getattr(config.hook, name, None)
            for impl in caller.get_hookimpls() if caller is not None else ():
                self.configured.add((name, impl.function))

    def outcome(self, nodeid):
        self.counts[nodeid] = self.counts.get(nodeid, 0) + 1

    def _allowed(self, filename):
        """Whether a hook implemented in `filename` may shape reports: not the project's non-test code."""
        path = os.path.abspath(filename or "")
        if not path.startswith(self.root) or path.startswith(self.own_dir):
            return True
        name = os.path.basename(path)
        return name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")

    def problems(self, session, exitstatus, probe_hooks):
        config = session.config
        out = []
        for (module, path), obj in sorted(self.watched.items()):
            if obj is not None and _lookup(module, path) is not obj:
                out.append("pytest's %s.%s was replaced during the run" % (module, path))
        for key, (fn, code) in sorted(self.functions.items()):
            if fn.__code__ is not code:  # the same function object running other code
                out.append("the code of pytest's %s.%s was swapped during the run" % key)
        for name in HOOKS:
            caller = getattr(config.hook, name, None)
            for impl in caller.get_hookimpls() if caller is not None else ():
                code = getattr(impl.function, "__code__", None)
                where = getattr(code, "co_filename", "") if code is not None else ""
                if (name, impl.function) in self.configured:
                    continue
                if code is None or not self._allowed(where):
                    out.append(
                        "%s is implemented in %s (%s)" % (name, where or "code without source", impl.plugin_name)
                    )
        if self.hookexec is not None and getattr(config.pluginmanager, "_inner_hookexec", None) is not self.hookexec:
            out.append("pluggy's hook execution was replaced during the run")
        for name, function in probe_hooks.items():
            impls = getattr(config.hook, name).get_hookimpls()
            if not any(i.function is function for i in impls):
                out.append("the probe's %s is no longer registered" % name)
        out += ["%s reported %d outcomes" % (n, c) for n, c in sorted(self.counts.items()) if c > 1]
        if int(exitstatus) in (0, 1) and not (session.shouldstop or session.shouldfail):  # a run to its end
            out += [
                "%s was selected and produced no outcome" % i.nodeid
                for i in session.items
                if i.nodeid not in self.counts
            ]
        return out
