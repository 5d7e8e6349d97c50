"""Issue 38: a project that is one of pytest's own dependencies builds, and its tests test the tree.

The test process loads pytest with the tree off sys.path (bugforge/incontainer/start.py); such a project
gets the runner's own copy (factory/pytest_deps.py), dropped from sys.modules before the tests run. The
choices and `restore` are tested in-process first; then a real image of a small project named
`iniconfig` (it lives only in its image): built, its tests import the tree's module while pytest keeps
its copy, a bug in the tree breaks them, and a patch that removes the package does not pass."""

from __future__ import annotations

import shlex
import sys

from bugforge.factory import build_environment
from bugforge.factory.collection import Collection
from bugforge.factory.pytest_deps import is_pytest_dependency, runner_copy, step
from bugforge.factory.repair import not_packages
from bugforge.incontainer.installed import RUNNER_COPIES
from bugforge.incontainer.start import DEPS, restore
from bugforge.records import Recipe
from bugforge.testing.testrun import run_tests

quiet = lambda m: None  # noqa: E731

# --- pure functions (no container) -------------------------------------------------------------------


def test_only_a_project_pytest_depends_on_gets_the_runners_copy():
    assert is_pytest_dependency("iniconfig") and is_pytest_dependency("Pluggy") and is_pytest_dependency("attrs")
    assert not is_pytest_dependency("mini") and not is_pytest_dependency(None)
    r = Recipe()
    runner_copy(r, "mini")
    assert r.install == [] and r.notes == []
    runner_copy(r, "iniconfig")
    assert r.install == [step("iniconfig")] and DEPS in r.notes[0] and "iniconfig" in r.notes[0]
    argv = shlex.split(step("iniconfig"))
    assert argv[:3] == ["python", "-I", "-c"] and "\n" not in step("iniconfig")  # (one Dockerfile line)
    compile(argv[3], "<step>", "exec")


def test_restore_drops_what_the_runners_copy_loaded_and_the_tree_then_provides_it(tmp_path, monkeypatch):
    deps, tree = tmp_path / DEPS, tmp_path / "tree"
    for where in (deps, tree):
        (where / "h38dep").mkdir(parents=True)
        (where / "h38dep" / "__init__.py").write_text(f"WHERE = {where.name!r}\n")
        (where / "h38dep" / "sub.py").write_text("")
    saved = [str(tree), *sys.path]
    monkeypatch.setattr(sys, "path", [str(deps), *sys.path])  # as the program leaves it: the tree off, DEPS first
    try:
        import h38dep
        import h38dep.sub  # noqa: F401

        held = h38dep  # (what pytest's modules keep)
        assert held.WHERE == DEPS
        restore(saved, deps=str(deps))
        assert sys.path == saved and "h38dep" not in sys.modules and "h38dep.sub" not in sys.modules
        assert RUNNER_COPIES["h38dep"] is held  # (a class naming it is read in the runner's copy: installed.py)
        import h38dep

        assert h38dep.WHERE == "tree" and held.WHERE == DEPS
        restore(saved, deps=str(deps))  # DEPS not on sys.path: nothing is dropped
        assert sys.modules["h38dep"] is h38dep
    finally:
        for name in ("h38dep", "h38dep.sub"):
            sys.modules.pop(name, None)
            RUNNER_COPIES.pop(name, None)


def test_test_files_shipped_without_their_package_are_named(tmp_path, write_tree):
    """datasets 5.2.0's sdist: tests/test_*.py without tests/__init__.py and the helpers they import."""
    repo = write_tree(tmp_path, {"tests/test_a.py": "from .utils import x\n", "pkg/tests/__init__.py": ""})
    relative = "E   ImportError: attempted relative import with no known parent package"
    col = Collection(errors={"tests/test_a.py": relative, "pkg/tests/test_b.py": relative, "t/c.py": "NameError"})
    assert not_packages(col, repo) == ["tests"]


# --- a real image ------------------------------------------------------------------------------------

INICONFIG = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
    '[project]\nname = "iniconfig"\nversion = "2.0"\n',
    # (the names pytest imports: collection, `python -m pytest`, loads pytest with the tree's module)
    "src/iniconfig/__init__.py": "IniConfig = ParseError = SectionWrapper = None\n\n\ndef answer():\n    return 42\n",
    "tests/test_answer.py": (
        "import _pytest.config.findpaths as findpaths\n\nimport iniconfig\n\n\n"
        "def test_answer():\n    assert iniconfig.answer() == 42\n\n\n"
        "def test_the_tests_import_the_tree_and_pytest_keeps_its_own():\n"
        "    assert iniconfig.__file__.startswith('/testbed/src/')\n"
        "    assert findpaths.iniconfig is not iniconfig and hasattr(findpaths.iniconfig, 'IniConfig')\n"
    ),
}


def test_a_project_pytest_depends_on_builds_and_its_tests_test_the_tree(base_image, tmp_path, git_repo):
    repo = git_repo(tmp_path / "iniconfig", INICONFIG)
    rec, _ = build_environment(str(repo), out=tmp_path / "runs", runs=2, log=quiet)
    assert {t: o.outcome for t, o in rec.tests.items()} == {
        "tests/test_answer.py::test_answer": "passed",
        "tests/test_answer.py::test_the_tests_import_the_tree_and_pytest_keeps_its_own": "passed",
    }, rec.recipe.notes
    assert any(DEPS in n for n in rec.recipe.notes)
    args = rec.recipe.pytest_args
    bug, _ = run_tests(rec.image, args, setup="sed -i 's/42/41/' src/iniconfig/__init__.py", user="agent")
    assert bug.outcomes["tests/test_answer.py::test_answer"] == "failed", bug.log_tail
    gone, _ = run_tests(rec.image, args, setup="rm -r src/iniconfig", user="agent")
    assert "passed" not in gone.outcomes.values(), (gone.outcomes, gone.log_tail)
