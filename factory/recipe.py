"""Detect how to install a Python repository and run its tests (a `Recipe`) from what the project
declares: extras, dependency groups of every tool, requirements files, and what its CI, tox, nox and
Makefile runs install and run (see docs/environments.md, "Install recipe"). Nothing of the project
is run on the host; each install step's note names the declaration it came from."""

from __future__ import annotations

import shlex
from pathlib import Path

from packaging.utils import canonicalize_name

from bugforge.factory.declarations import (
    TEST_NAMES,
    base_requirements,
    extras,
    file_requirements,
    groups,
    req_names,
)
from bugforge.factory.discovery import widen_discovery
from bugforge.factory.install_plan import Plan
from bugforge.factory.project_files import (
    dist_name,
    extras_of,
    ini,
    python_version,
    tests_require,
    toml,
    tox_deps,
    tox_requirement_files,
)
from bugforge.factory.project_runs import ProjectRuns, project_runs
from bugforge.factory.pytest_config import (
    clean_addopts,
    legacy_path_hooks,
    plugins_for,
    pytest_config,
    testpaths,
)
from bugforge.factory.test_scope import outside_suite, pytest_invocation, third_party_imports
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


def on_path(repo: Path) -> str:
    """A command putting the tree (its src/ when the packages live there) first on sys.path, by a .pth file."""
    src = repo / "src"
    packaged = src.is_dir() and any((c / "__init__.py").exists() or c.suffix == ".py" for c in src.iterdir())
    line = f"import sys; sys.path.insert(0, {'/testbed/src' if packaged else '/testbed'!r})"
    code = f"import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()['purelib'], 'bugforge-tree.pth').write_text({line!r})"
    return f"python -c {shlex.quote(code)}"


def detect(repo: Path, *, build: bool = True, as_of: str | None = None) -> Recipe:
    """The recipe of the repository at `repo`, read from its files without running its code; the same
    files always give the same recipe (the environment's image key hashes it). build=False: the project is
    not built but put on sys.path from its tree, with the requirements it declares (for a project whose
    build requirements cannot be installed; its own metadata, e.g. entry points, is then absent).
    as_of (an ISO date): period-correct tooling, every install resolved as of that date and the Python
    chosen by it (factory/fallbacks.py)."""
    r = Recipe(pytest_args=["-p", "no:cacheprovider"], as_of=as_of or "")
    pyproject = toml(repo / "pyproject.toml")
    setup_cfg = ini(repo / "setup.cfg")
    tox = ini(repo / "tox.ini")
    r.python = python_version(repo, pyproject, setup_cfg, tox, r.notes, date=as_of)

    installable = any((repo / f).exists() for f in ("pyproject.toml", "setup.py", "setup.cfg"))
    if (repo / "pyproject.toml").exists() and not (
        pyproject.get("build-system") or pyproject.get("project") or (repo / "setup.py").exists()
    ):
        installable = False  # a pyproject.toml that only configures tools
    declared = {d.name: d for d in extras(repo, pyproject, setup_cfg)}
    names = extras_of(repo, pyproject, setup_cfg) | set(declared)
    wanted = [e for e in TEST_EXTRAS if e in names]
    name = dist_name(repo, pyproject, setup_cfg) if installable else None
    plan = Plan(repo, declared, groups(repo, pyproject), name, build=build)
    if installable:
        _install_project(repo, r, plan, pyproject, setup_cfg, wanted, build)
    elif (repo / "requirements.txt").exists():
        r.install.append("pip install -r requirements.txt")
        r.notes.append("install: requirements.txt (the repository is not an installable package)")
        _count_file(plan, repo, "requirements.txt")
    _install_test_group(r, plan)
    for f in REQUIREMENT_FILES:
        if (repo / f).exists():
            r.install.append(f"pip install -r {f}")
            r.notes.append(f"install: {f}")
            _count_file(plan, repo, f)
    runs = project_runs(repo, r.python)
    _install_tox_declarations(repo, r, plan, runs, setup_cfg, tox)

    roots = test_scope(repo, r, runs, testpaths(repo, pyproject, setup_cfg, tox))
    plan.test_groups()
    for inst in runs.installs:
        plan.project_install(inst)
    left = plan.for_imports(third_party_imports(repo, roots))
    plan.emit(r, installable, wanted)
    if left:
        r.notes.append(f"install: no declaration provides {', '.join(left)}, which the tests import")
    _pytest_options(repo, r, pyproject, setup_cfg, tox)
    _final_installs(repo, r, name if build else None)
    widen_discovery(repo, r, roots, pyproject, setup_cfg, tox)  # unittest modules not named like tests
    return r


def _count_file(plan: Plan, repo: Path, f: str) -> None:
    """Requirements file `f` is installed: its requirements count as provided."""
    plan.files.append(f)
    plan.covered |= req_names(file_requirements(repo, f)[0])


def _install_project(repo: Path, r: Recipe, plan: Plan, pyproject: dict, setup_cfg, wanted: list[str], build: bool):
    """Install the project itself (with its test extras): built, or (build=False) put on sys.path from
    its tree with the requirements it declares."""
    if not build:
        reqs = plan.without_self(base_requirements(repo, pyproject, setup_cfg), "the project's requirements")
        reqs += [q for e in wanted if e in plan.extras for q in plan.without_self(plan.extras[e].requirements, e)]
        r.install.append(
            ("pip install " + " ".join(shlex.quote(q) for q in reqs) + " && " if reqs else "") + on_path(repo)
        )
        r.notes.append(
            "install: the project's build requirements cannot be installed, so its tree is put on sys.path"
            f" (a .pth file) with the requirements it declares{' and extras ' + ', '.join(wanted) if wanted else ''}"
        )
        return
    target = f".[{','.join(wanted)}]" if wanted else "."
    r.install.append(f"pip install -e {shlex.quote(target)} || pip install {shlex.quote(target)}")
    r.notes.append(
        f"install: the project itself{' with extras ' + ', '.join(wanted) if wanted else ''}"
        " (editable, or a plain install where editable is not supported)"
    )
    plan.covered |= req_names(base_requirements(repo, pyproject, setup_cfg))
    for e in wanted:
        plan.pick_extra(e, "a test extra")


def _install_test_group(r: Recipe, plan: Plan) -> None:
    """The first PEP 735 dependency group named like a test group."""
    pep735 = {canonicalize_name(d.name): d for d in plan.groups if "[dependency-groups]" in d.source}
    g = next((g for g in TEST_NAMES if g in pep735), None)
    if g is None:
        return
    reqs = plan.without_self(pep735[g].requirements, pep735[g].source)
    if reqs:
        r.install.append("pip install " + " ".join(shlex.quote(q) for q in reqs))
        r.notes.append(f"install: PEP 735 dependency group {pep735[g].name!r}")
        plan.covered |= req_names(reqs)
        plan.done_groups.add(pep735[g].source)


def _install_tox_declarations(repo: Path, r: Recipe, plan: Plan, runs: ProjectRuns, setup_cfg, tox) -> None:
    """Requirement files tox's test environment names, and the test dependencies setup.cfg/setup.py/tox.ini
    list (tox's only when its environments could not be read as runs)."""
    tox_files = tox_requirement_files(repo, tox) if not runs.tox_readable else []
    tox_files += [f for i in runs.installs if i.source.startswith("tox env") for f in i.files]
    for f in dict.fromkeys(tox_files):
        if f not in plan.files:
            r.install.append(f"pip install -r {shlex.quote(f)}")
            r.notes.append(f"install: {f} (named in tox's test environment)")
            _count_file(plan, repo, f)
    deps = tests_require(repo, setup_cfg) + (tox_deps(tox) if not runs.tox_readable else [])
    if deps:
        r.install.append("pip install " + " ".join(shlex.quote(d) for d in sorted(set(deps))))
        r.notes.append("install: test dependencies named in setup.cfg/setup.py/tox.ini")
        plan.covered |= req_names(deps)


def _pytest_options(repo: Path, r: Recipe, pyproject: dict, setup_cfg, tox) -> None:
    """The pytest plugins the configuration needs, and its addopts without the flags that would corrupt
    per-test outcomes."""
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
            " and stop-early flags would corrupt per-test outcomes and coverage; report files are not read)"
        )
    if not r.install:
        r.notes.append("install: nothing to install (plain source tree)")


def _final_installs(repo: Path, r: Recipe, built: str | None) -> None:
    """pytest itself (<9 for a conftest with py.path hook arguments), then, for a built project (`built`:
    its distribution name), putting the tree back if a later step replaced it."""
    if legacy_path_hooks(repo):
        # pytest 9 removed the py.path arguments of hooks (deprecated since 7): such a conftest.py cannot load.
        r.install.append("pip install 'pytest<9'")
        r.notes.append("install: pytest<9 (a conftest.py implements a hook with the py.path argument pytest 9 removed)")
    else:
        r.install.append("pip install pytest")  # many suites assume it; a no-op when the project pins one
    if built:
        # A pinned requirements file (pip-compile output often pins the project itself) or a plugin that
        # requires the project can replace the tree under test with a release from the index: put the
        # tree back unless the installed distribution still comes from here (a PEP 660 or plain install
        # names the tree in direct_url.json; `setup.py develop` keeps its egg-info in the tree; -I keeps
        # the current directory off sys.path, so that egg-info counts only while installed).
        check = (
            f'import importlib.metadata as m, os, sys; d = m.distribution("{built}"); here = os.getcwd(); '
            'sys.exit(not (("file://" + here) in (d.read_text("direct_url.json") or "") '
            'or os.path.abspath(d.locate_file("")).startswith(here)))'
        )
        r.install.append(
            f"python -I -c {shlex.quote(check)} 2>/dev/null || pip install --no-deps -e . || pip install --no-deps ."
        )
        r.notes.append(f"install: {built} reinstalled from the tree (no dependencies) if a later step replaced it")


def test_scope(repo: Path, r: Recipe, runs: ProjectRuns, configured: list[str]) -> list[str]:
    """Choose the tests to run, in order: pytest's `testpaths`; the paths and options of the project's
    own pytest command (CI, then tox, nox, Makefile); else pytest's discovery without top-level folders
    of benchmarks, docs, examples or vendored code. Sets r.test_files/pytest_args and notes; returns the
    folders whose test files' imports count."""
    if configured:
        r.notes.append(f"tests: pytest's testpaths ({' '.join(configured)})")
        return [p for p in configured if (repo / p).exists()] or ["."]
    for kind, pruns in runs.pytest:
        if not pruns:
            continue
        paths: list[str] = []
        for run in pruns:
            paths += [p for p in pytest_invocation(run.args, repo)[0] if p not in paths]
        _, opts, _ = pytest_invocation(pruns[0].args, repo)
        kept, _ = clean_addopts(opts)
        r.test_files = paths
        r.pytest_args += kept
        sources = ", ".join(dict.fromkeys(run.source for run in pruns))
        r.notes.append(
            f"tests: {' '.join(paths) or 'pytest discovery'}"
            f"{' with ' + ' '.join(kept) if kept else ''}, as {kind} runs pytest ({sources})"
        )
        return paths or ["."]
    odd = outside_suite(repo)
    if odd:
        r.pytest_args += [f"--ignore={d}" for d in odd]
        r.notes.append(f"tests: pytest discovery without {', '.join(odd)} (benchmarks, docs, examples, vendored code)")
    return sorted(p.name for p in repo.iterdir() if p.name not in odd and not p.name.startswith(".")) or ["."]
