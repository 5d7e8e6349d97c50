"""origin.py (who caused an event) and the collected MRO (witness.py): red-team rounds eighteen and
nineteen (sandbox/attacks_round18.py, _round19.py: code compiled under a test file's name, capabilities
used from finalizers the collector runs or from C callables the interpreter calls, the grader's own heap
indexer among them, a metaclass's mro() in the collected classes) are caught, and the tests' own walks
and registrations raise no false alarm. Real runs (conftest.Launch)."""

from __future__ import annotations

import pytest

from bugforge.sandbox import attacks_round18_payloads as round18
from bugforge.sandbox import attacks_round19_payloads as round19

PKG = "def add(a, b):\n    return a - b  # the bug\n"
ROUND18 = {
    n: getattr(round18, n)
    for n in ("COLLECTED_MRO", "SPOOFED_RELAY", "SPOOFED_REGISTERED", "FINALIZER_REGISTERED", "FINALIZER_RELAY")
}
# round nineteen: the grader's own heap indexer (hotswap.LiveCode.index) run by C callables the interpreter
# calls in frames that never asked for it
ROUND19 = {
    n: getattr(round19, n)
    for n in ("DEAD_MODULE", "COLLECTION_GETATTR", "WARNING_STR", "LINECACHE_DROP", "GLOBALS_KEY")
}
CASE = "import unittest\n\nimport pkg\n\n\nclass T(unittest.TestCase):\n"
SUITES = {
    "functions": {
        "tests/__init__.py": "",
        "tests/test_it.py": "import pkg\n\n\ndef test_bug():\n    assert pkg.add(1, 2) == 3\n\n\n"
        "def test_ok():\n    assert pkg.add(1, 1) == 0\n",
    },
    "unittest": {
        "tests/__init__.py": "",
        "tests/test_it.py": CASE + "    def test_bug(self):\n        self.assertEqual(pkg.add(1, 2), 3)\n\n"
        "    def test_ok(self):\n        self.assertEqual(pkg.add(1, 1), 0)\n",
    },
    "mixin": {
        "tests/__init__.py": "class Mixin:\n    def test_bug(self):\n        import pkg\n"
        "        self.assertEqual(pkg.add(1, 2), 3)\n",
        "tests/test_it.py": "import unittest\n\nfrom . import Mixin\n\n\nclass T(unittest.TestCase, Mixin):\n    pass\n",
    },
    "two": {  # (two test modules import the module; one holds two classes)
        "tests/__init__.py": "",
        "tests/test_a.py": CASE + "    def test_ok(self):\n        self.assertEqual(pkg.add(1, 1), 0)\n",
        "tests/test_it.py": CASE + "    def test_bug(self):\n        self.assertEqual(pkg.add(1, 2), 3)\n\n\n"
        "class U(unittest.TestCase):\n    def test_ok(self):\n        self.assertEqual(pkg.add(2, 2), 0)\n",
    },
}


@pytest.mark.parametrize("suite", sorted(SUITES))
@pytest.mark.parametrize("name", sorted(ROUND18))
def test_round_eighteen_is_caught(launch, name, suite):
    launch.caught({"pkg/__init__.py": PKG + ROUND18[name], **SUITES[suite]})


@pytest.mark.parametrize("suite", sorted(SUITES))
@pytest.mark.parametrize("name", sorted(ROUND19))
def test_round_nineteen_is_caught(launch, name, suite):
    launch.caught({"pkg/__init__.py": PKG + ROUND19[name], **SUITES[suite]})


def test_the_tests_own_walk_and_registration_raise_no_false_alarm(launch):
    """A test that walks the heap itself (a leak check) and registers an asserter in setUp: no tamper."""
    test = CASE + "    def setUp(self):\n        self.addTypeEqualityFunc(int, self.same)\n\n"
    test += "    def same(self, a, b, msg=None):\n        assert a == b\n\n"
    test += "    def test_leak(self):\n        import gc\n\n        box = [pkg.add(1, 1)]\n"
    test += "        self.assertEqual(len(gc.get_referrers(box)), 0)\n        self.assertEqual(box[0], 0)\n"
    records, r = launch({"pkg/__init__.py": PKG, "tests/__init__.py": "", "tests/test_it.py": test})
    assert launch.tampering(records) == [], r.stdout[-2000:]
    assert set(launch.outcomes(records).values()) == {"passed"}, r.stdout[-2000:]


def test_a_walk_compiled_under_a_test_files_name_is_the_trees(launch):
    """Code the tree compiles as `tests/test_x.py` is not the tests' own: the compile itself is tampering
    now (names.py, round 24), refused before the walk could run."""
    walk = "\n\ndef sneak():\n    ns = {}\n    exec(compile('import gc\\nn = len(gc.get_objects())', "
    walk += "__file__.rsplit('/', 2)[0] + '/tests/test_x.py', 'exec'), ns)\n    return ns['n']\n"
    test = "import pkg\n\n\ndef test_it():\n    assert pkg.sneak() > 0\n"
    records, _ = launch({"pkg/__init__.py": PKG + walk, "tests/__init__.py": "", "tests/test_it.py": test})
    assert any("compiled code under the name of a test file" in t for t in launch.tampering(records))


FIND_STATE = (
    "import gc\nimport types\n\n\ndef grader_state():\n"
    "    holders = [o for o in gc.get_objects() if type(o) is dict and ({'fd', 'key', 'seq'} <= set(o)\n"
    "               or 'volatile' in o or 'tests/test_it.py::test_walk' in o)]\n"
    "    own = [o for o in gc.get_objects() if type(o) is types.FunctionType\n"
    "           and o.__code__.co_filename.endswith(('monitor.py', 'handoff.py', 'origin.py'))]\n"
    "    return holders + own\n\n\n"
)


def test_no_walk_sees_the_graders_state_not_even_an_allowed_one(launch):
    """The tests' own code may walk the heap (a leak check); even such a walk, the one that origin.py
    lets through, never finds the monitor's state or functions (frozen before the tree's first line:
    gc.get_objects and gc.get_referrers read no frozen object), also after gc.unfreeze, which no audit
    event tells (the walk's own event freezes again first)."""
    test = FIND_STATE + "def test_walk():\n    assert grader_state() == []\n    gc.unfreeze()\n"
    test += "    assert grader_state() == []\n    gc.unfreeze()\n    assert not gc.get_referrers(gc.get_objects)\n"
    records, r = launch({"pkg/__init__.py": PKG, "tests/__init__.py": "", "tests/test_it.py": test})
    assert launch.tampering(records) == [], r.stdout[-2000:]
    assert launch.outcomes(records) == {"test_walk": "passed"}, r.stdout[-3000:]


def test_reading_memory_at_an_address_is_the_trees_tampering(launch):
    """ctypes.string_at (any address: the run's key is in memory) from the tree's code: refused, tampering
    (ctypes is already imported, by the grader's start: its import is no barrier)."""
    peek = "\n\ndef peek():\n    import ctypes\n\n    return ctypes.string_at(id(b'x'), 8)\n"
    test = "import pkg\n\n\ndef test_it():\n    assert pkg.peek()\n"
    records, _ = launch({"pkg/__init__.py": PKG + peek, "tests/__init__.py": "", "tests/test_it.py": test})
    assert any("read raw memory (ctypes)" in t for t in launch.tampering(records))


def test_an_installed_librarys_own_native_loads_at_its_import_are_not_the_trees(launch):
    """dill resolves C functions through ctypes when imported; a package of the tree that imports it is
    not refused (issue 38: datasets could not be collected), while the tree's own lookup still is."""
    pytest.importorskip("dill")
    pkg = "import dill  # noqa: F401\n\n" + PKG + "\n\ndef lookup():\n    import ctypes\n\n"
    pkg += "    return ctypes.pythonapi.Py_GetVersion\n"
    test = "import pkg\n\n\ndef test_it():\n    assert pkg.add(1, 1) == 0\n\n\ndef test_lookup():\n    pkg.lookup()\n"
    records, r = launch({"pkg/__init__.py": pkg, "tests/__init__.py": "", "tests/test_it.py": test})
    assert launch.outcomes(records) == {"test_it": "passed", "test_lookup": "failed"}, r.stdout[-2000:]
    assert launch.tampering(records) == ["code of the tree loaded native code (ctypes) (ctypes.dlsym)"]
