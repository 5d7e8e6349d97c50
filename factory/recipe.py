"""Detect how to install a Python repository and run its tests (a `Recipe`), from the files that
projects actually use: pyproject.toml (PEP 621 extras, PEP 735 dependency groups, requires-python,
pytest settings), setup.cfg, setup.py, tox.ini, pytest.ini and requirements files."""

from __future__ import annotations

import ast
import configparser
import re
import shlex
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from bugforge.records import Recipe

PYTHONS = ["3.11", "3.13", "3.9"]  # in order of preference; these can be built offline (Debian)
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
# addopts flag -> the plugin that provides it
PLUGIN_FOR_FLAG = {
    "--cov": "pytest-cov",
    "-n": "pytest-xdist",
    "--numprocesses": "pytest-xdist",
    "--dist": "pytest-xdist",
    "--timeout": "pytest-timeout",
    "--benchmark": "pytest-benchmark",
    "--reruns": "pytest-rerunfailures",
    "--mypy": "pytest-mypy",
    "--flake8": "pytest-flake8",
    "--hypothesis": "hypothesis",
    "--doctest-rst": "pytest-doctestplus",
    "--doctest-plus": "pytest-doctestplus",
    "--html": "pytest-html",
    "--randomly": "pytest-randomly",
    "-p no:randomly": "",
    "--asyncio-mode": "pytest-asyncio",
    "--mpl": "pytest-mpl",
    "--remote-data": "pytest-remotedata",
    "--cov-report": "pytest-cov",
    "--black": "pytest-black",
    "--isort": "pytest-isort",
    "--snapshot-update": "syrupy",
    "--env": "pytest-env",
}
# ini keys -> plugin
PLUGIN_FOR_INI = {
    "asyncio_mode": "pytest-asyncio",
    "timeout": "pytest-timeout",
    "env": "pytest-env",
    "mock_use_standalone_module": "pytest-mock",
    "doctest_plus": "pytest-doctestplus",
    "DJANGO_SETTINGS_MODULE": "pytest-django",
    "flake8-ignore": "pytest-flake8",
    "xfail_strict": "",
}
# flags that fight per-test measurement (parallelism, coverage of their own, reruns): dropped from
# addopts in every bugforge run; the recipe records that.
DROPPED_FLAGS = (
    "--cov",
    "-n",
    "--numprocesses",
    "--dist",
    "--reruns",
    "--looponfail",
    "-x",
    "--exitfirst",
    "--maxfail",
    "--lf",
    "--ff",
    "--sw",
    "--stepwise",
)


def detect(repo: Path) -> Recipe:
    r = Recipe(pytest_args=["-p", "no:cacheprovider"])
    pyproject = _toml(repo / "pyproject.toml")
    setup_cfg = _ini(repo / "setup.cfg")
    tox = _ini(repo / "tox.ini")
    r.python = _python_version(repo, pyproject, setup_cfg, tox, r.notes)

    installable = any((repo / f).exists() for f in ("pyproject.toml", "setup.py", "setup.cfg"))
    if (repo / "pyproject.toml").exists() and not (
        pyproject.get("build-system") or pyproject.get("project") or (repo / "setup.py").exists()
    ):
        installable = False  # a pyproject.toml that only configures tools
    extras = _extras(repo, pyproject, setup_cfg)
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
            reqs = _group(groups, g)
            if reqs:
                r.install.append("pip install " + " ".join(shlex.quote(q) for q in reqs))
                r.notes.append(f"install: PEP 735 dependency group {g!r}")
            break
    for f in REQUIREMENT_FILES:
        if (repo / f).exists():
            r.install.append(f"pip install -r {f}")
            r.notes.append(f"install: {f}")
    for f in _tox_requirement_files(repo, tox):
        if f"pip install -r {shlex.quote(f)}" not in r.install:
            r.install.append(f"pip install -r {shlex.quote(f)}")
            r.notes.append(f"install: {f} (named in tox.ini's test environment)")
    deps = _tests_require(repo, setup_cfg) + _tox_deps(tox)
    if deps:
        r.install.append("pip install " + " ".join(shlex.quote(d) for d in sorted(set(deps))))
        r.notes.append("install: test dependencies named in setup.cfg/setup.py/tox.ini")

    addopts, ini_keys, where = _pytest_config(repo, pyproject, setup_cfg, tox)
    plugins = _plugins(addopts, ini_keys)
    if plugins:
        # `|| true`: a plugin that cannot be installed must not sink the environment; its options are
        # neutralised below either way.
        r.install.append("pip install " + " ".join(sorted(plugins)) + " || true")
        r.notes.append(f"install: pytest plugins that {where} needs: {', '.join(sorted(plugins))}")
    kept, dropped = _clean_addopts(addopts)
    if dropped:
        r.pytest_args += ["-o", f"addopts={' '.join(kept)}"]
        r.notes.append(
            f"pytest: addopts from {where} without {' '.join(dropped)} (parallel runs, coverage"
            " and stop-early flags would corrupt per-test outcomes and coverage)"
        )
    if not r.install:
        r.notes.append("install: nothing to install (plain source tree)")
    if _legacy_path_hooks(repo):
        # pytest 9 removed the py.path arguments of hooks (deprecated since 7): such a conftest.py cannot load.
        r.install.append("pip install 'pytest<9'")
        r.notes.append("install: pytest<9 (a conftest.py implements a hook with the py.path argument pytest 9 removed)")
    else:
        r.install.append("pip install pytest")  # many suites assume it; a no-op when the project pins one
    name = _dist_name(repo, pyproject, setup_cfg) if installable else None
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
    if not _has_pytest_config(pyproject, setup_cfg, tox, repo):
        tests = _unittest_style(repo)
        if tests:
            r.pytest_args += ["-o", "python_files=test*.py *_test.py tests.py"]
            r.notes.append("pytest: unittest-style file names (test*.py) collected too")
    return r


def _dist_name(repo: Path, pyproject: dict, setup_cfg) -> str | None:
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


def _toml(p: Path) -> dict:
    try:
        return tomllib.loads(p.read_text()) if p.exists() else {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def _ini(p: Path) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        if p.exists():
            cp.read_string(p.read_text(errors="replace"))
    except configparser.Error:
        pass
    return cp


def _python_version(repo: Path, pyproject: dict, setup_cfg, tox, notes: list[str]) -> str:
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


def _extras(repo: Path, pyproject: dict, setup_cfg) -> set[str]:
    extras = set(pyproject.get("project", {}).get("optional-dependencies", {}))
    if setup_cfg.has_section("options.extras_require"):
        extras |= set(setup_cfg["options.extras_require"])
    if (repo / "setup.py").exists():
        text = (repo / "setup.py").read_text(errors="replace")
        m = re.search(r"extras_require\s*=\s*(\{.*?\})\s*[,)]", text, re.S)
        if m:
            extras |= set(re.findall(r"['\"]([\w-]+)['\"]\s*:", m.group(1)))
    return extras


def _group(groups: dict, name: str, seen: frozenset = frozenset()) -> list[str]:
    out = []
    for item in groups.get(name, []):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and "include-group" in item and item["include-group"] not in seen:
            out += _group(groups, item["include-group"], seen | {name})
    return out


def _tests_require(repo: Path, setup_cfg) -> list[str]:
    deps = [d.strip() for d in setup_cfg.get("options", "tests_require", fallback="").splitlines() if d.strip()]
    if (repo / "setup.py").exists():
        try:
            tree = ast.parse((repo / "setup.py").read_text(errors="replace"))
        except SyntaxError:
            return deps
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "tests_require" and isinstance(node.value, ast.List):
                deps += [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return deps


def _tox_deps(tox) -> list[str]:
    if not tox.has_section("testenv"):
        return []
    out = []
    for line in tox.get("testenv", "deps", fallback="").splitlines():
        line = line.split("#")[0].strip()
        if not line or line.startswith("-") or "{" in line or ":" in line.split(" ")[0]:
            continue
        out.append(line)
    return out


def _tox_requirement_files(repo: Path, tox) -> list[str]:
    """Requirements files that tox.ini's [testenv] installs (`-r FILE`), where they exist."""
    out = []
    for line in tox.get("testenv", "deps", fallback="").splitlines() if tox.has_section("testenv") else []:
        m = re.match(r"^-r\s*(\S+)$", line.split("#")[0].strip())
        f = m.group(1).replace("{toxinidir}/", "") if m else ""
        if f and "{" not in f and (repo / f).is_file() and f not in out:
            out.append(f)
    return out


def _pytest_config(repo: Path, pyproject: dict, setup_cfg, tox) -> tuple[list[str], set[str], str]:
    """(addopts as a list, ini keys present, which file) from the file pytest itself would read."""
    for name, section in (
        ("pytest.ini", "pytest"),
        ("pyproject.toml", None),
        ("tox.ini", "pytest"),
        ("setup.cfg", "tool:pytest"),
    ):
        if name == "pyproject.toml":
            cfg = pyproject.get("tool", {}).get("pytest", {}).get("ini_options")
            if cfg is not None:
                a = cfg.get("addopts", [])
                return (shlex.split(a) if isinstance(a, str) else list(a)), set(cfg), name
            continue
        p = repo / name
        cp = _ini(p) if name == "pytest.ini" else {"tox.ini": tox, "setup.cfg": setup_cfg}[name]
        if cp.has_section(section):
            return shlex.split(cp.get(section, "addopts", fallback="")), set(cp[section]), name
    return [], set(), "the pytest configuration"


def _has_pytest_config(pyproject, setup_cfg, tox, repo) -> bool:
    return (
        bool(pyproject.get("tool", {}).get("pytest"))
        or setup_cfg.has_section("tool:pytest")
        or tox.has_section("pytest")
        or (repo / "pytest.ini").exists()
        or (repo / "conftest.py").exists()
    )


def _plugins(addopts: list[str], ini_keys: set[str]) -> set[str]:
    plugins = set()
    for i, a in enumerate(addopts):
        flag = a.split("=")[0]
        for prefix, plugin in PLUGIN_FOR_FLAG.items():
            if plugin and (flag == prefix or (prefix.startswith("--") and flag.startswith(prefix))):
                plugins.add(plugin)
        if a == "-p" and i + 1 < len(addopts) and not addopts[i + 1].startswith("no:"):
            plugins.add(addopts[i + 1].split(".")[0].replace("_", "-"))
    for key in ini_keys:
        if PLUGIN_FOR_INI.get(key):
            plugins.add(PLUGIN_FOR_INI[key])
    return plugins


def _clean_addopts(addopts: list[str]) -> tuple[list[str], list[str]]:
    kept, dropped = [], []
    i = 0
    while i < len(addopts):
        a = addopts[i]
        flag = a.split("=")[0]
        if any(flag == d or (d.startswith("--") and flag.startswith(d)) for d in DROPPED_FLAGS) or (
            flag.startswith("-n") and flag[2:].isdigit()
        ):
            dropped.append(a)
            takes_value = "=" not in a and flag in (
                "-n",
                "--numprocesses",
                "--dist",
                "--reruns",
                "--maxfail",
                "--cov",
                "--cov-report",
                "--cov-config",
            )
            if takes_value and i + 1 < len(addopts) and not addopts[i + 1].startswith("-"):
                dropped.append(addopts[i + 1])
                i += 1
        else:
            kept.append(a)
        i += 1
    return kept, dropped


LEGACY_PATH_HOOK = re.compile(
    r"def\s+pytest_(ignore_collect|collect_file|pycollect_makemodule|report_header|"
    r"report_collectionfinish)\s*\([^)]*\b(path|startdir)\b"
)


def _legacy_path_hooks(repo: Path) -> bool:
    return any(
        LEGACY_PATH_HOOK.search(p.read_text(errors="replace"))
        for p in repo.rglob("conftest.py")
        if ".git" not in p.parts
    )


def _unittest_style(repo: Path) -> bool:
    for p in repo.rglob("test*.py"):
        if not p.name.startswith("test_") and "unittest" in p.read_text(errors="replace"):
            return True
    return False
