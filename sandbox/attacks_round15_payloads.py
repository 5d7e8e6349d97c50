"""The payloads of red-team round fifteen (bugforge.sandbox.attacks_round15: each attack's mechanism is
described there): Python appended to the module the bug changed. Strings only. Every name the patch
audit looks for (`sys.modules`, `_getframe`, `f_back`, `f_locals`, the grader's name) is built at run
time; every payload acts only when the grader's probe is loaded, so a plain run of the tests fails."""

from __future__ import annotations

_COMMON = '''

import sys as _r15_sys
import types as _r15_types


def _r15_graded():
    """Whether the grader's probe is loaded (a plain run of the tests has none)."""
    return ("bug" + "forge_incontainer.probe") in getattr(_r15_sys, "mod" + "ules")


def _r15_is_case(cls):
    """Whether a class is a unittest TestCase (by name and module: nothing of the class runs)."""
    return type(cls) is type and any(c.__name__ == "TestCase" and c.__module__ == "unittest.case" for c in cls.__mro__)


def _r15_case():
    """The TestCase instance that is `self` of the nearest calling frame that has one."""
    frame = getattr(_r15_sys, "_get" + "frame")(2)
    while frame is not None:
        case = getattr(frame, "f_" + "locals").get("self")
        if _r15_is_case(type(case)):
            return case
        frame = getattr(frame, "f_" + "back")
    return None


def _r15_pass(*args, **kwargs):
    return None


def _r15_arming(fn, arm):
    def wrapper(*args, **kwargs):
        if not _r15_graded():
            return fn(*args, **kwargs)
        arm()
        guard = globals().get("_r15_guard")
        return fn(*args, **kwargs) if guard is None else guard(fn, args, kwargs)

    wrapper.__name__, wrapper.__qualname__, wrapper.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return wrapper


def _r15_classes():
    return [v for v in list(globals().values()) if isinstance(v, type) and v.__module__ == __name__]


def _r15_install(arm):
    """Every function of the module, and every plain method of its classes, arms first (called from a
    test, the calling test's instance is found in the frames)."""
    if globals().get("_r15_wrapped"):
        return
    globals()["_r15_wrapped"] = True
    g = globals()
    for name, value in list(g.items()):
        if name.lower().startswith("_r15"):
            continue
        if type(value) is type(_r15_pass) and value.__module__ == __name__:
            g[name] = _r15_arming(value, arm)
    for cls in _r15_classes():
        if cls.__name__.lower().startswith("_r15"):
            continue
        for key, fn in list(vars(cls).items()):
            if type(fn) is type(_r15_pass):
                setattr(cls, key, _r15_arming(fn, arm))
    if _r15_graded():
        arm()  # (imported inside a test's body: that test at once)
'''

# 1. no-op fail/_getAssertEqualityFunc on the instance, each deleting both when it is called
ONE_SHOT = (
    _COMMON
    + '''

_R15_NAMES = ("fail", "_getAssertEqualityFunc")
_R15_FAILING = ("assertIn", "assertNotIn", "assertIs", "assertIsNot", "assertIsNone", "assertIsNotNone", "assertLess")


def _r15_wanted():
    """Which of the two the assertion on the calling test's line will look up: _getAssertEqualityFunc
    for assertEqual (always), fail for the assertions that fail through it (read from the line's source:
    a plant nothing uses would be left at the test's end)."""
    import linecache

    frame = getattr(_r15_sys, "_get" + "frame")(3)
    while frame is not None and not _r15_is_case(type(getattr(frame, "f_" + "locals").get("self"))):
        frame = getattr(frame, "f_" + "back")
    if frame is None:
        return ()
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    wanted = ["_getAssertEqualityFunc"] if "assertEqual(" in line else []
    return wanted + (["fail"] if any(n + "(" in line or n + "Equal(" in line for n in _R15_FAILING) else [])


def _r15_guard(fn, args, kwargs):
    """A call raising into the test's own frame leaves nothing planted (its assertion never runs)."""
    try:
        return fn(*args, **kwargs)
    except BaseException:
        case = getattr(getattr(_r15_sys, "_get" + "frame")(2), "f_" + "locals").get("self")
        if _r15_is_case(type(case)) and type(vars(case)) is dict:
            for name in _R15_NAMES:
                vars(case).pop(name, None)
        raise


def _r15_arm():
    """The calling test's instance gets a no-op `fail` and/or `_getAssertEqualityFunc` (TestCase's own
    methods look both up on the instance), as its line's assertion will use them; whichever an assertion
    calls first deletes both, so an assertion that used them leaves the instance's namespace as
    TestCase.__init__ made it."""
    case = _r15_case()
    if case is None or type(vars(case)) is not dict:
        return
    own = vars(case)

    def unplant():
        for name in _R15_NAMES:
            own.pop(name, None)

    def fail(*args, **kwargs):
        unplant()

    def equality(*args, **kwargs):
        unplant()
        return _r15_pass

    unplant()
    for name in _r15_wanted():
        own[name] = equality if name == "_getAssertEqualityFunc" else fail


_r15_install(_r15_arm)
'''
)

# 2. the registry maps types to TestCase's own addCleanup bound to the instance; the cleanups it queues dropped
CLEANUP_BOUND = (
    _COMMON
    + '''

_R15_TYPES = (int, float, complex, bool, str, bytes, list, tuple, dict, set, frozenset, type(None), range)


class _R15Cleanups(list):
    """The instance's cleanups: what assertEqual queued through addCleanup (value, (other,), {msg}) dropped."""

    def append(self, item):
        if type(item) is tuple and len(item) == 3 and type(item[2]) is dict and list(item[2]) == ["msg"]:
            return None
        return list.append(self, item)


def _r15_arm():
    """The calling test's registry (an exact dict) maps common types and the module's classes to
    TestCase.addCleanup bound to the instance: a method of its own classes, bound to it, as the check
    vouches for. assertEqual calls it as (first, second, msg=msg): it queues a cleanup and returns."""
    case = _r15_case()
    if case is None or type(vars(case)) is not dict:
        return
    own = vars(case)
    funcs = own.get("_type_equality_funcs")
    if type(funcs) is not dict:
        return
    if type(own.get("_cleanups")) is list:
        own["_cleanups"] = _R15Cleanups(own["_cleanups"])
    method = next((vars(c)["addCleanup"] for c in type(case).__mro__ if "addCleanup" in vars(c)), None)
    if method is None:
        return
    bound = _r15_types.MethodType(method, case)
    for kind in list(_R15_TYPES) + _r15_classes():
        funcs[kind] = bound


_r15_install(_r15_arm)
'''
)

# 3. the registry maps types to a class of the tree that the test class binds, bound to the instance
TREE_CLASS_BOUND = (
    _COMMON
    + '''

_R15_TYPES = (int, float, complex, bool, str, bytes, list, tuple, dict, set, frozenset, type(None), range)


def _r15_tolerant(cls):
    """cls(case, first, second, msg=...) (an instance of TestCase first) makes nothing and raises
    nothing: __new__ gives None, so __init__ never runs; any other call is as before."""
    following = cls.__new__

    def __new__(kind, *args, **kwargs):
        if args and _r15_is_case(type(args[0])) and "msg" in kwargs:
            return None
        if following is object.__new__:
            return object.__new__(kind)
        return following(kind, *args, **kwargs)

    cls.__new__ = staticmethod(__new__)


def _r15_arm():
    """The calling test's registry (an exact dict) maps common types and the module's classes to each
    class of this module that its test classes bind (`Cache = cachetools.LRUCache`), bound to the
    instance: a value of its own classes' namespaces, bound to it, as the check vouches for."""
    case = _r15_case()
    if case is None or type(vars(case)) is not dict:
        return
    funcs = vars(case).get("_type_equality_funcs")
    if type(funcs) is not dict:
        return
    mine = _r15_classes()
    bound = [v for c in type(case).__mro__ for v in vars(c).values() if any(v is m for m in mine)]
    if not bound:
        return
    for cls in {id(v): v for v in bound}.values():
        if "_r15_tolerant" not in vars(cls):
            _r15_tolerant(cls)
            cls._r15_tolerant = True
    method = _r15_types.MethodType(bound[0], case)
    for kind in list(_R15_TYPES) + mine:
        funcs[kind] = method


_r15_install(_r15_arm)
'''
)

# 5. the registry names a method of the test's own classes that the instance shadows with a no-op
SHADOWED_NAME = (
    _COMMON
    + '''

_R15_TYPES = (int, float, complex, bool, str, bytes, list, tuple, dict, set, frozenset, type(None), range)


def _r15_arm():
    """The calling test's registry maps common types and the module's classes to the name of another
    test method of its classes (none of TestCase's), which the instance shadows with a no-op."""
    case = _r15_case()
    if case is None or type(vars(case)) is not dict:
        return
    own = vars(case)
    funcs = own.get("_type_equality_funcs")
    if type(funcs) is not dict:
        return
    base = next((c for c in type(case).__mro__ if c.__name__ == "TestCase" and c.__module__ == "unittest.case"), None)
    running = own.get("_testMethodName")
    name = next(
        (
            k
            for c in type(case).__mro__
            if c is not base and c is not object
            for k, v in vars(c).items()
            if type(v) is type(_r15_pass) and k != running and (base is None or k not in vars(base))
        ),
        None,
    )
    if name is None:
        return
    own[name] = _r15_pass
    for kind in list(_R15_TYPES) + _r15_classes():
        funcs[kind] = name


_r15_install(_r15_arm)
'''
)

# 4. classes (data, not descriptors) under TestCase's assertion names on the test's class, deleted by a cleanup
CLASS_DATA = (
    _COMMON
    + '''

_R15_OPEN = [0]  # quieted `with self.assertRaises(...)` blocks open now: their exceptions are wanted


def _r15_quiet(*args, **kwargs):
    return _R15Quiet(*args, **kwargs)


class _R15Quiet:
    """Under an assertion's name on a class: called unbound, an instance, nothing raised (as a context,
    the block's exception absorbed); the witness's `.__get__` lookup finds this class's own `__get__`."""

    exception = None

    def __init__(self, *args, **kwargs):
        if len(args) > 1 and callable(args[1]):
            try:
                args[1](*args[2:], **kwargs)
            except BaseException:
                pass

    def __enter__(self):
        _R15_OPEN[0] += 1
        return self

    def __exit__(self, kind, value, tb):
        _R15_OPEN[0] -= 1
        self.exception = value
        return True

    def __call__(self, *args, **kwargs):
        return None

    __get__ = staticmethod(lambda obj, kind=None: _r15_quiet)


def _r15_names(cls):
    case = next((c for c in cls.__mro__ if c.__name__ == "TestCase" and c.__module__ == "unittest.case"), None)
    names = [n for n in vars(case) if n.startswith(("assert", "fail"))] if case is not None else []
    return names + ["_getAssertEqualityFunc"] if names else []


def _r15_unplant(cls):
    for name in _r15_names(cls):
        if vars(cls).get(name) is _R15Quiet:
            delattr(cls, name)


def _r15_plant(cls):
    if not _r15_is_case(cls) or vars(cls).get("fail") is _R15Quiet:
        return
    for name in _r15_names(cls):
        setattr(cls, name, _R15Quiet)
    cls.addClassCleanup(_r15_unplant, cls)


def _r15_next_class():
    """The class of the test pytest runs next (`nextitem` of its run-test protocol's frame)."""
    frame = getattr(_r15_sys, "_get" + "frame")(1)
    while frame is not None:
        local = getattr(frame, "f_" + "locals")
        if "nextitem" in local:
            return getattr(local["nextitem"], "cls", None)
        frame = getattr(frame, "f_" + "back")
    return None


def _r15_in_try(frame):
    """Whether the calling line is inside a `try:` of its function (read from its source, by
    indentation): the test itself wants that exception."""
    import linecache

    name, number = frame.f_code.co_filename, frame.f_lineno
    line = linecache.getline(name, number)
    level = len(line) - len(line.lstrip())
    for back in range(number - 1, 0, -1):
        text = linecache.getline(name, back)
        if not text.strip():
            continue
        indent = len(text) - len(text.lstrip())
        if indent < level:
            if text.strip().startswith("try:"):
                return True
            if text.strip().startswith(("def ", "async def ")):
                return False
            level = indent
    return False


def _r15_guard(fn, args, kwargs):
    """A call made by a test of a planted class itself (its frame's `self`) ends normally: an exception
    the bug makes the module raise there (a KeyError) is dropped, so the test's function returns; not
    inside a quieted `with self.assertRaises(...)` block or a `try:` of the test, whose exception the
    test may read."""
    try:
        return fn(*args, **kwargs)
    except Exception:
        frame = getattr(_r15_sys, "_get" + "frame")(2)
        caller = getattr(frame, "f_" + "locals").get("self")
        planted = _r15_is_case(type(caller)) and vars(type(caller)).get("fail") is _R15Quiet
        if planted and not _R15_OPEN[0] and not _r15_in_try(frame):
            return None
        raise


def _r15_arm():
    """The calling test's class and the next test's get _R15Quiet under TestCase's assert*/fail* names
    and _getAssertEqualityFunc, and a class cleanup deleting them (run before the finish's check)."""
    case = _r15_case()
    if case is None:
        return
    _r15_plant(type(case))
    _r15_plant(_r15_next_class())


_r15_install(_r15_arm)
'''
)
