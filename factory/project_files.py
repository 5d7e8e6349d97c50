"""Readers of a project's declarations, for recipe detection (factory/recipe.py): pyproject.toml
(PEP 621 metadata and extras, PEP 735 dependency groups), setup.cfg, setup.py (read as a syntax tree,
never run) and tox.ini. Unreadable files read as empty."""

from __future__ import annotations

import ast
import configparser
import email.parser
import re
import urllib.parse
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

PYTHONS = ["3.11", "3.13", "3.9"]  # in order of preference; these can be built offline (Debian)
RELEASED = {"3.9": "2020-10-05", "3.11": "2022-10-24", "3.13": "2024-10-07"}  # first final release


def dist_name(repo: Path, pyproject: dict, setup_cfg) -> str | None:
    """The project's distribution name: PKG-INFO (an sdist), pyproject.toml, setup.cfg or a literal in setup.py."""
    names = []
    if (repo / "PKG-INFO").is_file():
        m = re.search(r"^Name:\s*(\S+)", (repo / "PKG-INFO").read_text(errors="replace"), re.M)
        names.append(m.group(1) if m else None)
    names += [pyproject.get("project", {}).get("name"), setup_cfg.get("metadata", "name", fallback=None)]
    if (repo / "setup.py").exists():
        try:
            tree = ast.parse((repo / "setup.py").read_text(errors="replace"))
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        names += [
            kw.value.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup"
            for kw in node.keywords
            if kw.arg == "name" and isinstance(kw.value, ast.Constant)
        ]
    return next((n.strip() for n in names if isinstance(n, str) and re.fullmatch(r"[A-Za-z0-9._-]+", n.strip())), None)


def toml(p: Path) -> dict:
    try:
        return tomllib.loads(p.read_text()) if p.exists() else {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def ini(p: Path) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        if p.exists():
            cp.read_string(p.read_text(errors="replace"))
    except configparser.Error:
        pass
    return cp


def setup_cfg_list(value: str, root: Path | None = None) -> list[str]:
    """A setup.cfg requirement list (install_requires, tests_require, an [options.extras_require] entry),
    split as setuptools' `_parse_requirements_list` splits it (its "list-semi" type): a `file:` value
    stands for those files' text (joined by newlines; missing files and files outside `root` are skipped,
    where setuptools warns or refuses). Text with a newline is one entry a line, so `name; marker` on its
    own line keeps its PEP 508 marker; one-line text is split at every `;` (setuptools' rule too: a
    one-line `name; python_version < "3.8"` is two entries, the second not a requirement). Entries are
    stripped; blank ones and those starting with `#` are dropped. Never raises."""
    if value.startswith("file:"):
        base = (root or Path(".")).resolve()
        paths = [(base / f.strip()).resolve() for f in value[len("file:") :].split(",")]
        ok = [q for q in paths if base in q.parents and q.is_file()]
        value = "\n".join(q.read_text(encoding="utf-8", errors="replace") for q in ok)
    chunks = value.splitlines() if "\n" in value else value.split(";")
    return [c.strip() for c in chunks if c.strip() and not c.strip().startswith("#")]


def python_version(repo: Path, pyproject: dict, setup_cfg, tox, notes: list[str], date: str | None = None) -> str:
    """The environment's Python among PYTHONS: requires-python, then the classifiers; with `date` (period-
    correct tooling), among those, the newest one released by that date (else the oldest of them)."""
    if date:
        ok = sorted(_allowed(repo, pyproject, setup_cfg) or PYTHONS, key=lambda v: tuple(map(int, v.split("."))))
        by_then = [v for v in ok if RELEASED[v] <= date[:10]]
        choice = by_then[-1] if by_then else ok[0]
        notes.append(f"python: {choice}, the newest of {', '.join(ok)} released by {date[:10]}")
        return choice
    spec, listed = _constraints(repo, pyproject, setup_cfg)
    if spec:
        try:
            ok = [v for v in PYTHONS if SpecifierSet(spec).contains(v + ".0")]
        except InvalidSpecifier:
            ok = []
        if ok:
            choice = next((v for v in ok if v in listed), ok[0]) if listed else ok[0]
            notes.append(f"python: {choice} satisfies requires-python {spec!r}")
            return choice
    if listed:
        choice = next((v for v in PYTHONS if v in listed), None)
        if choice:
            notes.append(f"python: {choice} is listed in the classifiers")
            return choice
    notes.append("python: 3.11 (nothing in the project constrains it)")
    return "3.11"


def _constraints(repo: Path, pyproject: dict, setup_cfg) -> tuple[str | None, set[str]]:
    """(requires-python, the 3.x versions the classifiers list)."""
    spec = pyproject.get("project", {}).get("requires-python") or setup_cfg.get(
        "options", "python_requires", fallback=None
    )
    if spec is None and (repo / "setup.py").exists():
        m = re.search(r"python_requires\s*=\s*['\"]([^'\"]+)['\"]", (repo / "setup.py").read_text(errors="replace"))
        spec = m.group(1) if m else None
    classifiers = (
        pyproject.get("project", {}).get("classifiers", [])
        + setup_cfg.get("metadata", "classifiers", fallback="").splitlines()
    )
    listed = {m.group(1) for c in classifiers if (m := re.search(r"Python :: (3\.\d+)\s*$", c.strip()))}
    return spec, listed


def _allowed(repo: Path, pyproject: dict, setup_cfg) -> list[str]:
    """The PYTHONS requires-python admits, narrowed to those the classifiers list when any are."""
    spec, listed = _constraints(repo, pyproject, setup_cfg)
    ok = list(PYTHONS)
    if spec:
        try:
            ok = [v for v in PYTHONS if SpecifierSet(spec).contains(v + ".0")] or ok
        except InvalidSpecifier:
            pass
    return [v for v in ok if v in listed] or ok


def extras_of(repo: Path, pyproject: dict, setup_cfg) -> set[str]:
    extras = set(pyproject.get("project", {}).get("optional-dependencies", {}))
    if setup_cfg.has_section("options.extras_require"):
        extras |= set(setup_cfg["options.extras_require"])
    if (repo / "setup.py").exists():
        text = (repo / "setup.py").read_text(errors="replace")
        m = re.search(r"extras_require\s*=\s*(\{.*?\})\s*[,)]", text, re.S)
        if m:
            extras |= set(re.findall(r"['\"]([\w-]+)['\"]\s*:", m.group(1)))
    return extras


def tests_require(repo: Path, setup_cfg) -> list[str]:
    """Test requirements of setup.cfg's and setup.py's `tests_require` (setup.py read as a syntax tree);
    entries that are not PEP 508 requirements are dropped (one would sink the whole pip step)."""
    deps = setup_cfg_list(setup_cfg.get("options", "tests_require", fallback=""), repo)
    if (repo / "setup.py").exists():
        try:
            tree = ast.parse((repo / "setup.py").read_text(errors="replace"))
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "tests_require" and isinstance(node.value, ast.List):
                deps += [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return [d for d in deps if _is_requirement(d)]


def _is_requirement(text: str) -> bool:
    try:
        Requirement(text)
    except InvalidRequirement:
        return False
    return True


def tox_deps(tox) -> list[str]:
    if not tox.has_section("testenv"):
        return []
    out = []
    for line in tox.get("testenv", "deps", fallback="").splitlines():
        line = line.split("#")[0].strip()
        if not line or line.startswith("-") or "{" in line or ":" in line.split(" ")[0]:
            continue
        out.append(line)
    return out


def tox_requirement_files(repo: Path, tox) -> list[str]:
    """Requirements files that tox.ini's [testenv] installs (`-r FILE`), where they exist."""
    out = []
    for line in tox.get("testenv", "deps", fallback="").splitlines() if tox.has_section("testenv") else []:
        m = re.match(r"^-r\s*(\S+)$", line.split("#")[0].strip())
        f = m.group(1).replace("{toxinidir}/", "") if m else ""
        if f and "{" not in f and (repo / f).is_file() and f not in out:
            out.append(f)
    return out


def declared(repo: Path) -> list[tuple[str, Requirement]]:
    """Every (where, requirement) the project declares beyond its install requirements: PEP 621 extras,
    PEP 735 groups, Poetry groups/dev-dependencies, PDM and uv dev dependencies, setup.cfg extras, and the
    extras of an sdist's PKG-INFO. Unparseable entries are skipped."""
    pyproject, setup_cfg = toml(repo / "pyproject.toml"), ini(repo / "setup.cfg")
    raw = _pyproject_declared(pyproject) + _setup_cfg_declared(setup_cfg) + _pkg_info_declared(repo)
    out = []
    for where, r in raw:
        try:
            out.append((where, Requirement(str(r).strip())))
        except InvalidRequirement:
            continue
    return out


def _pyproject_declared(pyproject: dict) -> list[tuple[str, object]]:
    """(where, requirement) of pyproject.toml's extras and groups (PEP 621, PEP 735, Poetry, PDM, uv)."""
    tool = pyproject.get("tool", {})
    raw: list[tuple[str, object]] = []
    for extra, reqs in pyproject.get("project", {}).get("optional-dependencies", {}).items():
        raw += [(f"extra {extra!r}", r) for r in reqs]
    for g, reqs in pyproject.get("dependency-groups", {}).items():
        raw += [(f"dependency group {g!r}", r) for r in reqs if isinstance(r, str)]
    poetry = tool.get("poetry", {})
    for g, body in poetry.get("group", {}).items():
        raw += [(f"Poetry group {g!r}", n) for n in body.get("dependencies", {}) if n != "python"]
    raw += [("Poetry dev-dependencies", n) for n in poetry.get("dev-dependencies", {}) if n != "python"]
    for extra, names in poetry.get("extras", {}).items():
        raw += [(f"Poetry extra {extra!r}", n) for n in names]
    for g, reqs in tool.get("pdm", {}).get("dev-dependencies", {}).items():
        raw += [(f"PDM dev group {g!r}", r) for r in reqs]
    raw += [("uv dev-dependencies", r) for r in tool.get("uv", {}).get("dev-dependencies", [])]
    return raw


def _setup_cfg_declared(setup_cfg) -> list[tuple[str, object]]:
    if not setup_cfg.has_section("options.extras_require"):
        return []
    section = setup_cfg["options.extras_require"]
    return [(f"extra {e!r}", r) for e, text in section.items() for r in setup_cfg_list(text)]


def _pkg_info_declared(repo: Path) -> list[tuple[str, object]]:
    """(where, requirement) of the extras an sdist's PKG-INFO declares (Requires-Dist with an extra marker)."""
    if not (repo / "PKG-INFO").is_file():
        return []
    meta = email.parser.Parser().parsestr((repo / "PKG-INFO").read_text(errors="replace"))
    extras = meta.get_all("Provides-Extra") or []
    raw: list[tuple[str, object]] = []
    for r in meta.get_all("Requires-Dist") or []:
        try:
            req = Requirement(r)
        except InvalidRequirement:
            continue
        where = [e for e in extras if req.marker is not None and req.marker.evaluate({"extra": e})]
        if where and req.marker is not None and not req.marker.evaluate({"extra": ""}):
            raw.append((f"extra {where[0]!r} (PKG-INFO)", r))
    return raw


SOURCE_LABELS = ("source", "sourcecode", "repository", "repo", "code", "github", "gitlab")
"""Project-URL labels (normalised: lower case, letters only) that name the repository, in this order of
preference; their URL is taken on any host. Then "homepage"/"home" and the Home-page header, on a code
host only; then any Project-URL on a code host (a Changelog's `.../blob/...` URL), as its repository."""
CODE_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org")


def repository_url(repo: Path) -> str | None:
    """The source repository an sdist's PKG-INFO names (see `repository_in`); None for other sources."""
    if not (repo / "PKG-INFO").is_file():
        return None
    return repository_in((repo / "PKG-INFO").read_text(errors="replace"))


def repository_in(pkg_info: str) -> str | None:
    """The repository a PKG-INFO text names, chosen by Project-URL label in SOURCE_LABELS' order, and
    normalised by `code_repository`; None when it names none."""
    meta = email.parser.Parser().parsestr(pkg_info)
    pairs = [
        (re.sub(r"[^a-z]", "", lab.lower()), url.strip())
        for lab, sep, url in (u.partition(",") for u in meta.get_all("Project-URL") or [])
        if sep and url.strip()
    ]
    on_host = lambda u: urllib.parse.urlsplit(u).hostname in CODE_HOSTS  # noqa: E731
    ranked = [u for want in SOURCE_LABELS for lab, u in pairs if lab == want]
    ranked += [u for lab, u in pairs if lab in ("homepage", "home") and on_host(u)]
    ranked += [u for u in [(meta.get("Home-page") or "").strip()] if on_host(u)]
    ranked += [u for _, u in pairs if on_host(u)]
    return code_repository(ranked[0]) if ranked else None


def code_repository(url: str) -> str:
    """A GitHub, GitLab, Bitbucket or Codeberg web URL cut to its repository's root, as https:
    `https://github.com/o/r/blob/master/CHANGELOG.rst` -> `https://github.com/o/r` (GitLab: the path up to
    `/-/` or a `blob`/`tree`/`issues`... segment, as groups nest). Other URLs are returned unchanged."""
    parts = urllib.parse.urlsplit(url)
    host = (parts.hostname or "").lower()
    if host not in CODE_HOSTS:
        return url
    segs = [s for s in parts.path.split("/") if s]
    if host == "gitlab.com":
        segs = segs[: segs.index("-")] if "-" in segs else segs
        web = [i for i, s in enumerate(segs) if i >= 2 and s in GITLAB_PAGES]
        segs = segs[: web[0]] if web else segs
    else:
        segs = segs[:2]
    return f"https://{host}/" + "/".join(segs)


GITLAB_PAGES = {"blob", "tree", "issues", "merge_requests", "commits", "commit", "wikis", "tags", "releases", "raw"}
