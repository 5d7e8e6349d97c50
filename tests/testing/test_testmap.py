"""Which tests a change can reach: the test map's selection rules (statement spans, lines inserted below a
body, later tests, literal defaults, removed methods and bases, moved methods) and the syntax-tree helpers
they rest on; a diff applied to its file. Pure functions, no containers."""

from __future__ import annotations

import ast
import textwrap

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
from bugforge.testing.patches import changed_lines, file_diff, new_text
from bugforge.testing.testmap import TestMap, statement_span


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
