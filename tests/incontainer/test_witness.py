"""witness.py: each test function of the test files tells the monitor, from its own frame, how it ended;
a pass its own function did not earn (it raised, or never ran) is tampering, however pytest's machinery
was bent to report it. Real runs (conftest.Launch): correct suites of many shapes have no false alarm;
red-team rounds six to eleven (sandbox/attacks_roundN.py: each beat the graders of
its day) and a test module imported around the grader's compilation are caught."""

from __future__ import annotations

import pytest

from bugforge.sandbox import attacks_round11_payloads as round11
from bugforge.sandbox import attacks_round12_payloads as round12
from bugforge.sandbox import attacks_round13_payloads as round13
from bugforge.sandbox import attacks_round14_payloads as round14
from bugforge.sandbox import attacks_round15_payloads as round15
from bugforge.sandbox.attacks import (  # (attacks.py imports each round after its own names)
    round6,
    round7,
    round8,
    round9,
    round10,
)

SHAPES = {
    "pkg/__init__.py": "def add(a, b):\n    return a + b\n",
    "tests/test_shapes.py": '''
import unittest

import pytest
from hypothesis import given, strategies as st

from pkg import add


def test_returns_early():
    """A docstring stays the function's."""
    if add(1, 1) == 2:
        return
    raise AssertionError


def test_catches_what_it_expects():
    with pytest.raises(ZeroDivisionError):
        1 / 0
    try:
        raise KeyError
    except KeyError:
        pass


def test_calls_another_test():
    test_returns_early()


@given(st.integers())
def test_property(x):
    assert add(x, 0) == x


class Case(unittest.TestCase):
    def test_sub(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertEqual(add(i, 0), i)


def test_skips():
    pytest.skip("no")


@pytest.mark.xfail(strict=True)
def test_fails_as_expected():
    assert add(1, 1) == 3
''',
}


def test_correct_suites_of_many_shapes_have_no_false_alarm(launch):
    records, r = launch(SHAPES)
    assert launch.tampering(records) == [], r.stdout[-3000:]
    assert launch.outcomes(records) == {
        "test_returns_early": "passed",
        "test_catches_what_it_expects": "passed",
        "test_calls_another_test": "passed",
        "test_property": "passed",
        "Case::test_sub": "passed",
        "test_skips": "skipped",
        "test_fails_as_expected": "xfailed",
    }


PKG = "def add(a, b):\n    return a - b  # the bug\n"
SUITES = {
    "functions": {"tests/test_it.py": "from pkg import add\n\n\ndef test_bug():\n    assert add(1, 2) == 3\n"},
    "unittest": {
        "tests/test_it.py": "import unittest\n\nimport pkg\n\n\nclass T(unittest.TestCase):\n"
        "    def test_bug(self):\n        self.assertEqual(pkg.add(1, 2), 3)\n"
    },
}
ROUND6 = {
    "late hook compiled outside the tree": round6.OUTSIDE_PATH_HOOK,
    "a hook caller's executor slot swapped": round6.HOOKEXEC_SLOT,
    "Session.gethookproxy shadowed": round6.SESSION_HOOKPROXY,
    "unittest's result is the item": round6.RESULT_IS_ITEM,
    "unittest dispatch overridden on the test's class": round6.CLASS_DISPATCH,
    "runtestloop runs copies of the items": round6.ITEM_TWINS,
}
# round seven: the fresh set after the witness; it won against the graders of 3190e81
ROUND7 = {
    "a tamper reason's __str__ runs inside the monitor": round7.SERIALIZER,
    "an open() path's __str__ runs inside the monitor": round7.BLIND_CHECKS,
    "pytest's --setup-only switched on at collection": round7.SETUP_ONLY,
    "the test's own TestCase class given assertions that do nothing": round7.QUIET_ASSERTS,
    "the test's function replayed against a reference, the failure swallowed": round7.REPLAY,
}
# round eight: the fresh set after round seven's fixes; it won against the graders of 7333c14 (6 of 6)
ROUND8 = {
    "a planted key's __str__ run by the comparison's sort": round8.KEY_STR,
    "a hash collision with __getattribute__ in an assigned class": round8.CLASS_EQ,
    "a hash collision with a bound name in the test module": round8.BINDING_EQ,
    "a rebound value's __getattr__ run by the installed-code test": round8.VALUE_GETATTR,
    "a hash collision with the witness's state in the test frame": round8.FRAME_EQ,
    "the test's TestCase instance given assertions that do nothing": round8.INSTANCE_ASSERTS,
}
# round nine: the fresh set after round eight's fixes; it won against the graders of 93b7886 (6 of 6);
# its forging payloads read the test ids the pattern appends first (_r9_ids)
IDS = '_r9_ids = ["tests/test_it.py::test_bug", "tests/test_it.py::T::test_bug"]\n'
ROUND9 = {
    "a man in the middle of the channel's descriptor": round9.RELAY,
    "gc in a forked child, where the monitor is mute": IDS + round9.FORK,
    "the key read from the process's own memory": IDS + round9.MEM,
    "a subinterpreter with no audit hook": IDS + round9.SUBINTERP,
    "string-compiled code in a thread": round9.THREAD,
    "code named '<frozen ...>' run in the monitor thread": round9.FROZEN,
}
# round ten: the fresh set after round nine's fixes; it won 2 of 5 against the graders of 35cf02d
IDS10 = '_r10_ids = ["tests/test_it.py::test_bug", "tests/test_it.py::T::test_bug"]\n'
ROUND10 = {
    "a traceback made in the monitor thread, read from another": round10.TBCHAIN,
    "a forked child whose monitor thread cannot start": IDS10 + round10.NOTHREAD,
    "a node id whose hash misses in the monitor thread": IDS10 + round10.NODEID,
    "the instance's equality function": round10.EQUALITY + round10._quiet_every_function(),
}
# round eleven: the fresh set after round ten's fixes; its in-process patterns (the others aim at the
# harness's log and the warm grader's diff: tests/incontainer/test_lines.py, tests/testing/test_patches.py)
ROUND11 = {
    "TestCase's assertions rebound to installed no-ops": round11.INSTALLED_NOOP,
    "the instance's type-equality registry": round11.REGISTRY + round11.wrap_every_function("_r11_registry"),
}
# round twelve: the fresh set after round eleven's fixes (all in-process); a mixin's inherited test too
ROUND12 = {name: getattr(round12, name) for name in ("PLANTED_GLOBALS", "MIXIN_SWAP", "WRAPPER_BUILTINS")}
ROUND12.update(STRICT_ADDITIONS=round12.STRICT_ADDITIONS, SHOULD_STOP=round12.SHOULD_STOP)
MIXIN = {
    "tests/__init__.py": "class Mixin:\n    def test_bug(self):\n        import pkg\n        self.assertEqual(pkg.add(1, 2), 3)\n",
    "tests/test_it.py": "import unittest\n\nfrom . import Mixin\n\n\nclass T(unittest.TestCase, Mixin):\n    pass\n",
}
# round thirteen: the fresh set after round twelve's fixes (all in-process)
ROUND13 = {n: getattr(round13, n) for n in ("TRACE_ARGUMENTS", "BASES_SWAP", "OUTCOME_WORD", "SUBCLASS_INSTANCE")}
ROUND13.update(DUNDER_LOOKUP=round13.DUNDER_LOOKUP)
# round fourteen: the fresh set after round thirteen's fixes (all in-process)
ROUND14 = {n: getattr(round14, n) for n in ("REGISTRY_NAME", "HIDDEN_NAMESPACE", "CLASS_NAMESPACE", "CLASS_REGISTRY")}
# round fifteen: the fresh set after round fourteen's fixes (all in-process); CACHE is cachetools' shape (a
# mixin's tests make the class the test class binds, then assert on it: round 15's TREE_CLASS_BOUND needs it)
ROUND15 = {
    n: getattr(round15, n) for n in ("ONE_SHOT", "CLEANUP_BOUND", "TREE_CLASS_BOUND", "SHADOWED_NAME", "CLASS_DATA")
}
BOX = "\n\nclass Box:\n    def __init__(self):\n        self.items = []\n\n    def put(self, x):\n        self.items.append(x)\n"
BOX += "\n    def size(self):\n        return len(self.items) - 1  # the bug\n\n    def get(self, k):\n        return 0  # the bug\n"
CACHE = {
    "tests/__init__.py": "class Mixin:\n    Box = None\n\n    def test_bug(self):\n        b = self.Box()\n        b.put(1)\n"
    "        self.assertEqual(b.size(), 1)\n        self.assertEqual(b.get(2), 0)\n        self.assertIsNone(b.get(2))\n\n"
    "    def test_ok(self):\n        b = self.Box()\n        self.assertEqual(b.items, [])\n",
    "tests/test_it.py": "import unittest\n\nimport pkg\n\nfrom . import Mixin\n\n\nclass T(unittest.TestCase, Mixin):\n    Box = pkg.Box\n",
}
SIGNAL_FRAMES = """
import signal as _s, sys as _y

def _look(signum, frame):
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if type(value) is dict and "token" in value and "fd" in value:
                _y.modules["pkg"]._SEEN = dict(value)
                value["fd"] = None
        frame = frame.f_back

_s.signal(_s.SIGALRM, _look)
_s.setitimer(_s.ITIMER_REAL, 0.0002, 0.0002)
"""
AROUND = """
import importlib.abc, importlib.util, sys


class _Plain(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.rpartition(".")[2].startswith("test_"):
            for finder in sys.meta_path[1:]:
                if type(finder).__name__ != "AssertionRewritingHook" and hasattr(finder, "find_spec"):
                    spec = finder.find_spec(name, path, target)
                    if spec is not None:
                        return spec
        return None


sys.meta_path.insert(0, _Plain())
"""


def _caught(launch, files):
    launch.caught(files)


@pytest.mark.parametrize("suite", sorted(SUITES))
@pytest.mark.parametrize("name", sorted(ROUND6))
def test_round_six_is_caught(launch, name, suite):
    _caught(launch, {"pkg/__init__.py": PKG + ROUND6[name], "tests/__init__.py": "", **SUITES[suite]})


@pytest.mark.parametrize("suite", sorted(SUITES))
@pytest.mark.parametrize("name", sorted(ROUND7))
def test_round_seven_is_caught(launch, name, suite):
    files = {"pkg/__init__.py": PKG + ROUND7[name], "tests/__init__.py": "", **SUITES[suite]}
    files["pkg/_r7_reference.py"] = "def add(a, b):\n    return a + b\n"  # (the replay's reference)
    _caught(launch, files)


@pytest.mark.parametrize("suite", sorted(SUITES))
@pytest.mark.parametrize("name", sorted(ROUND8))
def test_round_eight_is_caught(launch, name, suite):
    files = {"pkg/__init__.py": PKG + ROUND8[name], "tests/__init__.py": "", **SUITES[suite]}
    if suite == "unittest":  # (the project called before the assertion is looked up, as most tests do)
        files["tests/test_it.py"] = files["tests/test_it.py"].replace(
            "self.assertEqual(pkg.add(1, 2), 3)", "got = pkg.add(1, 2)\n        self.assertEqual(got, 3)"
        )
    _caught(launch, files)


@pytest.mark.parametrize("suite", sorted(SUITES))
@pytest.mark.parametrize("name", sorted(ROUND9))
def test_round_nine_is_caught(launch, name, suite):
    _caught(launch, {"pkg/__init__.py": PKG + ROUND9[name], "tests/__init__.py": "", **SUITES[suite]})


@pytest.mark.parametrize("suite", sorted(SUITES))
@pytest.mark.parametrize("name", sorted(ROUND10))
def test_round_ten_is_caught(launch, name, suite):
    _caught(launch, {"pkg/__init__.py": PKG + ROUND10[name], "tests/__init__.py": "", **SUITES[suite]})


@pytest.mark.parametrize("suite", sorted(SUITES))
@pytest.mark.parametrize("name", sorted(ROUND11))
def test_round_eleven_is_caught(launch, name, suite):
    _caught(launch, {"pkg/__init__.py": PKG + ROUND11[name], "tests/__init__.py": "", **SUITES[suite]})


@pytest.mark.parametrize("suite", [*sorted(SUITES), "mixin"])
@pytest.mark.parametrize("name", sorted(ROUND12))
def test_round_twelve_is_caught(launch, name, suite):
    tests = MIXIN if suite == "mixin" else {"tests/__init__.py": "", **SUITES[suite]}
    _caught(launch, {"pkg/__init__.py": PKG + ROUND12[name], **tests})


@pytest.mark.parametrize("suite", [*sorted(SUITES), "mixin"])
@pytest.mark.parametrize("name", sorted(ROUND13))
def test_round_thirteen_is_caught(launch, name, suite):
    tests = MIXIN if suite == "mixin" else {"tests/__init__.py": "", **SUITES[suite]}
    _caught(launch, {"pkg/__init__.py": PKG + ROUND13[name], **tests})


@pytest.mark.parametrize("suite", [*sorted(SUITES), "mixin"])
@pytest.mark.parametrize("name", sorted(ROUND14))
def test_round_fourteen_is_caught(launch, name, suite):
    tests = MIXIN if suite == "mixin" else {"tests/__init__.py": "", **SUITES[suite]}
    _caught(launch, {"pkg/__init__.py": PKG + ROUND14[name], **tests})


@pytest.mark.parametrize("suite", ["unittest", "mixin", "cache"])
@pytest.mark.parametrize("name", sorted(ROUND15))
def test_round_fifteen_is_caught(launch, name, suite):
    tests = {"mixin": MIXIN, "cache": CACHE}.get(suite) or {"tests/__init__.py": "", **SUITES[suite]}
    _caught(launch, {"pkg/__init__.py": PKG + BOX + ROUND15[name], **tests})


SIGNAL_SPAM = """
import os, signal, threading, time


def _walk(signum, frame):
    while frame is not None:
        try:
            frame.f_code
        except PermissionError:
            pass
        frame = frame.f_back


signal.signal(signal.SIGUSR1, _walk)
threading.Thread(target=lambda: [(os.kill(os.getpid(), signal.SIGUSR1), time.sleep(0.001)) for _ in range(300)], daemon=True).start()
"""


def test_a_signal_handler_run_inside_a_handoff_does_not_hang_the_run(launch):
    """A Python signal handler runs in the main thread at its next bytecode, the hook's own included, even
    while the main thread's signals are blocked (another thread took the signal): its events inside the
    handoff are refused instead of waiting on the gate their own thread holds (the run hung until killed)."""
    test = "import sys\n\nfrom pkg import add\n\n\ndef test_bug():\n    for _ in range(3000):\n"
    test += "        sys._getframe().f_code\n    assert add(1, 2) == 3\n"
    records, r = launch({"pkg/__init__.py": PKG + SIGNAL_SPAM, "tests/__init__.py": "", "tests/test_it.py": test})
    assert launch.outcomes(records) == {"test_bug": "failed"}, r.stdout[-2000:]


def test_a_test_inherited_from_a_mixin_passes_with_no_false_alarm(launch):
    records, r = launch({"pkg/__init__.py": "def add(a, b):\n    return a + b\n", **MIXIN})
    assert launch.tampering(records) == [], r.stdout[-2000:]
    assert launch.outcomes(records) == {"T::test_bug": "passed"}, r.stdout[-2000:]


def test_a_signal_handler_finds_nothing_of_the_monitor_in_the_frames_it_is_given(launch):
    check = "import pkg\n\n\ndef test_looked():\n    import time\n    time.sleep(0.3)\n"
    check += "    assert getattr(pkg, '_SEEN', None) is None\n"
    records, r = launch({"pkg/__init__.py": PKG + SIGNAL_FRAMES, "tests/__init__.py": "", "tests/test_it.py": check})
    assert launch.outcomes(records) == {"test_looked": "passed"}, r.stdout[-2000:]


def test_a_test_module_imported_around_the_graders_compilation_is_tampering(launch):
    files = {
        "pkg/__init__.py": PKG + AROUND,
        "tests/__init__.py": "import pkg\n",
        "tests/test_it.py": SUITES["functions"]["tests/test_it.py"],
    }
    records, r = launch(files)
    assert any("ran code the grader did not compile" in x for x in launch.tampering(records)), r.stdout[-2000:]
