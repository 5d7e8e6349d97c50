"""Syntax-tree helpers for source.py: parse a source (cached), find a node's lines (first line with
decorators, a def or class header's last line, the innermost statement around a line), list the
statements inside compound ones and the functions at module or class level, read literal defaults, and
reduce a source to what a change confined to function bodies and literal defaults leaves as it was.
Standard library only, Python 3.9 syntax."""

import ast
from functools import lru_cache

BLANK = "<bugforge: a literal default>"


def docstring_only(f):
    return len(f.body) == 1 and isinstance(f.body[0], ast.Expr) and isinstance(f.body[0].value, ast.Constant)


def is_docstring(node):
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def is_all(node):
    return isinstance(node, (ast.Assign, ast.AugAssign)) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in getattr(node, "targets", [getattr(node, "target", None)])
    )


def nested(body):
    """The statements of a body and, recursively, of its compound statements other than def and class."""
    for s in body:
        yield s
        if not isinstance(s, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from nested(child_statements(s))


def code_lines(source):
    return sorted(line.strip() for line in source.splitlines() if line.strip())


def reads(nodes):
    return {n.id for x in nodes for n in ast.walk(x) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def signature(f):
    """The parts of a def statement that run when it does: defaults and (evaluated) annotations."""
    a = f.args
    parts = a.defaults + [d for d in a.kw_defaults if d is not None] + [f.returns]
    parts += [x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None]
    return [p for p in parts if p is not None]


def changed_literals(old, new, keys):
    """{key: (old value, new value)} for the literal defaults that differ (by type too: True is not 1)."""
    out = {}
    for key, a, b in zip(keys, old, new):
        if a is not None and is_literal(a):
            va, vb = ast.literal_eval(a), ast.literal_eval(b)
            if (type(va), repr(va)) != (type(vb), repr(vb)):
                out[key] = (va, vb)
    return out


def is_literal(node):
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, complex, str, bytes, bool, type(None)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float, complex)
    return isinstance(node, ast.Tuple) and all(is_literal(e) for e in node.elts)


def functions(body):
    """Functions defined at module or class level (not inside a function), in source order."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
        else:
            yield from functions(child_statements(node))


def blanked(source):
    """The source's tree without function bodies and with literal defaults blanked: what a change
    confined to those leaves as it was."""
    tree = ast.parse(source)  # (a fresh tree to change: parsing is faster than a deep copy)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.body = []
            a = node.args
            a.defaults = [ast.Constant(BLANK) if is_literal(d) else d for d in a.defaults]
            a.kw_defaults = [ast.Constant(BLANK) if d is not None and is_literal(d) else d for d in a.kw_defaults]
    return ast.dump(tree)


@lru_cache(maxsize=64)
def parse(source):
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def first_line(node):
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


def span_in(body, line, around):
    """`around`: the span of the enclosing statement when inside a function body, else None."""
    for node in body:
        if not first_line(node) <= line <= node.end_lineno:
            continue
        span = (first_line(node), node.end_lineno)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
                and first.lineno <= line <= first.end_lineno
            ):
                return None  # a docstring: doctests and __doc__ read it
            if line <= header_end(node):  # signature or decorators: they run when the def statement runs
                return span if around is not None else None
            if isinstance(node, ast.ClassDef):  # a class body runs when the class statement does
                return span_in(node.body, line, span if around is not None else None)
            return span_in(node.body, line, (first.lineno, node.end_lineno))
        return span_in(child_statements(node), line, span if around is not None else None)
    return around


def header_end(node):
    """The last line of a def or class statement's header: its name, arguments, bases, annotations."""
    parts = [n for n in ast.iter_child_nodes(node) if not isinstance(n, ast.stmt)]  # (arguments has no lines)
    parts += [n for n in ast.walk(node.args)] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    return max([node.lineno] + [getattr(n, "end_lineno", None) or 0 for n in parts])


def child_statements(node):
    """The statements (and except clauses) directly inside a compound statement."""
    out = [c for name in ("body", "orelse", "finalbody", "handlers") for c in getattr(node, name, None) or []]
    return out + [c for case in getattr(node, "cases", None) or [] for c in case.body]
