"""Detect how to install a Python repository and run its tests (a `Recipe`), from the files that
projects actually use: pyproject.toml (PEP 621 extras, PEP 735 dependency groups, requires-python,
pytest settings), setup.cfg, setup.py, tox.ini, pytest.ini and requirements files."""

from __future__ import annotations

import shlex
from pathlib import Path

from bugforge.factory.project_files import (
    dist_name,
    extras_of,
    group,
    ini,
    python_version,
    tests_require,
    toml,
    tox_deps,
    tox_requirement_files,
)
from bugforge.factory.pytest_config import (
    clean_addopts,
    has_pytest_config,
    legacy_path_hooks,
    plugins_for,
    pytest_config,
    unittest_style,
)
from bugforge.records import Recipe

TEST_EXTRAS = ["test", "tests", "testing", "dev"]
REQUIREMENT_FILES = [
    "requirements-test.txt",
    "requirements_test.txt",
    "test-requirements.txt",
    "test_requirements.txt",
    "requirements-tests.txt",
    "requirements-dev.txt",
    "requirements_dev.txt",
    "dev-requirements.txt",
    "requirements/test.txt",
    "requirements/tests.txt",
    "requirements/testing.txt",
    "requirements/dev.txt",
    "tests/requirements.txt",
]


def detect(repo: Path) -> Recipe:
    r = Recipe(pytest_args=["-p", "no:cacheprovider"])
    pyproject = toml(repo / "pyproject.toml")
    setup_cfg = ini(repo / "setup.cfg")
    tox = ini(repo / "tox.ini")
    r.python = python_version(repo, pyproject, setup_cfg, tox, r.notes)

    installable = any((repo / f).exists() for f in ("pyproject.toml", "setup.py", "setup.cfg"))
    if (repo / "pyproject.toml").exists() and not (
        pyproject.get("build-system") or pyproject.get("project") or (repo / "setup.py").exists()
    ):
        installable = False  # a pyproject.toml that only configures tools
    extras = extras_of(repo, pyproject, setup_cfg)
    wanted = [e for e in TEST_EXTRAS if e in extras]
    if installable:
        target = f".[{','.join(wanted)}]" if wanted else "."
        r.install.append(f"pip install -e {shlex.quote(target)} || pip install {shlex.quote(target)}")
        r.notes.append(
            f"install: the project itself{' with extras ' + ', '.join(wanted) if wanted else ''}"
            " (editable, or a plain install where editable is not supported)"
        )
    elif (repo / "requirements.txt").exists():
        r.install.append("pip install -r requirements.txt")
        r.notes.append("install: requirements.txt (the repository is not an installable package)")
    groups = pyproject.get("dependency-groups", {})
    for g in ("test", "tests", "testing", "dev"):
        if g in groups:
            reqs = group(groups, g)
            if reqs:
                r.install.append("pip install " + " ".join(shlex.quote(q) for q in reqs))
                r.notes.append(f"install: PEP 735 dependency group {g!r}")
            break
    for f in REQUIREMENT_FILES:
        if (repo / f).exists():
            r.install.append(f"pip install -r {f}")
            r.notes.append(f"install: {f}")
    for f in tox_requirement_files(repo, tox):
        if f"pip install -r {shlex.quote(f)}" not in r.install:
            r.install.append(f"pip install -r {shlex.quote(f)}")
            r.notes.append(f"install: {f} (named in tox.ini's test environment)")
    deps = tests_require(repo, setup_cfg) + tox_deps(tox)
    if deps:
        r.install.append("pip install " + " ".join(shlex.quote(d) for d in sorted(set(deps))))
        r.notes.append("install: test dependencies named in setup.cfg/setup.py/tox.ini")

    addopts, ini_keys, where = pytest_config(repo, pyproject, setup_cfg, tox)
    plugins = plugins_for(addopts, ini_keys)
    if plugins:
        # `|| true`: a plugin that cannot be installed must not sink the environment; its options are
        # neutralised below either way.
        r.install.append("pip install " + " ".join(sorted(plugins)) + " || true")
        r.notes.append(f"install: pytest plugins that {where} needs: {', '.join(sorted(plugins))}")
    kept, dropped = clean_addopts(addopts)
    if dropped:
        r.pytest_args += ["-o", f"addopts={' '.join(kept)}"]
        r.notes.append(
            f"pytest: addopts from {where} without {' '.join(dropped)} (parallel runs, coverage"
            " and stop-early flags would corrupt per-test outcomes and coverage)"
        )
    if not r.install:
        r.notes.append("install: nothing to install (plain source tree)")
    if legacy_path_hooks(repo):
        # pytest 9 removed the py.path arguments of hooks (deprecated since 7): such a conftest.py cannot load.
        r.install.append("pip install 'pytest<9'")
        r.notes.append("install: pytest<9 (a conftest.py implements a hook with the py.path argument pytest 9 removed)")
    else:
        r.install.append("pip install pytest")  # many suites assume it; a no-op when the project pins one
    name = dist_name(repo, pyproject, setup_cfg) if installable else None
    if name:
        # A pinned requirements file (pip-compile output often pins the project itself) or a plugin that
        # requires the project can replace the tree under test with a release from the index: put the
        # tree back unless the installed distribution still comes from here (a PEP 660 or plain install
        # names the tree in direct_url.json; `setup.py develop` keeps its egg-info in the tree; -I keeps
        # the current directory off sys.path, so that egg-info counts only while installed).
        check = (
            f'import importlib.metadata as m, os, sys; d = m.distribution("{name}"); here = os.getcwd(); '
            'sys.exit(not (("file://" + here) in (d.read_text("direct_url.json") or "") '
            'or os.path.abspath(d.locate_file("")).startswith(here)))'
        )
        r.install.append(
            f"python -I -c {shlex.quote(check)} 2>/dev/null || pip install --no-deps -e . || pip install --no-deps ."
        )
        r.notes.append(f"install: {name} reinstalled from the tree (no dependencies) if a later step replaced it")
    if not has_pytest_config(pyproject, setup_cfg, tox, repo):
        tests = unittest_style(repo)
        if tests:
            r.pytest_args += ["-o", "python_files=test*.py *_test.py tests.py"]
            r.notes.append("pytest: unittest-style file names (test*.py) collected too")
    return r
