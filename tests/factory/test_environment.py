"""Issue 3: acquire, recipe detection for the common project shapes, environment image, baseline with
flaky detection, per-test coverage map, and the bad-input errors. Real images, containers and repos."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bugforge.errors import BugforgeError
from bugforge.factory import build_environment
from bugforge.factory.recipe import detect
from bugforge.records import load_env
from bugforge.testing.testmap import TestMap

# --- recipe detection, one project shape each -------------------------------------------------


def test_recipe_pyproject_with_extras(tmp_path, write_tree):
    r = detect(
        write_tree(
            tmp_path,
            {
                "pyproject.toml": """
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"
        [project]
        name = "p"
        version = "1"
        requires-python = ">=3.12"
        [project.optional-dependencies]
        tests = ["hypothesis"]
        docs = ["sphinx"]
        """
            },
        )
    )
    assert r.install[0] == "pip install -e '.[tests]' || pip install '.[tests]'"
    assert r.python == "3.13"  # the first buildable version satisfying >=3.12


def test_recipe_setup_py_and_setup_cfg(tmp_path, write_tree):
    r = detect(
        write_tree(
            tmp_path,
            {
                "setup.py": "from setuptools import setup\nsetup(tests_require=['mock>=4'], extras_require={'testing': ['pytest']})\n",
                "setup.cfg": "[metadata]\nname = s\nclassifiers =\n    Programming Language :: Python :: 3.9\n"
                "[options]\ntests_require =\n    freezegun\n",
            },
        )
    )
    assert r.install[0] == "pip install -e '.[testing]' || pip install '.[testing]'"
    assert "pip install freezegun 'mock>=4'" in r.install
    assert r.python == "3.9"


def test_recipe_requirements_files_and_dependency_groups(tmp_path, write_tree):
    r = detect(
        write_tree(
            tmp_path,
            {
                "requirements.txt": "attrs\n",
                "requirements-dev.txt": "pytest\n",
                "pyproject.toml": "[dependency-groups]\ntest = ['pytest>=8', {include-group = 'lint'}]\nlint = ['ruff']\n",
            },
        )
    )
    assert r.install[0] == "pip install -r requirements.txt"
    assert "pip install 'pytest>=8' ruff" in r.install
    assert "pip install -r requirements-dev.txt" in r.install


def test_recipe_pytest_ini_addopts_needs_plugins(tmp_path, write_tree):
    r = detect(
        write_tree(
            tmp_path,
            {
                "setup.py": "from setuptools import setup\nsetup(name='x')\n",
                "pytest.ini": "[pytest]\naddopts = --cov=x --cov-report term -n 4 --strict-markers\ntimeout = 30\n",
            },
        )
    )
    plugins = next(c for c in r.install if c.startswith("pip install pytest-"))
    assert {"pytest-cov", "pytest-xdist", "pytest-timeout"} <= set(plugins.replace(" || true", "").split()[2:])
    i = r.pytest_args.index("-o")
    assert r.pytest_args[i + 1] == "addopts=--strict-markers"


def test_recipe_src_layout_and_unittest_style(tmp_path, write_tree):
    r = detect(
        write_tree(
            tmp_path,
            {
                "setup.cfg": "[metadata]\nname = u\n[options]\npackage_dir =\n    =src\n",
                "setup.py": "from setuptools import setup\nsetup()\n",
                "src/u/__init__.py": "",
                "tests/testbasic.py": "import unittest\nclass T(unittest.TestCase):\n    def test_a(self): pass\n",
            },
        )
    )
    assert r.install[0].startswith("pip install -e .")
    assert "python_files=test*.py *_test.py tests.py" in r.pytest_args


# --- end to end, real containers -------------------------------------------------------------


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("runs")


def test_env_end_to_end_with_coverage_map_and_reuse(base_image, tmp_path, out, git_repo, mini_files):
    repo = git_repo(tmp_path / "mini", mini_files)
    rec, reused = build_environment(str(repo), out=out, log=lambda m: None)
    assert not reused
    assert set(rec.tests) == {
        "tests/test_mini.py::test_f",
        "tests/test_mini.py::test_g",
        "tests/test_mini.py::test_constant",
        "tests/test_shared.py::test_uses_ten",
        "tests/test_shared.py::test_uses_ten_too",
    }
    assert rec.passing == sorted(rec.tests) and rec.flaky == []
    assert load_env(out / "mini" / "env.json").image == rec.image
    m = TestMap.load(Path(rec.testmap))
    # f's body is lines 2-3, g's is line 7: each maps to exactly the test that calls it
    assert m.tests_touching("src/mini/__init__.py", {2, 3}) == {"tests/test_mini.py::test_f"}
    assert m.tests_touching("src/mini/__init__.py", {7}) == {"tests/test_mini.py::test_g"}
    assert "tests/test_mini.py::test_constant" not in m.tests_touching("src/mini/__init__.py", range(1, 8))
    assert m.covered_lines("src/mini/__init__.py") == {2, 3, 7, 11}
    # h (line 11) runs once, in a module-scoped fixture: it belongs to every test using the fixture
    assert m.tests_touching("src/mini/__init__.py", {11}) == {
        "tests/test_shared.py::test_uses_ten",
        "tests/test_shared.py::test_uses_ten_too",
    }
    assert m.tests_seeing("src/mini/__init__.py", {2, 3}) is not None
    assert m.tests_seeing("src/mini/__init__.py", {1}) is None  # a def line runs at import time
    # /testbed in the image is the snapshot commit, clean
    from bugforge.engine import client

    out_ = (
        client()
        .containers.run(
            rec.image, ["bash", "-c", "git rev-parse HEAD; git status --porcelain"], remove=True, network_mode="none"
        )
        .decode()
        .split()
    )
    assert out_ == [rec.base_commit]
    # unchanged: reused, no rebuild
    again, reused = build_environment(str(repo), out=out, log=lambda m: None)
    assert reused and again.image == rec.image


NOTICING = {
    "setup.py": "from setuptools import setup\nsetup(name='notice', py_modules=['notice'])\n",
    "notice.py": """
        import os

        HERE = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(HERE, "config.txt")) as f:  # read at import: every test depends on it
            CONFIG = f.read()


        def words():
            with open(os.path.join(HERE, "data", "words.txt")) as f:
                return f.read().split()
        """,
    "config.txt": "x\n",
    "data/words.txt": "a b\n",
    "tests/test_notice.py": """
        import importlib
        import os

        from notice import words


        def test_nothing_on_disk():
            assert 1 + 1 == 2


        def test_checks_a_flag():
            assert not os.path.exists("FLAG")


        def test_optional_module():
            try:
                importlib.import_module("extras")
            except ImportError:
                pass


        def test_lists_data():
            assert "words.txt" in os.listdir("data")


        def test_words():
            assert words() == ["a", "b"]
        """,
}


def test_testmap_records_which_tests_notice_whole_files(base_image, tmp_path, out, git_repo):
    """The probe records what each test opens, checks, lists and imports: a file added, deleted or
    replaced is seen only by those tests; what ran at import or collection time decides nothing."""
    from bugforge.testing.selection import selection_for

    repo = git_repo(tmp_path / "notice", NOTICING)
    rec, _ = build_environment(str(repo), out=out, log=lambda m: None)
    m = TestMap.load(Path(rec.testmap))
    t = "tests/test_notice.py::"
    # the tests that noticed, and every test after the first of them (what one test read may live on in
    # a cache that later tests use); the tests run in file order
    later = [t + n for n in ("test_checks_a_flag", "test_optional_module", "test_lists_data", "test_words")]
    assert m.order == [t + "test_nothing_on_disk", *later]
    assert m.tests_noticing("data/words.txt") == set(later[2:])  # test_words reads it, test_lists_data lists it
    assert m.tests_noticing("data/new.txt") == set(later[2:])
    assert m.tests_noticing("extras.py") == set(later[1:])
    assert m.tests_noticing("FLAG") == set(later)
    assert m.tests_noticing("NOTES.txt") == set()
    assert m.tests_noticing("config.txt") is None  # read at import time
    assert m.tests_noticing("tests/conftest.py") is None and m.tests_noticing("pytest.ini") is None
    passing = set(rec.passing)
    assert selection_for({}, m, passing, {"NOTES.txt": "added"}) == []
    assert selection_for({}, m, passing, {"extras.py": "added", "data/words.txt": "other"}) == sorted(later[1:])
    assert selection_for({}, m, passing, {"config.txt": "deleted"}) is None


def test_flaky_test_is_detected_and_never_passing(base_image, tmp_path, out, git_repo, mini_files):
    """A test whose outcome differs between baseline runs is flaky. The runs after the first run only the
    tests that passed in it: a failing test is failing, not flaky, whatever it would do later."""
    files = dict(mini_files)
    files["tests/test_flaky.py"] = """
        import sys


        def test_depends_on_the_tracer():
            # Passes under the first run's tracer (coverage), fails in the plain runs after it.
            assert sys.gettrace() is not None


        def test_fails_only_under_the_tracer():
            assert sys.gettrace() is None
        """
    repo = git_repo(tmp_path / "flaky", files)
    lines = []
    rec, _ = build_environment(str(repo), out=out, log=lines.append)
    assert rec.flaky == ["tests/test_flaky.py::test_depends_on_the_tracer"]
    assert "tests/test_flaky.py::test_depends_on_the_tracer" not in rec.passing
    other = rec.tests["tests/test_flaky.py::test_fails_only_under_the_tracer"]
    assert other.outcome == "failed" and not other.flaky
    n = len(rec.tests)
    assert [l.split(": ")[2].split(",")[0] for l in lines if l.startswith("baseline: run ")] == [
        f"{n} tests",
        f"{n - 1} tests",
        f"{n - 1} tests",
    ]


def test_lookup_run_leaves_test_methods_of_helper_classes_alone(base_image, tmp_path, out, git_repo, mini_files):
    """A test class whose test methods come from a helper module not named test_*.py (networkx's
    historical_tests.py), under filterwarnings=error: the lookup run collects it as the plain runs do."""
    files = dict(mini_files)
    files["tests/checks.py"] = """
        class Checks:
            def test_inherited(self):
                assert self.value() == 1

            def value(self):
                return 1
        """
    files["tests/test_inherit.py"] = "from checks import Checks\n\n\nclass TestInherit(Checks):\n    pass\n"
    files["pytest.ini"] = "[pytest]\nfilterwarnings =\n    error\n"
    lines = []
    rec, _ = build_environment(str(git_repo(tmp_path / "helper", files)), out=out, log=lines.append)
    assert "tests/test_inherit.py::TestInherit::test_inherited" in rec.passing
    look = [l.rsplit(", ", 1)[0] for l in lines if l.startswith("baseline: lookup run")]
    assert look == [f"baseline: lookup run: {len(rec.tests)} tests, 0 with another outcome"], look
    tm = TestMap.load(Path(rec.testmap))
    assert tm.lookups is not None and not tm.unwatched


def test_failing_install_names_the_step(base_image, tmp_path, out, git_repo, mini_files):
    files = dict(mini_files)
    files["requirements-test.txt"] = "this-package-does-not-exist-bugforge==0.0.1\n"
    repo = git_repo(tmp_path / "badinstall", files)
    with pytest.raises(BugforgeError) as e:
        build_environment(str(repo), out=out, log=lambda m: None)
    assert "pip install -r requirements-test.txt" in e.value.what
    assert "building the environment of badinstall failed" in e.value.what
    assert not (out / "badinstall" / "env.json").exists()


def test_addopts_plugin_that_cannot_install_is_neutralised(base_image, tmp_path, out, git_repo, mini_files):
    files = dict(mini_files)
    files["pytest.ini"] = "[pytest]\naddopts = -p bugforge_no_such_plugin\n"
    repo = git_repo(tmp_path / "noplugin", files)
    rec, _ = build_environment(str(repo), out=out, log=lambda m: None)
    assert len(rec.passing) == 5
    assert rec.recipe.pytest_args[-2:] == ["-o", "addopts="]
    assert any("neutralised" in n for n in rec.recipe.notes)


def test_hypothesis_is_seeded_so_every_run_tries_the_same_examples(base_image, tmp_path, out, git_repo, mini_files):
    files = dict(mini_files)
    files["requirements-test.txt"] = "hypothesis\n"
    files["tests/test_prop.py"] = """
        import hypothesis.core
        from hypothesis import given, strategies as st


        def test_the_run_is_seeded():
            assert hypothesis.core.global_force_seed == 0


        @given(st.integers())
        def test_a_property(x):
            assert isinstance(x, int)
        """
    repo = git_repo(tmp_path / "prop", files)
    rec, _ = build_environment(str(repo), out=out, log=lambda m: None)
    assert "--hypothesis-seed=0" in rec.recipe.pytest_args
    assert "tests/test_prop.py::test_the_run_is_seeded" in rec.passing  # the seed reached every baseline run
    assert "tests/test_prop.py::test_a_property" in rec.passing


@pytest.mark.parametrize(
    "args,expect",
    [
        (["https://nonexistent.invalid/x/y.git"], "cannot clone https://nonexistent.invalid/x/y.git"),
        (["{repo}", "--commit", "deadbeef"], "commit 'deadbeef' does not exist"),
        (["{empty}"], "no tests found"),
        (
            ["{hang}", "--timeout", "8", "--runs", "2"],
            "did not finish within 8 s (still running: tests/test_hang.py::test_forever)",
        ),
        (["pypi:nonsense"], "is not of the form pypi:NAME==VERSION"),
    ],
)
def test_bad_input_is_one_clear_line(base_image, tmp_path, args, expect, cli, git_repo, mini_files):
    repo = git_repo(tmp_path / "r", mini_files)
    empty = git_repo(
        tmp_path / "empty",
        {"README.md": "nothing here\n", "setup.py": "from setuptools import setup\nsetup(name='e')\n"},
    )
    hang = git_repo(
        tmp_path / "hang",
        {**mini_files, "tests/test_hang.py": "import time\n\ndef test_forever():\n    time.sleep(3600)\n"},
    )
    args = [a.format(repo=repo, empty=empty, hang=hang) for a in args]
    r = cli("factory", "env", *args, "--out", str(tmp_path / "out"))
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expect in lines[0], r.stderr
    assert not list((tmp_path / "out").glob("*/env.json"))  # nothing cached as good


def test_the_environment_never_lands_on_its_source(base_image, tmp_path, cli, git_repo, mini_files, write_tree):
    """--out whose environment directory would be the source repository is refused before anything is
    written; an --out inside a plain (non-git) source directory is left out of its snapshot."""
    repo = git_repo(tmp_path / "r", mini_files)
    r = cli("factory", "env", str(repo), "--out", str(tmp_path))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and "would hold the source" in lines[0], r.stderr
    assert (
        subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=repo, capture_output=True, text=True).stdout
        == ""
    )
    plain = write_tree(tmp_path / "plain", mini_files)
    build_environment(str(plain), out=plain / "runs", log=lambda m: None)
    rec, reused = build_environment(str(plain), out=plain / "runs", log=lambda m: None)  # runs/ is there now
    tracked = subprocess.run(["git", "ls-files"], cwd=rec.repo_dir, capture_output=True, text=True).stdout.split()
    assert any(t.startswith("tests/") for t in tracked), tracked
    assert reused and not any(t.startswith("runs/") for t in tracked), tracked
