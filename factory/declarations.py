"""What a project declares its tests may need, read on the host without running project code: extras
(PKG-INFO for sdists, PEP 621, setup.cfg, setup.py read as a syntax tree, Poetry extras), dependency
groups (PEP 735, Poetry groups and legacy dev-dependencies, PDM and uv dev-dependencies, Hatch
environments) and requirements files. Each is a `Declared` naming the file and table it came from.
Unreadable entries are skipped; nothing here raises on a project's bad input."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import dependency_groups
from packaging.metadata import ExceptionGroup as PkgInfoErrors
from packaging.metadata import Metadata
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from pip_requirements_parser import OptionParsingError, PipError, RequirementsFile

from bugforge.factory.project_files import setup_cfg_list, toml

TEST_NAMES = ("test", "tests", "testing", "dev")
HATCH_TEST_ENVS = ("default", "test", "tests", "testing", "hatch-test", "dev")


@dataclass(frozen=True)
class Declared:
    """One named set of requirements. kind "extra" installs as `.[name]`; "group" installs `requirements`."""

    kind: str
    name: str
    requirements: tuple[str, ...]
    source: str
    """Where it was declared, e.g. "pyproject.toml [dependency-groups] test"."""


def req_names(reqs) -> set[str]:
    """Canonical distribution names of PEP 508 strings (unparsable ones skipped)."""
    out = set()
    for r in reqs:
        try:
            out.add(canonicalize_name(Requirement(r).name))
        except InvalidRequirement:
            continue
    return out


def _strs(v) -> list[str]:
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def _setup_py_kw(repo: Path, key: str):
    """The literal value of setup(KEY=...) in setup.py, or None."""
    if not (repo / "setup.py").exists():
        return None
    try:
        tree = ast.parse((repo / "setup.py").read_text(errors="replace"))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == key:
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return None
    return None


def _pkg_info(repo: Path) -> Metadata | None:
    p = repo / "PKG-INFO"
    if not p.is_file():
        return None
    try:
        return Metadata.from_email(p.read_text(errors="replace"), validate=False)
    except (ValueError, TypeError, PkgInfoErrors):  # odd headers: PKG-INFO is then ignored
        return None


def extras(repo: Path, pyproject: dict, setup_cfg) -> list[Declared]:
    """The project's extras; for an sdist PKG-INFO is authoritative (setup.py may compute its extras)."""
    meta = _pkg_info(repo)
    if meta is not None and meta.provides_extra:
        out = []
        for e in meta.provides_extra:
            reqs = [
                str(r) for r in meta.requires_dist or [] if r.marker is not None and _marker_extra(str(r.marker), e)
            ]
            out.append(Declared("extra", str(e), tuple(reqs), f"PKG-INFO Provides-Extra {e}"))
        return out
    found: dict[str, tuple[list[str], str]] = {}
    for e, reqs in pyproject.get("project", {}).get("optional-dependencies", {}).items():
        found[e] = (_strs(reqs), f"pyproject.toml [project.optional-dependencies] {e}")
    if setup_cfg.has_section("options.extras_require"):
        for e, v in setup_cfg["options.extras_require"].items():
            found.setdefault(e, (setup_cfg_list(v, repo), f"setup.cfg extras_require {e}"))
    lit = _setup_py_kw(repo, "extras_require")
    if isinstance(lit, dict):
        for e, v in lit.items():
            reqs = [v] if isinstance(v, str) else _strs(list(v)) if isinstance(v, (list, tuple)) else []
            found.setdefault(str(e), (reqs, f"setup.py extras_require {e}"))
    poetry = pyproject.get("tool", {}).get("poetry", {})
    pdeps = poetry.get("dependencies", {})
    for e, names in (poetry.get("extras") or {}).items():
        reqs = [r for n in _strs(names) for r in _poetry_reqs(n, pdeps.get(n, "*"), repo)]
        found.setdefault(e, (reqs, f"pyproject.toml [tool.poetry.extras] {e}"))
    name = canonicalize_name(pyproject.get("project", {}).get("name") or "-")
    out = []
    for e in sorted(found):
        reqs, source = found[e]
        out.append(Declared("extra", e, tuple(_expand_self(reqs, name, found)), source))
    return out


def _marker_extra(marker: str, extra: str) -> bool:
    return bool(re.search(r"""extra\s*==\s*['"]""" + re.escape(extra) + """['"]""", marker))


def _expand_self(reqs: list[str], name: str, found: dict, depth: int = 0) -> list[str]:
    """`pkg[a,b]` naming the project itself stands for its extras a and b (pip expands it the same way)."""
    out = []
    for r in reqs:
        try:
            q = Requirement(r)
        except InvalidRequirement:
            continue
        if canonicalize_name(q.name) == name and depth < 5:
            for e in sorted(q.extras):
                out += _expand_self(found.get(e, ([], ""))[0], name, found, depth + 1)
        else:
            out.append(r)
    return out


def base_requirements(repo: Path, pyproject: dict, setup_cfg) -> list[str]:
    """What installing the project itself brings (no extras)."""
    meta = _pkg_info(repo)
    if meta is not None and meta.requires_dist:
        return [str(r) for r in meta.requires_dist if r.marker is None or "extra" not in str(r.marker)]
    reqs = _strs(pyproject.get("project", {}).get("dependencies", []))
    reqs += setup_cfg_list(setup_cfg.get("options", "install_requires", fallback=""), repo)
    lit = _setup_py_kw(repo, "install_requires")
    reqs += _strs(list(lit)) if isinstance(lit, (list, tuple)) else []
    pdeps = pyproject.get("tool", {}).get("poetry", {}).get("dependencies", {})
    for n, spec in pdeps.items():
        if n != "python" and not (isinstance(spec, dict) and spec.get("optional")):
            reqs += _poetry_reqs(n, spec, repo)
    return reqs


def _poetry_reqs(name: str, spec, repo: Path) -> list[str]:
    """PEP 508 strings for one Poetry dependency entry (a list value holds several constraints)."""
    from poetry.core.exceptions import PoetryCoreError  # imported late: poetry-core's import costs ~0.1 s
    from poetry.core.factory import Factory

    out = []
    for s in spec if isinstance(spec, list) else [spec]:
        try:
            out.append(Factory.create_dependency(name, s, root_dir=repo).to_pep_508())
        except (ValueError, TypeError, KeyError, AttributeError, RuntimeError, PoetryCoreError):
            continue  # a malformed entry (poetry-core's errors are ValueErrors, a few of them Runtime/Type errors)
    return out


def groups(repo: Path, pyproject: dict) -> list[Declared]:
    """Dependency groups of every tool, in a fixed order: PEP 735, Poetry, PDM, uv, Hatch."""
    out = []
    pep735 = pyproject.get("dependency-groups")
    if isinstance(pep735, dict):
        for g in pep735:
            try:
                reqs = dependency_groups.resolve(pep735, g)
            except (LookupError, ValueError, TypeError):  # cyclic or unknown include-group
                continue
            out.append(Declared("group", g, tuple(reqs), f"pyproject.toml [dependency-groups] {g}"))
    tool = pyproject.get("tool", {})
    poetry = tool.get("poetry", {})
    for g, table in (poetry.get("group") or {}).items():
        if isinstance(table, dict):
            deps = table.get("dependencies") or {}
            reqs = [r for n, s in deps.items() if n != "python" for r in _poetry_reqs(n, s, repo)]
            opt = " (optional)" if table.get("optional") else ""
            out.append(Declared("group", g, tuple(reqs), f"pyproject.toml [tool.poetry.group.{g}]{opt}"))
    if isinstance(poetry.get("dev-dependencies"), dict):
        reqs = [r for n, s in poetry["dev-dependencies"].items() if n != "python" for r in _poetry_reqs(n, s, repo)]
        out.append(Declared("group", "dev", tuple(reqs), "pyproject.toml [tool.poetry.dev-dependencies]"))
    for g, reqs in (tool.get("pdm", {}).get("dev-dependencies") or {}).items():
        reqs = [r.replace("${PROJECT_ROOT}", ".") for r in _strs(reqs)]
        out.append(Declared("group", g, tuple(reqs), f"pyproject.toml [tool.pdm.dev-dependencies] {g}"))
    uv = tool.get("uv", {}).get("dev-dependencies")
    if uv:
        out.append(Declared("group", "dev", tuple(_strs(uv)), "pyproject.toml [tool.uv] dev-dependencies"))
    out += hatch_envs(repo, tool.get("hatch", {}))
    return out


def hatch_envs(repo: Path, hatch: dict) -> list[Declared]:
    """Hatch's environments ([tool.hatch.envs.*] or hatch.toml's [envs.*]), test-named ones first:
    dependencies, extra-dependencies and matrix overrides as a group; `features` as `feature:NAME`."""
    envs = dict(toml(repo / "hatch.toml").get("envs", {}))
    where = "hatch.toml [envs.{}]" if envs else "pyproject.toml [tool.hatch.envs.{}]"
    envs = envs or hatch.get("envs", {})
    out = []
    for name in [n for n in HATCH_TEST_ENVS if n in envs] + sorted(n for n in envs if n not in HATCH_TEST_ENVS):
        env = envs.get(name)
        if not isinstance(env, dict):
            continue
        reqs = _strs(env.get("dependencies")) + _strs(env.get("extra-dependencies"))
        for ov in ((env.get("overrides") or {}).get("matrix") or {}).values():
            for item in ov.get("dependencies", []) if isinstance(ov, dict) else []:
                v = item.get("value") if isinstance(item, dict) else item
                reqs += [v] if isinstance(v, str) else []
        reqs += [f"feature:{f}" for f in _strs(env.get("features"))]
        out.append(Declared("group", name, tuple(dict.fromkeys(reqs)), where.format(name)))
    return out


def requirement_files(repo: Path) -> list[str]:
    """requirements*.txt, *requirements*.txt at the top and requirements/*.txt, sorted."""
    found = {p for p in repo.glob("*.txt") if "requirements" in p.name.lower()}
    found |= set((repo / "requirements").glob("*.txt")) | set((repo / "requirements").glob("*.in"))
    found |= {p for p in repo.glob("*.in") if "requirements" in p.name.lower()}
    return sorted(p.relative_to(repo).as_posix() for p in found if p.is_file())


def file_requirements(repo: Path, path: str) -> tuple[list[str], set[str]]:
    """(requirement strings, extras of `-e .[x]` lines) of a requirements file, nested -r/-c files followed;
    a missing nested file reads the file without nesting."""
    try:
        rf = RequirementsFile.from_file(str(repo / path), include_nested=True)
    except (PipError, OptionParsingError, OSError, ValueError):  # e.g. InstallationError: a missing nested file
        try:
            rf = RequirementsFile.from_file(str(repo / path), include_nested=False)
        except (PipError, OptionParsingError, OSError, ValueError):  # a file it cannot parse: no requirements
            return [], set()
    reqs, selfx = [], set()
    for r in rf.requirements:
        if r.is_constraint:
            continue
        url = r.link.url if r.link is not None else ""
        if r.name:
            reqs.append(r.name + "".join(f"[{','.join(sorted(r.extras))}]" if r.extras else ""))
        elif url in (".", "./") or url.startswith("file:") and url.rstrip("/").endswith(str(repo)):
            selfx |= set(r.extras)
    return reqs, selfx
