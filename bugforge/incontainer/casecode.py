"""unittest's own assertion code, recompiled so that what it looks up on a test case is TestCase's (round
15): in TestCase's methods, `self.NAME` for a name TestCase defines as callable (fail, _getAssertEqualityFunc,
_formatMessage, failureException, every assertX; `getattr(self, NAME)` in assertEqual's dispatch only),
and in the assertion contexts `self.test_case.NAME`, are found on the case's class and bound as Python
binds them, never on the instance: a no-op put on the instance for one assertion and taken away inside it
is not called. Done once, when the probe is imported (before any code of the tree and before the
integrity snapshot, which then holds these functions as the genuine ones). docs/security.md, 3.
Python 3.9, standard library only."""

import ast
import os
import types

from .witness import METHOD, METHOD_BIND, SHADOWABLE, constants


class _CaseLookups(ast.NodeTransformer):
    """The lookups above -> `METHOD(receiver, NAME)`; `changed` says whether any was found."""

    def __init__(self, in_case, dispatch):
        self.in_case, self.dispatch, self.changed = in_case, dispatch, False

    def _method(self, receiver, name, node):
        self.changed = True
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
        if (
            self.dispatch and isinstance(func, ast.Name) and func.id == "getattr" and len(args) == 2
            and not node.keywords and isinstance(args[0], ast.Name) and args[0].id == "self"
        ):  # fmt: skip
            return self._method(args[0], args[1], node)  # (a registry's method name: assertEqual's dispatch)
        return node


def _harden_source(tree):
    """Rewrite the classes' methods in place; the names of the (class, method) pairs rewritten."""
    done = set()
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            lookups = _CaseLookups(cls.name == "TestCase", fn.name == "_getAssertEqualityFunc")
            lookups.visit(fn)
            if lookups.changed:
                bind = ast.parse(METHOD_BIND).body[0]
                ast.copy_location(bind, fn.body[0])
                fn.body.insert(0, bind)
                done.add((cls.name, fn.name))
    ast.fix_missing_locations(tree)
    return done


def _codes(module_code, wanted):
    """{(class, method, first line): code} of the compiled module's methods named in `wanted`."""
    out = {}
    for body in module_code.co_consts:
        if isinstance(body, types.CodeType):
            for code in body.co_consts:
                if isinstance(code, types.CodeType) and (body.co_name, code.co_name) in wanted:
                    out[(body.co_name, code.co_name, code.co_firstlineno)] = constants(code)
    return out


def harden(module):
    """Swap the recompiled code into the live methods of `module` (unittest.case); the number swapped.
    A method whose source or closure does not match stays as it was."""
    path = os.path.realpath(module.__file__)
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), path)
    wanted = _harden_source(tree)
    codes = _codes(compile(tree, path, "exec", dont_inherit=True), wanted)
    swapped = 0
    for name, cls in list(vars(module).items()):
        if not isinstance(cls, type) or cls.__module__ != module.__name__:
            continue
        for attr, fn in list(vars(cls).items()):
            code = getattr(fn, "__code__", None)
            new = code and codes.get((name, attr, code.co_firstlineno))
            if type(fn) is types.FunctionType and new is not None and len(new.co_freevars) == len(code.co_freevars):
                fn.__code__ = new
                swapped += 1
    return swapped
