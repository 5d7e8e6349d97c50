"""defined.py: each collected test runs the function its file's `def` makes, and the names a test file
imports from installed code hold what the import bound; unittest's assertions are watched like
pytest's. Real runs (conftest.Launch). The attacks are the red team's round five and its neighbours:
the project's code, imported by the test module, rewrites the module's namespace or the assertions."""

from __future__ import annotations

import pytest

from bugforge.sandbox import attacks_round20_payloads as round20

PROJECT = "pkg/__init__.py"
PKG = "def add(a, b):\n    return a - b  # the bug\n"

# shapes a correct suite has: nothing here may be reported as tampering
SHAPES = {
    PROJECT: "def add(a, b):\n    return a + b\n\n\ndef shout(fn):\n    import functools\n\n"
    "    @functools.wraps(fn)\n    def run(*a, **k):\n        return fn(*a, **k)\n\n    return run\n",
    "tests/__init__.py": "",
    "tests/base.py": "class Mixin:\n    def test_inherited(self):\n        assert self.value == 1\n",
    "tests/test_shapes.py": """
import functools
import unittest
from unittest import TestCase

import pytest

from bugforge.sandbox import attacks_round20_payloads as round20
from pytest import mark

from pkg import add, shout
from tests.base import Mixin


def test_plain():
    assert add(1, 2) == 3


@mark.parametrize("x", [1, 2])
@pytest.mark.filterwarnings("ignore")
def test_marked(x):
    assert add(x, 0) == x


@shout
def test_wrapped_by_the_project():
    assert add(0, 0) == 0


@functools.lru_cache()
def helper():
    return 1


class TestNested:
    class TestInner:
        def test_deep(self):
            assert helper() == 1


class TestWithMixin(Mixin):
    value = 1


class Case(TestCase):
    def test_equal(self):
        self.assertEqual(add(2, 2), 4)


if True:
    def test_conditional():
        assert True
else:
    def test_conditional():
        assert False


class Sub(Case):
    pass
""",
}


def test_correct_suites_of_many_shapes_have_no_false_alarm(launch):
    records, r = launch(SHAPES)
    assert launch.tampering(records) == [], r.stdout[-3000:]
    assert set(launch.outcomes(records).values()) == {"passed"}, r.stdout[-3000:]
    assert len(launch.outcomes(records)) == 9


SUITE = "from pkg import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_other():\n    assert True\n"
QUIET = """
import functools, sys


def quiet(fn):
    @functools.wraps(fn)
    def run(*a, **k):
        try:
            fn(*a, **k)
        except Exception:
            pass
    return run


def test_modules():
    for mod in list(sys.modules.values()):
        if (getattr(mod, "__file__", None) or "").rsplit("/", 1)[-1].startswith("test_"):
            yield mod
"""
ATTACKS = {
    "a module __getattr__ planted in the test module swaps its tests": QUIET
    + """
for _mod in test_modules():
    def _late(name, _ns=vars(_mod)):
        _ns.pop("__getattr__", None)
        for key, value in list(_ns.items()):
            if key.startswith("test") and callable(value):
                _ns[key] = quiet(value)
        raise AttributeError(name)
    vars(_mod)["__getattr__"] = _late
""",
    "pytest_plugins planted in the test module registers a hook that swaps item._obj": QUIET
    + """
for _mod in test_modules():
    vars(_mod)["pytest_plugins"] = ["pkg.fast"]
""",
    "a thread swaps the test functions once the test module has defined them": QUIET
    + """
import threading

sys.setswitchinterval(1e-6)


def _swap(mods=list(test_modules())):
    while True:
        for mod in mods:
            ns = vars(mod)
            if "test_add" in ns and not hasattr(ns["test_add"], "__wrapped__"):
                ns["test_add"] = quiet(ns["test_add"])
                return

threading.Thread(target=_swap, daemon=True).start()
""",
    "the test module's other test is put in place of the failing one": QUIET
    + """
for _mod in test_modules():
    def _late(name, _ns=vars(_mod)):
        _ns.pop("__getattr__", None)
        _ns["test_add"] = _ns["test_other"]
        raise AttributeError(name)
    vars(_mod)["__getattr__"] = _late
""",
    "an installed helper the test module imports is replaced before the import": "import operator\n"
    "operator.eq = lambda a, b: True\n",
    "unittest's assertEqual is rebound": "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\n",
    "the test module's unittest is replaced before it is imported": QUIET
    + """
import types, unittest
class _Quiet(unittest.TestCase):
    def assertEqual(self, *a, **k):
        pass
unittest.TestCase = _Quiet
""",
}
FAST = """
from pkg import quiet


def pytest_itemcollected(item):
    item._obj = quiet(item.obj)
"""
HELPER_SUITE = "from pkg import add\n\nfrom operator import eq\n\n\ndef test_add():\n    assert eq(add(1, 2), 3)\n"
UNITTEST_SUITE = (
    "import unittest\n\nfrom pkg import add\n\n\n"
    "class Case(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n"
)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_the_project_rewriting_the_test_module_or_its_assertions_is_tampering(launch, name):
    suite = UNITTEST_SUITE if "unittest" in name else HELPER_SUITE if "helper" in name else SUITE
    files = {PROJECT: PKG + ATTACKS[name], "pkg/fast.py": FAST, "tests/test_it.py": suite}
    records, r = launch(files)
    ran = {k.rpartition("::")[2]: v for k, v in launch.outcomes(records).items()}
    if "thread" in name and ran["test_add"] != "passed":
        return  # (the thread lost its race: the attack failed on its own)
    assert launch.tampering(records), (launch.outcomes(records), r.stdout[-3000:])
    assert ran["test_add"] == "passed"  # (the attack works, and it is caught)


# red-team round twenty (sandbox/attacks_round20.py): session.items rewritten before the grader writes it
# down (a gc callback, a signal handler, a __file__ property the grader's own check reads, a sibling's
# second item under the failing test's node id); every check is keyed by what the node id names
ROUND20 = {n: getattr(round20, n) for n in ("GC_SUBSTITUTE", "SIGNAL_SUBSTITUTE", "MODULE_FILE", "DONOR_NODEID")}
CASE20 = "import unittest\n\nimport pkg\n\n\nclass T(unittest.TestCase):\n"
SUITES20 = {
    "functions": {
        "tests/test_it.py": "import pkg\n\n\ndef test_bug():\n    assert pkg.add(1, 2) == 3\n\n\n"
        "def test_ok():\n    assert pkg.add(1, 1) == 0\n",
    },
    "unittest": {
        "tests/test_it.py": CASE20 + "    def test_bug(self):\n        self.assertEqual(pkg.add(1, 2), 3)\n\n"
        "    def test_ok(self):\n        self.assertEqual(pkg.add(1, 1), 0)\n",
    },
    "cache": {  # (cachetools' shape: the tests in a mixin of tests/__init__.py, the module bound on the class)
        "tests/__init__.py": "import pkg\n\n\nclass Mixin:\n    add = staticmethod(pkg.add)\n\n"
        "    def test_bug(self):\n        self.assertEqual(self.add(1, 2), 3)\n\n"
        "    def test_ok(self):\n        self.assertEqual(self.add(1, 1), 0)\n",
        "tests/test_it.py": "import unittest\n\nimport pkg\n\nfrom . import Mixin\n\n\n"
        "class T(unittest.TestCase, Mixin):\n    pass\n",
    },
}
FAILING20 = {"functions": "tests/test_it.py::test_bug", "unittest": "tests/test_it.py::T::test_bug"}
FAILING20["cache"] = FAILING20["unittest"]


@pytest.mark.parametrize("suite", sorted(SUITES20))
@pytest.mark.parametrize("name", sorted(ROUND20))
def test_round_twenty_collection_substitution_is_caught(launch, name, suite):
    payload = ROUND20[name].replace("@R20_F2P@", FAILING20[suite])
    files = {PROJECT: PKG + payload, **SUITES20[suite]}
    files.setdefault("tests/__init__.py", "")
    launch.caught(files)
