"""Which tests a project runs and what they import: the paths and options of a pytest command line,
the test files under chosen paths, their third-party imports (read as syntax trees, never run), and
whether a declared requirement provides an imported module."""

from __future__ import annotations

import ast
import functools
import json
import sys
from pathlib import Path

from packaging.utils import canonicalize_name

# pytest options that take a value as the next argument (so that value is not read as a path)
VALUE_OPTS = {
    "-p", "-m", "-k", "-o", "-W", "-c", "-r", "-n", "--override-ini", "--pythonwarnings", "--ignore",
    "--ignore-glob", "--deselect", "--doctest-glob", "--import-mode", "--rootdir", "--confcutdir", "--basetemp",
    "--junitxml", "--junit-xml", "--tb", "--durations", "--numprocesses", "--dist", "--cov", "--cov-report",
    "--cov-config", "--cov-fail-under", "--timeout", "--maxfail", "--log-level", "--log-cli-level", "--color",
    "--hypothesis-profile", "--hypothesis-seed", "--asyncio-mode", "--reruns", "--randomly-seed", "--html",
    "--durations-min", "--log-file", "--capture", "--tx", "--maxprocesses",
}  # fmt: skip
# options carried into the recipe: they decide which tests run, or how they load
KEPT_OPTS = {
    "-p", "-m", "-k", "-o", "--override-ini", "-W", "--pythonwarnings", "--ignore", "--ignore-glob", "--deselect",
    "--doctest-modules", "--doctest-glob", "--import-mode", "--strict-markers", "--asyncio-mode",
    "--hypothesis-profile", "--runxfail", "--doctest-continue-on-failure",
}  # fmt: skip
SKIP_DIRS = {".git", ".hg", ".tox", ".nox", ".venv", "venv", "node_modules", "build", "dist", "__pycache__"}
# folders whose test-looking files a project rarely runs in its suite
NOT_SUITE = {"benchmarks", "benchmark", "bench", "asv_bench", "docs", "doc", "examples", "example", "vendor", "_vendor",
             "vendored", "third_party", "thirdparty", "extern", "externals"}  # fmt: skip


def pytest_invocation(args: list[str], repo: Path) -> tuple[list[str], list[str], list[str]]:
    """(paths that exist in repo, kept options, other options) of pytest's arguments."""
    paths, kept, other = [], [], []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-"):
            flag = a.split("=", 1)[0]
            takes = "=" not in a and flag in VALUE_OPTS and i + 1 < len(args)
            opt = [a, args[i + 1]] if takes else [a]
            short = len(flag) > 2 and flag[:2] in ("-p", "-m", "-k", "-W", "-o") and not flag.startswith("--")
            (kept if flag in KEPT_OPTS or short else other).extend(opt)
            i += len(opt)
            continue
        p = a.split("::")[0].rstrip("/")
        p = p[2:] if p.startswith("./") else p
        if p not in ("", ".") and not Path(p).is_absolute() and ".." not in Path(p).parts and (repo / p).exists():
            paths.append(p)
        elif p not in ("", "."):
            other.append(a)
        i += 1
    return list(dict.fromkeys(paths)), kept, other


def python_files_in(root: Path):
    """The .py files under `root` (or `root` itself), sorted, outside VCS, tool and build folders."""
    for p in sorted(root.iterdir()) if root.is_dir() else [root]:
        if p.is_dir():
            if p.name not in SKIP_DIRS and not p.name.startswith("."):
                yield from python_files_in(p)
        elif p.suffix == ".py":
            yield p


def is_test_file(p: Path) -> bool:
    return p.name.startswith("test") or p.name.endswith("_test.py") or p.name == "conftest.py"


def test_files_under(repo: Path, roots: list[str]) -> list[Path]:
    return [p for r in roots or ["."] for p in python_files_in(repo / r) if is_test_file(p)]


def outside_suite(repo: Path) -> list[str]:
    """Top-level folders named like benchmarks/docs/examples/vendored code that hold test-looking files,
    when test files also exist elsewhere (so ignoring them still leaves a suite)."""
    files = [p.relative_to(repo) for p in test_files_under(repo, []) if p.name != "conftest.py"]
    odd = sorted({f.parts[0] for f in files if len(f.parts) > 1 and f.parts[0].lower() in NOT_SUITE})
    rest = [f for f in files if not (len(f.parts) > 1 and f.parts[0] in odd)]
    return odd if rest else []


def local_modules(repo: Path) -> set[str]:
    """Names importable from the tree itself: every package folder and module file name."""
    names = set()
    for p in python_files_in(repo):
        names.add(p.stem)
        names |= {part for part in p.relative_to(repo).parts[:-1]}
    return names


def imports_of(files: list[Path]) -> set[str]:
    """Top-level module names the files import (absolute imports and pytest.importorskip("x") at statement
    level, in any block; expressions are not searched)."""
    names: set[str] = set()
    for f in files:
        try:
            tree = ast.parse(f.read_text(errors="replace"))
        except (SyntaxError, ValueError):
            continue
        stack = list(tree.body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
            elif isinstance(node, (ast.Assign, ast.Expr)) and isinstance(node.value, ast.Call):
                call = node.value
                if getattr(call.func, "attr", "") == "importorskip" and call.args:
                    a = call.args[0]
                    names |= (
                        {a.value.split(".")[0]} if isinstance(a, ast.Constant) and isinstance(a.value, str) else set()
                    )
            for block in ("body", "orelse", "finalbody", "handlers"):
                stack += [n for n in getattr(node, block, []) if isinstance(n, (ast.stmt, ast.excepthandler))]
            stack += [n for c in getattr(node, "cases", []) for n in c.body]
    return names


def third_party_imports(repo: Path, roots: list[str]) -> list[str]:
    """Sorted third-party top-level modules the test files under roots import."""
    names = imports_of(test_files_under(repo, roots)) - set(sys.stdlib_module_names) - local_modules(repo)
    return sorted(n for n in names if n.isidentifier() and n != "__future__")


@functools.cache
def _import_map() -> dict[str, str]:
    p = Path(__file__).parent / "data" / "import_map.json"
    try:
        return json.loads(p.read_text()).get("map", {})
    except (OSError, ValueError, AttributeError):
        return {}


def dists_for(module: str) -> set[str]:
    """Canonical distribution names that plausibly provide top-level `module`."""
    m = canonicalize_name(module)
    out = {m, canonicalize_name("python-" + module), canonicalize_name(module + "-python"), canonicalize_name("py" + m)}
    if module in _import_map():
        out.add(canonicalize_name(_import_map()[module]))
    return out
