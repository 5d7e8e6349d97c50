"""The payloads of red-team round seventeen (bugforge.sandbox.attacks_round17: each attack's mechanism is
described there): Python appended to the module the bug changed. Strings only. Every name the patch
audit looks for (`sys.modules`, `_getframe`, `f_back`, `f_locals`, `f_code`, `gc.get_objects`, `import
gc`, the grader's names) is built at run time; every payload acts only when the grader's probe is
loaded, so a plain run of the tests fails."""

from __future__ import annotations

# What every attack shares: each function of the module, and each plain method of its classes, calls
# `_r17_before(caller)` when it is called and `_r17_after(caller, value)` with what it returned (each
# attack's own; by default nothing), `caller` being the frame that called it. `_r17_test_frame` finds the
# test's frame (its `self` a TestCase, its code not unittest's) outward from a frame.
_COMMON = '''

import sys as _r17_sys
import threading as _r17_threading

_r17_getframe = getattr(_r17_sys, "_get" + "frame")


def _r17_graded():
    """Whether the grader's probe is loaded (a plain run of the tests has none)."""
    return ("bug" + "forge_incontainer.probe") in getattr(_r17_sys, "mod" + "ules")


def _r17_back(frame):
    return getattr(frame, "f_" + "back")


def _r17_locals(frame):
    return getattr(frame, "f_" + "locals")


def _r17_code(frame):
    return getattr(frame, "f_" + "code")


def _r17_is_case(cls):
    """Whether a class is a unittest TestCase (by name and module: nothing of the class runs)."""
    return isinstance(cls, type) and any(
        c.__name__ == "TestCase" and c.__module__ == "unittest.case" for c in type.__dict__["__mro__"].__get__(cls)
    )


def _r17_unittest(frame):
    return _r17_code(frame).co_filename.replace("\\\\", "/").endswith("unittest/case.py")


def _r17_test_frame(frame):
    """The nearest frame from `frame` outward of the test's side: its `self` a TestCase, its code not
    unittest's (the test's own function, or a helper of its class)."""
    while frame is not None:
        case = _r17_locals(frame).get("self")
        if _r17_is_case(type(case)) and not _r17_unittest(frame):
            return frame
        frame = _r17_back(frame)
    return None


def _r17_case(caller):
    frame = _r17_test_frame(caller)
    return None if frame is None else _r17_locals(frame).get("self")


def _r17_pass(*args, **kwargs):
    return None


def _r17_before(caller):
    return None


def _r17_after(caller, value):
    return value


def _r17_arming(fn):
    def wrapper(*args, **kwargs):
        if not _r17_graded():
            return fn(*args, **kwargs)
        caller = _r17_getframe(1)
        globals()["_r17_before"](caller)
        value = fn(*args, **kwargs)
        return globals()["_r17_after"](caller, value)

    wrapper.__name__, wrapper.__qualname__, wrapper.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    wrapper.__wrapped__ = fn
    return wrapper


def _r17_own_classes():
    return [v for v in list(globals().values()) if isinstance(v, type) and v.__module__ == __name__
            and not v.__name__.lower().startswith("_r17")]


def _r17_install():
    """Every function of the module, and every plain method of its classes, calls the attack first."""
    g = globals()
    if g.get("_r17_wrapped"):
        return
    g["_r17_wrapped"] = True
    for name, value in list(g.items()):
        if name.lower().startswith("_r17") or type(value) is not type(_r17_pass) or value.__module__ != __name__:
            continue
        g[name] = _r17_arming(value)
    for cls in _r17_own_classes():
        for key, fn in list(vars(cls).items()):
            if type(fn) is type(_r17_pass):
                setattr(cls, key, _r17_arming(fn))


class _R17Absorb:
    """What a quieted assertRaises(...) gives a `with` block: it swallows what the block raises."""

    def __init__(self, expected=None):
        self.exception = expected() if isinstance(expected, type) and issubclass(expected, BaseException) else None
        self.warning, self.records, self.output = self.exception, [], []

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if value is not None:
            self.exception = value
        return True


_R17_RAISING = ("assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "failUnlessRaises", "assertWarns",
                "assertWarnsRegex", "assertLogs", "assertNoLogs")


def _r17_quiet_for(name):
    """A no-op for TestCase's assertion NAME (an unbound function: self first)."""
    if name in _R17_RAISING:

        def quiet(self, expected=None, *args, **kwargs):
            if args and callable(args[0]) and name != "assertLogs":  # (the callable form: run, absorbed)
                with _R17Absorb():
                    args[0](*args[1:], **kwargs)
                return None
            return _R17Absorb(expected)

    else:

        def quiet(self, *args, **kwargs):
            return None

    quiet.__name__ = quiet.__qualname__ = name
    return quiet


_R17_NAMES = []


def _r17_assertion_names():
    """TestCase's assertions (assertX, failX), interned as the lookups' constant names are."""
    if not _R17_NAMES:
        import unittest

        names = [n for n in dir(unittest.TestCase) if n.startswith(("assert", "fail")) and n != "failureException"]
        _R17_NAMES.extend(_r17_sys.intern(n) for n in names if callable(getattr(unittest.TestCase, n)))
    return _R17_NAMES
'''

# 1. assertRaises's context: its own instance state, rewritten from a finalizer that clear_frames runs
CONTEXT_FINALIZER = (
    _COMMON
    + '''

import ast as _r17_ast
import linecache as _r17_lines

_R17_EXPECTING = ("assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "failUnlessRaises")
_R17_BLOCKS = {}  # a file -> [(first, last line)] of the bodies of its `with self.assertRaises(...)` blocks


def _r17_blocks(filename):
    found = _R17_BLOCKS.get(filename)
    if found is None:
        found = []
        try:
            tree = _r17_ast.parse("".join(_r17_lines.getlines(filename)))
        except (SyntaxError, ValueError):
            tree = None
        for node in _r17_ast.walk(tree) if tree is not None else ():
            if isinstance(node, (_r17_ast.With, _r17_ast.AsyncWith)) and node.body:
                for item in node.items:
                    call = item.context_expr
                    if isinstance(call, _r17_ast.Call) and getattr(call.func, "attr", None) in _R17_EXPECTING:
                        found.append((node.body[0].lineno, node.end_lineno))
        _R17_BLOCKS[filename] = found
    return found


def _r17_expecting(caller):
    """Whether the module was called straight from code that expects it to raise: assertRaises's
    callable form (the context's `handle`), or a test's line inside a `with self.assertRaises` block."""
    code = _r17_code(caller)
    if _r17_unittest(caller):
        return code.co_name == "handle" and type(_r17_locals(caller).get("self")).__name__ == "_AssertRaisesContext"
    if _r17_test_frame(caller) is not caller:
        return False
    line = caller.f_lineno
    return any(first <= line <= last for first, last in _r17_blocks(code.co_filename))


class _R17Any:
    """An `expected` that every exception class is a subclass of (issubclass asks it)."""

    def __subclasscheck__(self, kind):
        return True

    def __repr__(self):
        return "Exception"


class _R17Decoy(Exception):
    """What the module raises, where it returned, inside a block that expects it to raise."""


class _R17Keep:
    """Held by a local of the raising frame only: clear_frames (in assertRaises's __exit__, before its
    issubclass) clears that frame, and this finalizer gives the context, its caller, an `expected`
    that takes any exception."""

    def __del__(self):
        frame = _r17_getframe(1)
        while frame is not None:
            if _r17_code(frame).co_name == "__exit__" and _r17_unittest(frame):
                context = _r17_locals(frame).get("self")
                if type(context).__name__ == "_AssertRaisesContext":
                    context.expected, context.expected_regex = _R17Any(), None
                return
            frame = _r17_back(frame)


def _r17_after(caller, value):
    if _r17_expecting(caller):
        keep = _R17Keep()  # noqa: F841 (a local of this frame, the traceback's last)
        raise _R17Decoy("the module returned")
    return value


_r17_install()
'''
)

# 2. the type-equality registry's asserters registered by a thread whose stack is installed code only
THREAD_REGISTERED = (
    _COMMON
    + """

import itertools as _r17_itertools

_R17_TYPES = (int, float, bool, str, bytes, tuple, list, dict, set, frozenset, type(None))


def _r17_quiet(first, second, msg=None):
    return None


def _r17_before(caller):
    case = _r17_case(caller)
    if case is None:
        return
    funcs = vars(case).get("_type_equality_funcs")
    if type(funcs) is not dict or funcs.get(int) is _r17_quiet:
        return
    pairs = [(kind, _r17_quiet) for kind in _R17_TYPES + tuple(_r17_own_classes())]
    # the thread runs list -> starmap -> the case's own addTypeEqualityFunc: C calls under threading.py,
    # so no frame of its stack is a file outside the installed directories
    calls = _r17_itertools.starmap(case.addTypeEqualityFunc, pairs)
    thread = _r17_threading.Thread(target=list, args=(calls,), daemon=True)
    thread.start()
    thread.join()


_r17_install()
"""
)

# 3. the interpreter's type attribute cache primed with no-ops, the class's namespace restored beneath it
STALE_TYPE_CACHE = (
    _COMMON
    + '''

_R17_QUIET = {}  # assertion name -> its no-op (kept alive: the type cache's entries are borrowed)


def _r17_real_dict(cls):
    """The dict under a class's mappingproxy: the proxy compares by its dict's comparison, which hands
    the dict to the other operand's reflected __eq__ (no audit event)."""
    got = []

    class Grab:
        __hash__ = None

        def __eq__(self, other):
            got.append(other)
            return True

    type.__dict__["__dict__"].__get__(cls) == Grab()
    return got[0] if got and type(got[0]) is dict else None


_R17_USED = {}  # id of a test class -> (the class, the assertion names its classes' source calls)


def _r17_used(cls):
    """The assertions the test class's own classes (its MRO but unittest's) call as `self.NAME(`, read
    from their source; all of TestCase's when none is found. Fewer entries: fewer of them evicted from
    the cache (a slot per (version tag, name), shared by every lookup of the process)."""
    import inspect
    import re

    held = _R17_USED.get(id(cls))
    if held is not None and held[0] is cls:
        return held[1]
    found = set()
    for c in type.__dict__["__mro__"].__get__(cls):
        if c is object or str(type.__dict__["__module__"].__get__(c)).startswith("unittest"):
            continue
        try:
            source = inspect.getsource(c)
        except Exception:
            continue
        found.update(re.findall(r"\\bself\\.((?:assert|fail)\\w*)\\s*\\(", source))
    every = _r17_assertion_names()
    names = [n for n in every if n in found] or list(every)
    _R17_USED[id(cls)] = (cls, names)
    return names


def _r17_prime(cls):
    """No-op assertions in the type cache for lookups on `cls`, its namespace as it was."""
    own = type.__dict__["__dict__"].__get__(cls)
    names = [n for n in _r17_used(cls) if n not in own]
    for name in names:
        if name not in _R17_QUIET:
            _R17_QUIET[name] = _r17_quiet_for(name)
    if all(getattr(cls, n, None) is _R17_QUIET[n] for n in names):
        return  # (the cache still answers every lookup; a version tag is not spent again)
    real = _r17_real_dict(cls)
    if real is None:
        return
    for name in names:
        setattr(cls, name, _R17_QUIET[name])  # (each set renews the class's version tag)
    for name in names:
        getattr(cls, name)  # (cached under the last tag: class and name -> the no-op)
    for name in names:
        real.pop(name, None)  # (through the dict: the tag stays valid, the cache keeps answering)


def _r17_cases():
    """The test classes (TestCase's subclasses defined outside unittest), as they are made."""
    import unittest

    subclasses = type.__dict__["__sub" + "classes__"]
    out, todo = [], [unittest.TestCase]
    while todo:
        for sub in subclasses(todo.pop()):
            if sub not in out:
                out.append(sub)
                todo.append(sub)
    return [c for c in out if not str(type.__dict__["__module__"].__get__(c)).startswith("unittest")]


def _r17_before(caller):
    case = _r17_case(caller)
    if case is not None:
        _r17_prime(type(case))


def _r17_poll():
    """Primes every test class soon after its module is imported (before its first test: a test whose
    first statement is an assertion looks it up before any call into the module), and again whenever
    one of its entries was evicted or its version tag renewed (a set on it or on a base)."""
    import time

    _r17_sys.setswitchinterval(0.0005)  # (the GIL handed over soon after a test module's import)
    while True:
        try:
            for cls in _r17_cases():
                _r17_prime(cls)  # (every turn: an entry evicted, or the class's tag renewed, is put back)
        except Exception:
            pass
        time.sleep(0.0005)


if _r17_graded():
    for _r17_cls in _r17_cases():  # (a module imported once the tests exist: inside a test)
        _r17_prime(_r17_cls)
    _r17_threading.Thread(target=_r17_poll, name="r17", daemon=True).start()

_r17_install()
'''
)

# 4. an object walk (gc) run as a thread's target: the grader's records of the test classes emptied
THREAD_GC = (
    _COMMON
    + '''

import importlib as _r17_importlib

_r17_gc = getattr(_r17_importlib, "import_" + "module")("g" + "c")

_R17_PLANTED = []  # test classes given no-op assertions


def _r17_objects():
    """Every object the collector tracks, listed by a thread that runs list.extend over
    map(the collector's object list, [None]): C calls under threading.py, no frame of the tree on its stack."""
    found = []
    walk = getattr(_r17_gc, "get_" + "objects")
    thread = _r17_threading.Thread(target=found.extend, args=(map(walk, [None]),), daemon=True)
    thread.start()
    thread.join()
    return found[0] if found else []


_R17_HELD = []  # [the witness, the probe], once found


def _r17_find():
    """The witness (held in the monitor's closure only) and the probe, from the object list."""
    if not _R17_HELD:
        witness = probe = None
        for obj in _r17_objects():
            kind = type(obj)
            module = type.__dict__["__module__"].__get__(kind)
            if type(module) is not str:
                continue
            if kind.__name__ == "Witness" and module.endswith(".witness"):
                witness = obj
            elif kind.__name__ == "Probe" and module.endswith(".probe"):
                probe = obj
        if witness is None or probe is None:
            return
        _R17_HELD[:] = [witness, probe]


def _r17_blind():
    """The witness's record of each test's class (its end check skips a test with none) and the probe's
    test modules (the finish's check of their classes) emptied in place."""
    _r17_find()
    if not _R17_HELD:
        return
    witness, probe = _R17_HELD
    witness.classes.clear()
    probe.test_modules.clear()
    _r17_vouch()


def _r17_vouch():
    """The witness's cache of classes found unchanged since their last full check (`verified`: the end
    check skips the full one while a class's namespaces are the same by identity) told that each planted
    class, as it is now, was checked: an entry collection added after the witness's record was emptied
    (the monitor still filling it) then passes too."""
    caseclass = getattr(_r17_sys, "mod" + "ules").get("bug" + "forge_incontainer.caseclass")
    if caseclass is None or not _R17_HELD:
        return
    for cls in _R17_PLANTED:
        _R17_HELD[0].verified[id(cls)] = (cls, caseclass.class_flat(cls))


def _r17_plant(cls):
    if any(c is cls for c in _R17_PLANTED):
        return
    own = type.__dict__["__dict__"].__get__(cls)
    for name in _r17_assertion_names():
        if name not in own:
            setattr(cls, name, _r17_quiet_for(name))
    _R17_PLANTED.append(cls)
    _r17_vouch()


def _r17_before(caller):
    case = _r17_case(caller)
    if case is None:
        return
    if not any(c is type(case) for c in _R17_PLANTED):
        _r17_blind()
        _r17_plant(type(case))


def _r17_cases():
    """The test classes (TestCase's subclasses defined outside unittest)."""
    import unittest

    subclasses = type.__dict__["__sub" + "classes__"]
    out, todo = [], [unittest.TestCase]
    while todo:
        for sub in subclasses(todo.pop()):
            if sub not in out:
                out.append(sub)
                todo.append(sub)
    return [c for c in out if not str(type.__dict__["__module__"].__get__(c)).startswith("unittest")]


def _r17_poll():
    """Once collection has filled the witness's record of the test classes (and the monitor has taken
    the collection's checks), empty it and plant every test class, before the first test runs (a test
    whose first statement is an assertion looks it up before any call into the module)."""
    import time

    try:
        _r17_find()  # (a thread of installed code lists the objects)
        if not _R17_HELD:
            return
        witness, last, interval = _R17_HELD[0], -1, _r17_sys.getswitchinterval()
        _r17_sys.setswitchinterval(0.0001)  # (the GIL handed over often until the classes are planted)
        while True:
            size = len(witness.classes)
            if size and size == last:
                _r17_blind()
                for cls in _r17_cases():
                    _r17_plant(cls)
                _r17_sys.setswitchinterval(interval)
                return  # (collection is over: no test class is made after it)
            last = size
            time.sleep(0.0005)
    except Exception:
        return


if _r17_graded():
    _r17_find()
    if _R17_HELD and _R17_HELD[0].classes:  # (a module imported once the tests are collected: inside a test)
        _r17_blind()
        for _r17_cls in _r17_cases():
            _r17_plant(_r17_cls)
    else:
        _r17_threading.Thread(target=_r17_poll, name="r17", daemon=True).start()

_r17_install()
'''
)

# 5. re.compile, which the assertions call through the re module at run time, outside the integrity snapshot
UNWATCHED_STDLIB = (
    _COMMON
    + '''

import re as _r17_re

_R17_COMPILE = _r17_re.compile


def _r17_asker(frame):
    """The unittest.case function that called (its name), or None."""
    return _r17_code(frame).co_name if frame is not None and _r17_unittest(frame) else None


class _R17Match:
    """A compiled pattern as the assertion asking for it wants it: every search found, or none."""

    def __init__(self, genuine, found):
        self._r17_genuine, self._r17_found = genuine, found

    def search(self, *args, **kwargs):
        return (self._r17_genuine.search("") or True) if self._r17_found else None

    def __getattr__(self, name):
        return getattr(self._r17_genuine, name)


def _r17_compile(pattern, flags=0):
    genuine = _R17_COMPILE(pattern, flags)
    asker = _r17_asker(_r17_getframe(1))
    if asker in ("assertRegex", "assertRegexpMatches", "__init__"):  # (__init__: the ...Regex contexts')
        return _R17Match(genuine, True)
    if asker in ("assertNotRegex", "assertNotRegexpMatches"):
        return _R17Match(genuine, False)
    return genuine


def _r17_arm():
    if _r17_graded() and _r17_re.compile is _R17_COMPILE:
        _r17_re.compile = _r17_compile


_r17_arm()
'''
)

# 6. the unittest outcome's result object (what a failed subTest reports to) swapped for one that drops failures
SUBTEST_RESULT = (
    _COMMON
    + '''

class _R17Result:
    """The outcome's result, as subTest's part executor sees it: every subtest's report is dropped (a
    passed one forwarded from here would reach pytest's reporting with this frame on the stack, which
    the monitor refuses to record); every other attribute is the genuine result's (pytest's item), bound
    to it, so what unittest calls on it runs with no frame of the tree; failfast is off."""

    failfast = False

    def __init__(self, genuine):
        self._r17_genuine = genuine

    def addSubTest(self, test, subtest, err):
        return None

    def __getattr__(self, name):
        return getattr(self._r17_genuine, name)


def _r17_before(caller):
    case = _r17_case(caller)
    outcome = vars(case).get("_outcome") if case is not None else None
    if outcome is None or type(getattr(outcome, "result", None)) is _R17Result:
        return
    if getattr(outcome, "result", None) is not None:
        outcome.result = _R17Result(outcome.result)


_r17_install()
'''
)
