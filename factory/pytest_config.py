"""The pytest side of recipe detection (factory/recipe.py): the configuration pytest itself would
read, the plugins its options and ini keys need, and the addopts flags bugforge drops because they
fight per-test measurement."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from bugforge.factory.project_files import ini

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
# report files bugforge never reads, which a grader's test user cannot write into the tree (pathable's
# `--junitxml=reports/junit.xml` ended every graded run in an INTERNALERROR at session finish)
REPORT_FILE_FLAGS = (
    "--junitxml",
    "--junit-xml",
    "--junit-prefix",
    "--html",
    "--self-contained-html",
    "--report-log",
    "--result-log",
    "--resultlog",
    "--json-report",
    "--alluredir",
    "--log-file",
)
# flags that fight per-test measurement (parallelism, coverage of their own, reruns) or write report
# files: dropped from addopts in every bugforge run; the recipe records that.
DROPPED_FLAGS = (
    *REPORT_FILE_FLAGS,
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


def pytest_config(repo: Path, pyproject: dict, setup_cfg, tox) -> tuple[list[str], set[str], str]:
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
        cp = ini(p) if name == "pytest.ini" else {"tox.ini": tox, "setup.cfg": setup_cfg}[name]
        if cp.has_section(section):
            return shlex.split(cp.get(section, "addopts", fallback="")), set(cp[section]), name
    return [], set(), "the pytest configuration"


def testpaths(repo: Path, pyproject: dict, setup_cfg, tox) -> list[str]:
    """pytest's `testpaths` from the file pytest itself would read (pytest.ini, pyproject.toml's
    [tool.pytest.ini_options] or [tool.pytest], tox.ini, setup.cfg); [] when not configured."""
    for name, section in (("pytest.ini", "pytest"), ("pyproject.toml", None), ("tox.ini", "pytest")):
        if name == "pyproject.toml":
            tool = pyproject.get("tool", {}).get("pytest", {})
            cfg = tool.get("ini_options", tool) if isinstance(tool, dict) else None
            if cfg:
                v = cfg.get("testpaths", [])
                return shlex.split(v) if isinstance(v, str) else [str(x) for x in v]
            continue
        cp = ini(repo / name) if name == "pytest.ini" else tox
        if cp.has_section(section):
            return shlex.split(cp.get(section, "testpaths", fallback=""))
    if setup_cfg.has_section("tool:pytest"):
        return shlex.split(setup_cfg.get("tool:pytest", "testpaths", fallback=""))
    return []


def has_pytest_config(pyproject, setup_cfg, tox, repo) -> bool:
    return (
        bool(pyproject.get("tool", {}).get("pytest"))
        or setup_cfg.has_section("tool:pytest")
        or tox.has_section("pytest")
        or (repo / "pytest.ini").exists()
        or (repo / "conftest.py").exists()
    )


def plugins_for(addopts: list[str], ini_keys: set[str]) -> set[str]:
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


# dropped flags whose value may be the next argument
DROPPED_WITH_VALUE = {
    "-n", "--numprocesses", "--dist", "--reruns", "--maxfail", "--cov", "--cov-report", "--cov-config",
    "--junitxml", "--junit-xml", "--junit-prefix", "--html", "--report-log", "--result-log", "--resultlog",
    "--json-report-file", "--alluredir", "--log-file", "--log-file-level", "--log-file-format",
    "--log-file-date-format", "--log-file-mode",
}  # fmt: skip


def clean_addopts(addopts: list[str]) -> tuple[list[str], list[str]]:
    """(kept, dropped) of addopts: DROPPED_FLAGS (a `--` flag also by prefix, `-nN`) go, with their value."""
    kept, dropped = [], []
    i = 0
    while i < len(addopts):
        a = addopts[i]
        flag = a.split("=")[0]
        if any(flag == d or (d.startswith("--") and flag.startswith(d)) for d in DROPPED_FLAGS) or (
            flag.startswith("-n") and flag[2:].isdigit()
        ):
            dropped.append(a)
            takes_value = "=" not in a and flag in DROPPED_WITH_VALUE
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


def legacy_path_hooks(repo: Path) -> bool:
    return any(
        LEGACY_PATH_HOOK.search(p.read_text(errors="replace"))
        for p in repo.rglob("conftest.py")
        if ".git" not in p.parts
    )


def unittest_style(repo: Path) -> bool:
    for p in repo.rglob("test*.py"):
        if not p.name.startswith("test_") and "unittest" in p.read_text(errors="replace"):
            return True
    return False
