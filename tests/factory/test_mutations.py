"""The mutation operators: each one produces a parsable mutation, only of covered lines."""

from __future__ import annotations

from bugforge.factory.mutations import OPERATORS, STRATEGY_OF, candidates
from bugforge.testing.patches import changed_lines, file_diff

EVERYTHING = '''
import functools


class Base(Exception):
    def describe(self):
        return "base"

    def other(self):
        return 1


class Child(Base):
    """doc"""

    def run(self, items, limit=3, flag=True):
        total = 0
        for i in range(len(items)):
            total += items[i] * 2 - 1
        while total > 100:
            total = total // 2
        if total < 0 and flag:
            raise ValueError("negative")
        else:
            total = total + 0
        if not items:
            return None
        assert limit >= 0
        with open("/dev/null") as f:
            f.read()
        try:
            x = int("3")
        except ValueError:
            x = 0
        head = items[1:limit]
        pair = divmod(total, x)
        return total + x + len(head) + pair[0]
'''


def test_every_operator_produces_a_parsable_mutation():
    covered = set(range(1, 200))
    made = {}
    for m in candidates(EVERYTHING, covered):
        compile(m.source, "x.py", "exec")
        assert m.source != EVERYTHING
        made.setdefault(m.strategy, m)
    expected = {STRATEGY_OF.get(op.name, op.name) for op in OPERATORS}
    assert set(made) == expected
    diff = lambda s: file_diff("x.py", EVERYTHING, made[s].source)  # noqa: E731
    assert "-class Base(Exception):\n+class Base:" in diff("class_rm_base")
    assert "-        for i in range(len(items)):" in diff("remove_loop")
    assert "+        head = items[1:limit - 1]" in diff("off_by_one") or "range(len(items) - 1)" in diff("off_by_one")
    assert "-            raise ValueError" in diff("remove_raise") or "+            pass" in diff("remove_raise")
    assert "pair = divmod(x, total)" in diff("swap_args")
    assert "limit=4" in diff("wrong_default") or "flag=False" in diff("wrong_default")


def test_only_covered_lines_are_mutated():
    assert list(candidates(EVERYTHING, set())) == []
    only = {line for line, text in enumerate(EVERYTHING.splitlines(), 1) if "total = total // 2" in text}
    ms = list(candidates(EVERYTHING, only))
    assert ms and all(changed_lines(EVERYTHING, m.source) <= only | set(range(1, 60)) for m in ms)
    assert {m.strategy for m in ms} <= {
        "remove_assign",
        "op_change",
        "op_swap",
        "class_rm_base",
        "class_rm_funcs",
        "class_shuffle_funcs",
        "wrong_default",
        "op_change_const",
    }
