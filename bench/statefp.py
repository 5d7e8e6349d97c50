"""A pytest plugin for bench/state_skip.py (an experiment, not part of validation): at the end of each
test file (after its module fixtures are torn down) it fingerprints the state later tests could read,
and writes one JSON line per file and one per test outcome to $STATEFP_OUT.

The state: everything reachable from every imported module (but pytest's, pluggy's, coverage's and
bugforge's) and from session- and package-scoped fixture values, walked structurally so that the same
state gives the same fingerprint in another process whatever its addresses. Functions count by their
defaults, closures and __dict__, not their code (the change itself). Not seen: state inside C objects
that exposes no references, files, the process environment outside os.environ. Left out as unable to
change behaviour (SKIP_ATTRS): linecache, re's compiled patterns, sys.last_*, tempfile's name generator
(a forked process reseeds it), logging's start time, the standard streams (pytest's capture).

Runs under the image's Python (3.9+); imports nothing of bugforge's.
"""

import gc
import hashlib
import json
import os
import random
import re
import sys
import threading
import time
import types
import weakref

import pytest

SKIP_MODULES = (
    "_pytest",
    "pytest",
    "pluggy",
    "py",
    "iniconfig",
    "coverage",
    "bugforge_",
    "statefp",
    "_hypothesis_pytestplugin",
    "xdist",
    "execnet",
    "pytest_",
)
SKIP_ATTRS = {
    ("sys", "last_type"),
    ("sys", "last_value"),
    ("sys", "last_traceback"),
    ("sys", "last_exc"),
    ("sys", "modules"),
    ("sys", "path_importer_cache"),
    ("linecache", "cache"),
    ("re", "_cache"),
    ("re", "_cache2"),
    ("tempfile", "_name_sequence"),
    ("logging", "_startTime"),
    ("sys", "stdout"),
    ("sys", "stderr"),
    ("sys", "stdin"),
    ("sys", "__stdout__"),
    ("sys", "__stderr__"),
    ("sys", "__stdin__"),
    ("builtins", "_"),
}
ATOMS = (type(None), bool, int, float, complex, str, bytes)
OPAQUE = (types.CodeType, types.FrameType, types.TracebackType, types.GeneratorType, types.CoroutineType)
THREADS = threading._active
OPAQUE_NAMES = (
    "cell",
    "method-wrapper",
    "wrapper_descriptor",
    "method_descriptor",
    "getset_descriptor",
    "member_descriptor",
    "classmethod_descriptor",
)
ORDERED_C = {"builtins", "collections", "_collections", "functools", "itertools", "array", "_io", "io"}


def _skipped_module(name):
    return any(name == p or name.startswith(p + ".") or (p.endswith("_") and name.startswith(p)) for p in SKIP_MODULES)


def _module_of(x):
    """x's __module__ when it is a name (a class may hold a descriptor there instead), else ""."""
    mod = getattr(x, "__module__", "")
    return mod if isinstance(mod, str) else ""


def _owned_path(o):
    """ "module.qualname" when that name finds `o` itself (a class or function defined there), else None."""
    mod, qual = getattr(o, "__module__", None), getattr(o, "__qualname__", None)
    if not isinstance(mod, str) or not isinstance(qual, str) or "<" in qual:
        return None
    x = sys.modules.get(mod)
    for part in qual.split("."):
        x = getattr(x, part, None) if x is not None else None
    return mod + "." + qual if x is o else None


class Walker:
    """Walks one root; classes and functions another name owns come out as that name (walked there)."""

    def __init__(self, path=""):
        self.memo = {}  # id -> ordinal (objects kept alive in `keep` so ids stay unique)
        self.keep = []
        self.out = []
        self.path = path  # the name of what is being walked: a class or function of that name is walked

    def visit(self, o, depth=0):
        t = type(o)
        if t in ATOMS:
            self.out.append("%s:%r" % (t.__name__, o))
            return
        if self._seen(o):
            return
        if depth > 400:
            self.out.append("deep")
            return
        d = depth + 1
        for shape in (self._builtin_shape, self._named, self._callable, self._opaque):
            if shape(o, t, d):
                return
        self._instance(o, t, d)

    def _seen(self, o):
        """Whether `o` was walked already (then its ordinal is written); else it is numbered now."""
        n = self.memo.get(id(o))
        if n is not None:
            self.out.append("@%d" % n)
            return True
        self.memo[id(o)] = len(self.memo)
        self.keep.append(o)
        return False

    def _builtin_shape(self, o, t, d):
        """Modules, skipped modules' objects, and the built-in containers."""
        if isinstance(o, types.ModuleType):
            self.out.append("M:" + o.__name__)
        elif _skipped_module(_module_of(t)):
            self.out.append("X:" + t.__name__)
        elif t is tuple or t is list:
            self.out.append("%s%d[" % (t.__name__, len(o)))
            for x in o:
                self.visit(x, d)
            self.out.append("]")
        elif o is THREADS:
            self.visit(sorted(th.name for th in o.values()), d)  # (keyed by thread idents: addresses)
        elif t is dict:
            self._dict(o, d)
        elif t is set or t is frozenset:
            self._set(o, d)
        else:
            return False
        return True

    def _named(self, o, t, d):
        """Classes and functions another name owns (as that name), classes, threads."""
        if isinstance(o, type) or t is types.FunctionType:
            owned = _owned_path(o)
            if owned is not None and owned != self.path:
                self.out.append("G:" + owned)
                return True
        if isinstance(o, type):
            self._type(o, d)
            return True
        if isinstance(o, threading.Thread):  # (its idents are addresses and kernel ids)
            self.out.append("Thread:%s:%s:%s" % (o.name, o.daemon, o.is_alive()))
            return True
        return False

    def _type(self, o, d):
        self.out.append("T:%s.%s" % (_module_of(o) or "?", getattr(o, "__qualname__", "?")))
        if _module_of(o) == "builtins" or _skipped_module(_module_of(o)):
            return
        outer = self.path
        self.out.append("{")
        for k, v in list(o.__dict__.items()):
            self.path = outer + "." + str(k)
            self.visit(k, d)
            self.visit(v, d)
        self.path = outer
        self.out.append("}")

    def _callable(self, o, t, d):
        """Functions (by their defaults, closures and __dict__), bound methods, builtins, weak references."""
        if t is types.FunctionType:
            self.out.append("F:%s.%s" % (o.__module__, o.__qualname__))  # (not its code: the change itself)
            self.visit(o.__defaults__, d)
            self.visit(o.__kwdefaults__, d)
            self.visit([cell.cell_contents if _full(cell) else "<empty>" for cell in (o.__closure__ or ())], d)
            self.visit(getattr(o, "__dict__", None), d)
        elif t is types.MethodType:
            self.out.append("BM")
            self.visit(o.__self__, d)
            self.visit(o.__func__, d)
        elif t is types.BuiltinFunctionType or t is types.BuiltinMethodType:
            self.out.append("B:" + getattr(o, "__qualname__", o.__name__))
            s = getattr(o, "__self__", None)
            if s is not None and not isinstance(s, types.ModuleType):
                self.visit(s, d)
        elif isinstance(o, weakref.ref):
            self.out.append("W")
            self.visit(o(), d)
        else:
            return False
        return True

    def _opaque(self, o, t, d):
        """Objects written by their type alone (code, frames, descriptors...), and compiled patterns."""
        if isinstance(o, OPAQUE) or t.__name__ in OPAQUE_NAMES:
            self.out.append("O:" + t.__name__)
        elif isinstance(o, re.Pattern):
            self.out.append("P:%r:%d" % (o.pattern, o.flags))
        else:
            return False
        return True

    def _instance(self, o, t, d):
        """Any other object: its container contents, random's state, __dict__, slots, or (a C object)
        what the collector sees it hold."""
        mod = _module_of(t)
        self.out.append("I:%s.%s" % (mod, t.__qualname__))
        if isinstance(o, dict):
            self._dict(o, d)
        elif isinstance(o, (list, tuple)):
            self.visit(list(o), d)
        elif isinstance(o, (set, frozenset)):
            self._set(o, d)
        if mod == "random" and callable(getattr(o, "getstate", None)):  # (asked only there: getattr on a
            self.visit(o.getstate(), d)  # ctypes library loads a symbol)
        od = getattr(o, "__dict__", None)
        if isinstance(od, dict):
            self._dict(od, d)
        elif isinstance(od, types.MappingProxyType):
            self._dict(dict(od), d)
        slots = _slots(t)
        for slot in slots:
            self.visit(getattr(o, slot, "<unset>"), d)
        if od is None and not slots and not isinstance(o, (dict, list, tuple, set, frozenset)):
            self._c_object(o, t, mod, d)

    def _c_object(self, o, t, mod, d):
        """A C object: what the collector can see it holds (an lru_cache's dict, a deque's items)."""
        try:
            refs = [r for r in gc.get_referents(o) if not isinstance(r, type)]
        except (TypeError, ReferenceError):  # an object the collector cannot look into
            refs = []
        if t.__name__ == "_abc_data" or mod.split(".")[0] not in ORDERED_C:  # (a set's order: addresses)
            self._set(refs, d)
        else:
            self.visit(refs, d)

    def _dict(self, o, d):
        self.out.append("{%d" % len(o))
        for k, v in list(o.items()):
            self.visit(k, d)
            self.visit(v, d)
        self.out.append("}")

    def _set(self, o, d):
        parts = []
        for x in list(o):  # each member on its own, so the order met cannot show in the numbering; a
            w = Walker(self.path)  # member is hashable, so mostly a value: walked three levels deep
            w.visit(x, max(d, 397))
            parts.append("".join(w.out))
        self.out.append("set%d[%s]" % (len(parts), "|".join(sorted(parts))))


def _full(cell):
    try:
        cell.cell_contents  # noqa: B018  (the read is the test)
        return True
    except ValueError:
        return False


def _slots(t):
    names = []
    for k in t.__mro__:
        s = k.__dict__.get("__slots__", ())
        names += [s] if isinstance(s, str) else [x for x in s if x not in ("__dict__", "__weakref__")]
    return names


def fingerprint(fixture_values):
    gc.collect()
    per_module, n = {}, 0
    for name in sorted(sys.modules):
        m = sys.modules[name]
        if m is None or _skipped_module(name) or not isinstance(m, types.ModuleType):
            continue
        w = Walker()
        attrs = getattr(m, "__dict__", {})
        for k in sorted(attrs, key=str):
            if k in ("__builtins__", "__loader__", "__spec__", "__cached__") or (name, k) in SKIP_ATTRS:
                continue
            w.path = name + "." + str(k)
            w.out.append("." + str(k))
            w.visit(attrs[k])
        per_module[name] = hashlib.blake2b("\n".join(w.out).encode("utf-8", "replace"), digest_size=8).hexdigest()
        n += len(w.memo)
    w = Walker()
    for v in fixture_values:
        w.visit(v)
    per_module["<fixtures>"] = hashlib.blake2b("\n".join(w.out).encode("utf-8", "replace"), digest_size=8).hexdigest()
    n += len(w.memo)
    total = hashlib.blake2b(json.dumps(per_module, sort_keys=True).encode(), digest_size=16).hexdigest()
    return total, per_module, n


_out = None
_session = None


def _write(rec):
    global _out
    if _out is None:
        _out = open(os.environ["STATEFP_OUT"], "a", buffering=1)
    _out.write(json.dumps(rec) + "\n")


def pytest_sessionstart(session):
    global _session
    _session = session
    random.seed(0)  # (what a fork server's processes would share: the state at the fork)


def _fixture_values():
    vals = []
    fm = getattr(_session, "_fixturemanager", None)
    for defs in (getattr(fm, "_arg2fixturedefs", {}) or {}).values():
        for fd in defs:
            res = getattr(fd, "cached_result", None)
            if res is not None and getattr(fd, "scope", "") in ("session", "package"):
                vals.append(res[0])
    return vals


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield
    path = item.nodeid.split("::")[0]
    if nextitem is None or nextitem.nodeid.split("::")[0] != path:
        t0 = time.perf_counter()
        try:
            total, per_module, n = fingerprint(_fixture_values())
        except Exception as e:  # noqa: BLE001 - the walk runs objects' own code; a failed walk is recorded, never equal to anything
            total, per_module, n = "error:%s:%s" % (type(e).__name__, e), {}, 0
        _write(
            {
                "file": path,
                "after": item.nodeid,
                "fp": total,
                "modules": per_module,
                "objects": n,
                "seconds": round(time.perf_counter() - t0, 4),
            }
        )


def pytest_runtest_logreport(report):
    if report.failed or (report.when == "call") or report.skipped:
        _write({"test": report.nodeid, "when": report.when, "outcome": report.outcome})
