"""Recipe detection reads each common way a project declares what its tests need, and runs the tests
the project runs (issue 23, items 1-2). One small repository per format, written by the test; the
last test builds a real environment."""

from __future__ import annotations

from bugforge.factory import build_environment
from bugforge.factory.recipe import detect

PKG = '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'


def step_with(r, *words):
    """The one install step containing every word, with its note."""
    hits = [c for c in r.install if all(w in c for w in words)]
    assert len(hits) == 1, (words, r.install)
    return hits[0]


def note_with(r, *words):
    assert any(all(w in n for w in words) for n in r.notes), (words, r.notes)


def test_pep621_extra_the_tests_import(tmp_path, write_tree):
    repo = write_tree(
        tmp_path,
        {
            "pyproject.toml": PKG + '[project]\nname = "p"\nversion = "1"\n'
            "[project.optional-dependencies]\ntest = ['pytest']\nyaml = ['PyYAML>=6']\ndocs = ['sphinx']\n",
            "tests/test_a.py": "import yaml\nimport p\n",
        },
    )
    r = detect(repo)
    assert r.install[0] == "pip install -e '.[test]' || pip install '.[test]'"
    assert "pip install -e '.[yaml]' || pip install '.[yaml]' || true" in r.install
    assert not any("docs" in c or "sphinx" in c for c in r.install)
    note_with(r, "extras yaml", "the tests import yaml")


def test_pkg_info_extras_are_authoritative(tmp_path, write_tree):
    repo = write_tree(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\nsetup(name='s', extras_require=computed())\n",
            "PKG-INFO": "Metadata-Version: 2.1\nName: s\nVersion: 1\nProvides-Extra: crypto\n"
            'Requires-Dist: cryptography>=3; extra == "crypto"\n',
            "tests/test_a.py": "from cryptography import x509\n",
        },
    )
    assert "pip install -e '.[crypto]' || pip install '.[crypto]' || true" in detect(repo).install


def test_pep735_groups_include_and_import(tmp_path, write_tree):
    repo = write_tree(
        tmp_path,
        {
            "pyproject.toml": "[dependency-groups]\nTest = ['pytest>=8', {include-group = 'lint'}]\nlint = ['ruff']\n"
            "bench = ['numpy']\n",
            "tests/test_a.py": "import numpy\n",
        },
    )
    r = detect(repo)
    assert "pip install 'pytest>=8' ruff" in r.install  # `Test` normalises to `test`
    assert step_with(r, "numpy") == "pip install numpy || true"
    note_with(r, "[dependency-groups] bench", "the tests import numpy")


def test_poetry_groups_and_legacy_dev_dependencies(tmp_path, write_tree):
    repo = write_tree(
        tmp_path,
        {
            "pyproject.toml": '[build-system]\nrequires = ["poetry-core"]\nbuild-backend = "poetry.core.masonry.api"\n'
            '[tool.poetry]\nname = "q"\nversion = "1"\n[tool.poetry.dependencies]\npython = "^3.9"\n'
            '[tool.poetry.group.test.dependencies]\npytest = "^7.0"\nfreezegun = {version = "~1.2", python = ">=3.8"}\n'
            '[tool.poetry.dev-dependencies]\nrequests = "^2.28"\n',
        },
    )
    r = detect(repo)
    test = step_with(r, "freezegun")
    assert "'pytest (>=7.0,<8.0)'" in test and "'freezegun (>=1.2,<1.3) ; python_version >= \"3.8\"'" in test
    assert step_with(r, "requests").startswith("pip install 'requests (>=2.28,<3.0)'")
    note_with(r, "[tool.poetry.group.test]")
    note_with(r, "[tool.poetry.dev-dependencies]")


def test_pdm_dev_dependencies(tmp_path, write_tree):
    repo = write_tree(
        tmp_path,
        {"pyproject.toml": PKG + '[project]\nname = "d"\nversion = "1"\n[tool.pdm.dev-dependencies]\n'
         "test = ['pytest-mock>=3', '-e file:///${PROJECT_ROOT}/sub#egg=sub']\nlint = ['ruff']\n"},
    )  # fmt: skip
    r = detect(repo)
    assert step_with(r, "pytest-mock") == "pip install 'pytest-mock>=3' || true"
    assert not any("ruff" in c for c in r.install)
    note_with(r, "[tool.pdm.dev-dependencies] test")


def test_hatch_environments(tmp_path, write_tree):
    repo = write_tree(
        tmp_path,
        {
            "pyproject.toml": PKG + '[project]\nname = "h"\nversion = "1"\n'
            "[project.optional-dependencies]\ncli = ['click']\n",
            "hatch.toml": "[envs.test]\ndependencies = ['coverage', 'hypothesis']\nfeatures = ['cli']\n"
            "[[envs.test.matrix]]\npython = ['3.11']\n[envs.test.overrides]\n"
            "matrix.python.dependencies = [{value = 'tomli', if = ['3.11']}]\n[envs.docs]\ndependencies = ['mkdocs']\n",
        },
    )
    r = detect(repo)
    assert step_with(r, "hypothesis").startswith("pip install coverage hypothesis tomli ||")
    assert "pip install -e '.[cli]' || pip install '.[cli]' || true" in r.install
    assert not any("mkdocs" in c for c in r.install)
    note_with(r, "hatch.toml [envs.test]")


def test_tox_ini_factors_and_commands(tmp_path, write_tree):
    repo = write_tree(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\nsetup(name='t')\n",
            "tox.ini": "[tox]\nenvlist = py{39,311}-django{32,42}, lint\n[testenv]\ndeps =\n    pytest\n"
            "    django32: django==3.2\n    django42: django==4.2\n    -r requirements/test.txt\n"
            "extras = crypto\ncommands = pytest {posargs:tests/unit} -p no:randomly\n"
            "[testenv:lint]\ndeps = ruff\ncommands = ruff check .\n",
            "requirements/test.txt": "attrs\n",
            "tests/unit/test_a.py": "",
            "benchmarks/test_b.py": "",
        },
    )
    r = detect(repo)
    assert r.test_files == ["tests/unit"]
    assert r.pytest_args[-2:] == ["-p", "no:randomly"]
    assert "pip install -r requirements/test.txt" in r.install
    assert step_with(r, "django").startswith("pip install pytest django==3.2 ||")  # py311 first, then tox's order
    assert not any("ruff" in c for c in r.install)
    note_with(r, "tests: tests/unit", "as tox runs pytest", "tox env py311-django32")


def test_tox_toml_and_tool_tox(tmp_path, write_tree):
    native = write_tree(
        tmp_path / "native",
        {
            "tox.toml": 'env_list = ["3.11"]\n[env_run_base]\ndeps = ["pytest-timeout"]\n'
            'commands = [["pytest", {replace = "posargs", default = ["checks"], extend = true}]]\n',
            "checks/test_a.py": "",
        },
    )
    r = detect(native)
    assert r.test_files == ["checks"] and step_with(r, "pytest-timeout")
    legacy = write_tree(
        tmp_path / "legacy",
        {
            "pyproject.toml": PKG + '[project]\nname = "l"\nversion = "1"\n[tool.tox]\nlegacy_tox_ini = """\n'
            '[testenv]\ndeps = trustme\ncommands = pytest testing\n"""\n',
            "testing/test_a.py": "",
        },
    )
    r = detect(legacy)
    assert r.test_files == ["testing"] and step_with(r, "trustme")


def test_nox_sessions(tmp_path, write_tree):
    repo = write_tree(
        tmp_path,
        {
            "noxfile.py": "import nox\nDEPS = ['pytest', 'responses']\n\n@nox.session(python=['3.11'])\n"
            "def tests(session):\n    session.install('-e', '.[http]', *DEPS)\n"
            "    session.run('pytest', 'src/tests', '-m', 'not network', *session.posargs)\n\n"
            "@nox.session\ndef lint(session):\n    session.install('flake8')\n",
            "setup.py": "from setuptools import setup\nsetup(name='n', extras_require={'http': ['requests']})\n",
            "src/tests/test_a.py": "",
        },
    )
    r = detect(repo)
    assert r.test_files == ["src/tests"] and r.pytest_args[-2:] == ["-m", "not network"]
    assert step_with(r, "responses") == (
        'pip install pytest responses || for r in pytest responses; do pip install "$r" || true; done'
    )
    assert "pip install -e '.[http]' || pip install '.[http]' || true" in r.install
    assert not any("flake8" in c for c in r.install)


def test_requirements_files_nested(tmp_path, write_tree):
    repo = write_tree(
        tmp_path,
        {
            "pyproject.toml": PKG + '[project]\nname = "r"\nversion = "1"\n'
            "[project.optional-dependencies]\nfast = ['orjson']\n",
            "requirements/ci.txt": "-r base.txt\n-c constraints.txt\n-e .[fast]\nmock\n",
            "requirements/base.txt": "attrs\n",
            "requirements/constraints.txt": "attrs<30\n",
            "requirements-docs.txt": "sphinx\n",
            "tests/test_a.py": "import mock, attr\n",
        },
    )
    r = detect(repo)
    assert "pip install -r requirements/ci.txt || true" in r.install  # provides mock (and attrs)
    assert "pip install -e '.[fast]' || pip install '.[fast]' || true" in r.install  # -e .[fast] inside it
    assert not any("docs" in c for c in r.install)
    note_with(r, "requirements/ci.txt", "the tests import")


def test_ci_workflow_installs_and_pytest_command(tmp_path, write_tree):
    wf = """
on: [push]
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: pip install ruff && ruff check .
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: |
          python -m pip install -U pip
          pip install -e ".[test,fast]" pytest-httpserver \\
            -r requirements/ci.txt
          uv sync --group integ
          pip install "c[trio]@git+https://example.invalid/c.git@${{ github.ref_name }}" ${{ matrix.extra }}
      - run: python -m pytest tests/ -p no:foo -n auto --cov=c -v
"""
    repo = write_tree(
        tmp_path,
        {
            ".github/workflows/ci.yml": wf,
            "pyproject.toml": PKG + '[project]\nname = "c"\nversion = "1"\n'
            "[project.optional-dependencies]\ntest = ['pytest']\nfast = ['ujson']\n"
            "[dependency-groups]\ninteg = ['trustme']\n",
            "requirements/ci.txt": "hypothesis\n",
            "tests/test_a.py": "",
            "docs/test_example.py": "import sphinx\n",
        },
    )
    r = detect(repo)
    assert r.test_files == ["tests"]
    assert r.pytest_args == ["-p", "no:cacheprovider", "-p", "no:foo"]  # -n, --cov, -v not carried
    assert "pip install -e '.[fast]' || pip install '.[fast]' || true" in r.install
    assert "pip install pytest-httpserver || true" in r.install
    assert "pip install -r requirements/ci.txt || true" in r.install
    assert "pip install trustme || true" in r.install
    assert not any("ruff" in c for c in r.install)
    assert not any("github" in c or "matrix" in c for c in r.install)  # `${{ }}` depends on the CI run: skipped
    note_with(r, "as CI runs pytest", ".github/workflows/ci.yml job test")


def test_makefile_test_target(tmp_path, write_tree):
    repo = write_tree(
        tmp_path,
        {
            "Makefile": "PY ?= python\n.PHONY: test\ntest: install\n\t@$(PY) -m pytest -x t/unit\n\ninstall:\n\tpip install .\n",
            "t/unit/test_a.py": "",
            "examples/test_demo.py": "",
        },
    )
    r = detect(repo)
    assert r.test_files == ["t/unit"]
    note_with(r, "as Makefile runs pytest", "Makefile target test")


def test_testpaths_win_and_outside_suite_is_ignored(tmp_path, write_tree):
    files = {
        "setup.py": "from setuptools import setup\nsetup(name='w')\n",
        "tests/test_a.py": "",
        "benchmarks/test_speed.py": "import pyperf\n",
        ".github/workflows/ci.yml": "jobs:\n  t:\n    steps:\n      - run: pytest benchmarks\n",
    }
    r = detect(write_tree(tmp_path / "configured", {**files, "pytest.ini": "[pytest]\ntestpaths = tests\n"}))
    assert r.test_files == [] and not any("pyperf" in c for c in r.install)
    note_with(r, "testpaths (tests)")
    del files[".github/workflows/ci.yml"]
    r = detect(write_tree(tmp_path / "bare", files))
    assert r.test_files == [] and "--ignore=benchmarks" in r.pytest_args
    assert detect(tmp_path / "bare") == r  # deterministic: the image key hashes the recipe


def test_extra_import_and_ci_test_path_build_and_pass(base_image, tmp_path, git_repo):
    """A test file imports a package only a non-test extra provides, and lives where only CI's pytest
    command points (the tree also has a benchmark that would not collect): the environment builds
    and its tests pass."""
    repo = git_repo(
        tmp_path / "xtra",
        {
            "pyproject.toml": PKG + '[project]\nname = "xtra"\nversion = "0.1"\n'
            "[project.optional-dependencies]\ntest = ['pytest']\nyaml = ['PyYAML']\n",
            "src/xtra/__init__.py": "def load(text):\n    import yaml\n\n    return yaml.safe_load(text)\n",
            "checks/unit/test_load.py": "import yaml\nfrom xtra import load\n\n\ndef test_load():\n"
            "    assert load('a: 1') == {'a': 1}\n\n\ndef test_dump():\n    assert yaml.safe_dump({'b': 2}) == 'b: 2\\n'\n",
            "bench/test_speed.py": "import pyperf_not_installed\n\n\ndef test_speed():\n    pass\n",
            ".github/workflows/ci.yml": "jobs:\n  test:\n    steps:\n      - run: pip install -e .[test]\n"
            "      - run: pytest checks/unit -q\n",
        },
    )
    rec, _ = build_environment(str(repo), out=tmp_path / "runs", log=lambda m: None)
    assert rec.recipe.test_files == ["checks/unit"]
    assert set(rec.tests) == {"checks/unit/test_load.py::test_load", "checks/unit/test_load.py::test_dump"}
    assert all(o.outcome == "passed" for o in rec.tests.values())
