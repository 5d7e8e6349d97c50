"""The preloaded test server (function bodies swapped in place of a re-import) and selection on real runs
of the deco repository: removed methods and bases select the tests that saw them, as the whole suite
labels them; a module first imported by a test runs at import time. Real containers."""

from __future__ import annotations

from pathlib import Path

from bugforge.factory.validate import Validator
from bugforge.incontainer.source import removed_methods
from bugforge.testing.patches import new_text
from bugforge.testing.selection import selection_for
from bugforge.testing.testmap import TestMap
from bugforge.testing.testrun import OUT, RESTORE, Workbench

METHODS = [
    "    def __init__(self):\n        self.n = 0\n\n",
    "    def bump(self):\n        self.n += 1\n        return self.n\n\n",
    "    def where(self):\n        return sys._getframe().f_lineno\n",
]
MOVED = ("".join(METHODS), METHODS[2] + "\n" + METHODS[1] + METHODS[0].rstrip("\n") + "\n")


def test_preloaded_server_swaps_function_bodies_exactly(deco_env, edit):
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


def test_removed_methods_select_the_tests_that_looked_them_up(deco_env, edit):
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


def test_removed_bases_select_the_tests_that_name_the_class(deco_env, edit):
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


def test_a_module_first_imported_by_a_test_runs_at_import_time(deco_env, edit):
    """A module a test imports first runs its body once for every later test: its module-level lines
    are import time in the map, not that test's, so changing them decides nothing."""
    repo, tm = Path(deco_env.repo_dir), TestMap.load(Path(deco_env.testmap))
    assert 1 in tm.import_lines["deco/lazy.py"] and 1 not in tm.files.get("deco/lazy.py", {})
    assert tm.tests_touching("deco/lazy.py", {5}) == {"tests/test_core.py::test_lazy_first"}  # a body: the caller's
    cand = edit(repo, "deco/lazy.py", "FACTOR = 3", "FACTOR = 4")
    assert selection_for(cand.changed, tm, set(deco_env.passing), root=repo, diff=cand.patch) is None
