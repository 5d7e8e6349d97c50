"""What a project's own test runs install and run, from its CI workflows, tox environments, nox
sessions and Makefile (factory/ci_files.py reads them): `Install` requests (requirements, -r files,
extras of the project itself, dependency groups) and `PytestRun` command lines, each with its source."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from bugforge.factory.ci_files import (
    Command,
    makefile_commands,
    normalise,
    nox_sessions,
    py_factors,
    tox_envs,
    workflow_commands,
)
from bugforge.factory.declarations import req_names

PIP_VALUE_OPTS = {
    "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-t", "--target", "--prefix", "--root",
    "--python", "-p", "--upgrade-strategy", "--only-binary", "--no-binary", "--config-settings", "-C", "--src",
    "--platform", "--python-version", "--implementation", "--abi", "--progress-bar", "--trusted-host",
    "--index-strategy", "--resolution", "--exclude-newer", "--uploaded-prior-to", "--cache-dir", "--log",
}  # fmt: skip


# tox environments that may run pytest but not the test suite
NOT_TEST_ENVS = {"bench", "benchmark", "benchmarks", "docs", "doc", "lint", "typing", "mypy", "type", "profile", "fuzz"}


@dataclass
class Install:
    source: str
    reqs: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    """-r files (relative to the repository)."""
    extras: set[str] = field(default_factory=set)
    """Extras of the project itself ("*" = all)."""
    groups: set[str] = field(default_factory=set)
    """Dependency groups ("*" = all; "+default" = the tool's default groups)."""


@dataclass
class PytestRun:
    source: str
    args: list[str]


@dataclass
class ProjectRuns:
    installs: list[Install] = field(default_factory=list)
    pytest: list[tuple[str, list[PytestRun]]] = field(default_factory=list)
    """(kind: "CI" | "tox" | "nox" | "Makefile", its pytest runs), kinds in that order."""
    tox_readable: bool = True


def is_pytest(argv) -> bool:
    return bool(argv) and Path(argv[0]).name in ("pytest", "py.test")


def install_of(c: Command, repo: Path) -> Install | None:
    """The install request of one command (pip, uv pip, uv sync, poetry install, pdm install), or None."""
    a = list(c.argv)
    if a[:2] in (["pip", "install"], ["pip3", "install"]) or a[:3] == ["uv", "pip", "install"]:
        return pip_args(a[3:] if a[0] == "uv" else a[2:], c.source, repo)
    inst = Install(c.source)
    if a[:2] == ["uv", "sync"] or c.uv:
        _uv_flags(a[2:] if a[:2] == ["uv", "sync"] else list(c.uv), inst)
        return inst if a[:2] == ["uv", "sync"] else None
    if a[:2] == ["poetry", "install"]:
        _poetry_flags(a, inst)
        return inst
    if a[:2] == ["pdm", "install"] or a[:2] == ["pdm", "sync"]:
        inst.groups.add("+default")
        for i, f in enumerate(a):
            if f in ("-G", "--group", "--with") and i + 1 < len(a):
                inst.groups.add("*" if a[i + 1] == ":all" else a[i + 1])
        return inst
    return None


def _uv_flags(flags: list[str], inst: Install) -> None:
    """The extras and groups `uv sync` (or `uv run`) flags ask for."""
    inst.groups.add("+default")  # uv installs the dev group unless told otherwise
    for i, f in enumerate(flags):
        nxt = flags[i + 1] if i + 1 < len(flags) else ""
        if f == "--extra":
            inst.extras.add(nxt)
        elif f in ("--group", "--only-group"):
            inst.groups.add(nxt)
            if f == "--only-group":
                inst.groups.discard("+default")
        elif f == "--all-extras":
            inst.extras.add("*")
        elif f == "--all-groups":
            inst.groups.add("*")
        elif f == "--no-dev":
            inst.groups.discard("+default")


def _poetry_flags(a: list[str], inst: Install) -> None:
    """The groups and extras a `poetry install` command asks for."""
    inst.groups.add("+default")
    for i, f in enumerate(a):
        vals = (a[i + 1] if i + 1 < len(a) else "").split(",")
        if f in ("--with", "--only"):
            inst.groups |= set(vals)
        elif f in ("-E", "--extras"):
            inst.extras |= set(vals)
        elif f == "--all-extras":
            inst.extras.add("*")


def pip_args(args: list[str], source: str, repo: Path) -> Install:
    """pip's install arguments as an Install; arguments naming variables, globs or other paths are dropped."""
    inst = Install(source)
    i = 0
    while i < len(args):
        a, nxt = args[i], args[i + 1] if i + 1 < len(args) else ""
        flag = a.split("=", 1)[0]
        val = a.split("=", 1)[1] if "=" in a and a.startswith("--") else nxt
        step = 1 if "=" in a and a.startswith("--") else 2
        if flag in ("-r", "--requirement", "-c", "--constraint"):
            if flag in ("-r", "--requirement") and (repo / val).is_file():
                inst.files.append(val)
            i += step
        elif flag in ("-e", "--editable"):
            _positional(val, inst, repo)
            i += step
        elif flag == "--group":
            inst.groups.add(val.rsplit(":", 1)[-1])
            i += step
        elif flag in PIP_VALUE_OPTS:
            i += step
        elif a.startswith("-"):
            i += 1
        else:
            _positional(a, inst, repo)
            i += 1
    return inst


def _positional(a: str, inst: Install, repo: Path) -> None:
    if any(ch in a for ch in "$*{}") or not a:
        return
    base, _, rest = a.partition("[")
    if base in (".", "./", str(repo)):
        inst.extras |= {e.strip() for e in rest.rstrip("]").split(",") if e.strip()} if rest else set()
        inst.extras.add("")  # the project itself
        return
    if "/" in a or a.endswith((".whl", ".tar.gz", ".zip")):
        return
    try:
        Requirement(a)
    except InvalidRequirement:
        return
    inst.reqs.append(a)


def _tox_install(env: dict, repo: Path) -> Install:
    inst = Install(f"tox env {env['name']}")
    inst.extras |= {e for e in env.get("extras") or [] if isinstance(e, str)}
    inst.groups |= {g for g in env.get("dependency_groups") or [] if isinstance(g, str)}
    deps = env.get("deps") or []
    for d in deps if isinstance(deps, list) else []:
        d = d.strip()
        if d.startswith("-r"):
            f = d[2:].strip()
            if (repo / f).is_file():
                inst.files.append(f)
        elif d and not d.startswith("-"):
            _positional(d, inst, repo)
    return inst


def project_runs(repo: Path, python: str) -> ProjectRuns:
    """Installs and pytest runs of the test jobs, sessions and environments (those that run pytest, tox,
    nox or make test); tox environments of the recipe's Python version first."""
    out = ProjectRuns()
    out.pytest.append(("CI", _ci_runs(repo, out)))
    out.pytest.append(("tox", _tox_runs(repo, python, out)))
    out.pytest.append(("nox", _nox_runs(repo, out)))
    make = [PytestRun(c.source, list(c.argv[1:])) for c in makefile_commands(repo) if is_pytest(c.argv)]
    out.pytest.append(("Makefile", make))
    return out


def _ci_runs(repo: Path, out: ProjectRuns) -> list[PytestRun]:
    """The pytest runs of CI jobs that test (their installs added to `out`)."""
    ci: list[PytestRun] = []
    for _label, cmds in workflow_commands(repo):
        if not any(is_pytest(c.argv) or c.argv[0] in ("tox", "nox", "make", "hatch") for c in cmds):
            continue
        for c in cmds:
            if is_pytest(c.argv):
                ci.append(PytestRun(c.source, list(c.argv[1:])))
            inst = install_of(c, repo)
            if inst and (inst.reqs or inst.files or inst.extras or inst.groups):
                out.installs.append(inst)
    return ci


def _tox_runs(repo: Path, python: str, out: ProjectRuns) -> list[PytestRun]:
    """The pytest runs of tox's test environments, those of `python` first (their installs merged into
    one, added to `out`); sets out.tox_readable."""
    envs = tox_envs(repo, python)
    out.tox_readable = envs is not None
    tag = python.replace(".", "")
    tox_runs, tox_installs = [], []
    for env in sorted(envs or [], key=lambda e: tag not in py_factors(e["name"])):
        if set(env["name"].split("-")) & NOT_TEST_ENVS:
            continue
        runs = [r for r in (_split(c) for c in env.get("commands") or []) if is_pytest(r)]
        if runs:
            tox_runs += [PytestRun(f"tox env {env['name']}", r[1:]) for r in runs]
            tox_installs.append(_tox_install(env, repo))
    if tox_installs:
        out.installs.append(_merged(tox_installs))
    return tox_runs


def _merged(installs: list[Install]) -> Install:
    """One step for several tox environments: the first environment's pin of a name wins (factors pick
    conflicting pins)."""
    merged = Install("tox env " + ", ".join(i.source.removeprefix("tox env ") for i in installs))
    names: set[str] = set()
    for i in installs:
        merged.reqs += [q for q in i.reqs if not req_names([q]) & names]
        names |= req_names(i.reqs)
        merged.files += [f for f in i.files if f not in merged.files]
        merged.extras |= i.extras
        merged.groups |= i.groups
    return merged


def _nox_runs(repo: Path, out: ProjectRuns) -> list[PytestRun]:
    """The pytest runs of nox sessions that run pytest (else of those named like tests), installs to `out`."""
    nox_runs = []
    sessions = nox_sessions(repo)
    with_pytest = [n for n, cmds in sessions if any(is_pytest(c.argv) for c in cmds)]
    for name, cmds in sessions:
        runs = [c for c in cmds if is_pytest(c.argv)]
        if name in with_pytest or (not with_pytest and "test" in name.lower()):
            nox_runs += [PytestRun(c.source, list(c.argv[1:])) for c in runs]
            out.installs += [i for c in cmds if (i := install_of(c, repo))]
    return nox_runs


def _split(command) -> list[str]:
    try:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
    except ValueError:
        return []
    return normalise(argv)[0]
