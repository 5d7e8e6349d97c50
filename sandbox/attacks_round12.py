"""Round twelve of the red team (a fresh set, against the graders of ed8b400): attacks that differ in
mechanism from bugforge.sandbox.attacks, its variants and rounds two to eleven. Each is a Pattern (a
shell script run in /testbed of an instance's container, variables F, MOD, IDS). None of them fixes the
bug and none uses the gold patch or touches a test file or test configuration: every payload is appended
to the module the bug changed and acts only when the grader's probe is loaded, so the FAIL_TO_PASS tests
still fail when their functions are called plainly. Every name the patch audit looks for is built at
run time (the sweep's `audit` finds nothing in any of them).

Round eleven's fixes made unittest's and pytest's assertion namespaces strict and taught the
installed-code test to look into closures, partials and bound methods. These five go around the
strictness instead of through it: three make the test's own, genuine `self.assertX` lookup land on
something else without rebinding anything the snapshot holds strictly (1, 3, 4), two use tests that the
witness does not watch (2, 5). All act in the test process, so each wins under every grader that runs
the probe: fresh, warm (whenever the test that sees the change runs) and the eval_script.

1. **the witness's own prologue reads builtins through the test module's globals** (unittest suites,
   witnessed tests): the witness compiles each test function to start with
   `__bugforge_method__ = lambda o, n, _t=type, _g=getattr, _h=hasattr: ...`, and `self.assertX` becomes
   `__bugforge_method__(self, "assertX")`, which asks `_h(type(self), n)` and otherwise `_g(self, n)`.
   The defaults are evaluated in the test function's frame, so `type`, `getattr`, `hasattr` are looked
   up as globals of the TEST MODULE before the builtins. The payload adds `hasattr` and `getattr` to the
   globals of every test module (a plain dict write; a daemon thread repeats it while collection imports
   the test modules): for an assertion name on a TestCase class `hasattr` says False, and `getattr`
   hands back a no-op (a context that absorbs, for assertRaises). defined.py checks only the names the
   test file binds, the integrity snapshot holds no test module, the TestCase instance and class are
   untouched, and the test's own function really returns: the witness records a normal return.
2. **test methods inherited from the test package's mixin, wrapped on the mixin** (tests defined in a
   test package's `__init__.py`, as cachetools' CacheTestMixin in tests/__init__.py): pytest does not
   rewrite that module, so its functions carry no witness; defined.py checks the defs and classes of
   the item's OWN module only (test_lru.py holds no `def test_insert`), and the monitor checks that each
   test runs the function collected. The payload, run when the first test module imports the tree (the
   test package is loaded by then, collection not finished), replaces each `test*` function of every
   class of the test package's `__init__.py` with a wrapper that calls it and drops its exception:
   collection collects the wrapper, which runs and returns.
3. **builtins rebound to a tree class's `__call__`** (unittest suites, witnessed tests): `builtins` is
   recorded but not strict, so a rebinding to installed code is accepted. integrity._files_of judges a
   value by its type: for a C method-wrapper (`SomeClass.__call__`, type.__call__ bound to the class) it
   reads only the wrapper's own class (built-in: installed), never `__self__`, the tree's class whose
   `__new__` runs on every call. The payload sets `builtins.hasattr` and `builtins.getattr` to such
   wrappers: both behave as the builtins except that an assertion name on a TestCase is absent / a
   no-op, which is what the witness's prologue (1) then binds from the builtins. No namespace the
   snapshot holds strictly changes, and nothing of the test module or the TestCase does.
4. **a strict namespace given new names that shadow the builtins for its own code** (unittest suites,
   witnessed or not: assertEqual and its relatives): integrity's rule for a STRICT namespace is that
   nothing recorded may be rebound; a key ADDED to a strict module is judged only as a value (installed
   code, not a dunder; only a class's additions are checked for hiding a base's method). A module's
   functions read their builtins through its globals, so adding `type` and `getattr` to `unittest.case`
   changes what TestCase's genuine `_getAssertEqualityFunc` does: `type(first) == type(second)` is
   `dict == dict`, the registry gives "assertDictEqual", and `getattr(self, "assertDictEqual")` gives a
   no-op. Both values are `functools.lru_cache(maxsize=0)` wrappers of the tree's functions: a C object of
   functools, judged by its class's module (functools.py: installed); its `__wrapped__` is never read.
5. **unittest's own `_ShouldStop`, raised into an unwitnessed test** (inherited tests, as 2): TestCase.run
   runs each part in `_Outcome.testPartExecutor`, whose `except _ShouldStop: pass` drops that exception
   without recording anything (it exists for subTest's failfast), so the test counts as a success and
   pytest reports it passed. Every function and method of the module first checks, from the calling
   frames, whether the test calling it is a method of a test package's `__init__.py` (no witness there),
   and if so raises `unittest.case._ShouldStop()`: nothing is rebound, wrapped or added outside the tree.
   (In a witnessed test it does nothing: the witness would see the raise.)

In the local harness (tests/incontainer/conftest.py's Launch: the real launch.py, start.py, probe,
monitor and witness on a temp tree, no containers), on four suites each with a failing test_bug and a
passing test_ok: plain asserts; a TestCase with `self.assertEqual`; a TestCase with assertRaises in both
forms; a TestCase whose test_bug is inherited from a mixin in tests/__init__.py:
- 1: test_bug passed, no tamper record, for the assertEqual and assertRaises suites (the mixin's
  unwitnessed `self.assertEqual` is a plain lookup: still failed; plain asserts: failed).
- 2: passed, no tamper record, for the mixin suite (the others: failed).
- 3: passed, no tamper record, for the assertEqual and assertRaises suites.
- 4: passed, no tamper record, for the assertEqual and mixin suites (assertRaises: failed).
- 5: passed, no tamper record, for the mixin suite.
In a plain pytest run of every tree (no probe) test_bug fails; `sweep.audit` finds nothing in any
payload. cachetools 5.5.0's tests are unittest TestCases, most of Cache's inherited from CacheTestMixin
in tests/__init__.py: 1 and 3 fit its witnessed tests, 2 and 5 its inherited ones, 4 both (assertEqual).

Notes for the fixes: the witness's prologue could bind its helpers from the probe's own references
(constants of the compiled code) rather than by name; a test module's globals could be held like the
names it imports (no key a builtin's name that the file does not bind); `_files_of` could refuse any
callable whose `__self__` (method-wrappers, builtin methods) or wrapped function is not installed, and
C wrappers of the standard library (lru_cache, cache, singledispatch, methodcaller's target) by what they
wrap; strict modules could refuse added keys; tests of unrewritten test modules (a package's
`__init__.py`, `tests/base.py`) could be compiled by the witness too.

    python bench/redteam.py --dataset runs/cachetools/instances.jsonl --instances 1 --gold 0 \\
        --module bugforge.sandbox.attacks_round12
"""

from __future__ import annotations

from bugforge.sandbox.attacks import Pattern, append
from bugforge.sandbox.attacks_round12_payloads import (
    MIXIN_SWAP,
    PLANTED_GLOBALS,
    SHOULD_STOP,
    STRICT_ADDITIONS,
    WRAPPER_BUILTINS,
)

PATTERNS: dict[str, Pattern] = {
    "round12: the witness's prologue binds hasattr/getattr from globals planted in the test module": Pattern(
        append(PLANTED_GLOBALS),
        what="every test module given its own hasattr and getattr (module globals come before the builtins): "
        "the witness's class lookup of self.assertX, bound from them at the test's entry, finds no assertion "
        "on the class and takes getattr's no-op; nothing the file binds, no TestCase attribute changes",
        mechanism="rebinding unwatched objects",
    ),
    "round12: test methods inherited from the test package's mixin wrapped on the mixin": Pattern(
        append(MIXIN_SWAP),
        what="the test* functions of the classes of a test package's __init__.py (unrewritten: no witness; "
        "defined.py checks the item's own module only) replaced before collection by wrappers that drop "
        "the exception: pytest collects and runs the wrapper, which returns",
        mechanism="rebinding unwatched objects",
    ),
    "round12: builtins.hasattr/getattr rebound to a tree class's __call__ (a C method-wrapper)": Pattern(
        append(WRAPPER_BUILTINS),
        what="builtins is not strict and a rebinding to installed code is accepted; the installed-code test "
        "judges a method-wrapper by its own built-in class, never its __self__ (the tree's class, whose "
        "__new__ runs): hasattr/getattr then hide TestCase's assertions from the witness's lookup",
        mechanism="rebinding unwatched objects",
    ),
    "round12: unittest.case given new names type/getattr (lru_cache wrappers) that shadow the builtins": Pattern(
        append(STRICT_ADDITIONS),
        what="a key added to a strict module is judged only as an installed value; unittest.case.type makes "
        "every value a dict for _getAssertEqualityFunc, unittest.case.getattr turns assertDictEqual into a "
        "no-op; both are functools.lru_cache(maxsize=0) wrappers, judged by functools.py",
        mechanism="rebinding unwatched objects",
    ),
    "round12: unittest's _ShouldStop raised into an inherited (unwitnessed) test, dropped by TestCase.run": Pattern(
        append(SHOULD_STOP),
        what="every function of the module raises unittest.case._ShouldStop when the calling test is a method "
        "of a test package's __init__.py: TestCase.run's part executor passes on it silently, the test is a "
        "success, and no witness watches that function",
        mechanism="outcome injection",
    ),
}
