"""Tamper evidence inside the test process: everything a verdict passes through keeps its identity.

`snapshot` runs when the probe is imported, which start.py makes happen before any code of the tree is
importable. It records, for every module of pytest, pluggy and the probe's own package, and for the
standard-library modules the probe's records pass through (VERDICT_STDLIB), every attribute of the
module and of every class defined there (its whole `__dict__`, so an added attribute counts too), and
the code, defaults and keyword defaults of every function among them. Nothing is picked by hand.
unittest's modules (ASSERTING: TestCase's assertions) are recorded likewise. `compare` (the monitor
runs it) checks: in the STRICT modules (the verdict's own path, the assertions of unittest and pytest)
nothing may be rebound (but the assertions' plain-data settings), and nothing added that hides a base
class's method or property; elsewhere a change is allowed only to a value whose behaviour comes from
installed files alone, what it holds included (pytest and its plugins rebind things while they run).
No function's code may be swapped.

The monitor runs `compare` before the first test, after each and at the finish (`problems` adds: a
late reporting hook of the project's non-test code, the probe's hooks unregistered, a test with more
than one outcome or none). docs/security.md says what this catches. Python 3.9, standard library."""

import itertools
import operator
import os
import sys
import types

from .installed import BUILTIN_NAMES, functions_of, installed_dirs, installed_value, named_like_test, plain_keys

RUNNER = ("pytest", "_pytest", "pluggy", "bugforge_incontainer")
# the standard library's own assertions (unittest's TestCase), loaded by start.py before the tree
ASSERTING = ("unittest",)
# the standard library the probe's records pass through on their way to the collector, and what unittest's
# assertions call (round 17 replaced re.compile for assertRegex)
VERDICT_STDLIB = (
    "builtins", "json", "json.encoder", "json.decoder", "json.scanner", "_json", "os", "posix", "posixpath",
    "socket", "_socket", "select", "struct", "_struct", "threading", "_thread", "time", "io", "_io", "types",
    "signal", "_signal", "sys", "traceback", "linecache", "inspect", "importlib", "warnings",
    "re", "difflib", "pprint", "collections", "contextlib", "functools",
)  # fmt: skip
# the verdict's own path: nothing here may be rebound at all, whatever code does it
STRICT = (
    "_pytest.runner", "_pytest.reports", "_pytest.outcomes", "_pytest.skipping", "_pytest.python", "_pytest.main",
    "_pytest.unittest", "_pytest.nodes", "_pytest.capture", "pluggy", "bugforge_incontainer", "json", "_json",
    "socket", "_socket", "pytest", "_pytest.python_api", "_pytest.raises", "_pytest.recwarn", *ASSERTING,
)  # fmt: skip
# plain data a strict namespace of the assertions may be given (settings such as TestCase.maxDiff): no behaviour
_SETTING_IDS = frozenset(map(id, (type(None), bool, int, float, str)))
_MISSING = object()
# what pytest (and the interpreter) record of a failure for a post-mortem debugger: data no check reads,
# whose value is the failing test's exception, of the tree's class as often as not
_POSTMORTEM = frozenset(("last_type", "last_value", "last_traceback", "last_exc"))
HOOKS = (
    "pytest_runtest_protocol", "pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown",
    "pytest_runtest_makereport", "pytest_runtest_logreport", "pytest_report_teststatus", "pytest_pyfunc_call",
    "pytest_collection_modifyitems", "pytest_itemcollected", "pytest_pycollect_makeitem",
    "pytest_make_collect_report", "pytest_collection_finish", "pytest_deselected", "pytest_sessionfinish",
)  # fmt: skip
MAX_REASONS = 10


_STATE = tuple(operator.attrgetter(a) for a in ("__code__", "__defaults__", "__kwdefaults__"))


def _state(fn):
    return tuple(get(fn) for get in _STATE)


def _under(name, prefixes):
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _record(where, owner, namespace, strict, entries, functions):
    keys = tuple(namespace)
    values = tuple(namespace[k] for k in keys)
    entries.append((where, owner, namespace, keys, values, frozenset(keys), strict))
    for key, value in zip(keys, values):
        for fn in functions_of(value):
            functions.append(("%s.%s" % (where, key), fn))


def _shadows(namespace_owner, key):
    """Whether adding `key` to a class hides behaviour a base class gives (a method, a property)."""
    if not isinstance(namespace_owner, type):
        return False
    for base in namespace_owner.__mro__[1:]:
        if key in vars(base):
            hidden = vars(base)[key]
            return callable(hidden) or hasattr(type(hidden), "__get__")
    return False


def _entry_problems(entry, installed, root):
    """Why one recorded namespace (a module's, a class's) is not as recorded: see the module doc."""
    where, owner, namespace, keys, values, keyset, strict = entry
    out = []
    settings = strict and _under(where, ASSERTING)
    postmortem = _POSTMORTEM if owner is sys else ()
    for key, value in zip(keys, values):
        now = namespace.get(key, _MISSING)
        if key in postmortem:
            continue
        if settings and id(type(now)) in _SETTING_IDS and id(type(value)) in _SETTING_IDS:  # (ids: no __eq__ runs)
            continue
        if now is not value and (strict or now is _MISSING or not installed_value(now, installed, root)):
            out.append("%s.%s was replaced during the run" % (where, key))
    for key in sorted(set(namespace) - keyset, key=str):
        now = namespace.get(key)
        if type(now) is types.ModuleType or key == "__warningregistry__" or key in postmortem:
            continue  # a submodule imported since; the warnings module's own registry
        if type(owner) is types.ModuleType and key in BUILTIN_NAMES:
            out.append("%s.%s was added during the run, shadowing the builtin" % (where, key))
        elif not installed_value(now, installed, root) or (strict and (key.startswith("__") or _shadows(owner, key))):
            out.append("%s.%s was added during the run" % (where, key))
    return out


def _accept(entry):
    """A namespace's state, judged clean: its keys, values, and the functions among its changed values
    with their code (a change to an accepted function's code is a change of the namespace)."""
    namespace, keys, values = entry[2], entry[3], entry[4]
    then = dict(zip(keys, values))
    now_keys = tuple(namespace)
    now_values = tuple(map(namespace.get, now_keys))
    fns = tuple(
        v for k, v in zip(now_keys, now_values) if type(v) is types.FunctionType and then.get(k, _MISSING) is not v
    )
    return now_keys, now_values, fns, tuple(f.__code__ for f in fns)


_CODE, _VALUES, _CHAIN = operator.attrgetter("__code__"), operator.methodcaller("values"), itertools.chain.from_iterable


def _flatten(entries, accepted):
    """The recorded (or accepted) state of every namespace not checked alone, in flat tuples: (the
    namespaces, their lengths, their keys and values in order, accepted functions, their code)."""
    nss, lens, keys, values, fns, codes = [], [], [], [], [], []
    for i, entry in enumerate(entries):
        if i in accepted.get("volatile", ()):
            continue
        base = accepted.get(i)
        nss.append(entry[2])
        lens.append(len(base[0] if base else entry[3]))
        keys.extend(base[0] if base else entry[3])
        values.extend(base[1] if base else entry[4])
        if base:
            fns.extend(base[2])
            codes.extend(base[3])
    return tuple(nss), tuple(lens), tuple(keys), tuple(values), tuple(fns), tuple(codes)


def unchanged(flat, keys=True, _is=operator.is_, _eq=operator.eq, _map=map, _all=all, _len=len):
    """Whether each namespace holds exactly its recorded keys (unless not `keys`: as many), in order,
    bound to the same objects: passes at C speed that compare identities and look nothing up (so a key
    of the tree's own class, whose lookup would run its code, fails the comparison instead)."""
    nss, lens, names, values, fns, codes = flat
    return (
        _all(_map(_eq, _map(_len, nss), lens))
        and _all(_map(_is, _CHAIN(_map(_VALUES, nss)), values))
        and (not keys or _all(_map(_is, _CHAIN(nss), names)))
        and _all(_map(_is, _map(_CODE, fns), codes))
    )


def compare(snap, whole=True, accepted=None):
    """Why the watched objects are not as `snap` (Integrity.snapshot) holds them. Its helpers are bound
    at definition, so rebinding this module's names cannot blind it; the monitor (monitor.py) holds
    `snap`, `accepted` and this function, out of the tree's reach.
    - `accepted`: a dict the caller keeps between calls, of each namespace's state the last time it
      was judged clean (pytest's lazy attributes, legacypath's properties), flattened: when nothing
      changed since, the whole check is identity passes at C speed (about 0.3 ms for 12,000
      attributes), not a loop over 600 namespaces: lengths and values in order between tests, the
      keys too when `whole`. A namespace that changed once is checked alone from then on (warnings',
      pytest's lazily set ones).
    - The functions' code and defaults are compared only when `whole` (the session's finish): every
      way of setting them raises an audit event, on which the monitor flags a watched function at once
      (reading `__code__` raises one too, which makes comparing them all the costliest part)."""
    entries, functions, installed, root = snap
    accepted = {} if accepted is None else accepted
    volatile = accepted.setdefault("volatile", {})  # index -> its flat state, checked alone
    if "flat" not in accepted:
        accepted["flat"] = _flatten(entries, accepted)
    if unchanged(accepted["flat"], keys=whole):  # (between tests: the same values, in order, in as many keys)
        changed = [i for i, flat in volatile.items() if not unchanged(flat)]
    else:
        changed = [i for i in range(len(entries)) if not unchanged(_flatten([entries[i]], _one(accepted, i)))]
    odd = ["%s holds a key that is not a string" % entries[i][0] for i in changed if not plain_keys(entries[i][2])]
    if odd:  # (then no lookup in it: each would run the key's code)
        return odd[:MAX_REASONS]
    out = []
    for i in changed:
        reasons = _entry_problems(entries[i], installed, root)
        out += reasons
        if not reasons:
            accepted[i] = _accept(entries[i])
            if i not in volatile:  # (leaves the flat state checked together)
                accepted.pop("flat", None)
            volatile[i] = _flatten([entries[i]], _one(accepted, i))
    if "flat" not in accepted:
        accepted["flat"] = _flatten(entries, accepted)
    return (out + _functions_and_hooks(functions, installed, root, whole))[:MAX_REASONS]


def _one(accepted, i):
    """The accepted state of namespace i, as _flatten reads it for a list of that one entry."""
    return {0: accepted[i]} if i in accepted else {}


def _functions_and_hooks(functions, installed, root, whole, _is=operator.is_, _map=map, _all=all):
    out = []
    wheres, fns, states = functions
    if whole and not _all(_all(_map(_is, _map(get, fns), then)) for get, then in zip(_STATE, states)):
        for where, fn, *state in zip(wheres, fns, *states):
            if not _all(_map(_is, _state(fn), state)):
                out.append("the code of %s was swapped during the run" % where)
    for name, get in (("trace", sys.gettrace), ("profile", sys.getprofile)):
        fn = get()
        if fn is not None and not installed_value(fn, installed, root):
            out.append("a %s function from outside the installed code is set" % name)
    return out


class Integrity:
    def __init__(self, root, own_dir):
        self.root = root.rstrip("/") + "/"
        self.own_dir = own_dir
        self.snap = ((), ((), (), ()), (), self.root)  # what snapshot() records (compare's argument)
        self.configured = set()  # (hook, function) pairs registered when pytest was configured
        self.hookexec = None
        self.counts = {}  # node id -> outcomes reported

    def snapshot(self):
        """Record the identity of everything in the watched modules and their classes (see module doc)."""
        entries, functions = [], []
        for name, module in sorted(sys.modules.items()):
            if module is None or not (name in VERDICT_STDLIB or _under(name, RUNNER + ASSERTING)):
                continue
            strict = _under(name, STRICT)
            _record(name, module, vars(module), strict, entries, functions)
            for key, obj in list(vars(module).items()):
                if isinstance(obj, type) and getattr(obj, "__module__", None) == name:
                    _record("%s.%s" % (name, key), obj, obj.__dict__, strict, entries, functions)
        # (where, function) pairs, and per attribute of _STATE the values they had: compared at C speed
        functions = (
            tuple(w for w, _ in functions),
            tuple(f for _, f in functions),
            tuple(tuple(get(f) for _, f in functions) for get in _STATE),
        )
        self.snap = (tuple(entries), functions, installed_dirs(self.root), self.root)

    @staticmethod
    def collected(items):
        """The tests' own functions as collected, for the monitor to check at each test's end: a test must
        run the function it collected. ((node id, item, its obj, the function, its code state), ...)"""
        out = []
        for item in items:
            obj = getattr(item, "obj", None)
            fn = getattr(obj, "__func__", obj)
            if isinstance(fn, types.FunctionType):
                out.append((item.nodeid, item, obj, fn, _state(fn)))
        return tuple(out)

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
        """Whether a hook implemented in `filename` may shape reports: installed code or the tree's test
        files, never the project's other code nor a file anywhere else the test user can write."""
        path = os.path.abspath(filename or "")
        if not path.startswith(self.root):
            return (os.path.realpath(path) + "/").startswith(self.snap[2])  # (installed: root's to write)
        return named_like_test(os.path.basename(path))

    def _late_hooks(self, config):
        out = []
        for name in HOOKS:
            caller = getattr(config.hook, name, None)
            for impl in caller.get_hookimpls() if caller is not None else ():
                code = getattr(impl.function, "__code__", None)
                where = getattr(code, "co_filename", "") if code is not None else ""
                if (name, impl.function) not in self.configured and (code is None or not self._allowed(where)):
                    out.append(
                        "%s is implemented in %s (%s)" % (name, where or "code without source", impl.plugin_name)
                    )
        return out

    def problems(self, session, exitstatus, probe_hooks):
        """Every reason the run cannot be trusted, at the session's finish."""
        config = session.config
        out = self._late_hooks(config)
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
