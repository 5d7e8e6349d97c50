"""unittest's own assertion code, recompiled when the probe is imported (before any code of the tree and
before the integrity snapshot, which then holds these functions as the genuine ones) so that nothing a
test's run changes between two of the grader's checks steers it. docs/security.md, 3.
- In TestCase's methods, `self.NAME` for a name TestCase defines as callable (fail, _formatMessage,
  failureException, every assertX; `getattr(self, NAME)` in assertEqual's dispatch), and in the assertion
  contexts `self.test_case.NAME`, are found on the case's class and bound as Python binds them, never on
  the instance (round 15).
- Every name these methods read from unittest.case's namespace (the assertion contexts' classes,
  SkipTest, safe_repr, ...) is the value it had then, a constant of their code (round 16).
- assertEqual reads its type-equality registry through `vetted` (round 16): a plain dict, whose entry
  for the type is TestCase's default name for it or an asserter that the monitor saw the test's own code
  register (addTypeEqualityFunc raises REGISTERED); any other is refused where it is looked up.
Python 3.9, standard library only."""

import ast
import os
import sys
import types
import warnings

from .caseclass import DEFAULT_REGISTRY
from .witness import AUDIT, CONSTANTS, METHOD, METHOD_BIND, SHADOWABLE, constants

REGISTERED, ASSERTER, HELD = "bugforge.registered", "bugforge.asserter", "bugforge.held"
FAILED = "bugforge.failed"  # (a part of the running test raised a failure: it cannot pass)
_GLOBAL, _VETTED, _CHECKED = "\0bugforge.global:", "\0bugforge.vetted", "\0bugforge.checked_result"
_FAILED = "\0bugforge.failed_part"


def vetted(case, kind, _defaults=DEFAULT_REGISTRY, _get=dict.get, _type=type, _audit=sys.audit, _event=ASSERTER):
    """What assertEqual may use of `case`'s registry for `kind` (for `self._type_equality_funcs.get(kind)`
    in _getAssertEqualityFunc). Reads no global: what it uses is its defaults. A registry that is not a
    plain dict, or an entry that is not TestCase's default name for the type, goes to the monitor, which
    refuses it unless the test's own code registered it (then the PermissionError fails the assertion)."""
    registry = case._type_equality_funcs
    if _type(registry) is not dict:
        _audit(_event, case, kind, registry, False)
        return None
    found = _get(registry, kind)
    if found is None:
        return None
    if _type(found) is str:
        for k, name in _defaults:
            if k is kind and name == found:
                return found
    _audit(_event, case, kind, found, True)
    return found


class _CaseLookups(ast.NodeTransformer):
    """The lookups above -> `METHOD(receiver, NAME)`, the module's names -> constants, the registry's
    read -> `vetted(self, kind)`; `changed` says whether any was found."""

    def __init__(self, in_case, dispatch, module_names):
        self.in_case, self.dispatch, self.changed, self.binds = in_case, dispatch, False, False
        self.module_names = module_names  # (the module's global names this function does not bind)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.module_names:
            self.changed = True
            return ast.copy_location(ast.Constant(_GLOBAL + node.id), node)
        return node

    def _method(self, receiver, name, node):
        self.changed = self.binds = True  # (METHOD_BIND goes into this function)
        call = ast.Call(ast.Name(METHOD, ast.Load()), [receiver, name], [])
        return ast.copy_location(call, node)

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load) or node.attr not in SHADOWABLE:
            return node
        value = node.value
        if isinstance(value, ast.Name) and value.id == "self" and self.in_case:
            return self._method(value, ast.Constant(node.attr), node)
        if isinstance(value, ast.Attribute) and value.attr == "test_case":  # (the assertion contexts' case)
            return self._method(value, ast.Constant(node.attr), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func, args = node.func, node.args
        if self.dispatch and _is_registry_get(func) and len(args) == 1 and not node.keywords:
            self.changed = True
            return ast.copy_location(ast.Call(ast.Constant(_VETTED), [func.value.value, args[0]], []), node)
        if (
            self.dispatch and isinstance(func, ast.Name) and func.id == "getattr" and len(args) == 2
            and not node.keywords and isinstance(args[0], ast.Name) and args[0].id == "self"
        ):  # fmt: skip
            return self._method(args[0], args[1], node)  # (a registry's method name: assertEqual's dispatch)
        return node


def _is_registry_get(func):
    """`self._type_equality_funcs.get`"""
    return (
        isinstance(func, ast.Attribute) and func.attr == "get" and isinstance(func.value, ast.Attribute)
        and func.value.attr == "_type_equality_funcs" and isinstance(func.value.value, ast.Name)
        and func.value.value.id == "self"
    )  # fmt: skip


def _module_names(tree):
    """The names a module's top level binds (its functions, classes, imports, assignments)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _bound_in(fn):
    """Every name a function binds anywhere in it, nested scopes included (those stay lookups)."""
    names = {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}
    names.update(n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load))
    for node in ast.walk(fn):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and node is not fn:
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


# an assertion context's state, as its __init__ made it: held by the monitor, checked and used as held
_CONTEXT = "(self.expected, self.expected_regex, self.test_case)"
_READS = {"expected": 0, "expected_regex": 1}
_MADE = {"_AssertRaisesBaseContext": _CONTEXT, "_Outcome": "(self.result,)"}  # (what each __init__ reports)


def checked_result(outcome, _audit=sys.audit, _event=HELD):
    """`outcome.result` where testPartExecutor reports to it, as _Outcome.__init__ made it: the monitor
    refuses another (round 17 swapped it for a proxy that drops failed subtests' reports)."""
    result = outcome.result
    _audit(_event, outcome, (result,), False)
    return result


def failed_part(_audit=sys.audit, _event=FAILED):
    """A part of the running test raised a failure that what ran it caught: unittest's testPartExecutor
    (the test's body, a subTest, setUp, a cleanup) or pytest's `subtests` fixture. The monitor then holds
    the test as not passable, whatever is reported for it afterwards (round 20 told the outcome to expect
    the failure, and routed a failed subtest's report around the probe). Anyone may call this: it can only
    make a test fail."""
    _audit(_event)


def watch_subtests():
    """pytest's `subtests` fixture (pytest 9): a subtest's context manager reports a failure it caught to
    the monitor before anything of pytest's reporting runs (failed_part). Before the integrity snapshot,
    which then holds this `__exit__` as pytest's."""
    try:
        from _pytest import outcomes, subtests
    except ImportError:
        return
    cls, skips = subtests._SubTestContextManager, (outcomes.Skipped, outcomes.XFailed)

    def __exit__(self, exc_type, exc_val, exc_tb, _exit=cls.__exit__, _failed=failed_part, _type=type):
        if exc_val is not None and not issubclass(_type(exc_val), skips):  # (type(): no __class__ property)
            _failed()
        return _exit(self, exc_type, exc_val, exc_tb)

    cls.__exit__ = __exit__


class _HeldReads(ast.NodeTransformer):
    """`self.expected`, `self.expected_regex` read -> the values the monitor checked (__bugforge_held__);
    `self.result` (an outcome's) -> `checked_result(self)`."""

    def __init__(self, reads):
        self.reads = reads

    def visit_Attribute(self, node):
        self.generic_visit(node)
        value = node.value
        if not (isinstance(node.ctx, ast.Load) and isinstance(value, ast.Name) and value.id == "self"):
            return node
        if node.attr in _READS and self.reads == "context":
            held = ast.Name("__bugforge_held__", ast.Load())
            return ast.copy_location(ast.Subscript(held, ast.Constant(_READS[node.attr]), ast.Load()), node)
        if node.attr == "result" and self.reads == "outcome":
            return ast.copy_location(ast.Call(ast.Constant(_CHECKED), [value], []), node)
        return node


def _report_state(cls, fn):
    """Tell the monitor what the test's own code registers (addTypeEqualityFunc) and what an assertion
    context was made with; make a context's __exit__ check it and use what it checked (round 17 changed
    `expected` from a finalizer that __exit__'s clear_frames ran). Whether `fn` was changed."""
    bind = "%s = %r\n" % (AUDIT, "\0bugforge.audit")
    if cls == "TestCase" and fn.name == "addTypeEqualityFunc":
        fn.body[:0] = ast.parse(bind + "%s(%r, self, typeobj, function)" % (AUDIT, REGISTERED)).body
    elif cls in _MADE and fn.name == "__init__":
        fn.body[:0] = ast.parse(bind).body
        fn.body += ast.parse("%s(%r, self, %s, True)" % (AUDIT, HELD, _MADE[cls])).body
    elif cls in ("_AssertRaisesContext", "_AssertWarnsContext") and fn.name == "__exit__":
        _HeldReads("context").visit(fn)
        check = "__bugforge_held__ = %s\n%s(%r, self, __bugforge_held__, False)" % (_CONTEXT, AUDIT, HELD)
        fn.body[:0] = ast.parse(bind + check).body
    elif cls == "_Outcome" and fn.name == "testPartExecutor":
        _HeldReads("outcome").visit(fn)
        for node in ast.walk(fn):  # (its bare `except:`, the one that catches a part's failure)
            if isinstance(node, ast.ExceptHandler) and node.type is None:
                node.body[:0] = [ast.Expr(ast.Call(ast.Constant(_FAILED), [], []))]
    else:
        return False
    return True


def _harden_source(tree):
    """Rewrite the classes' methods in place; the names of the (class, method) pairs rewritten."""
    done, module_names = set(), _module_names(tree)
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            names = module_names - _bound_in(fn)
            lookups = _CaseLookups(cls.name == "TestCase", fn.name == "_getAssertEqualityFunc", names)
            lookups.visit(fn)
            if lookups.binds:
                fn.body.insert(0, ast.copy_location(ast.parse(METHOD_BIND).body[0], fn.body[0]))
            if _report_state(cls.name, fn) or lookups.changed:
                done.add((cls.name, fn.name))
    ast.fix_missing_locations(tree)
    return done


def _codes(module_code, wanted, names):
    """{(class, method, first line): code} of the compiled module's methods named in `wanted`, their
    stand-ins replaced by what `names` maps them to."""
    out = {}
    for body in module_code.co_consts:
        if isinstance(body, types.CodeType):
            for code in body.co_consts:
                if isinstance(code, types.CodeType) and (body.co_name, code.co_name) in wanted:
                    out[(body.co_name, code.co_name, code.co_firstlineno)] = constants(code, names)
    return out


def harden(module):
    """Swap the recompiled code into the live methods of `module` (unittest.case); the number swapped.
    A method whose source or closure does not match stays as it was."""
    path = os.path.realpath(module.__file__)
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), path)
    wanted = _harden_source(tree)
    names = dict(
        CONSTANTS,
        **{_GLOBAL + k: v for k, v in vars(module).items()},
        **{_VETTED: vetted, _CHECKED: checked_result, _FAILED: failed_part},
    )
    with warnings.catch_warnings():  # (the stand-ins: a str constant called, compared with `is`)
        warnings.simplefilter("ignore")
        module_code = compile(tree, path, "exec", dont_inherit=True)
    codes = _codes(module_code, wanted, names)
    swapped = 0
    for name, cls in list(vars(module).items()):
        if not isinstance(cls, type) or cls.__module__ != module.__name__:
            continue
        for attr, fn in list(vars(cls).items()):
            fn = getattr(fn, "__wrapped__", fn)  # (testPartExecutor: contextlib's wrapper calls the function)
            code = getattr(fn, "__code__", None)
            new = code and codes.get((name, attr, code.co_firstlineno))
            if type(fn) is types.FunctionType and new is not None and len(new.co_freevars) == len(code.co_freevars):
                fn.__code__ = new
                swapped += 1
    return swapped
