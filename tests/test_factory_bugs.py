"""Issue 4: mutation operators, exact labels, selected == full validation, resume after a kill, hung
bugs caught by the timeout, history reverts, combinations, leak-free problem statements, and the
official SWE-bench harness agreeing with our exports. Real containers and repositories throughout."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bugforge.factory import build_environment
from bugforge.factory.generate import generate
from bugforge.factory.mutations import OPERATORS, STRATEGY_OF, candidates
from bugforge.factory.statement import leaks, write
from bugforge.factory.validate import Validator
from bugforge.incontainer.source import (
    BaseRemoval,
    Removal,
    gap_body,
    literal_default_changes,
    moved_methods,
    naming_statements,
    removed_bases,
    removed_methods,
)
from bugforge.records import Candidate, read_jsonl
from bugforge.testing.patches import changed_lines, file_diff, new_text, patch_id
from bugforge.testing.selection import selection_for
from bugforge.testing.testmap import TestMap, statement_span
from bugforge.testing.testrun import OUT, OWNER_PID, RESTORE, Workbench
from tests.conftest import git_repo

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


CALC = {
    "setup.py": "from setuptools import setup, find_packages\nsetup(name='calc', packages=find_packages())\n",
    "calc/__init__.py": "",
    "calc/ops.py": """
        SCALE = 10


        def add(a, b):
            return a + b


        def sub(a, b):
            return a - b


        def scaled(x):
            return x * SCALE


        def countdown(n):
            while n > 0:
                n -= 1
            return n


        def sign(x):
            if x >= 0:
                return 1
            else:
                return -1
        """,
    "tests/test_ops.py": """
        import pytest

        from calc.ops import add, countdown, scaled, sign, sub


        @pytest.fixture(scope="module")
        def five():
            return add(2, 3)


        def test_add():
            assert add(2, 3) == 5


        def test_sub():
            assert sub(5, 3) == 2


        def test_scaled():
            assert scaled(2) == 20


        def test_countdown():
            assert countdown(3) == 0


        def test_uses_five(five):
            assert five == 5


        def test_sign():
            assert sign(3) == 1
        """,
}


def edit(repo: Path, path: str, old: str, new: str, strategy="manual") -> Candidate:
    text = (repo / path).read_text()
    assert old in text
    after = text.replace(old, new, 1)
    patch = file_diff(path, text, after)
    return Candidate(patch_id(patch), strategy, patch, [path], {path: sorted(changed_lines(text, after))}, "f")


def environment_of(tmp_path_factory, name: str, files: dict[str, str]):
    """The environment of a fixture repository, built once per test module."""
    root = tmp_path_factory.mktemp(name)
    git_repo(root / name, files)
    env, _ = build_environment(str(root / name), out=root / "runs", log=lambda m: None)
    return env


@pytest.fixture(scope="module")
def calc_env(base_image, tmp_path_factory):
    return environment_of(tmp_path_factory, "calc", CALC)


def test_statement_span_of_lines_no_test_ran():
    """The statement whose lines a test must run to reach a line; None where a change runs at import."""
    src = textwrap.dedent('''\
        @deco
        def f(a,
              b=2):
            """doc"""
            if a:
                return 1
            else:
                # a comment
                return 2

            def g(c=3):
                return c


        class C:
            K = 1

            def m(self):
                return 1
        ''')
    span = {n: statement_span(src, n) for n in range(1, src.count("\n") + 1)}
    assert [span[n] for n in (1, 2, 3, 4)] == [None] * 4  # decorator, signature, default, docstring
    assert span[5] == span[7] == span[8] == (5, 9) and span[6] == (6, 6)  # the if statement, its else, a comment
    assert span[10] == (4, 12)  # between statements: the body
    assert span[11] == (11, 12)  # a nested def's default runs when f runs that def
    assert [span[n] for n in (15, 16, 17, 18)] == [None] * 4  # class level and a method's signature
    assert span[19] == (19, 19)
    assert statement_span("def f(:\n", 1) is None


def test_lines_inserted_below_a_function_extend_its_body():
    """A blank line (or the end of the file) next to lines inserted at the end of a function body
    stands for that body, when nothing outside function bodies changed: the tests that ran any line of
    it. Anywhere else it decides nothing."""
    src = textwrap.dedent('''\
        def f(a, items):
            if a:
                return 1
            else:
                for x in items:
                    if x:
                        return x

        # a comment

        class C:
            def m(self):
                """doc

                more"""
                return 1

        K = 1
        def g():
            """doc"""
        ''')
    # ctrl_invert_if: the else branch goes up; the if branch's lines are inserted below line 7
    new = src.replace("    if a:\n        return 1\n    else:\n", "    if a:\n").replace(
        "                return x\n", "                return x\n    else:\n        return 1\n", 1
    )
    assert new.count("return 1") == 2 and new.count("else") == 1
    assert [gap_body(src, new, n) for n in (8, 9, 10)] == [(2, 7)] * 3  # blank, comment, blank
    assert gap_body(src, new, 14) is None  # a blank line inside a docstring
    assert gap_body(src, new, 17) == (13, 16)  # below a method
    assert gap_body(src, new, 21) is None  # the end of the file, below a docstring-only body
    assert gap_body(src, new, 5) is None  # not blank
    assert gap_body(src, new.replace("K = 1", "K = 2"), 8) is None  # module level changed too
    assert gap_body(src, new + "x = 1\n", 21) is None
    tm = TestMap(
        ["t_a", "t_items", "t_m"], {"m.py": {2: [0, 1], 3: [0], 5: [1], 6: [1], 16: [2]}}, {"m.py": {1, 11, 12, 18, 19}}
    )
    assert tm.tests_seeing("m.py", {2, 3, 4, 7, 8}, src) is None  # without the new source
    assert tm.tests_seeing("m.py", {2, 3, 4, 7, 8}, src, new) == {"t_a", "t_items"}
    tm.import_lines["m.py"].add(6)  # f ran at import time
    assert tm.tests_seeing("m.py", {7, 8}, src, new) is None


def test_tests_after_the_first_selected_one_are_selected():
    """What changed code built in one test (a cache, an instance registry) can reach any later test
    without that test running the changed line: every test after the first one selected is selected
    too; earlier tests are not."""
    src = "def build(x):\n    return [x]\n\n\ndef use(c):\n    return c[0]\n"
    tm = TestMap(
        ["t_before", "t_build", "t_other", "t_use"], {"m.py": {2: [1], 6: [0, 3]}, "n.py": {1: [2]}}, {"m.py": {1, 5}}
    )
    assert tm.tests_seeing("m.py", {2}, src) == {"t_build"}  # (a map without the run's order)
    tm.order = ["t_before", "t_build", "t_other", "t_use"]
    assert tm.tests_seeing("m.py", {2}, src) == {"t_build", "t_other", "t_use"}
    tm.order = ["t_use", "t_other", "t_build", "t_before"]
    assert tm.tests_seeing("m.py", {2}, src) == {"t_build", "t_before"}


def test_literal_default_changes_count_as_body_changes():
    """A signature whose only change is a literal default is a change of the function's body (a call
    reads the default); any other change outside function bodies, a decorated function, or a default
    that is not a literal is not."""
    src = textwrap.dedent("""\
        import os


        def f(x, w=3, *, k="a"):
            return x * w


        class C:
            @staticmethod
            def s(z=(1, 2)):
                return z

            @property
            def p(self, q=1):
                return q


        def g(x, sep=os.sep, n=None):
            return x
        """)
    new = (
        src.replace("w=3", "w=4")
        .replace('k="a"', 'k="b"')
        .replace("(1, 2)", "(1, -2)")
        .replace("q=1", "q=2")
        .replace("n=None", "n=False")
    )
    changes = {c.name: c for c in literal_default_changes(src, new)}
    assert sorted(changes) == ["f", "g", "s"]  # not the property: a decorator could have read the defaults
    assert changes["f"].defaults == {0: (3, 4)} and changes["f"].kwdefaults == {"k": ("a", "b")}
    assert changes["f"].header == (4, 4) and changes["f"].body == (5, 5) and changes["f"].first_line == 4
    assert changes["s"].first_line == 9 and changes["s"].defaults == {0: ((1, 2), (1, -2))}
    assert changes["g"].defaults == {1: (None, False)}  # by position in __defaults__, past a non-literal
    assert literal_default_changes(src, new.replace("import os", "import sys")) == []  # module level changed too
    assert literal_default_changes(src, src.replace("w=3", "w=[]")) == []  # not a literal
    assert literal_default_changes(src, src.replace("w=3", "w=3.0"))[0].defaults == {0: (3, 3.0)}
    assert literal_default_changes(src, src) == []
    # the test map: such a signature line selects the tests that ran the body, or None if it ran at import
    tm = TestMap(["t_f", "t_g"], {"m.py": {5: [0], 20: [1]}}, {"m.py": {1, 4, 8, 9, 10, 13, 14, 19}})
    assert tm.tests_seeing("m.py", {4}, src) is None  # without the new source: a signature decides nothing
    assert tm.tests_seeing("m.py", {4}, src, src.replace("w=3", "w=4")) == {"t_f"}
    assert tm.tests_seeing("m.py", {4, 20}, src, src.replace("w=3", "w=4")) == {"t_f", "t_g"}
    assert tm.tests_seeing("m.py", {4}, src, src.replace("w=3", "w=4").replace("import os", "import sys")) is None
    tm.import_lines["m.py"].add(5)  # f runs at import time: its default is read then
    assert tm.tests_seeing("m.py", {4}, src, src.replace("w=3", "w=4")) is None


def test_removed_methods_are_decided_by_the_lookup_map():
    """A change that only removes methods is seen by the tests that looked them up (the lookup run's
    map); a removal something could see another way, or any other change beside it, is not decided."""
    src = textwrap.dedent("""\
        import functools


        class A:
            K = 1

            def keep(self):
                return self.gone

            @property
            def gone(self):
                return 2

            def __priv(self, x: int = 3):
                return x

            def __eq__(self, other):
                return True

            @functools.lru_cache()
            def cached(self):
                return 4

            def aliased(self):
                return 5

            also = aliased

            def called(self, x=list()):
                return x

            class Inner:
                def deep(self):
                    return 6


        def f():
            class L:
                def m(self):
                    return 7
            return L
        """)

    def without(name, text=src):
        lines = text.splitlines(keepends=True)
        f = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == name)
        first = min([f.lineno] + [d.lineno for d in f.decorator_list])
        return "".join(lines[: first - 1] + lines[f.end_lineno :])

    assert removed_methods(src, without("gone")) == [Removal("gone", "A.gone", (10, 12))]
    assert removed_methods(src, without("__priv"))[0].key == "A._A__priv"  # mangled, as in A.__dict__
    no_deep = without("deep").replace("class Inner:\n", "class Inner:\n        pass\n")  # (a body needs one)
    assert [r.key for r in removed_methods(src, without("gone", no_deep))] == ["A.gone", "A.Inner.deep"]
    no_m = without("m").replace("    class L:\n", "    class L:\n        pass\n")
    assert removed_methods(src, no_m)[0].key == "f.<locals>.L.m"
    for name in ("__eq__", "cached", "aliased", "called"):  # dunder; a decorator; read in the body; a call runs
        assert removed_methods(src, without(name)) == [], name
    assert removed_methods(src, without("gone").replace("K = 1", "K = 2")) == []  # and something else
    assert removed_methods(src, without("gone").replace("return 5", "return 6")) == []  # and a body
    assert (
        removed_methods(
            src.replace("class A:", "@functools.total_ordering\nclass A:"),
            without("gone").replace("class A:", "@functools.total_ordering\nclass A:"),
        )
        == []
    )
    assert (
        removed_methods(
            src.replace("class A:", "class A(metaclass=type):"),
            without("gone").replace("class A:", "class A(metaclass=type):"),
        )
        == []
    )
    assert removed_methods(src, src) == []
    # the map: the tests that looked the method up, and those the lookup run could not watch
    tm = TestMap(["t_keep", "t_gone", "t_deep"], {}, {"m.py": set(range(1, 45))})
    tm.lookups = {"A.gone": [0, 1], "A._A__priv": [-1], "A.keep": []}
    tm.lookups = {"m.py:" + k: v for k, v in tm.lookups.items()}
    changed = set(range(10, 14))
    assert tm.tests_seeing("m.py", changed, src, without("gone")) == {"t_keep", "t_gone"}
    assert tm.tests_seeing("m.py", changed, src, without("gone"), removals=False) is None  # (warm grading)
    assert tm.tests_seeing("m.py", changed, src) is None  # without the new source
    assert tm.tests_seeing("m.py", set(range(14, 17)), src, without("__priv")) is None  # looked up at import
    assert tm.tests_seeing("m.py", set(range(35, 37)), src, no_deep) is None  # not watched
    tm.unwatched = ["t_deep"]
    assert tm.tests_seeing("m.py", changed, src, without("gone")) == {"t_keep", "t_gone", "t_deep"}
    tm.lookups = None  # a map made without a lookup run
    assert tm.tests_seeing("m.py", changed, src, without("gone")) is None


def test_removed_bases_are_decided_by_the_statements_naming_the_class(tmp_path):
    """Taking bases from a class is seen by the tests that ran a statement naming it (a name, an
    attribute, a word in a string); nothing is decided when a statement at import time names it, when
    the lookup run did not see the class built plainly, or when anything else changed."""
    src = textwrap.dedent('''\
        """Errors: C and others."""
        __all__ = ["C"]


        class B(Exception):
            pass


        class C(B, ValueError):
            """C."""


        def fail(kind):
            if kind == "c":
                raise C("no")
            return getattr(errors, "C")
        ''')
    tests = textwrap.dedent("""\
        from pkg.errors import C, fail


        def test_c():
            try:
                fail("c")
            except C:
                pass


        def test_other():
            fail("x")
        """)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "errors.py").write_text(src)
    (tmp_path / "test_e.py").write_text(tests)
    new = src.replace("class C(B, ValueError):", "class C(ValueError):")
    assert removed_bases(src, new) == [BaseRemoval("C", (9, 9))]
    assert removed_bases(src, src.replace("class C(B, ValueError):", "class C(ValueError, B):")) == []
    assert removed_bases(src, new.replace('"no"', '"yes"')) == []
    assert naming_statements(src, {"C"}) == [(15, 15, False), (16, 16, False)]  # (the docstring, __all__ and
    # the class statement do not name it)
    assert naming_statements(tests, {"C"}) == [(7, 7, False)]  # the except clause, not the import
    tm = TestMap(
        ["test_e.py::test_c", "test_e.py::test_other"],
        {"pkg/errors.py": {14: [0, 1], 15: [0], 16: [1]}, "test_e.py": {5: [0], 6: [0], 7: [0], 12: [1]}},
        {"pkg/errors.py": {1, 2, 5, 6, 9, 10, 13}, "test_e.py": {1, 4, 11}},
    )
    tm.lookups, tm.plain_classes = {}, ["pkg/errors.py:C"]
    seeing = tm.tests_seeing("pkg/errors.py", {9}, src, new, tmp_path)
    assert seeing == {"test_e.py::test_c", "test_e.py::test_other"}  # raised in one, fetched by name in the other
    assert tm.tests_seeing("pkg/errors.py", {9}, src, new) is None  # without the checkout
    assert tm.tests_seeing("pkg/errors.py", {9}, src, new, tmp_path, removals=False) is None  # (warm grading)
    tm.plain_classes = []
    assert tm.tests_seeing("pkg/errors.py", {9}, src, new, tmp_path) is None  # not seen built plainly
    tm.plain_classes = ["pkg/errors.py:C"]
    (tmp_path / "test_e.py").write_text(tests + "\nERR = C\n")  # named at import: it may live on anywhere
    assert tm.tests_seeing("pkg/errors.py", {9}, src, new, tmp_path) is None


def test_methods_that_only_change_places_count_as_body_changes():
    """A change that only reorders methods in a class body is a change of the moved methods' bodies, even
    where a body ran at import (the same code ran); not when a name the body binds or reads at class
    level, a duplicate name, a decorator, or anything else changes with the order."""
    src = textwrap.dedent("""\
        class C:
            X = 1

            def a(self):
                return 1

            @staticmethod
            def b(k=2):
                return k

            def c(self):
                return 3


        INSTANCE = C()
        """)
    a, c = "    def a(self):\n        return 1\n", "    def c(self):\n        return 3\n"
    swapped = src.replace(a, "@@").replace(c, a).replace("@@", c)
    moves = {m.name: m for m in moved_methods(src, swapped)}
    assert sorted(moves) == ["a", "b", "c"] and moves["a"].span == (4, 5) and moves["b"].span == (7, 9)
    tm = TestMap(["t_a", "t_c"], {"m.py": {5: [0], 12: [1]}}, {"m.py": {1, 2, 4, 5, 7, 8, 11, 15}})
    changed = set(changed_lines(src, swapped))
    assert tm.tests_seeing("m.py", changed, src, swapped) == {"t_a", "t_c"}  # a's body ran at import too
    assert tm.tests_seeing("m.py", changed, src) is None  # without the new source: class level decides nothing
    assert moved_methods(src, src) == []
    assert moved_methods(src, swapped.replace("return 3", "return 4")) == []  # a body changed too
    assert moved_methods(src, swapped.replace("INSTANCE = C()", "INSTANCE = None")) == []
    for body in (
        "    alias = a\n",  # a method's name read at class level
        "    def d(self, z=X):\n        pass\n",  # a default reading a name the body binds
        "    @functools.cache\n    def d(self):\n        pass\n",  # a decorator could record the order
        "    def a(self, z=None):\n        return 5\n",
    ):  # a duplicate: the last one wins
        other = src.replace("    X = 1\n", "    X = 1\n" + body)
        assert moved_methods(other, other.replace(a, "@@").replace(c, a).replace("@@", c)) == []
    module = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    assert moved_methods(module, "def g():\n    return 2\n\n\ndef f():\n    return 1\n") == []  # module level


def test_new_text_applies_a_diff_to_its_file():
    old = "a\nb\nc\nd\n"
    for new in ("a\nB\nc\nd\n", "a\nb\nc\nd\ne", "x\na\nb\nd\n", ""):
        for context in (0, 1, 3):
            assert new_text(old, file_diff("m.py", old, new, context), "m.py") == new
    d = file_diff("m.py", old, "a\nB\nc\nd\n")
    assert new_text(old, d, "other.py") is None and new_text("a\nX\nc\nd\n", d, "m.py") is None


def test_labels_are_exact_in_both_modes(calc_env):
    repo = Path(calc_env.repo_dir)
    tm = TestMap.load(Path(calc_env.testmap))
    cases = [  # (bug, expected FAIL_TO_PASS, expected mode in "selected")
        (edit(repo, "calc/ops.py", "return a - b", "return a + b"), ["tests/test_ops.py::test_sub"], "selected"),
        # add() runs in a test and in a module-scoped fixture: both users of the fixture see it
        (
            edit(repo, "calc/ops.py", "return a + b", "return a - b"),
            ["tests/test_ops.py::test_add", "tests/test_ops.py::test_uses_five"],
            "selected",
        ),
        # a module-level constant runs at import time: coverage cannot decide, the whole suite runs
        (edit(repo, "calc/ops.py", "SCALE = 10", "SCALE = 11"), ["tests/test_ops.py::test_scaled"], "suite"),
        # branches swapped: `return -1` and `else:` never ran, so they add no test to the one that ran `return 1`
        (
            edit(
                repo, "calc/ops.py", "return 1\n    else:\n        return -1", "return -1\n    else:\n        return 1"
            ),
            ["tests/test_ops.py::test_sign"],
            "selected",
        ),
        # lines inserted below the last line of the file: they extend sign()'s body, so its tests decide
        (
            edit(
                repo,
                "calc/ops.py",
                "return 1\n    else:\n        return -1\n",
                "return -1\n    else:\n        return -1\n    return 0\n",
            ),
            ["tests/test_ops.py::test_sign"],
            "selected",
        ),
    ]
    # a change confined to a branch no test takes: no test can see it, none runs
    cand = edit(repo, "calc/ops.py", "    else:\n        return -1", "    else:\n        return -2")
    assert selection_for(cand.changed, tm, set(calc_env.passing), root=repo) == []
    # a line that never ran decides only with the source at hand (its statement), and never at module level
    assert selection_for(cand.changed, tm, set(calc_env.passing)) is None
    selected, full = Validator(calc_env, tm, "selected"), Validator(calc_env, tm, "full")
    try:
        for cand, f2p, mode in cases:
            a, b = selected.validate(cand), full.validate(cand)
            assert a.status == b.status == "valid"
            assert a.FAIL_TO_PASS == b.FAIL_TO_PASS == f2p
            assert a.PASS_TO_PASS == b.PASS_TO_PASS == sorted(set(calc_env.passing) - set(f2p))
            assert a.mode == mode and b.mode == "full"
    finally:
        selected.close()
        full.close()


def test_infinite_loop_is_caught_by_the_timeout(calc_env):
    repo = Path(calc_env.repo_dir)
    cand = edit(repo, "calc/ops.py", "        n -= 1\n", "        n -= 0\n")
    v = Validator(calc_env, TestMap.load(Path(calc_env.testmap)), "selected", timeout=5)
    v.timeout = 5
    try:
        t0 = time.monotonic()
        result = v.validate(cand)
        assert result.status == "timeout" and time.monotonic() - t0 < 60
        # the workbench is usable afterwards
        ok = v.validate(edit(repo, "calc/ops.py", "return a - b", "return a * b"))
        assert ok.status == "valid"
    finally:
        v.close()
    # with a whole-run budget far away, the per-test limit catches the hang, in both modes alike; each test
    # may take ten times its own baseline time: a test recorded as slow (0.3 s) gets 3 s instead of the 2
    hang = "tests/test_ops.py::test_countdown"
    slow = dataclasses.replace(calc_env.tests[hang], duration=0.3)
    for env, limit in ((calc_env, 2), (dataclasses.replace(calc_env, tests={**calc_env.tests, hang: slow}), 3)):
        for mode in ("selected", "full"):
            v = Validator(env, TestMap.load(Path(env.testmap)), mode, test_limit=2)
            v.timeout = 300
            try:
                t0 = time.monotonic()
                result = v.validate(cand)
                assert result.status == "timeout" and time.monotonic() - t0 < 60, (mode, result)
                assert result.messages == {hang: f"ran past its limit of {limit} CPU-seconds"}, (mode, result)
            finally:
                v.close()


SLOWPOKE = {
    "setup.py": "from setuptools import setup\nsetup(name='slowpoke', packages=['slowpoke'])\n",
    "slowpoke/__init__.py": "",
    "slowpoke/core.py": "import time\n\n\ndef nap(s):\n    time.sleep(s)\n    return s\n\n\n"
    "def inc(x):\n    return x + 1\n",
    "tests/test_a.py": "from slowpoke.core import nap\n\n\ndef test_slow():\n    assert nap(1.0) == 1.0\n",
    "tests/test_b.py": "from slowpoke.core import inc\n\n\ndef test_inc():\n    assert inc(1) == 2\n",
}


def test_a_bug_that_slows_the_run_is_judged_on_the_same_total_in_every_mode(base_image, tmp_path_factory):
    """No test passes its own limit, but the tests together pass the run's budget in a full run: the
    selected run (test_inc alone) gets the budget less test_slow's baseline second, and agrees."""
    env = environment_of(tmp_path_factory, "slowpoke", SLOWPOKE)
    repo = Path(env.repo_dir)
    for nap, status in ((1.3, "timeout"), (0.3, "no_failures")):
        cand = edit(repo, "slowpoke/core.py", "return x + 1", f"return time.sleep({nap}) or x + 1")
        for mode in ("selected", "full"):
            v = Validator(env, TestMap.load(Path(env.testmap)), mode)
            v.budget = 2.0  # wall-seconds for the whole suite's tests (test_slow takes 1 at baseline)
            try:
                if mode == "selected":
                    assert selection_for(cand.changed, v.testmap, v.passing, root=repo) == ["tests/test_b.py::test_inc"]
                    assert 0.8 < v.limits(["tests/test_b.py::test_inc"]).budget < 1.0
                result = v.validate(cand)
                assert result.status == status, (nap, mode, result)
                if status == "timeout":
                    assert result.messages == {
                        "tests/test_b.py::test_inc": "the tests together ran past five times the suite's time"
                    }, (mode, result)
            finally:
                v.close()


def test_selected_equals_full_on_generated_candidates(calc_env, tmp_path):
    import shutil

    envdir = Path(calc_env.testmap).parent
    reports = {}
    for mode in ("selected", "full"):
        d = tmp_path / mode
        shutil.copytree(envdir, d)
        generate(
            d,
            max_candidates=25,
            workers=2,
            mode=mode,
            log=lambda m: None,
            strategies=[
                "op_change",
                "remove_assign",
                "op_change_const",
                "remove_loop",
                "flip_operators",
                "wrong_default",
                "change_return",
                "swap_args",
            ],
        )
        reports[mode] = {r["candidate"]: r for r in read_jsonl(d / "validations.jsonl")}
    assert set(reports["selected"]) == set(reports["full"])
    for cid, a in reports["selected"].items():
        b = reports["full"][cid]
        a_valid, b_valid = a["status"] == "valid", b["status"] == "valid"
        assert a_valid == b_valid, (cid, a, b)
        assert a["FAIL_TO_PASS"] == b["FAIL_TO_PASS"]
        if a_valid:
            assert a["PASS_TO_PASS"] == b["PASS_TO_PASS"]


def test_generate_resumes_after_a_kill(calc_env, tmp_path):
    import shutil

    d = tmp_path / "env"
    shutil.copytree(Path(calc_env.testmap).parent, d)
    cmd = [
        sys.executable,
        "-m",
        "bugforge.cli",
        "factory",
        "generate",
        str(d),
        "--max-candidates",
        "30",
        "--workers",
        "1",
        "--strategies",
        "op_change,remove_assign,op_change_const,flip_operators,swap_args",
    ]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(read_jsonl(d / "validations.jsonl")) < 3:
        time.sleep(0.2)
    p.kill()
    p.wait()
    partial = read_jsonl(d / "validations.jsonl")
    assert 3 <= len(partial)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = read_jsonl(d / "validations.jsonl")
    ids = [x["candidate"] for x in rows]
    cands = read_jsonl(d / "candidates.jsonl")
    assert len(ids) == len(set(ids)) == len({c["id"] for c in cands})  # each validated exactly once
    assert [x["candidate"] for x in rows[: len(partial)]] == [x["candidate"] for x in partial]  # kept as they were
    # the killed run's warm container was removed by the next one
    from bugforge.engine import client

    assert client().containers.list(all=True, filters={"label": f"{OWNER_PID}={p.pid}"}) == []


def test_history_reverts_and_combinations(base_image, tmp_path):
    repo = git_repo(
        tmp_path / "hist",
        {
            **CALC,
            "calc/ops.py": CALC["calc/ops.py"].replace(
                "def sub(a, b):\n            return a - b", "def sub(a, b):\n            return a + (-b if b else 0)"
            ),
        },
        "first",
    )
    git_repo(
        repo,
        {
            "calc/ops.py": CALC["calc/ops.py"],
            "tests/test_more.py": "from calc.ops import sub\n\n\ndef test_sub_zero():\n    assert sub(0, 0) == 0\n",
        },
        "simplify sub and test it",
    )
    env, _ = build_environment(str(repo), out=tmp_path / "runs", log=lambda m: None)
    assert env.history_dir
    rep = generate(
        tmp_path / "runs" / "hist",
        max_candidates=16,
        workers=2,
        log=lambda m: None,
        strategies=["history", "op_change", "remove_assign", "change_return", "combine"],
    )
    rows = read_jsonl(tmp_path / "runs" / "hist" / "candidates.jsonl")
    hist = [c for c in rows if c["strategy"] == "history"]
    assert len(hist) == 1 and hist[0]["meta"]["subject"] == "simplify sub and test it"
    assert "-    return a - b" in hist[0]["patch"] and "tests/" not in hist[0]["patch"]
    assert rep["history"].candidates == 1
    combos = [c for c in rows if c["strategy"] == "combine"]
    assert combos and all(2 <= len(c["parents"]) <= 3 for c in combos)
    assert rep["combine"].valid >= 1


def test_problem_statement_does_not_leak_the_diff(calc_env):
    repo = Path(calc_env.repo_dir)
    cand = edit(repo, "calc/ops.py", "return a - b", "return a + b")
    v = Validator(calc_env, TestMap.load(Path(calc_env.testmap)), "selected")
    try:
        val = v.validate(cand)
    finally:
        v.close()
    text = write(cand, val)
    assert "tests/test_ops.py::test_sub" in text
    assert leaks(text, cand.patch) == [] and "a + b" not in text and "diff" not in text


def test_swebench_harness_agrees_with_our_export(calc_env, tmp_path):
    from bugforge.factory.export import export, remove_images

    envdir = Path(calc_env.testmap).parent
    generate(
        envdir,
        max_candidates=8,
        workers=2,
        log=lambda m: None,
        strategies=["op_change", "remove_assign", "change_return", "op_change_const"],
    )
    out = export(envdir, tmp_path / "inst.jsonl", limit=4)
    rows = read_jsonl(out)
    assert len(rows) == 4
    try:
        empty = tmp_path / "empty.jsonl"
        noop = tmp_path / "noop.jsonl"
        note = "diff --git a/NOTES.txt b/NOTES.txt\nnew file mode 100644\n--- /dev/null\n+++ b/NOTES.txt\n@@ -0,0 +1 @@\n+hello\n"
        empty.write_text(
            "".join(
                json.dumps({"instance_id": r["instance_id"], "model_name_or_path": "empty", "model_patch": ""}) + "\n"
                for r in rows
            )
        )
        noop.write_text(
            "".join(
                json.dumps({"instance_id": r["instance_id"], "model_name_or_path": "noop", "model_patch": note}) + "\n"
                for r in rows
            )
        )
        results = {}
        for name, preds in (("gold", "gold"), ("empty", str(empty)), ("noop", str(noop))):
            r = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "swebench.harness.run_evaluation",
                    "-d",
                    str(out),
                    "-p",
                    preds,
                    "--run_id",
                    f"t{name}",
                    "--max_workers",
                    "2",
                ],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert r.returncode == 0, r.stderr[-2000:]
            results[name] = json.loads((tmp_path / f"{name}.t{name}.json").read_text())
        ids = sorted(r["instance_id"] for r in rows)
        assert results["gold"]["resolved_ids"] == ids
        assert results["empty"]["resolved_ids"] == [] and results["empty"]["empty_patch_ids"] == ids
        assert results["noop"]["resolved_ids"] == [] and results["noop"]["unresolved_ids"] == ids
    finally:
        remove_images(rows)


# --- the preloaded test server: function bodies swapped in place of a re-import ----------------------

DECO = {
    "setup.py": "from setuptools import setup, find_packages\nsetup(name='deco', packages=find_packages())\n",
    "deco/__init__.py": "",
    "deco/core.py": """
        import functools
        import sys

        REGISTRY = {}


        def logged(f):
            @functools.wraps(f)
            def wrapper(*a):
                return f(*a)
            return wrapper


        def register(f):
            REGISTRY[f.__name__] = f
            return f


        @logged
        def double(x):
            return x * 2


        @register
        def triple(x):
            return x * 3


        class Base:
            def name(self):
                return "base"


        class Child(Base):
            def name(self):
                return "child:" + super().name()


        def make_adder(n, extra=0):
            def add(x):
                return x + n + extra
            return add


        ADD2 = make_adder(2)


        def scale(x, factor=10, *, offset=0):
            return x * factor + offset


        class Greeter:
            def greet(self, name, punct="!"):
                return "hi " + name + punct

            @staticmethod
            def shout(s, times=2):
                return s.upper() * times


        def late(x, k=1):
            return x + k


        late.__defaults__ = (5,)  # set at import: a changed literal would not change it


        class Counter:
            def __init__(self):
                self.n = 0

            def bump(self):
                self.n += 1
                return self.n

            def where(self):
                return sys._getframe().f_lineno


        COUNTER = Counter()  # __init__ runs at import


        class Maker(object):
            @classmethod
            def make(cls):
                return cls()

            def spare(self):
                return 1


        MADE = Maker.make()  # looked up at import
        """,
    "deco/lazy.py": """
        FACTOR = 3


        def scaled(x):
            return x * FACTOR
        """,
    "deco/extra.py": "LOADED = True\n",
    # collected first: a later test depends on the import its collection did (a selected run collects
    # what the whole suite collects, or test_collected_first fails there alone)
    "tests/test_aaa.py": "import deco.extra\n\n\ndef test_extra():\n    assert deco.extra.LOADED\n",
    "tests/test_zzz.py": "import sys\n\n\ndef test_collected_first():\n    assert 'deco.extra' in sys.modules\n",
    # a test that leaves ignored files behind, and fails if one is there: every run must start without
    # them, in an ignored directory that was there at the start (its collection made it) too; and one
    # that removes a file its module's collection wrote (untracked, not ignored): a held session's runs
    # do not collect, so every run must start with that file as collection left it
    ".gitignore": "*.mark\nstash/\n",
    "tests/test_zzz_mark.py": (
        "import os\n\nos.makedirs('stash', exist_ok=True)\n"
        "with open('tests/made.txt', 'w') as f:\n    f.write('42')\n\n\n"
        "def test_leaves_an_ignored_file():\n"
        "    open('run.mark', 'x').close()\n    open('stash/run.mark', 'x').close()\n\n\n"
        "def test_takes_a_file_collection_made():\n"
        "    with open('tests/made.txt') as f:\n        assert f.read() == '42'\n"
        "    os.remove('tests/made.txt')\n"
    ),
    "tests/test_core.py": """
        from deco.core import ADD2, MADE, REGISTRY, Child, Counter, Greeter, double, late, scale


        def test_double():
            assert double(2) == 4


        def test_triple():
            assert REGISTRY["triple"](2) == 6


        def test_child():
            assert Child().name() == "child:base"


        def test_add2():
            assert ADD2(1) == 3


        def test_scale():
            assert scale(2) == 20 and scale(2, offset=1) == 21


        def test_greet():
            assert Greeter().greet("a") == "hi a!"


        def test_shout():
            assert Greeter.shout("a") == "AA"


        def test_late():
            assert late(0) == 5


        def test_bump():
            assert Counter().bump() == 1


        def test_where():
            assert Counter().where() == WHERE


        def test_made():
            assert MADE.spare() == 1


        def test_lazy_first():
            from deco.lazy import scaled  # the first import of deco.lazy: its body runs now
            assert scaled(1) == 3


        def test_lazy_second():
            from deco.lazy import FACTOR
            assert FACTOR == 3
        """,
}
DECO["tests/test_core.py"] = DECO["tests/test_core.py"].replace(
    "WHERE",
    str(
        1
        + textwrap.dedent(DECO["deco/core.py"])
        .lstrip("\n")
        .splitlines()
        .index("        return sys._getframe().f_lineno")
    ),
)


METHODS = [
    "    def __init__(self):\n        self.n = 0\n\n",
    "    def bump(self):\n        self.n += 1\n        return self.n\n\n",
    "    def where(self):\n        return sys._getframe().f_lineno\n",
]
MOVED = ("".join(METHODS), METHODS[2] + "\n" + METHODS[1] + METHODS[0].rstrip("\n") + "\n")


@pytest.fixture(scope="module")
def deco_env(base_image, tmp_path_factory):
    return environment_of(tmp_path_factory, "deco", DECO)


def test_preloaded_server_swaps_function_bodies_exactly(deco_env):
    """Decorated functions, functions held by a registry, methods using super(), and closures made at
    import time all see a changed body without a re-import, as do a changed literal default and methods
    that changed places; a change at module level is refused."""
    env = deco_env
    repo, tm = Path(env.repo_dir), TestMap.load(Path(env.testmap))
    t = "tests/test_core.py::"
    cases = [
        (edit(repo, "deco/core.py", "return x * 2", "return x * 3"), [t + "test_double"]),
        (edit(repo, "deco/core.py", "return f(*a)", "return f(*a) + 1"), [t + "test_double"]),
        (edit(repo, "deco/core.py", "return x * 3", "return x * 4"), [t + "test_triple"]),
        (
            edit(repo, "deco/core.py", 'return "child:" + super().name()', 'return "kid:" + super().name()'),
            [t + "test_child"],
        ),
        (edit(repo, "deco/core.py", "return x + n", "return x - n"), [t + "test_add2"]),
        # a literal default: the live function's __defaults__ change with it
        (edit(repo, "deco/core.py", "factor=10", "factor=11"), [t + "test_scale"]),
        (edit(repo, "deco/core.py", "offset=0", "offset=1"), [t + "test_scale"]),
        (edit(repo, "deco/core.py", 'punct="!"', 'punct="?"'), [t + "test_greet"]),
        (edit(repo, "deco/core.py", "times=2", "times=3"), [t + "test_shout"]),
        # methods that change places (one of them ran at import): their code, at its new lines, runs
        (edit(repo, "deco/core.py", MOVED[0], MOVED[1]), [t + "test_where"]),
    ]
    hot = Workbench(env.image, env.recipe.pytest_args, preload=True, collect=env.recipe.test_files)  # as validation's
    full = Validator(env, tm, "full")
    try:
        assert hot.warm is not None and hot.held  # children run on the preload's own collection
        for cand, f2p in cases:
            sel = selection_for(cand.changed, tm, set(env.passing), root=repo, diff=cand.patch)
            assert sel is not None, cand.patch  # coverage decides: no changed line runs at import time
            assert (
                hot.request(
                    {
                        "files": {f"{OUT}/patch.diff": cand.patch},
                        "before": RESTORE,
                        "setup": f"git apply {OUT}/patch.diff",
                    },
                    60,
                )["setup_rc"]
                == 0
            )
            resp = hot._ask(hot.warm, {**hot.pytest_request(sel, 60), "after": RESTORE, "hot": ["deco/core.py"]}, 60)
            assert not resp.get("not_swappable"), cand.patch
            run = Workbench.test_run(resp, 0)
            failed = sorted(k for k, v in run.outcomes.items() if v != "passed")
            assert failed == f2p == full.validate(cand).FAIL_TO_PASS, cand.patch
        # a module-level change would be stale in the preloaded server: it refuses, nothing runs
        cand = edit(repo, "deco/core.py", "ADD2 = make_adder(2)", "ADD2 = make_adder(3)")
        hot.request(
            {"files": {f"{OUT}/patch.diff": cand.patch}, "before": RESTORE, "setup": f"git apply {OUT}/patch.diff"}, 60
        )
        resp = hot._ask(hot.warm, {**hot.pytest_request(None, 60), "after": RESTORE, "hot": ["deco/core.py"]}, 60)
        assert resp.get("not_swappable") and "exit" not in resp
        run, _ = hot.run(cand.patch, None, 60, hot=["deco/core.py"])  # falls back to the plain server
        assert sorted(k for k, v in run.outcomes.items() if v != "passed") == [t + "test_add2"]
        # a default of a function that runs at import time decides nothing
        cand = edit(repo, "deco/core.py", "extra=0", "extra=1")
        assert selection_for(cand.changed, tm, set(env.passing), root=repo, diff=cand.patch) is None
        # a default that something set at import: the child finds the live value is not the literal,
        # nothing runs, and the plain server (a real import) runs the selected test
        cand = edit(repo, "deco/core.py", "k=1", "k=2")
        sel = selection_for(cand.changed, tm, set(env.passing), root=repo, diff=cand.patch)
        assert t + "test_late" in sel and t + "test_double" not in sel  # (and the tests after it)
        hot.request(
            {"files": {f"{OUT}/patch.diff": cand.patch}, "before": RESTORE, "setup": f"git apply {OUT}/patch.diff"}, 60
        )
        resp = hot._ask(hot.warm, {**hot.pytest_request(sel, 60), "hot": ["deco/core.py"]}, 60)
        assert resp.get("not_swappable") and "exit" not in resp
        resp = hot.request({**hot.pytest_request(sel, 60), "after": RESTORE}, 60, ["deco/core.py"])
        assert Workbench.test_run(resp, 0).outcomes == {test: "passed" for test in sel}
        assert full.validate(cand).status == "no_failures"
    finally:
        hot.close()
        full.close()


def test_removed_methods_select_the_tests_that_looked_them_up(deco_env):
    """A removed method is seen by the tests that looked it up in the lookup run (on its class, an
    instance, or through super()): only those run, and they label the candidate as the whole suite
    does. A method looked up at import time decides nothing."""
    env = deco_env
    repo, tm = Path(env.repo_dir), TestMap.load(Path(env.testmap))
    t = "tests/test_core.py::"
    assert tm.lookups is not None and not tm.unwatched
    cases = [  # (blank lines keep the lines below in place: test_where reads a line number)
        (METHODS[2], "", [t + "test_where"]),
        (
            "    @staticmethod\n    def shout(s, times=2):\n        return s.upper() * times\n",
            "\n\n\n",
            [t + "test_shout"],
        ),
        ('    def name(self):\n        return "base"\n', "    pass\n\n", [t + "test_child"]),  # through super()
        ("    def spare(self):\n        return 1\n", "", [t + "test_made"]),
    ]
    selected, full = Validator(env, tm, "selected"), Validator(env, tm, "full")
    try:
        for old, new, f2p in cases:
            cand = edit(repo, "deco/core.py", old, new)
            source = (repo / "deco/core.py").read_text()
            assert len(removed_methods(source, new_text(source, cand.patch, "deco/core.py"))) == 1, cand.patch
            a, b = selected.validate(cand), full.validate(cand)
            assert a.mode == "selected" and a.tests_run < len(env.passing), cand.patch  # the test that looked
            # it up and those after it
            assert a.status == b.status == "valid" and a.FAIL_TO_PASS == b.FAIL_TO_PASS == f2p, cand.patch
            assert a.PASS_TO_PASS == b.PASS_TO_PASS, cand.patch
        cand = edit(repo, "deco/core.py", "    @classmethod\n    def make(cls):\n        return cls()\n\n", "")
        assert selection_for(cand.changed, tm, set(env.passing), root=repo, diff=cand.patch) is None
        a, b = selected.validate(cand), full.validate(cand)
        assert a.mode == "suite" and a.status == b.status and a.FAIL_TO_PASS == b.FAIL_TO_PASS
    finally:
        selected.close()
        full.close()


def test_removed_bases_select_the_tests_that_name_the_class(deco_env):
    """A class that loses a base is seen by the tests that ran a statement naming it; one named at
    import time decides nothing."""
    env = deco_env
    repo, tm = Path(env.repo_dir), TestMap.load(Path(env.testmap))
    assert "deco/core.py:Child" in tm.plain_classes
    cand = edit(repo, "deco/core.py", "class Child(Base):", "class Child:")
    selected, full = Validator(env, tm, "selected"), Validator(env, tm, "full")
    try:
        a, b = selected.validate(cand), full.validate(cand)
        assert a.mode == "selected" and a.tests_run < len(env.passing)  # test_child (it names Child), those after
        assert a.status == b.status == "valid" and a.FAIL_TO_PASS == b.FAIL_TO_PASS == [
            "tests/test_core.py::test_child"
        ]
        assert a.PASS_TO_PASS == b.PASS_TO_PASS
        cand = edit(repo, "deco/core.py", "class Maker(object):", "class Maker:")  # MADE = Maker.make() at import
        assert selection_for(cand.changed, tm, set(env.passing), root=repo, diff=cand.patch) is None
    finally:
        selected.close()
        full.close()


def test_a_module_first_imported_by_a_test_runs_at_import_time(deco_env):
    """A module a test imports first runs its body once for every later test: its module-level lines
    are import time in the map, not that test's, so changing them decides nothing."""
    repo, tm = Path(deco_env.repo_dir), TestMap.load(Path(deco_env.testmap))
    assert 1 in tm.import_lines["deco/lazy.py"] and 1 not in tm.files.get("deco/lazy.py", {})
    assert tm.tests_touching("deco/lazy.py", {5}) == {"tests/test_core.py::test_lazy_first"}  # a body: the caller's
    cand = edit(repo, "deco/lazy.py", "FACTOR = 3", "FACTOR = 4")
    assert selection_for(cand.changed, tm, set(deco_env.passing), root=repo, diff=cand.patch) is None


def test_bytecode_cache_settles_past_the_newest_source(tmp_path, monkeypatch):
    """The test server's bytecode cache trusts a source's size and mtime in whole seconds: after the
    preload it waits until the clock has passed the newest stamp in the tree, and drops the cache when a
    stamp lies further ahead than it would wait."""
    from bugforge.incontainer import zygote

    tree, cache = tmp_path / "tree", tmp_path / "cache"
    (tree / ".git").mkdir(parents=True)
    cache.mkdir()
    monkeypatch.setattr(sys, "pycache_prefix", str(cache))
    src = tree / "mod.py"
    src.write_text("X = 1\n")
    zygote._settle(str(tree))
    assert int(time.time()) > int(src.stat().st_mtime) and cache.exists()  # an edit now gets another second
    (tree / ".git" / "future").write_text("")  # git's own files are not sources
    os.utime(tree / ".git" / "future", (time.time() + 3600,) * 2)
    zygote._settle(str(tree))
    assert cache.exists()
    os.utime(src, (time.time() + 3600,) * 2)
    zygote._settle(str(tree))
    assert not cache.exists()
