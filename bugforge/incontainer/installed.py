"""Where a value's behaviour comes from: installed code (the standard library, site-packages, the
probe: what only root writes) or not. The integrity comparison (integrity.py) and the test files'
bindings (defined.py) allow a change only to a value whose behaviour, and what it holds, is installed.
The monitor runs these in its own thread on the tree's values: exact types and C-level reads only, no
method of a value's class runs. Python 3.9, standard library only."""

import builtins
import functools
import itertools
import operator
import os
import sys
import types


def plain_keys(namespace, _all=all, _map=map, _is=operator.is_, _str=itertools.repeat(str)):
    """Whether every key of a namespace is an exact str: only then does a lookup in it (or sorting its
    keys) run no code of the tree (a key's __eq__ on a hash collision, its __str__, its __hash__). At C
    speed, with no audit event and no hashing."""
    return _all(_map(_is, _map(type, namespace), _str))


def functions_of(obj):
    """The plain functions behind a function, classmethod, staticmethod or property (by exact type: no
    code of the tree's classes runs here, as `isinstance` would run a `__class__` property)."""
    kind = type(obj)
    if kind is classmethod or kind is staticmethod:
        obj = obj.__func__
        kind = type(obj)
    if kind is property:
        return [f for f in (obj.fget, obj.fset, obj.fdel) if type(f) is types.FunctionType]
    return [obj] if kind is types.FunctionType else []


def native_is_the_images(path, installed, root):
    """Whether a native extension module's file is the image's own (docs/security.md, 3f): installed
    code (under `installed`, not the tree), or a file of the tree that only root can write (the image's
    build of the project; guard.give_tree leaves such files root's). Anywhere else (a temporary file,
    memfd, the user's home) or a tree file the test user owns or can write: not (round 21 loaded its
    own code from all of these and rewrote the C functions the monitor signs with)."""
    try:
        real, st = os.path.realpath(path), os.stat(path)
    except (OSError, TypeError, ValueError):
        return False
    if real.startswith(root):
        return st.st_uid == 0 and not st.st_mode & 0o022
    return (real + os.sep).startswith(installed) or real.startswith(installed)


def installed_dirs(root):
    import sysconfig

    paths = sysconfig.get_paths()
    dirs = {os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    dirs.add(os.path.realpath(os.path.dirname(os.__file__)))
    dirs.add(os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # the probe's own
    return tuple(d.rstrip("/") + "/" for d in dirs if not (d + "/").startswith(root))


def named_like_test(name):
    """Whether a file's base name is a test file's by pytest's default patterns, or a conftest."""
    return name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")


def test_module_name(name):
    """Whether a file's base name is a test module's: named like a test, and Python source (the names code
    of a test file may carry, which origin.py trusts and names.py keeps the tree from giving code)."""
    return named_like_test(name) and name.endswith(".py")


MRO, _DICT_OFFSET = type.__dict__["__mro__"].__get__, type.__dict__["__dictoffset__"].__get__
C3 = type.__dict__["mro"]  # the MRO a class's bases give (type.mro, C3), whatever its metaclass's mro() says
CLASS_DICT, _MODULE_DICT = type.__dict__["__dict__"].__get__, types.ModuleType.__dict__["__dict__"].__get__
_MODULE_OF, ODD = type.__dict__["__module__"].__get__, "<a value whose class cannot be read plainly>"
_FLAGS, _IMMUTABLE, _HEAP = type.__dict__["__flags__"].__get__, 1 << 8, 1 << 9  # (C types: immutable or static)


def _c_dict(value):
    return object.__getattribute__(value, "__dict__")  # (generic and C: a C type's own `__dict__`)


_DICT_VALUES = operator.methodcaller("values")
BUILTIN_NAMES = frozenset(
    dir(builtins)
)  # (a module's global of such a name hides the builtin from its code)  # (of an exact dict or a class's mappingproxy: C)


def frozen_codes():
    """Ids of the code objects of the frozen modules loaded now (importlib's bootstrap; on 3.11+ also
    os, posixpath, ...), with those nested in them: their frames (files named "<frozen ...>", a name a
    string can take too) count as installed code by the identity of their code."""
    codes, stack = set(), []
    for module in list(sys.modules.values()):
        spec = getattr(module, "__spec__", None)
        if getattr(spec, "origin", None) != "frozen":
            continue
        for value in list(vars(module).values()):
            for obj in [value, *(vars(value).values() if isinstance(value, type) else ())]:
                code = getattr(getattr(obj, "__func__", obj), "__code__", None)
                if isinstance(code, types.CodeType):
                    stack.append(code)
    while stack:
        code = stack.pop()
        if id(code) not in codes:
            codes.add(id(code))
            stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return frozenset(codes)


FROZEN = frozen_codes()  # (at the probe's import: before any code of the tree)


def _files_of(value, depth=2):
    """The source files a value's behaviour comes from ([] for built-in code and plain data): a
    function's own and those of what its closure holds, a partial's function and arguments, a bound
    method's function and object, a class's module and its own functions (a class's `__module__` is a
    name any code can give it), `depth` levels into what they hold. Only exact types and C-level reads:
    no method of the value's class runs (the monitor calls this on the tree's values, in its own thread)."""
    kind = type(value)
    if kind is types.ModuleType:
        return []
    if kind is types.BuiltinFunctionType or kind is types.MethodWrapperType:  # (a C method: what it is bound to)
        owner = value.__self__
        return [] if owner is None or type(owner) is types.ModuleType else _files_of(owner, max(depth - 1, 0))
    if kind is functools.partial:
        return _held_files([value.func, *value.args, *_DICT_VALUES(value.keywords)], depth)
    fns = functions_of(value) or (functions_of(value.__func__) if kind is types.MethodType else [])
    if fns:
        held = [value.__self__] if kind is types.MethodType else []
        cells = [c for f in fns for c in (f.__closure__ or ())]
        own = [f.__code__.co_filename for f in fns if id(f.__code__) not in FROZEN]  # (frozen: by identity)
        return own + _held_files(held + list(map(_cell, cells)), depth)
    if issubclass(kind, type):  # (a class: its module and its classes' functions; any module name is given)
        return _class_files(value) + _held_files(
            [v for c in MRO(value)[:-1] for v in _DICT_VALUES(CLASS_DICT(c))], depth
        )
    if _DICT_OFFSET(kind) and (_FLAGS(kind) & _IMMUTABLE or not _FLAGS(kind) & _HEAP):  # (a C object's dict:
        held = _c_dict(value)  # what it wraps, an lru_cache's __wrapped__)
        return _class_files(kind) + (_held_files(list(_DICT_VALUES(held)), depth) if type(held) is dict else [ODD])
    described = binds(kind)
    if not (callable(value) or described):
        return _class_files(kind) if _DICT_OFFSET(kind) else []
    return _files_of(kind, depth)  # (a callable instance: its class, judged by its functions too)


def binds(kind):
    """Whether a class's instances are descriptors (a `__get__` somewhere in its MRO), its namespaces read
    plainly (no code runs); one whose namespace holds a key that is not a string counts as binding."""
    return any(not plain_keys(CLASS_DICT(c)) or "__get__" in CLASS_DICT(c) for c in MRO(kind))


def _held_files(values, depth):
    """The files of what a value holds, one level less deep."""
    return [f for v in values for f in _files_of(v, depth - 1)] if depth > 0 else []


def _cell(cell):
    try:
        return cell.cell_contents
    except ValueError:  # (an empty cell)
        return None


RUNNER_COPIES = {}
"""Module name -> the runner's copy of it that start.restore dropped from sys.modules (a project that is
one of pytest's dependencies): a class naming it is read there, as before the drop, not in the tree's."""


def _class_files(cls):
    """The file of the module a class names (none for a built-in module's), read plainly; ODD where a
    namespace on the way holds a key that is not a string or a value of an unexpected type."""
    modules, copies = sys.modules, RUNNER_COPIES
    if not plain_keys(CLASS_DICT(cls)) or not plain_keys(modules) or not plain_keys(copies):
        return [ODD]
    name = _MODULE_OF(cls)  # (C: the class's `__module__`, or a built-in type's)
    module = copies.get(name, modules.get(name)) if type(name) is str else ODD
    if module is None:
        return []
    if type(module) is not types.ModuleType or not plain_keys(_MODULE_DICT(module)):
        return [ODD]
    path = _MODULE_DICT(module).get("__file__")
    return [path] if type(path) is str else []


def _real(path, _seen={}):  # noqa: B006 (a cache: the first answer for a file stands, as if asked then)
    """os.path.realpath, once per path (it walks the path's links with a system call each)."""
    if type(path) is not str:
        return ODD
    if path not in _seen:
        _seen[path] = os.path.realpath(path)
    return _seen[path]


def installed_value(value, installed, root):
    """Whether a value's behaviour comes only from installed code (not the tree, nothing the test user
    could write): how pytest and its plugins rebind things while they run. A file counts both as written
    and where it leads (`//usr/...` leads there, but no installed module is named so: round 24)."""
    files = [f for f in _files_of(value) if f is not None]
    return all((_real(f) + "/").startswith(installed) and f.startswith(installed) for f in files) and not any(
        (os.path.abspath(f) + "/").startswith(root) for f in files
    )
