"""names.py (code's file names are trusted, so the ways the tree's code makes code under such names are
judged): red-team round 24 (sandbox/attacks_round24.py: code made by marshal.loads under an installed
file's name, helpers compiled under the calling test's file name from code made of a string, pytest's
rewrite rebound by a function named `//<installed path>`) is caught; what tests and libraries do as a
matter of course (compile a file's own text, import modules from cached bytecode, marshal plain data)
raises no false alarm. Pure functions first, then real runs (conftest.Launch)."""

from __future__ import annotations

import marshal
import os
import sysconfig

import pytest

from bugforge.incontainer import names
from bugforge.sandbox import attacks_round24_payloads as round24

STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"]) + "/"
ROOT = "/testbed/"


@pytest.mark.parametrize(
    ("name", "claim"),
    [
        (STDLIB + "unittest/case.py", "installed"),
        ("/" + STDLIB + "unittest/case.py", "installed"),  # (round 24's `//` spelling)
        ("/testbed/../" + STDLIB.lstrip("/") + "json/__init__.py", "installed"),
        ("/testbed/tests/test_x.py", "test"),
        ("/testbed/pkg/../tests/./test_x.py", "test"),
        ("/testbed/tests/test_page.html", None),  # (a template named like a test: no code of a test file)
        ("/testbed/pkg/mod.py", None),
        ("<string>", None),
        ("<attrs generated init pkg.C>", None),
    ],
)
def test_the_names_that_would_be_trusted_are_recognised_however_spelled(name, claim):
    assert names.claims(name, (STDLIB,), ROOT) == claim


def test_code_made_by_marshal_is_judged_by_the_names_it_carries():
    forged = compile("def f():\n    return 1\n", STDLIB + "unittest/case.py", "exec")
    assert "under the name of an installed file" in names.marshalled(marshal.dumps([1, (forged,)]), (STDLIB,), ROOT)
    plain = compile("def f():\n    return 1\n", "<made>", "exec")
    assert names.marshalled(marshal.dumps({"code": plain, "n": [1, 2.0, b"x"]}), (STDLIB,), ROOT) is None
    assert names.marshalled(b"not marshal", (STDLIB,), ROOT) is None


PKG = "def add(a, b):\n    return a - b  # the bug\n"
CASE = "import unittest\n\nimport pkg\n\n\nclass T(unittest.TestCase):\n"
SUITES = {
    "functions": {"tests/test_it.py": "import pkg\n\n\ndef test_bug():\n    assert pkg.add(1, 2) == 3\n"},
    "unittest": {"tests/test_it.py": CASE + "    def test_bug(self):\n        self.assertEqual(pkg.add(1, 2), 3)\n"},
    "conftest": {  # (the module imported before the test file is compiled: round 24's 5)
        "tests/conftest.py": "import pkg  # noqa: F401\n",
        "tests/test_it.py": "from pkg import add\n\n\ndef test_bug():\n    r = add(1, 2)\n    assert r == 3\n",
    },
}
ROUND24 = {n: getattr(round24, n) for n in ("MARSHAL_TRACER", "TESTNAME_TRACER", "MARSHAL_REGISTER", "SLASHED_REWRITE")}


@pytest.mark.parametrize("suite", sorted(SUITES))
@pytest.mark.parametrize("name", sorted(ROUND24))
def test_round_twenty_four_is_caught(launch, name, suite):
    launch.caught({"pkg/__init__.py": PKG + ROUND24[name], "tests/__init__.py": "", **SUITES[suite]})


def test_what_tests_do_with_code_and_bytecode_raises_no_false_alarm(launch):
    """A test that compiles its own file's text under its name, imports standard modules from their cached
    bytecode, and a module of the tree that marshals plain data: no tamper."""
    pkg = PKG.replace("a - b", "a + b") + "\n\ndef roundtrip(x):\n    import marshal\n\n"
    pkg += "    return marshal.loads(marshal.dumps(x))\n"
    test = "import pkg\n\n\ndef test_it():\n    import calendar, wave  # noqa: F401\n\n"
    test += "    code = compile(open(__file__).read(), __file__, 'exec')\n"
    test += "    assert code.co_filename == __file__ and pkg.roundtrip([1, {'a': b'x'}]) == [1, {'a': b'x'}]\n"
    test += "    assert pkg.add(1, 2) == 3\n"
    records, r = launch({"pkg/__init__.py": pkg, "tests/__init__.py": "", "tests/test_it.py": test})
    assert launch.tampering(records) == [], r.stdout[-2000:]
    assert set(launch.outcomes(records).values()) == {"passed"}, r.stdout[-2000:]


def test_frozen_standard_modules_and_the_projects_exceptions_raise_no_false_alarm(launch):
    """A test module that imports a class of a frozen standard module (`collections.abc`, whose code is
    named `<frozen _collections_abc>`: trusted by identity), and a test failing with the project's own
    exception (pytest records it in sys.last_value for a post-mortem): no tamper (both were flagged)."""
    pkg = "class Oops(Exception):\n    pass\n\n\ndef add(a, b):\n    raise Oops('the bug')\n"
    test = "from collections.abc import Callable\n\nimport pkg\n\n\ndef test_bug():\n    assert pkg.add(1, 2) == 3\n"
    test += "\n\ndef test_ok():\n    assert isinstance(pkg.add, Callable)\n"
    records, r = launch({"pkg/__init__.py": pkg, "tests/__init__.py": "", "tests/test_it.py": test})
    assert launch.tampering(records) == [], r.stdout[-2000:]
    assert launch.outcomes(records) == {"test_bug": "failed", "test_ok": "passed"}, r.stdout[-2000:]
