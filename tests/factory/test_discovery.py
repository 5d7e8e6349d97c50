"""Issue 38's discovery classes: a unittest suite in modules not named like tests (found from the tree's
syntax, its paths added to pytest's python_files, which every run and grader takes), and a test file
whose class names a base that is no dotted name (`Base[int]`), which crashed the probe's collection with
an IndexError. Pure functions first, then one small real build each."""

from __future__ import annotations

import importlib.util

import pytest
from _pytest.pathlib import fnmatch_ex

from bugforge.factory import build_environment
from bugforge.factory.discovery import configured_python_files, matches, unnamed_unittest_modules
from bugforge.factory.project_files import ini, toml
from bugforge.factory.pytest_config import clean_addopts
from bugforge.factory.recipe import detect
from bugforge.incontainer.defined import _classes_changed, _File
from bugforge.testing.testrun import run_tests
from bugforge.testing.tools import TEST_USER

quiet = lambda m: None  # noqa: E731
CASE = (
    "import unittest\n\n\nclass {name}(unittest.TestCase):\n    def test_one(self):\n        self.assertEqual(1, 1)\n"
)
SUITE = {  # a package's unittest suite run as `python -m pkg.tests` (aioitertools' layout); no install
    "pkg/__init__.py": "def double(x):\n    return 2 * x\n",
    "pkg/tests/__init__.py": "from .core import CoreTest\nfrom .more import MoreTest\n",
    "pkg/tests/__main__.py": "import unittest\n\nunittest.main(module='pkg.tests')\n",
    "pkg/tests/core.py": "from unittest import TestCase\n\nfrom pkg import double\n\n\nclass CoreTest(TestCase):\n"
    "    def test_double(self):\n        self.assertEqual(double(2), 4)\n",
    "pkg/tests/more.py": "from .base import Base\n\n\nclass MoreTest(Base):\n    def test_more(self):\n"
    "        self.assertTrue(self.ready())\n",
    "pkg/tests/base.py": "import unittest\n\n\nclass Base(unittest.TestCase):\n    def ready(self):\n        return True\n",
}


# --- pure functions (no container) -------------------------------------------------------------------


def test_unittest_modules_not_named_like_tests_are_found_by_folder(tmp_path, write_tree):
    """Modules with TestCase subclasses that have tests (own or inherited through the tree's classes), under
    a tests folder where no file matches python_files; not __init__/__main__, not a suite pytest already
    finds tests in (anywhere under its tests folder), not a folder outside tests."""
    files = {
        **SUITE,
        "other/tests/test_a.py": "def test_a():\n    pass\n",
        "other/tests/helpers.py": CASE.format(name="HelperCase"),  # beside test_a.py: pytest's own choice
        "other/tests/base/cases.py": CASE.format(name="AbstractCase"),  # under a suite pytest finds
        "lib/tests/unit/checks.py": CASE.format(name="DeepCase"),  # a suite pytest finds nothing of
        "pkg/testing.py": CASE.format(name="UserFacing"),  # a library's helper, not in a tests folder
    }
    repo = write_tree(tmp_path, files)
    found = unnamed_unittest_modules(repo, ["."], ["test_*.py", "*_test.py"])
    assert found == ["lib/tests/unit/checks.py", "pkg/tests/core.py", "pkg/tests/more.py"], found
    assert unnamed_unittest_modules(repo, ["."], ["*.py"]) == []  # a configuration that finds them already
    assert unnamed_unittest_modules(repo, ["other"], ["test_*.py"]) == []


@pytest.mark.parametrize(
    "pattern, path",
    [
        ("test_*.py", "/testbed/pkg/tests/test_a.py"),
        ("test_*.py", "/testbed/pkg/tests/core.py"),
        ("pkg/tests/core.py", "/testbed/pkg/tests/core.py"),
        ("pkg/tests/core.py", "/testbed/other/pkg/tests/core.py"),
        ("pkg/tests/core.py", "/testbed/pkg/tests/core_py"),
        ("tests/*.py", "/testbed/pkg/tests/deep/x.py"),
    ],
)
def test_patterns_match_as_pytest_matches_them(pattern, path):
    assert matches(path.removeprefix("/testbed/"), [pattern]) == fnmatch_ex(pattern, path)


def test_the_widened_option_keeps_the_configured_patterns(tmp_path, write_tree):
    conf = '[tool.pytest.ini_options]\npython_files = ["check_*.py"]\n'
    repo = write_tree(tmp_path, {**SUITE, "pyproject.toml": conf})
    assert configured_python_files(repo, toml(repo / "pyproject.toml"), ini(repo / "x"), ini(repo / "x")) == [
        "check_*.py"
    ]
    r = detect(repo)
    i = r.pytest_args.index("-o")
    assert r.pytest_args[i + 1] == "python_files=check_*.py pkg/tests/core.py pkg/tests/more.py", r.pytest_args
    assert any("2 unittest modules not named like tests" in n for n in r.notes), r.notes


def test_a_class_whose_base_is_no_dotted_name_is_no_probe_error(tmp_path):
    """`class Fake(Base[int])` in a test file: the probe's check of the bases a file names skips a
    subscripted base (it raised IndexError at collection before, an INTERNALERROR that found no tests)."""
    path = tmp_path / "test_generic.py"
    path.write_text(
        "from typing import Generic, TypeVar\n\nT = TypeVar('T')\n\n\nclass Base(Generic[T]):\n    pass\n\n\n"
        "class Fake(Base[int]):\n    pass\n\n\nclass Plain(Base):\n    pass\n"
    )
    spec = importlib.util.spec_from_file_location("test_generic_probe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert _classes_changed(module, _File(str(path))) == []
    module.Base = type("Other", (), {})  # the check still sees a class whose named base is not its base
    assert _classes_changed(module, _File(str(path))) == [
        "test_generic_probe.Plain has bases other than the ones its file names"
    ]


def test_report_file_flags_are_dropped_from_addopts():
    """A report file (JUnit, HTML, JSON, report-log) is never read by bugforge, and a grader's test user
    cannot write it into the tree; flags that only shape the console stay."""
    opts = "--capture=no -v --showlocals --junitxml=reports/junit.xml --html r.html --self-contained-html"
    kept, dropped = clean_addopts([*opts.split(), "--json-report", "--json-report-file=x.json", "--report-log", "l"])
    assert kept == ["--capture=no", "-v", "--showlocals"], kept
    assert dropped[0] == "--junitxml=reports/junit.xml" and dropped[-2:] == ["--report-log", "l"], dropped


# --- real builds ---------------------------------------------------------------------------------------


def test_a_unittest_suite_in_modules_not_named_like_tests_is_run(base_image, tmp_path, git_repo):
    """pytest's default discovery finds nothing in pkg/tests/; the recipe widens python_files, the baseline
    runs every test once (the package's star import collects nothing twice), and a grader's run of one node
    id (as the test user, the instance's pytest arguments) passes untouched."""
    repo = git_repo(tmp_path / "pkg", SUITE)
    rec, _ = build_environment(str(repo), out=tmp_path / "runs", runs=2, log=quiet)
    assert sorted(rec.tests) == [
        "pkg/tests/core.py::CoreTest::test_double",
        "pkg/tests/more.py::MoreTest::test_more",
    ], rec.tests
    assert "pkg/tests/core.py::CoreTest::test_double" in rec.passing
    one = "pkg/tests/more.py::MoreTest::test_more"
    run, _ = run_tests(rec.image, rec.recipe.pytest_args, selection=[one], timeout=120, user=TEST_USER)
    assert run.outcomes == {one: "passed"} and not run.suspicious(), (run.outcomes, run.log_tail)


def test_a_test_class_with_a_subscripted_base_builds_and_grades(base_image, tmp_path, git_repo):
    """pathable's shape: a test file's class derives from `NodeAccessor[...]` (the probe's IndexError), under
    addopts that write a JUnit report into the tree, which a grader's test user cannot (an INTERNALERROR at
    session finish): the environment builds and a grader's run of one node id passes untouched."""
    files = {
        "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "--capture=no --showlocals --junitxml=reports/j.xml"\n',
        "dep/__init__.py": "from typing import Generic, TypeVar\n\nT = TypeVar('T')\n\n\n"
        "class Dependency(Generic[T]):\n    def value(self):\n        return 1\n",
        "tests/test_dep.py": "from dep import Dependency\n\n\nclass Greeter(Dependency[str]):\n    pass\n\n\n"
        "def test_value():\n    assert Greeter().value() == 1\n",
    }
    repo = git_repo(tmp_path / "generic", files)
    rec, _ = build_environment(str(repo), out=tmp_path / "runs", runs=2, log=quiet)
    assert rec.passing == ["tests/test_dep.py::test_value"], rec.tests
    assert "addopts=--capture=no --showlocals" in rec.recipe.pytest_args, rec.recipe.pytest_args
    run, _ = run_tests(rec.image, rec.recipe.pytest_args, selection=rec.passing, timeout=120, user=TEST_USER)
    assert run.outcomes == {rec.passing[0]: "passed"} and not run.suspicious(), (run.outcomes, run.log_tail)
