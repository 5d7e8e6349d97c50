"""Issue 23, items 3 and 4: the repair loop (a module only an extra provides, a plugin that fails under the
installed pytest), per-file exclusion, submodules of a git source, and reuse of a repaired environment.
Real images, containers and git repositories; the choices themselves are tested as pure functions."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import subprocess
import tarfile
import zipfile

import pytest

from bugforge.factory import build_environment
from bugforge.factory.acquire import acquire
from bugforge.factory.collection import Collection, worse
from bugforge.factory.project_files import repository_url
from bugforge.factory.repair import exclude, plan, provider
from bugforge.records import ExcludedFile, Recipe

# --- what to install for a missing module, and what to do about a failing plugin (no container) -----


def test_provider_prefers_the_projects_declarations_then_the_import_map(tmp_path, write_tree):
    repo = write_tree(
        tmp_path / "p",
        {
            "pyproject.toml": """
            [project]
            name = "p"
            version = "1"
            [project.optional-dependencies]
            formats = ["PyYAML>=5", "attrs==23.1"]
            [dependency-groups]
            bench = ["pytest-benchmark>=4"]
            [tool.poetry.group.extra.dependencies]
            freezegun = "^1.2"
            """,
            "src/p/__init__.py": "",
        },
    )
    assert provider(repo, "yaml") == ("PyYAML>=5", "the project's extra 'formats'")
    assert provider(repo, "attr") == ("attrs==23.1", "the project's extra 'formats'")  # attr -> attrs, declared
    assert provider(repo, "pytest_benchmark") == ("pytest-benchmark>=4", "the project's dependency group 'bench'")
    assert provider(repo, "freezegun") == ("freezegun", "the project's Poetry group 'extra'")
    assert provider(repo, "PIL.Image") == ("pillow", "import name PIL -> pillow")  # not declared: the map
    assert provider(repo, "pkg_resources") == ("setuptools<82", "import name pkg_resources -> setuptools<82")
    assert provider(repo, "tabulate") == ("tabulate", "the import name")
    assert provider(repo, "tomllib") is None  # the standard library (of a newer Python)
    assert provider(repo, "p.helpers") is None  # the project's own


def test_provider_reads_an_sdists_pkg_info_extras(tmp_path, write_tree):
    repo = write_tree(
        tmp_path / "s",
        {
            "PKG-INFO": "Metadata-Version: 2.1\nName: s\nVersion: 1\nProvides-Extra: speed\n"
            "Requires-Dist: requests\nRequires-Dist: ujson>=5; extra == 'speed'\n",
        },
    )
    assert provider(repo, "ujson") == ("ujson>=5", "the project's extra 'speed' (PKG-INFO)")


def test_an_sdists_repository_is_named_for_incomplete_tests(tmp_path, write_tree):
    head = "Metadata-Version: 2.1\nName: s\nVersion: 1\n"
    a = write_tree(tmp_path / "a", {"PKG-INFO": head + "Home-page: https://github.com/o/s\n"})
    b = write_tree(
        tmp_path / "b",
        {"PKG-INFO": head + "Project-URL: Docs, https://s.rtfd.io\nProject-URL: Source, https://git.example/o/s\n"},
    )
    c = write_tree(tmp_path / "c", {"setup.py": ""})
    assert repository_url(a) == "https://github.com/o/s" and repository_url(b) == "https://git.example/o/s"
    assert repository_url(c) is None


def test_a_node_inside_a_file_that_fails_to_collect_excludes_its_file():
    """A class whose collection warning a warnings-as-errors module turns into an error fails the whole run."""
    items = [f"tests/test_{i}.py::t" for i in range(5)] + ["tests/test_html.py::test_ok"]
    err = {"tests/test_html.py::TestSuite": "PytestCollectionWarning: cannot collect test class 'TestSuite'"}
    recipe = Recipe(test_files=["tests/test_html.py", "tests/test_0.py"])
    exclude(Collection(items=items, errors=err), recipe)
    assert recipe.pytest_args == ["--ignore=tests/test_html.py"] and recipe.test_files == ["tests/test_0.py"]
    assert recipe.excluded == [ExcludedFile("tests/test_html.py", err["tests/test_html.py::TestSuite"])]


def test_a_configure_time_warning_made_an_error_is_ignored_then_the_ladder(tmp_path):
    """urllib3 2.8.0: filterwarnings=error turns pytest-asyncio's configure-time PytestDeprecationWarning
    into an INTERNALERROR; then a plugin's use of a pytest-9-removed internal (INTERNALERROR again)."""
    warned = Collection(log="INTERNALERROR> pytest.PytestDeprecationWarning: The configuration option ...")
    (step,) = plan(warned, Recipe(), tmp_path, set())
    assert step.action == "-W ignore::pytest.PytestDeprecationWarning" and not step.install
    internal = Collection(log="INTERNALERROR> AttributeError: 'FixtureManager' object has no attribute 'x'")
    assert [s.action for s in plan(internal, Recipe(), tmp_path, {step.action})] == ["pip install 'pytest<9'"]


def test_plan_climbs_the_pytest_ladder_then_disables_the_plugin(tmp_path):
    log = (
        "Error while loading plugin \"pytest11\".\npluggy._manager.PluginValidationError: Plugin 'oldplug' for hook "
        "'pytest_report_header'\nhookimpl definition: pytest_report_header(config, startdir)\n"
    )
    col, r = Collection(log=log), Recipe()
    assert [s.action for s in plan(col, r, tmp_path, set())] == ["pip install 'pytest<9'"]
    assert [s.action for s in plan(col, r, tmp_path, {"pip install 'pytest<9'"})] == ["pip install 'pytest<8'"]
    tried = {"pip install 'pytest<9'", "pip install 'pytest<8'"}
    assert [s.action for s in plan(col, r, tmp_path, tried)] == ["-p no:oldplug"]
    assert plan(col, r, tmp_path, tried | {"-p no:oldplug"}) == []  # nothing left: the baseline says why
    absent = Collection(log="ImportError: Error importing plugin \"pytest_nothere\": No module named 'pytest_nothere'")
    assert [s.action for s in plan(absent, r, tmp_path, set())] == ["pip install pytest_nothere"]  # no ladder
    (step,) = plan(absent, r, tmp_path, {"pip install pytest_nothere"})  # could not be installed: no addopts
    assert step.action == "-o addopts=" and "neutralised" in step.note
    missing = Collection(
        items=["tests/test_a.py::t"], errors={"tests/test_b.py": "E   ModuleNotFoundError: No module named 'yaml'"}
    )
    (step,) = plan(missing, r, tmp_path, set())
    assert step.action == "pip install PyYAML" and step.problem.startswith("tests/test_b.py: ModuleNotFoundError")


def test_plan_replaces_a_pytest_that_crashes_on_the_images_python(tmp_path):
    """A pinned test requirement (pytest==5.4.3) whose assertion rewriting crashes on Python 3.11."""
    log = (
        'Traceback (most recent call last):\n  File "/opt/venv/lib/python3.11/site-packages/_pytest/assertion/'
        'rewrite.py", line 330, in _rewrite_test\n    co = compile(tree, fn, "exec", dont_inherit=True)\n'
        'TypeError: required field "lineno" missing from alias\n'
    )
    (step,) = plan(Collection(log=log), Recipe(), tmp_path, set())
    assert step.action == "pip install 'pytest>=7.4,<9'" and "lineno" in step.problem
    assert plan(Collection(log=log), Recipe(), tmp_path, {step.action}) == []  # once only
    assert plan(Collection(items=["t.py::a"], log=log), Recipe(), tmp_path, set()) == []  # it collected: no crash


def test_a_collection_is_worse_with_fewer_tests_a_file_broken_or_nothing_collected():
    before = Collection(items=["t/a.py::x", "t/b.py::y"], errors={"t/c.py": "E   ModuleNotFoundError: m"})
    assert worse(before, Collection(items=["t/a.py::x", "t/b.py::y", "t/c.py::z"])) is None  # fixed: better
    assert worse(before, before) is None
    assert worse(before, Collection(items=["t/a.py::x"])) == "2 tests collected before it, 1 after"
    broken = Collection(items=["t/a.py::x", "t/b.py::y", "t/c.py::z"], errors={"t/b.py::K": "E   RuntimeError: x"})
    assert worse(before, broken) == "t/b.py::K collected before it, now: RuntimeError: x"
    crashed = Collection(log="INTERNALERROR> RuntimeError: cannot release un-acquired lock")
    assert worse(Collection(errors=before.errors), crashed).startswith("the whole collection failed: INTERNALERROR>")
    assert worse(Collection(), crashed) is None  # nothing collected before either: not worse


# --- real environments ----------------------------------------------------------------------------

OLDPLUG = {
    "oldplug/setup.py": "from setuptools import setup\n"
    "setup(name='oldplug', version='1', packages=['oldplug'], entry_points={'pytest11': ['oldplug = oldplug']})\n",
    # a hook argument pytest 9.1 removed: under pytest 9 the plugin cannot load, and nothing is collected
    "oldplug/oldplug/__init__.py": "def pytest_report_header(config, startdir):\n    return 'oldplug'\n",
    "requirements-dev.txt": "./oldplug\n",
}


def test_repair_loop_then_one_excluded_file_then_reuse(base_image, tmp_path, cli, git_repo, mini_files):
    """A plugin that fails under pytest 9 (installed by the recipe) -> pytest<9; a module only an extra
    named 'formats' provides (the test imports the project's module that imports it) -> that extra's
    requirement; a file that cannot be collected at all -> excluded, listed, never a label. The second
    `bugforge factory env` reuses everything."""
    files = {**mini_files, **OLDPLUG}
    files["pyproject.toml"] = files["pyproject.toml"].replace(
        'test = ["pytest"]', 'test = ["pytest"]\n        formats = ["PyYAML>=5"]'
    )
    files["src/mini/fmt.py"] = "import yaml\n\n\ndef dump(x):\n    return yaml.safe_dump(x)\n"
    files["tests/test_fmt.py"] = (
        "from mini.fmt import dump\n\n\ndef test_dump():\n    assert dump({'a': 1}) == 'a: 1\\n'\n"
    )
    files["tests/test_gpu.py"] = "raise ImportError('needs a GPU')\n\n\ndef test_never():\n    pass\n"
    repo = git_repo(tmp_path / "fixme", files)
    out = tmp_path / "runs"
    rec, reused = build_environment(str(repo), out=out, log=lambda m: None)
    assert not reused
    steps = [(r.action, r.result) for r in rec.recipe.repairs]
    assert steps == [
        ("pip install 'pytest<9' (a pytest release the plugin supports)", "fixed"),
        ("pip install 'PyYAML>=5' (the project's extra 'formats')", "fixed"),
    ], rec.recipe.repairs
    assert rec.recipe.repairs[1].problem == "tests/test_fmt.py: ModuleNotFoundError: No module named 'yaml'"
    assert rec.recipe.install[-2:] == ["pip install 'pytest<9'", "pip install 'PyYAML>=5'"]
    assert rec.recipe.excluded == [ExcludedFile("tests/test_gpu.py", "ImportError: needs a GPU")]
    assert "--ignore=tests/test_gpu.py" in rec.recipe.pytest_args
    assert "tests/test_fmt.py::test_dump" in rec.passing and len(rec.passing) == 6
    assert not any(t.startswith("tests/test_gpu.py") for t in rec.tests)
    assert json.loads((out / "fixme" / "recipe.json").read_text())["excluded"][0]["path"] == "tests/test_gpu.py"
    r = cli("factory", "env", str(repo), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "(reused)" in r.stdout and "tests/test_gpu.py (ImportError: needs a GPU)" in r.stdout, r.stdout
    assert "pip install 'PyYAML>=5'" in r.stdout


def test_mostly_uncollectable_files_are_one_clear_error(base_image, tmp_path, cli, git_repo):
    files = {"tests/test_ok.py": "def test_ok():\n    pass\n"}
    files |= {f"tests/test_bad{i}.py": "raise ImportError('needs hardware')\n" for i in range(3)}
    repo = git_repo(tmp_path / "broken", files)
    r = cli("factory", "env", str(repo), "--out", str(tmp_path / "out"))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "3 of 4 test files cannot be collected after repair" in lines[0], lines[0]
    assert not list((tmp_path / "out").glob("*/env.json"))  # nothing cached as good


def test_submodules_are_initialised_from_a_local_repository(tmp_path, git_repo):
    """A git source's submodules are filled in at the commits its gitlinks record; one whose host cannot
    be reached is left empty and said so."""
    sub = git_repo(tmp_path / "data", {"cases/one.txt": "1\n"})
    sup = git_repo(tmp_path / "super", {"README.md": "x\n"})
    git = lambda *a: subprocess.run(["git", "-C", str(sup), *a], check=True, capture_output=True, text=True)  # noqa: E731
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", "../data", "tests/data")
    subprocess.run(["git", "-C", str(sub), "commit", "-q", "--allow-empty", "-m", "later"], check=True)  # not recorded
    git("config", "-f", ".gitmodules", "submodule.ext.path", "ext")
    git("config", "-f", ".gitmodules", "submodule.ext.url", "https://nonexistent.invalid/x/ext.git")
    git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},ext")
    git("add", ".gitmodules")
    git("commit", "-q", "-m", "submodules")
    got = acquire(str(sup), None, tmp_path / "snap")
    assert (tmp_path / "snap" / "tests/data/cases/one.txt").read_text() == "1\n"
    tracked = subprocess.run(["git", "-C", str(tmp_path / "snap"), "ls-files"], capture_output=True, text=True)
    assert "tests/data/cases/one.txt" in tracked.stdout.split()  # part of the snapshot, not a gitlink
    assert got.notes[0].startswith(f"submodule tests/data: initialised from {tmp_path / 'data'} at ")
    assert got.notes[1].startswith("submodule ext: not fetched from https://nonexistent.invalid/x/ext.git (")
    assert got.notes[1].endswith("its files are missing")


@pytest.mark.network
def test_an_sdist_with_incomplete_tests_is_built_from_its_repository_tag(base_image, tmp_path, cli, git_repo):
    """A `pypi:` source whose sdist leaves out tests/__init__.py (which the tests import from) is built from
    the repository its PKG-INFO names, at the release's tag. Real pip (a local index beside PyPI), git, Docker."""
    name, version = "bugforge-fixture-incomplete-sdist", "1.0"
    code = {
        "setup.py": f"from setuptools import setup\nsetup(name='{name}', version='{version}', packages=['incs'])\n",
        "incs/__init__.py": "def double(x):\n    return 2 * x\n",
        "tests/test_c.py": "from incs import double\n\n\ndef test_c():\n    assert double(1) == 2\n",
    }
    code |= {f"tests/test_{n}.py": f"from tests import HELPER\n\n\ndef test_{n}():\n    assert HELPER\n" for n in "ab"}
    src = git_repo(tmp_path / "incs", {**code, "tests/__init__.py": "HELPER = 1\n"})
    subprocess.run(["git", "-C", str(src), "tag", version], check=True)
    git_repo(src, {"tests/test_d.py": "def test_d():\n    pass\n"}, "after the release")
    bare = tmp_path / "incs.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(src), str(bare)], check=True)
    top = f"{name.replace('-', '_')}-{version}"
    pkg_info = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nProject-URL: Source, {bare}\n"
    sdist = tmp_path / "index" / f"{top}.tar.gz"
    (tmp_path / "index" / name).mkdir(parents=True)
    with tarfile.open(sdist, "w:gz") as tar:
        for path, text in {**code, "PKG-INFO": pkg_info}.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (tmp_path / "index" / name / "index.html").write_text(f'<a href="../{sdist.name}">{sdist.name}</a>\n')
    env = {**os.environ, "PIP_EXTRA_INDEX_URL": (tmp_path / "index").as_uri()}
    r = cli("factory", "env", f"pypi:{name}=={version}", "--out", str(tmp_path / "out"), env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    assert f"building {bare} at tag {version} instead" in " ".join(r.stdout.split())
    rec = json.loads(next((tmp_path / "out").glob("*/env.json")).read_text())
    assert rec["source"] == str(bare) and len(rec["tests"]) == 3  # the tag's suite, not the later commit's


def test_a_project_whose_build_requirements_cannot_be_installed_runs_from_its_tree(base_image, tmp_path, git_repo):
    """A build requirement missing from the index (a build plugin): the environment is built with the
    tree on sys.path and the requirements the project declares, says so, and is reused as such."""
    files = {
        "pyproject.toml": """[build-system]
requires = ["setuptools>=61", "bugforge-fixture-no-such-build-plugin>=1"]
build-backend = "setuptools.build_meta"
[project]
name = "unbuilt"
version = "1"
dependencies = ["six"]
""",
        "src/unbuilt/__init__.py": "import six\n\n\ndef text(x):\n    return six.text_type(x)\n",
        "tests/test_unbuilt.py": "from unbuilt import text\n\n\ndef test_text():\n    assert text(1) == '1'\n",
    }
    repo = git_repo(tmp_path / "unbuilt", files)
    out = tmp_path / "runs"
    rec, reused = build_environment(str(repo), out=out, runs=2, log=lambda m: None)
    assert not reused and rec.passing == ["tests/test_unbuilt.py::test_text"], rec.tests
    assert rec.recipe.install[0].startswith("pip install six && python -c"), rec.recipe.install
    assert any("build requirements cannot be installed" in n for n in rec.recipe.notes), rec.recipe.notes
    (out / "unbuilt" / "env.json").unlink()  # the image stays: rebuilt records must keep the fallback recipe
    again, _ = build_environment(str(repo), out=out, runs=2, log=lambda m: None)
    assert again.image == rec.image and again.recipe.install == rec.recipe.install


def test_a_hung_test_is_deselected_and_recorded(base_image, tmp_path, cli, git_repo):
    """A test waiting forever (no CPU) and one spinning (CPU): each past the per-test limit (here 2
    CPU-seconds, 6 wall-seconds) is deselected, recorded as a repair step, and never a label. A thread a
    test leaves running does not hold the run open."""
    files = {
        "tests/test_ok.py": "def test_ok():\n    pass\n",
        "tests/test_hang.py": "import time\n\n\ndef test_waits():\n    time.sleep(10**6)\n",
        "tests/test_spin.py": "def test_spins():\n    while True:\n        pass\n",
        # a thread (not a daemon) that outlives the session: the run still ends, well before --timeout
        "tests/test_thread.py": "import threading\n\n\ndef test_leaves_a_thread():\n"
        "    threading.Thread(target=threading.Event().wait).start()\n",
    }
    repo = git_repo(tmp_path / "hangs", files)
    out = tmp_path / "runs"
    r = cli("factory", "env", str(repo), "--out", str(out), "--runs", "2", "--test-limit", "2", "--timeout", "90")
    assert r.returncode == 0, r.stderr
    rec = json.loads((out / "hangs" / "recipe.json").read_text())
    hung = sorted(s["problem"].split(": ran past")[0] for s in rec["repairs"])
    assert hung == ["tests/test_hang.py::test_waits", "tests/test_spin.py::test_spins"], rec["repairs"]
    env = json.loads((out / "hangs" / "env.json").read_text())
    assert sorted(env["tests"]) == ["tests/test_ok.py::test_ok", "tests/test_thread.py::test_leaves_a_thread"]
    assert "ran past 2 CPU-seconds" in r.stdout and "test_waits" in r.stdout, r.stdout  # the summary says so


# A distribution whose import breaks every later import, as gevent's monkey.patch_all() broke dulwich 1.2.21's
# suite (issue 38): pytest can no longer import the test files it collects after the one that imports it.
BREAKER = (
    "import sys\n\n\nclass _Breaker:\n    def find_spec(self, name, path=None, target=None):\n"
    "        raise RuntimeError(f'breaker: no import after me ({name})')\n\n\nsys.meta_path.insert(0, _Breaker())\n"
)


def _wheel(path, name: str, files: dict[str, str]) -> None:
    """A real wheel of `files` (RECORD with hashes), as pip installs it."""
    info = f"{name}-1.0.dist-info"
    files = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for p, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record += f"{p},sha256={digest},{len(text.encode())}\n"
    with zipfile.ZipFile(path, "w") as z:
        for p, text in {**files, f"{info}/RECORD": record + f"{info}/RECORD,,\n"}.items():
            z.writestr(p, text)


def test_a_step_that_makes_collection_worse_is_reverted_and_its_file_excluded(
    base_image, tmp_path, git_repo, mini_files
):
    """One file imports the project's module that imports `breaker`, which only an extra provides (a wheel in
    the repository, installed by its direct reference); once installed, its import breaks the collection of every file after it. The install
    is undone and recorded as reverted, the file that asked for it is excluded, the rest of the suite passes."""
    (tmp_path / "br" / "wheels").mkdir(parents=True)
    whl = "breaker-1.0-py3-none-any.whl"
    _wheel(tmp_path / "br" / "wheels" / whl, "breaker", {"breaker.py": BREAKER})
    files = dict(mini_files)
    files["pyproject.toml"] = files["pyproject.toml"].replace(
        'test = ["pytest"]', f'test = ["pytest"]\n        swift = ["breaker @ file:///testbed/wheels/{whl}"]'
    )
    files["src/mini/swift.py"] = "import breaker\n"  # not a test file's import: the repair installs it
    files["tests/test_needs_breaker.py"] = "from mini import swift\n\n\ndef test_breaks():\n    assert swift\n"
    files["tests/test_ok.py"] = "".join(f"def test_ok_{i}():\n    assert {i} == {i}\n\n\n" for i in range(3))
    repo = git_repo(tmp_path / "br", files)
    rec, _ = build_environment(str(repo), out=tmp_path / "runs", log=lambda m: None)
    (step,) = rec.recipe.repairs
    assert step.problem == "tests/test_needs_breaker.py: ModuleNotFoundError: No module named 'breaker'"
    assert step.action == f"pip install 'breaker @ file:///testbed/wheels/{whl}' (the project's extra 'swift')"
    assert step.result == "reverted: 8 tests collected before it, 4 after", step
    assert not any("breaker" in c for c in rec.recipe.install), rec.recipe.install
    assert rec.recipe.excluded == [
        ExcludedFile("tests/test_needs_breaker.py", "ModuleNotFoundError: No module named 'breaker'")
    ]
    assert {f"tests/test_ok.py::test_ok_{i}" for i in range(3)} <= set(rec.passing) and len(rec.passing) == 8
