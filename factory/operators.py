"""Mutation operators: what kind of site each one matches (`match`) and how it breaks it (`mutate`).

The operators cover SWE-smith's (class_rm_base, class_rm_funcs, class_shuffle_funcs, ctrl_invert_if,
ctrl_shuffle, remove_assign, remove_cond, remove_loop, remove_wrapper, op_change, op_swap,
op_break_chains, op_change_const, flip_operators) plus error-handling removers (remove_raise,
remove_assert, remove_except), off_by_one, change_return, wrong_default and swap_args. Finding the
sites and applying an operator is factory/mutations.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

# --- operator tables ------------------------------------------------------------------------

NEIGHBOUR = {
    cst.Add: cst.Subtract,
    cst.Subtract: cst.Add,
    cst.Multiply: cst.FloorDivide,
    cst.Divide: cst.Multiply,
    cst.FloorDivide: cst.Divide,
    cst.Modulo: cst.FloorDivide,
    cst.Power: cst.Multiply,
    cst.BitAnd: cst.BitOr,
    cst.BitOr: cst.BitAnd,
    cst.BitXor: cst.BitOr,
    cst.LeftShift: cst.RightShift,
    cst.RightShift: cst.LeftShift,
    cst.LessThan: cst.LessThanEqual,
    cst.LessThanEqual: cst.LessThan,
    cst.GreaterThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.GreaterThan,
    cst.Equal: cst.NotEqual,
    cst.NotEqual: cst.Equal,
    cst.And: cst.Or,
    cst.Or: cst.And,
    cst.In: cst.NotIn,
    cst.NotIn: cst.In,
    cst.Is: cst.IsNot,
    cst.IsNot: cst.Is,
}
NEGATION = {
    cst.LessThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.LessThan,
    cst.GreaterThan: cst.LessThanEqual,
    cst.LessThanEqual: cst.GreaterThan,
    cst.Equal: cst.NotEqual,
    cst.NotEqual: cst.Equal,
    cst.In: cst.NotIn,
    cst.NotIn: cst.In,
    cst.Is: cst.IsNot,
    cst.IsNot: cst.Is,
    cst.And: cst.Or,
    cst.Or: cst.And,
}
PASS = cst.SimpleStatementLine(body=[cst.Pass()])


def _op(node, table):
    return table.get(type(node.operator))


def _swap_op(node, table):
    new = table[type(node.operator)]()
    return node.with_changes(operator=new)


def _int_value(node) -> int | None:
    if isinstance(node, cst.Integer):
        try:
            return int(node.value, 0)
        except ValueError:
            return None
    return None


def _plus_one(expr: cst.BaseExpression, delta: int) -> cst.BaseExpression:
    v = _int_value(expr)
    if v is not None:
        return (
            cst.Integer(str(v + delta))
            if v + delta >= 0
            else cst.UnaryOperation(cst.Minus(), cst.Integer(str(-(v + delta))))
        )
    op = cst.Add() if delta > 0 else cst.Subtract()
    return cst.BinaryOperation(left=expr, operator=op, right=cst.Integer(str(abs(delta))))


def _drop_stmt(node):
    return cst.RemovalSentinel.REMOVE


def _first_body(node):
    """A compound statement replaced by its own body (keeps the inner statements)."""
    return cst.FlattenSentinel(list(node.body.body))


def _compare_mutable(node) -> bool:
    return isinstance(node, cst.Comparison) and len(node.comparisons) == 1


@dataclass(frozen=True)
class Operator:
    name: str
    match: Callable[[cst.CSTNode], bool]
    mutate: Callable[[cst.CSTNode], object]
    scope: str = "function"  # "function": sites inside function bodies; "class": class definitions


def _is_stmt_line(node, kinds) -> bool:
    return isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(node.body[0], kinds)


def _swap_args(node: cst.Call):
    pos = [i for i, a in enumerate(node.args) if a.keyword is None and not a.star]
    i, j = pos[0], pos[1]
    args = list(node.args)
    args[i], args[j] = args[i].with_changes(value=args[j].value), args[j].with_changes(value=args[i].value)
    return node.with_changes(args=args)


def _change_return(node: cst.Return):
    v = node.value
    if isinstance(v, cst.Name) and v.value in ("True", "False"):
        return node.with_changes(value=cst.Name("False" if v.value == "True" else "True"))
    if isinstance(v, cst.Name) and v.value == "None":
        return node.with_changes(value=cst.Integer("0"))
    return node.with_changes(value=None, whitespace_after_return=cst.MaybeSentinel.DEFAULT)


def _wrong_default(node: cst.Param):
    d = node.default
    if isinstance(d, cst.Name) and d.value in ("True", "False"):
        return node.with_changes(default=cst.Name("False" if d.value == "True" else "True"))
    if _int_value(d) is not None:
        return node.with_changes(default=_plus_one(d, 1))
    if isinstance(d, cst.SimpleString):
        return node.with_changes(
            default=cst.SimpleString(d.quote + "x" + d.quote if d.raw_value == "" else d.quote * 2)
        )
    return node.with_changes(default=cst.Name("None"))


def _range_stop_minus_one(node: cst.Call):
    args = list(node.args)
    k = 0 if len(args) == 1 else 1
    args[k] = args[k].with_changes(value=_plus_one(args[k].value, -1))
    return node.with_changes(args=args)


def _slice_bound(node: cst.Slice):
    if node.upper is not None:
        return node.with_changes(upper=_plus_one(node.upper, -1))
    return node.with_changes(lower=_plus_one(node.lower, 1))


def _break_chain(node: cst.BinaryOperation):
    return node.with_changes(left=node.left.left)  # a + b + c -> a + c


def _shuffle_body(node: cst.IndentedBlock):
    body = list(node.body)
    i = next(i for i in range(len(body) - 1) if _plain(body[i]) and _plain(body[i + 1]))
    body[i], body[i + 1] = body[i + 1], body[i]
    return node.with_changes(body=body)


def _plain(stmt) -> bool:
    """A statement that may be moved: not a return/raise, and not a docstring."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return isinstance(stmt, (cst.If, cst.For, cst.While))
    first = stmt.body[0]
    return not isinstance(first, (cst.Return, cst.Raise)) and not (
        isinstance(first, cst.Expr) and isinstance(first.value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _class_rm_funcs(node: cst.ClassDef):
    body = list(node.body.body)
    i = next(i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and not s.name.value.startswith("__"))
    del body[i]
    return node.with_changes(body=node.body.with_changes(body=body or [PASS]))


def _class_shuffle_funcs(node: cst.ClassDef):
    body = list(node.body.body)
    idx = [i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef)]
    funcs = [body[i] for i in idx][::-1]
    for i, f in zip(idx, funcs):
        body[i] = f
    return node.with_changes(body=node.body.with_changes(body=body))


def _rm_base(node: cst.ClassDef):
    return node.with_changes(
        bases=list(node.bases[1:]),
        lpar=cst.MaybeSentinel.DEFAULT if len(node.bases) > 1 else (),
        rpar=cst.MaybeSentinel.DEFAULT if len(node.bases) > 1 else (),
    )


OPERATORS: list[Operator] = [
    Operator(
        "op_change",
        lambda n: isinstance(n, (cst.BinaryOperation, cst.BooleanOperation)) and _op(n, NEIGHBOUR) is not None,
        lambda n: _swap_op(n, NEIGHBOUR),
    ),
    Operator(
        "op_change_cmp",
        lambda n: _compare_mutable(n) and type(n.comparisons[0].operator) in NEIGHBOUR,
        lambda n: n.with_changes(
            comparisons=[n.comparisons[0].with_changes(operator=NEIGHBOUR[type(n.comparisons[0].operator)]())]
        ),
    ),
    Operator(
        "flip_operators",
        lambda n: (
            (_compare_mutable(n) and type(n.comparisons[0].operator) in NEGATION)
            or (isinstance(n, cst.UnaryOperation) and isinstance(n.operator, cst.Not))
        ),
        lambda n: (
            n.expression
            if isinstance(n, cst.UnaryOperation)
            else n.with_changes(
                comparisons=[n.comparisons[0].with_changes(operator=NEGATION[type(n.comparisons[0].operator)]())]
            )
        ),
    ),
    Operator(
        "op_swap",
        lambda n: (
            (isinstance(n, cst.BinaryOperation) and not isinstance(n.operator, (cst.Add, cst.Multiply)))
            or _compare_mutable(n)
        ),
        lambda n: (
            n.with_changes(left=n.right, right=n.left)
            if isinstance(n, cst.BinaryOperation)
            else n.with_changes(
                left=n.comparisons[0].comparator, comparisons=[n.comparisons[0].with_changes(comparator=n.left)]
            )
        ),
    ),
    Operator(
        "op_break_chains",
        lambda n: isinstance(n, cst.BinaryOperation) and isinstance(n.left, cst.BinaryOperation),
        _break_chain,
    ),
    Operator("op_change_const", lambda n: _int_value(n) is not None, lambda n: _plus_one(n, 1)),
    Operator(
        "ctrl_invert_if",
        lambda n: isinstance(n, cst.If) and isinstance(n.orelse, cst.Else),
        lambda n: n.with_changes(body=n.orelse.body, orelse=n.orelse.with_changes(body=n.body)),
    ),
    Operator(
        "ctrl_shuffle",
        lambda n: isinstance(n, cst.IndentedBlock) and any(_plain(a) and _plain(b) for a, b in zip(n.body, n.body[1:])),
        _shuffle_body,
    ),
    Operator("remove_assign", lambda n: _is_stmt_line(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)), _drop_stmt),
    Operator("remove_cond", lambda n: isinstance(n, cst.If) and n.orelse is None, _drop_stmt),
    Operator("remove_loop", lambda n: isinstance(n, (cst.For, cst.While)), _drop_stmt),
    Operator("remove_wrapper", lambda n: isinstance(n, cst.With), _first_body),
    Operator(
        "remove_except", lambda n: isinstance(n, cst.Try) and n.finalbody is None and n.orelse is None, _first_body
    ),
    Operator("remove_raise", lambda n: _is_stmt_line(n, cst.Raise), _drop_stmt),
    Operator("remove_assert", lambda n: _is_stmt_line(n, cst.Assert), _drop_stmt),
    Operator(
        "off_by_one",
        lambda n: (
            (
                isinstance(n, cst.Call)
                and isinstance(n.func, cst.Name)
                and n.func.value == "range"
                and 1 <= len(n.args) <= 2
                and not any(a.star or a.keyword for a in n.args)
            )
            or (isinstance(n, cst.Slice) and (n.upper is not None or n.lower is not None))
        ),
        lambda n: _range_stop_minus_one(n) if isinstance(n, cst.Call) else _slice_bound(n),
    ),
    Operator("change_return", lambda n: isinstance(n, cst.Return) and n.value is not None, _change_return),
    Operator(
        "swap_args",
        lambda n: isinstance(n, cst.Call) and sum(1 for a in n.args if a.keyword is None and not a.star) >= 2,
        _swap_args,
    ),
    Operator("wrong_default", lambda n: isinstance(n, cst.Param) and n.default is not None, _wrong_default),
    Operator(
        "class_rm_base",
        lambda n: (
            isinstance(n, cst.ClassDef)
            and len(n.bases) >= 1
            and not (isinstance(n.bases[0].value, cst.Name) and n.bases[0].value.value == "object")
        ),
        _rm_base,
        scope="class",
    ),
    Operator(
        "class_rm_funcs",
        lambda n: (
            isinstance(n, cst.ClassDef)
            and any(isinstance(s, cst.FunctionDef) and not s.name.value.startswith("__") for s in n.body.body)
        ),
        _class_rm_funcs,
        scope="class",
    ),
    Operator(
        "class_shuffle_funcs",
        lambda n: isinstance(n, cst.ClassDef) and sum(isinstance(s, cst.FunctionDef) for s in n.body.body) >= 2,
        _class_shuffle_funcs,
        scope="class",
    ),
]
BY_NAME = {op.name: op for op in OPERATORS}
# op_change_cmp counts as op_change in reports (SWE-smith's op_change covers both)
STRATEGY_OF = {"op_change_cmp": "op_change"}
