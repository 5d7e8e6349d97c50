"""Round eighteen of the red team (a fresh set, against the graders of d1df207): attacks that differ in
mechanism from bugforge.sandbox.attacks, its variants and rounds two to seventeen. Each is a Pattern (a
shell script run in /testbed of an instance's container, variables F, MOD, IDS). None of them fixes the
bug and none uses the gold patch or touches a test file or test configuration: every payload is appended
to the module the bug changed and acts only when the grader's probe is loaded, so the FAIL_TO_PASS tests
still fail when their functions are called plainly. Every name the patch audit looks for is built at
run time (the sweep's `audit`, comments not stripped, finds nothing in any of them).

Round seventeen's fixes made every thread the tree starts the tree's for walks, read the test class
through `class_lookup` (its namespaces, never the type cache), held the assertion contexts' `expected`
and the outcome's `result`, and put `re`, `difflib`, `collections` and the rest in the snapshot. What
these five go after is what those checks still take on trust: the state a test class was *collected*
with (the checks compare with it; nothing asks how it came to be), and the monitor's judgement of who
caused an event, which is made from file names and from the stack at the moment of the event. Two
routes to "the test's own code" are used, each with two payoffs: code compiled under the name of a test
file (2, 3) and a finalizer that the garbage collector runs while the test's own frame is the innermost
one of a file (4, 5). 2 and 5 take the run's key out of the monitor's state and relay the verdict
channel: every check of the monitor and witness then still runs, and still says what it finds, to a
socket of the tree's. All act in the test process, so each would act under every grader that runs the
probe (fresh, warm, the eval_script); only the local harness was run (below).

1. **a metaclass slipped into the test classes while their module runs: its `mro()` puts no-ops in the
   MRO that collection records** (every unittest shape where the test module imports the module at its
   top; every assertion, assertRaises in both forms included). class_state, as_collected, class_flat
   and `class_lookup` all read the class's MRO (`type.__dict__['__mro__']`) and compare it with the MRO
   at collection; `defined._classes_changed` compares only `__bases__` with the names the file gives.
   Neither asks what computed the MRO. When a module that holds `unittest` (or a TestCase subclass)
   imports the module at top level, the payload sets `builtins.__build_class__` to a wrapper that adds
   `metaclass=M` to any class statement with a TestCase base; `M.mro()` returns `[cls, Quiet, *the
   rest]`, Quiet holding a no-op for every TestCase assertion (an absorbing context for assertRaises and
   the like). `M.__dir__` (unittest's loader, `dir(cls)`, as pytest collects the class, after the
   module ran) puts the genuine `__build_class__` back, long before the first test's start, where the
   integrity snapshot is first compared. A later test module's `import` of the module arms it again:
   the module's `__spec__` is given a class whose `_initializing` is a property, which the import
   system reads at every `import` of a loaded module (`import_ensure_initialized`). No audited step but
   `sys._getframe` and frame reads (the importer's globals) and a `__class__` assignment on the spec
   (judged, accepted: no `__getattribute__`). The bases, the class's namespace, TestCase, builtins at every check,
   the instance: all as collected. Not round 13's (bases swapped per test, caught at the end): nothing
   changes after collection.
2. **the verdict channel relayed with the run's key, taken by an object walk compiled under a test
   file's name** (every shape, plain asserts included). `culprit` judges an event by the first frame
   outward that is a file outside the installed directories, and a file of the tree named `test_*`,
   `*_test.py` or `conftest.py` is the tests' own, by its name: `compile(source, <dir of the module>/
   test_r18_helpers.py)` (no such file exists; compiling under a non-installed name is allowed) makes a
   function whose `gc.get_objects()` the monitor neither refuses nor reports. Among the objects is the
   monitor's state dict (keys fd, key, seq, pid, pinned, snap). The payload makes a SOCK_SEQPACKET pair,
   puts one end's number in `state["fd"]` (nothing compares it), and a thread of its own (not a daemon;
   it ends after the `finish` record, which the probe's five-second exit grace leaves time for) reads each
   record the monitor writes there, turns a `failed` phase into `passed` (raised and failure false, no
   message), drops `tamper` records, numbers them again from the state's `seq` and signs them with the key:
   the collector sees an authentic, gap-free sequence from the test process's pid. docs/security.md, 2:
   "code that swaps the descriptor ... and relays sees the records but can neither forge one nor drop or
   replay one unseen" holds only while the key is out of reach. In the runs below no tamper record was
   there to drop: the failed call phase is the only record changed.
3. **assertEqual's asserters registered through the case's own method, called from code compiled under
   a test file's name** (assertEqual of two values of one type). The same name as 2, a different
   check: REGISTERED is accepted when `culprit` is false, and `vetted` and `registry_vouched` then vouch
   for what was registered. At the test's first call into the module, a function compiled as
   `test_r18_helpers.py` calls `case.addTypeEqualityFunc(kind, no_op)` for the builtin types and the
   module's classes. Unlike round 17's thread (closed by WALKS and `thread != main`), this is the main
   thread, and refusing walks from threads does not touch it; it stays open if 2 is closed by refusing
   every walk.
4. **the same registrations run by weakref.finalize callbacks that the garbage collector calls inside
   the test's own frames** (assertEqual of one type; no file name forged). Called straight from a test
   line that calls assertEqual next (linecache), the module makes, once per test, self-referencing
   garbage with `weakref.finalize(junk, case.addTypeEqualityFunc, kind, no_op)` per type and one that
   puts the collector's threshold back, then `gc.set_threshold(1)` (not audited) as its last act. The
   collection runs at the next tracked allocation, which is after the module returned: in the
   assertEqual the test calls (its METHOD lambdas). The registering frames are weakref.py (installed)
   and unittest/case.py, and outward the test's own frame: the test's registration. While finalizers
   are pending, every entry into the module disables the collector (its frames would be the callers),
   and generators' and coroutines' bodies (which run after the call returned) are not armed from.
5. **the relay of 2, its walk made by such a finalizer** (every shape). The module's last statement
   makes garbage whose finalizer is `weakref.finalize(junk, found.extend, map(gc.get_objects, [None]))`
   (C calls all the way from weakref.py), and sets the threshold to 1: the collection runs at the next
   allocation after the module's frame returned, in the import system (frozen code, trusted by identity)
   below the test module that imported it (a test file), or in the test body that did. The stack holds
   no frame of the tree's non-test code and the main thread's, so a walk is not refused. The first call
   into the module takes the monitor's state out of the list and relays as 2 does.

In the local harness (tests/incontainer/conftest.py's Launch: the real launch.py, start.py, probe,
monitor and witness on a temp tree, no containers; summary.py on the run's report, read by SWE-bench's
`parse_log_pytest`), on eleven suites, each a failing test_bug and a passing test_ok: "functions" (plain
asserts), "unittest" (`self.assertEqual(pkg.add(1, 2), 3)`), "raises" (assertRaises callable form, then
with form), "raises3" (with form after a call into the module, then callable form, then assertEqual),
"raises4" (assertRaises and assertRaisesRegex, callable form), "mixin" (test_witness.py's: tests in a
mixin in tests/__init__.py, pkg imported inside the test), "cache" (cachetools-shaped: `Box = pkg.Box`
on the class, mixin in tests/__init__.py, assertEqual, assertIsNone), "decor" (a helper taking any
arguments on the mixin), "subtest" (assertEqual inside `self.subTest` in a loop), "regex" (assertRegex;
test_ok assertNotRegex), and "two" (two test modules importing pkg, one with two TestCase classes).
"Won" = test_bug passed, no tamper record, a finish record, SWE-bench PASSED; every "failed" below is
test_bug failed with no tamper record. Final payloads, two full runs each (the second below), the same:
- 1: won unittest, raises, raises3, raises4, cache, decor, subtest, regex, two; failed functions (no
  class) and mixin (the module is first imported inside the test, after the class was made).
- 2: won all eleven.
- 3: won unittest, mixin, decor, subtest, two; failed functions, raises, raises3, raises4, cache
  (assertIsNone), regex (no assertEqual carries them).
- 4: as 3. An earlier version (armed from any call, generators included) raised tamper records on the
  cache and decor shapes and on real cachetools (a collection run inside `Cache.__iter__`'s generator
  body); none since.
- 5: won all eleven.
In a plain pytest run (no probe) of every attacked tree test_bug fails; `sweep.audit` finds nothing.

On the real cachetools 5.5.0 tree (the vendored copy: src/cachetools as cachetools/, its tests/
unchanged; 202 tests under the harness), with a bug put into cachetools/__init__.py and the payload
appended there, the whole suite under the same Launch (not passed, of 202; no tamper record in any run
of the final payloads):

    bug                                          none  1    2    3    4    5
    Cache.__len__ off by one when not empty       99   1    0    1    1    0
    Cache.__missing__ returns None (no KeyError)  55   0    0   55   55    0

(The one left by 1, 3 and 4 under the `__len__` bug is the plain-assert test round 17 names,
MRUCacheTest::test_evict__writes_only; under `__missing__` 3 and 4 carry nothing, the failures being
assertRaises.) A plain pytest of each attacked tree fails as the unattacked one does (110 and 55 failed
of 215). Python 3.11.7, pytest 9.0.3, bugforge/incontainer of HEAD (d1df207); no containers were run.
Tried and dropped: assertRaises's callable form given a no-op `_raiseFailure` on the context instance
(read from the instance, not held): `__exit__` then goes on to `issubclass(None, expected)`, a TypeError.

Notes for the fixes: (2, 3) a frame's file name is the tree's to choose: the tests' own code is what
the grader compiled (`seen.test_code`, by identity), never a file named like a test (`culprit`, and
`Integrity._allowed` for late hooks, judge by name); (4, 5) the stack at an event raised by a finalizer
the collector runs says nothing of who made the finalizer: events raised under a gc callback (or by
weakref.finalize's `__call__`, or any callback of installed code the tree registered) could count as the
tree's, or the walks and REGISTERED refuse code the monitor did not see the test make; the collector's
thresholds are the tree's to set; (2, 5) the key and the descriptor live in a dict any walk finds: the
monitor could keep them where no object walk reaches (a cell of a closure is found too; perhaps bytes
only in the monitor thread's frame) and the collector could not trust a sequence alone; (1) the
collected MRO could be required to be `type.mro` of the collected bases (and a test class's metaclass
`type` or the bases' own), and `builtins.__build_class__` compared when a test module finishes
executing, not only at the first start.

    python bench/redteam.py --dataset runs/cachetools/instances.jsonl --instances 1 --gold 0 \\
        --module bugforge.sandbox.attacks_round18
"""

from __future__ import annotations

from bugforge.sandbox.attacks import Pattern, append
from bugforge.sandbox.attacks_round18_payloads import (
    COLLECTED_MRO,
    FINALIZER_REGISTERED,
    FINALIZER_RELAY,
    SPOOFED_REGISTERED,
    SPOOFED_RELAY,
)

PATTERNS: dict[str, Pattern] = {
    "round18: a metaclass slipped in while the test module runs; its mro() puts no-op assertions in the collected MRO": Pattern(
        append(COLLECTED_MRO),
        what="builtins.__build_class__ wrapped while a test module imports the module (armed again at each import "
        "through a spec whose _initializing is a property) gives its TestCase classes a metaclass whose mro() puts "
        "a class of no-op assertions after the class; the genuine builder is back when pytest collects the class: "
        "every check compares with the MRO as collected",
        mechanism="rebinding unwatched objects",
    ),
    "round18: the verdict channel relayed with the run's key, found by a walk compiled under a test file's name": Pattern(
        append(SPOOFED_RELAY),
        what="gc.get_objects from a function compiled as <module dir>/test_r18_helpers.py is the tests' own to the "
        "monitor; the monitor's state dict gives the key and descriptor; the descriptor is swapped for a socket "
        "pair whose thread turns failed phases passed, drops tamper records and re-signs in sequence",
        mechanism="report forging in-process",
    ),
    "round18: assertEqual's asserters registered by the case's own method, called from code named as a test file": Pattern(
        append(SPOOFED_REGISTERED),
        what="case.addTypeEqualityFunc(kind, no_op) called from a function compiled under a test file's name in the "
        "main thread: the monitor's culprit walk takes it for the test's own registration, and vetted vouches",
        mechanism="rebinding unwatched objects",
    ),
    "round18: assertEqual's asserters registered by finalizers the garbage collector runs in the test's own frame": Pattern(
        append(FINALIZER_REGISTERED),
        what="weakref.finalize(junk, case.addTypeEqualityFunc, kind, no_op) on self-referencing garbage and "
        "gc.set_threshold(1): the collection runs at the next allocation, inside the assertEqual the test calls, "
        "with weakref.py, unittest and the test's frame on the stack",
        mechanism="rebinding unwatched objects",
    ),
    "round18: the verdict channel relayed with the run's key, found by a walk a gc finalizer makes": Pattern(
        append(FINALIZER_RELAY),
        what="weakref.finalize(junk, found.extend, map(gc.get_objects, [None])) collected at the first allocation "
        "after the module's import returned (import system, test module): not refused; then the relay of the "
        "walk compiled under a test file's name",
        mechanism="report forging in-process",
    ),
}
