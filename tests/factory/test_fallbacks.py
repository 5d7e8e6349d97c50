"""Issue 38: every install failure has a fallback, and an environment is usable or an error. Real images,
containers and git repositories: a suite written for an older pytest (period-correct tooling), a build
backend that reaches the network, a pin that builds only with a compiler, a coverage-plugin conflict, and
the "too few passing" error; the choices themselves are tested as pure functions first."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from bugforge.errors import BugforgeError
from bugforge.factory import build_environment
from bugforge.factory.fallbacks import COMPILER, check_share, compiler_needed, failure_group
from bugforge.factory.recipe import detect
from bugforge.records import TestRun

quiet = lambda m: None  # noqa: E731
BENCH = Path(__file__).resolve().parents[2] / "bench" / "environments.py"

# --- pure functions (no container) -------------------------------------------------------------------


def test_too_few_passing_names_the_dominant_failure_grouped_by_exception_and_location():
    run = TestRun(
        outcomes={"t::a": "error", "t::b": "error", "t::c": "failed", "t::d": "passed", "t::e": "skipped"},
        messages={
            "t::a": "conftest.py:7: AttributeError: module 'pytest' has no attribute 'X'",
            "t::b": "conftest.py:7: AttributeError: module 'pytest' has no attribute 'X'",
            "t::c": "tests/test_a.py:3: assert 1 == 2",
        },
    )
    with pytest.raises(BugforgeError) as e:
        check_share(run)
    assert e.value.what.startswith("the baseline passes 1 of 4 tests (25%, under the 50%"), e.value.what
    assert "dominant failure (2 tests): AttributeError at conftest.py:7 (AttributeError: module" in e.value.what
    assert "\n" not in e.value.what
    check_share(TestRun(outcomes={"a": "passed", "b": "failed", "c": "skipped", "d": "skipped"}))  # half: usable
    assert failure_group("tests/t.py:3: assert 1 == 2")[0] == "AssertionError at tests/t.py:3"


def test_python_by_commit_date_among_the_base_images(tmp_path, write_tree):
    repo = write_tree(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='p')\n"})
    assert detect(repo, as_of="2021-05-01T00:00:00Z").python == "3.9"
    assert detect(repo, as_of="2023-06-01T00:00:00Z").python == "3.11"
    assert detect(repo, as_of="2025-03-01T00:00:00Z").python == "3.13"
    assert detect(repo).python == "3.11"  # no date: the default, as before
    write_tree(repo, {"setup.cfg": "[options]\npython_requires = >=3.10\n"})
    assert detect(repo, as_of="2021-05-01T00:00:00Z").python == "3.11"  # the oldest that requires-python admits
    assert detect(repo, as_of="2021-05-01T00:00:00Z").as_of == "2021-05-01T00:00:00Z"


def test_compiler_failures_are_recognised():
    assert compiler_needed("error: command 'x86_64-linux-gnu-gcc' failed: No such file or directory")
    assert compiler_needed("unable to execute 'gcc': No such file or directory")
    assert compiler_needed("netifaces.c:1:10: fatal error: Python.h: No such file or directory")
    assert not compiler_needed("ERROR: No matching distribution found for nothing")


def _bench():
    spec = importlib.util.spec_from_file_location("bench_environments", BENCH)
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # dataclasses look their module up
    spec.loader.exec_module(bench)
    return bench


def test_the_pool_splits_by_a_seed_into_a_fresh_sample_and_a_debug_set():
    """bench/environments.py --pool: at least 200 projects; a seed gives one split, the sets never overlap."""
    bench = _bench()
    pool = bench.read_corpus(BENCH.parent / "corpus" / "pool.txt")
    assert len(pool) >= 200
    fresh, debug = bench.split_pool(pool, 1234, 30)
    assert len(fresh) == 30 and not {p.key for p in fresh} & {p.key for p in debug}
    assert len(fresh) + len(debug) == len(pool)
    assert [p.key for p in bench.split_pool(list(reversed(pool)), 1234, 30)[0]] == [p.key for p in fresh]
    assert [p.key for p in bench.split_pool(pool, 1235, 30)[0]] != [p.key for p in fresh]
    name = lambda p: p.source.removeprefix("pypi:").split("==")[0].rstrip("/").split("/")[-1].lower()  # noqa: E731
    corpus = {name(p) for p in bench.read_corpus(BENCH.parent / "corpus" / "environments.txt")}
    assert not corpus & {name(p) for p in pool}  # nothing tuned against is in the pool
    seen = frozenset(p.source for p in bench.read_corpus(bench.SEEN))  # earlier fresh samples
    assert len(seen) >= 30 and seen <= {p.source for p in pool}
    for seed in (1234, 34210):
        fresh, debug = bench.split_pool(pool, seed, 30, seen)
        assert len(fresh) == 30 and not seen & {p.source for p in fresh} and seen <= {p.source for p in debug}
        assert len(fresh) + len(debug) == len(pool)


def test_a_wheels_only_release_is_not_applicable_and_out_of_the_rate():
    """triton (issue 38's fresh sample): wheels only; the bench reports it, not as bugforge's failure."""
    bench = _bench()
    line = (
        "error: triton==3.9.0 publishes wheels only, no sdist: not a pure-Python project with an sdist — "
        "bugforge builds from an sdist or a repository: pass the project's repository at this release's tag"
    )
    assert bench.failure_class(line) == bench.NOT_APPLICABLE
    ps = [bench.Project("pypi:triton==3.9.0", None, "r"), bench.Project("pypi:six==1.17.0", None, "r")]
    done = {
        "triton-3.9.0": bench.Result(
            "triton-3.9.0", ps[0].source, None, False, 3, error=line, failure="not applicable"
        ),
        "six-1.17.0": bench.Result("six-1.17.0", ps[1].source, None, True, 40, tests=9, passing=9),
    }
    assert "Built: **1 of 1** (100%; 1 not applicable left out)" in bench.markdown(ps, done)


# --- real environments -----------------------------------------------------------------------------


def test_a_suite_written_for_an_older_pytest_resolves_as_of_its_commit_date(
    base_image, tmp_path, git_repo, monkeypatch
):
    """Every test errors at setup under the newest pytest (a conftest uses an API pytest 9 removed): the
    environment is rebuilt with its installs and pytest resolved as of the commit date, and records it.
    Rebuilding it unchanged reuses it in seconds."""
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2023-06-01T12:00:00Z")
    files = {
        "conftest.py": "import warnings\n\nimport pytest\n\n\n@pytest.fixture(autouse=True)\ndef strict():\n"
        "    warnings.simplefilter('error', pytest.PytestUnhandledCoroutineWarning)\n    yield\n",
        "tests/test_old.py": "".join(f"def test_{i}():\n    assert {i} == {i}\n\n\n" for i in range(3)),
    }
    repo = git_repo(tmp_path / "oldpytest", files)
    rec, reused = build_environment(str(repo), out=tmp_path / "runs", runs=2, log=quiet)
    assert not reused and len(rec.passing) == 3, rec.tests
    assert rec.recipe.as_of == "2023-06-01T12:00:00Z" and "pytest==7.3.1" in rec.recipe.resolved, rec.recipe
    assert any("resolved as of 2023-06-01" in n for n in rec.recipe.notes), rec.recipe.notes
    again, reused = build_environment(str(repo), out=tmp_path / "runs", runs=2, log=quiet)
    assert reused and again.image == rec.image


def test_too_few_passing_is_an_error_of_one_line(base_image, tmp_path, write_tree, cli):
    """A plain directory (no commit date: no period rung) whose suite mostly fails is not built."""
    files = {"tests/test_bad.py": "def check(x):\n    assert x == 0\n\n\n"}
    files["tests/test_bad.py"] += "".join(f"def test_{i}():\n    check({i})\n\n\n" for i in range(4))
    repo = write_tree(tmp_path / "bad", files)
    r = cli("factory", "env", str(repo), "--out", str(tmp_path / "runs"), "--runs", "2")
    assert r.returncode != 0
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and "the baseline passes 1 of 4 tests (25%" in err[0], r.stderr
    assert "dominant failure (3 tests): AssertionError at tests/test_bad.py:2" in err[0], err[0]
    assert not (tmp_path / "runs" / "bad" / "env.json").exists()


def test_a_build_backend_that_reaches_the_network_falls_back_to_the_tree(base_image, tmp_path, git_repo):
    """The project's own backend fetches a licence text while building: the tree goes on sys.path with
    the requirements it declares."""
    backend = (
        "import urllib.request\n\nfrom setuptools import build_meta as _b\n\n\ndef _fetch():\n"
        "    urllib.request.urlopen('http://127.0.0.1:9/LICENSE', timeout=5)\n\n\n"
        "def __getattr__(name):\n    _fetch()\n    return getattr(_b, name)\n"
    )
    files = {
        "pyproject.toml": '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "netbackend"\n'
        'backend-path = ["_build"]\n[project]\nname = "netpkg"\nversion = "1"\ndependencies = ["six"]\n',
        "_build/netbackend.py": backend,
        "src/netpkg/__init__.py": "import six\n\n\ndef text(x):\n    return six.text_type(x)\n",
        "tests/test_net.py": "from netpkg import text\n\n\ndef test_text():\n    assert text(1) == '1'\n",
    }
    repo = git_repo(tmp_path / "netpkg", files)
    rec, _ = build_environment(str(repo), out=tmp_path / "runs", runs=2, log=quiet)
    assert rec.passing == ["tests/test_net.py::test_text"], rec.tests
    assert rec.recipe.install[0].startswith("pip install six && python -c"), rec.recipe.install
    assert any("own build failed" in n for n in rec.recipe.notes), rec.recipe.notes


@pytest.mark.network
def test_a_pin_that_needs_a_compiler_gets_one(base_image, tmp_path, git_repo):
    """netifaces 0.11.0 has no wheel for the image's Python and the image has no compiler."""
    files = {
        "requirements-test.txt": "netifaces==0.11.0\n",
        "tests/test_c.py": "import netifaces\n\n\ndef test_loopback():\n    assert 'lo' in netifaces.interfaces()\n",
    }
    repo = git_repo(tmp_path / "cpin", files)
    rec, _ = build_environment(str(repo), out=tmp_path / "runs", runs=2, log=quiet)
    assert rec.passing == ["tests/test_c.py::test_loopback"], rec.tests
    assert rec.recipe.install[0] == COMPILER, rec.recipe.install
    (tmp_path / "runs" / "cpin" / "env.json").unlink()  # the image stays: its recipe comes from its label
    again, _ = build_environment(str(repo), out=tmp_path / "runs", runs=2, log=quiet)
    assert again.image == rec.image and again.recipe.install == rec.recipe.install


def test_a_coverage_plugin_that_breaks_the_run_is_left_out(base_image, tmp_path, git_repo):
    """A pinned pytest-cov 2.2.1 under the project's `error::DeprecationWarning` stops pytest at start-up (its
    old-style hook marks warn under pytest 9)."""
    files = {
        "requirements-dev.txt": "pytest-cov==2.2.1\n",
        "setup.cfg": "[tool:pytest]\naddopts = --cov=pkg\nfilterwarnings =\n    error::DeprecationWarning\n",
        "pkg/__init__.py": "def one():\n    return 1\n",
        "tests/test_cov.py": "from pkg import one\n\n\ndef test_one():\n    assert one() == 1\n",
    }
    repo = git_repo(tmp_path / "covplug", files)
    rec, _ = build_environment(str(repo), out=tmp_path / "runs", runs=2, log=quiet)
    assert rec.passing == ["tests/test_cov.py::test_one"], rec.tests
    assert "no:pytest_cov" in rec.recipe.pytest_args, rec.recipe.pytest_args
    assert any(s.action.startswith("-p no:pytest_cov") and s.result == "fixed" for s in rec.recipe.repairs)
