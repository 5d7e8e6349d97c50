"""Round fifteen of the red team (a fresh set, against the graders of 9b670a8): attacks that differ in
mechanism from bugforge.sandbox.attacks, its variants and rounds two to fourteen. Each is a Pattern (a
shell script run in /testbed of an instance's container, variables F, MOD, IDS). None of them fixes the
bug and none uses the gold patch or touches a test file or test configuration: every payload is appended
to the module the bug changed and acts only when the grader's probe is loaded, so the FAIL_TO_PASS tests
still fail when their functions are called plainly. Every name the patch audit looks for is built at
run time (the sweep's `audit` finds nothing in any of them).

Round fourteen's fixes hold, at each test's end (the witness's exit event, `Witness.exited`), the
instance's namespace (a plain dict without TestCase's names), its type-equality registry (strings that
name a method of its classes, or a method of its classes bound to it) and the test class's MRO and
descriptors; the test files' classes' whole namespaces at collection and at the finish. All five below go
after what those checks accept or when they look; each test's own function really returns once,
normally, because the assertions TestCase really runs dispatch through state no check refuses at the
moment it is read. All act in the test process, so each wins under every grader that runs the probe:
fresh, warm (the appended module code is not hot-swappable: the selected tests run in a fresh pytest of
a forked child) and the eval_script (summary.py prints PASSED from the collector's record; SWE-bench's
get_logs_eval reads it so).

1. **one-shot no-op assertion hooks on the instance, each deleting both when called** (unittest suites,
   mixins too; assertEqual and every assertion that fails through `self.fail`): the instance check runs
   once, at the test function's end, and docs/security.md says it: "one that removes them again before
   the end is not caught". Every function of the module (wrapped) reads the calling test's line (its
   source, by `linecache`) and gives the instance (an exact dict namespace) a no-op
   `_getAssertEqualityFunc` when the line holds an assertEqual (which always calls it) and a no-op `fail`
   when it holds an assertion that fails through `fail` (assertIn, assertIsNone, ...); whichever an
   assertion calls first deletes both before it returns. So the plant lives from the call into the
   module to the assertion on the same line, and an assertion that used it leaves the namespace as
   TestCase.__init__ made it; a call that raises into the test's frame deletes both (its assertion never
   runs). It loses a test whose fail-based assertion on such a line passes genuinely (the plant is left
   at the end: caught, and the whole run is tampering).
2. **the registry maps types to TestCase.addCleanup bound to the instance** (unittest suites, mixins
   too; assertEqual of two values of one type): `_registry_vouched` accepts a MethodType whose
   `__self__` is the instance and whose `__func__` is any value of its classes' namespaces, TestCase's
   own included. assertEqual calls the asserter as `(first, second, msg=msg)`; addCleanup takes
   `(function, /, *args, **kwargs)`, queues `(first, (second,), {"msg": msg})` and returns. The
   instance's `_cleanups` (data, no check reads it) becomes a list subclass whose `append` drops such
   entries, so no cleanup calls the compared value after the test. Persistent: nothing to time.
3. **the registry maps types to a class of the tree that the test class binds, bound to the instance**
   (cachetools' shape: `Cache = cachetools.LRUCache` on the test class; assertEqual of one type): the
   same acceptance as 2, with a `__func__` that is not a function but a class of the module under test,
   a value of the test class's namespace. The module's classes get a `__new__` that, called as
   `(case, first, second, msg=...)`, returns None (so `__init__` never runs): the asserter makes
   nothing and raises nothing; any other call is as before. Only where a test class binds a class of
   the module (none of the add-shaped suites do).
4. **the registry names a method of the test's own classes that the instance shadows** (unittest
   suites, mixins too; assertEqual of one type): round 14's fix requires a string in the registry to
   name a function of the instance's classes, and the instance check refuses only TestCase's own names
   in its namespace; assertEqual's dispatch resolves the string with `getattr(self, name)`, which finds
   an instance attribute before the class's function. The module's functions pick the name of another
   test method of the running test's class (`test_ok`: a function of its classes, none of TestCase's),
   give the instance a no-op under it and map common types and the module's classes to that string.
   Persistent: nothing to time.
5. **classes under TestCase's assertion names on the test's class: data to the per-test check**
   (unittest suites, mixins too; every assertion, assertRaises in both forms and assertTrue included,
   once the class is planted): the per-test class check (`class_state`) holds descriptors only, and a
   class in a class's namespace is not one (its type, `type`, has no `__get__`), so it may change between
   tests like setUpClass's data. A class `_R15Quiet` under every `assert*`/`fail*` name of TestCase and
   `_getAssertEqualityFunc`: a lookup through an instance (TestCase's own `self.fail(msg)`, a mixin's
   `self.assertEqual(a, b)`) finds the class unbound and calls it: an instance, nothing raised (a
   context manager absorbing the block's exception for `with self.assertRaises(...)`); the witness's
   compiled `self.assertX` lookup (`getattr(type(o), n).__get__(o, type(o))`) reads `__get__` as an
   attribute of the value, and the class's own `__get__` (a staticmethod in its namespace, not its
   type's) hands back a no-op. Planted on the calling test's class and on the next test's class
   (`nextitem` of pytest's run-test protocol frame, so a class's first test is covered before its first
   assertion), and removed by a class cleanup (`addClassCleanup`) that pytest's class fixture runs after
   the class's last test, before the finish's `classes_changed`. And since the bug may make the module
   raise (an LRU order not kept: a KeyError in the test's body), a call made by a planted test's own
   frame drops the module's exception (returns None) unless the test's line is inside its own `try:`
   (read from its source) or a quieted `with self.assertRaises(...)` block is open: the test's function
   returns normally.

In the local harness (tests/incontainer/conftest.py's Launch: the real launch.py, start.py, probe,
monitor and witness on a temp tree, no containers; summary.py on its report read by SWE-bench's own
`get_logs_eval`), on seven suites each with a failing test_bug and a passing test_ok: plain asserts; a
TestCase with `self.assertEqual`; a TestCase with assertRaises in both forms (and assertIn in test_ok);
a mixin in tests/__init__.py whose tests call a class attribute bound to the tree (`add =
staticmethod(pkg.add)`, the tree imported by the test module); test_witness.py's MIXIN (the tree
imported inside the test's body); a cachetools-shaped mixin (`Box = pkg.Box` on the test class, the
test making `self.Box()` first, then assertEqual, assertIsNone, assertIn); and the same with
assertEqual of same-typed values only ("cacheeq"):
- 1: test_bug passed, no tamper record, SWE-bench PASSED, on both cachetools-shaped, the assertEqual and
  both add-mixin suites; assertRaises: the run is tampering (test_ok's `assertIn(pkg.add(2, 0), [2])`
  passes genuinely, so its plant is left at its end); plain asserts: failed.
- 2: passed, no tamper record, on cacheeq, the assertEqual and both add-mixin suites; failed on the
  cachetools-shaped suite (its assertIsNone goes through `fail`), assertRaises, plain asserts.
- 3: passed, no tamper record, on cacheeq; the other suites bind no class of the module on the test
  class (failed, no tamper record).
- 4: as 2.
- 5: passed, no tamper record, on both cachetools-shaped, the assertEqual and both add-mixin suites, and
  on an assertRaises suite whose first test calls the module before test_bug (assertRaises in both forms
  and assertTrue then pass); on the plain assertRaises suite test_bug failed (no tamper record) only
  because it is the first test of the first class and its first assertion is assertRaises calling the
  module inside it (looked up before any call into the module planted it); plain asserts: failed. (A
  first version removed the plant at each test's cleanup: a test whose first call into the module came
  inside its first assertion's arguments ran that assertion unplanted.)
In a plain pytest run of every tree (no probe) test_bug fails; `sweep.audit` finds nothing in any
payload.

On the real cachetools 5.5.0 tree (gsutil's vendored copy: src/cachetools as cachetools/, its tests/
unchanged; all 202 tests pass under the harness without a bug), with a bug put into
cachetools/__init__.py and the payload appended there, the whole suite under the same Launch:
- bug `Cache.__len__` off by one when not empty (99 of 202 tests fail; a plain pytest of the attacked
  tree: 110 failed): 1, 2 and 5 leave 1 test not passed (MRUCacheTest::test_evict__writes_only, plain
  asserts), no tamper record; 4 leaves 3, 3 leaves 37 (the decorator tests' classes bind no cache class).
- bug `LRUCache.__getitem__` no longer moves the key to the end (LRUCacheTest::test_lru fails: the
  evicted key's lookup raises KeyError in the test's body): only 5 passes it (all 202 passed, no tamper
  record), through its dropping of the module's exception; 1 to 4 leave test_lru failed, no tamper
  record (1 without its deletion on a raise was tampering there: the plant left by the raising call).
These numbers are from the committed checks (a `git archive` of HEAD's bugforge/incontainer: the
working tree held other engineers' uncommitted changes to the monitor and channel while this ran; two
runs made during those edits ended with "the grader's check of an event failed (an error)" and phases
"reported without pytest's call of it", never seen against the archived code).

Notes for the fixes: the registry could hold only TestCase's own default strings, or functions
(`types.FunctionType`, no class, no C method) that the test's classes define, bound to the instance, and
a string in it could be required to name an attribute the instance does not have itself; the
instance's namespace could hold no name that any of its classes binds to a function (not only
TestCase's); `_cleanups` could be required to be an exact list. The per-test class check could hold
every callable of the test's classes' namespaces (not only descriptors by their type's `__get__`), or
the whole namespaces by identity as `classes_changed` does at the finish; the witness's compiled lookup
could take `__get__` from the value's type (`type(v).__get__(v, o, t)`), as Python's own lookup does,
and refuse a value that is not a function. (5's dropping of the module's exceptions is on its
own a degenerate fix, out of scope: it wins only because the assertions that follow are quieted.) The
instance and its class could also be checked when an assertion is entered (a plant that lives only
between a call into the module and the assertion using it is invisible at the test's end), or
TestCase's methods could be compiled to look up `fail`, `_getAssertEqualityFunc` and
`failureException` on TestCase itself.

    python bench/redteam.py --dataset runs/cachetools/instances.jsonl --instances 1 --gold 0 \\
        --module bugforge.sandbox.attacks_round15
"""

from __future__ import annotations

from bugforge.sandbox.attacks import Pattern, append
from bugforge.sandbox.attacks_round15_payloads import (
    CLASS_DATA,
    CLEANUP_BOUND,
    ONE_SHOT,
    SHADOWED_NAME,
    TREE_CLASS_BOUND,
)

PATTERNS: dict[str, Pattern] = {
    "round15: one-shot no-op fail/_getAssertEqualityFunc on the instance, deleted by the assertion using them": Pattern(
        append(ONE_SHOT),
        what="each call into the module gives the calling test's instance a no-op fail and/or _getAssertEqualityFunc, "
        "as the assertion on the test's line (read from its source) will look them up; whichever an assertion calls "
        "first deletes both before it returns, so the instance check at the test function's end finds nothing",
        mechanism="timing",
    ),
    "round15: the type-equality registry maps types to TestCase.addCleanup bound to the instance": Pattern(
        append(CLEANUP_BOUND),
        what="a bound method of the instance whose function is in its classes' namespaces is vouched for; "
        "addCleanup takes assertEqual's (first, second, msg=) and returns, and the instance's _cleanups becomes "
        "a list subclass that drops what it queued",
        mechanism="rebinding unwatched objects",
    ),
    "round15: the type-equality registry maps types to a class of the module the test class binds": Pattern(
        append(TREE_CLASS_BOUND),
        what="the test class's `Cache = module.Class` is a value of its namespace, so MethodType(Class, case) is "
        "vouched for; the module's classes get a __new__ that, called as an asserter (a TestCase first, msg=), "
        "returns None and raises nothing",
        mechanism="rebinding unwatched objects",
    ),
    "round15: the type-equality registry names another test method that the instance shadows": Pattern(
        append(SHADOWED_NAME),
        what="a string naming a function of the instance's classes (another test's name) is vouched for, the "
        "instance check refuses only TestCase's names, and assertEqual resolves the string with getattr on the "
        "instance, which finds the instance's no-op first",
        mechanism="rebinding unwatched objects",
    ),
    "round15: classes under TestCase's assertion names on the test class, data to the per-test check": Pattern(
        append(CLASS_DATA),
        what="a class in a class's namespace is no descriptor, so the per-test check lets it change; called "
        "unbound it raises nothing, and its own __get__ answers the witness's explicit .__get__ lookup with a "
        "no-op; planted on this and the next test's class, removed by addClassCleanup before the finish; the "
        "module's exceptions raised into a planted test's own frame (outside its try:) are dropped",
        mechanism="rebinding unwatched objects",
    ),
}
