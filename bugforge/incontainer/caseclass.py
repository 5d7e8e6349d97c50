"""What a test's class and its TestCase instance may be at the test's end (witness.py's exit check):
its class as collected, bases and callables by identity, and a type-equality registry its classes vouch
for. Run in the monitor thread on the tree's objects: exact types, identities and C-level reads only, no
method of the tree's classes runs. Python 3.9, standard library only."""

import itertools
import operator
import types
import unittest

from .installed import CLASS_DICT, MRO, binds, plain_keys
from .integrity import unchanged

# TestCase's own registry, as every instance starts with it: (type, the name of its method)
DEFAULT_REGISTRY = tuple(unittest.TestCase()._type_equality_funcs.items())


def class_state(cls):
    """A test's class as it runs its tests: its MRO, and each of its classes' descriptors and callables
    (functions, properties, classes, anything an instance's lookup binds or a call runs: what
    `self.assertX` and the lookup hooks resolve to) by name and identity; other data (setUpClass's) may
    change. None where a namespace holds a key that is not a string (no lookup in it then)."""
    mro = MRO(cls)
    if not all(plain_keys(CLASS_DICT(c)) for c in mro):
        return None
    found = [(k, v) for c in mro[:-1] for k, v in CLASS_DICT(c).items() if _descriptor(v) or callable(v)]
    return mro, tuple(k for k, _ in found), tuple(v for _, v in found)


_BINDS = frozenset(map(id, (types.FunctionType, staticmethod, classmethod, property)))
_DATA = frozenset(map(id, (type(None), bool, int, float, str, bytes, tuple, list, dict, set, frozenset)))


def _descriptor(value):
    """Whether a class's attribute binds on lookup (its class's namespaces read plainly: no code runs;
    one whose keys are not all strings counts as binding)."""
    kind = type(value)
    if id(kind) in _BINDS or id(kind) in _DATA:
        return id(kind) in _BINDS
    return binds(kind)


_CHAIN, _VALUES = itertools.chain.from_iterable, operator.methodcaller("values")


def class_flat(cls):
    """A test's class as it is, for the cheap check between two full ones: its MRO, and its classes'
    namespaces (not object's) flattened as integrity.unchanged compares them (lengths, keys and values in
    order). Each pass is C (a type's namespace is a plain dict: no code of the tree runs)."""
    mro = MRO(cls)
    nss = tuple(map(CLASS_DICT, mro[:-1]))
    return mro, (nss, tuple(map(len, nss)), tuple(_CHAIN(nss)), tuple(_CHAIN(map(_VALUES, nss))), (), ())


def _flat_same(cls, then):
    """Whether nothing of a test's class changed since `then` (class_flat): the same MRO and the same
    keys bound to the same objects, by identity."""
    mro, flat = then
    now = MRO(cls)
    return len(now) == len(mro) and all(x is y for x, y in zip(now, mro)) and unchanged(flat)


def _same(a, b):
    return type(a) is tuple and type(b) is tuple and len(a) == len(b) and all(x is y for x, y in zip(a, b))


def registry_vouched(case, funcs, registered):
    """Whether a TestCase instance's type-equality registry (what assertEqual calls for a type) holds
    only what the test vouches for: TestCase's own defaults (a name for a type), and asserters the test's
    own code registered through addTypeEqualityFunc (`registered(case, type, asserter)`: casecode.py,
    round 16). Exact types and identities only: no code of the tree's objects runs here."""
    if type(funcs) is not dict:  # (TestCase.__init__ gives every instance its own; not the class's, round 14)
        return False
    return all(
        any(k is t and type(f) is str and f == name for t, name in DEFAULT_REGISTRY)  # (a name: rounds 14, 15)
        or registered(case, k, f)
        for k, f in funcs.items()
    )


def as_collected(case, cls, state, verified):
    """Whether a test's TestCase instance is of its collected class, whose bases and callables are as
    collected (`state`: class_state then). A class unchanged since its last full check, its data too,
    by identity (`verified`: id of a class -> (the class, class_flat then)), skips it."""
    if type(case) is not cls:
        return False
    last = verified.get(id(cls))
    if last is not None and last[0] is cls and _flat_same(cls, last[1]):
        return True
    now = class_state(cls)
    if now is None or not all(map(_same, now, state)):
        return False
    verified[id(cls)] = (cls, class_flat(cls))
    return True
