"""Test modules pytest's file-name discovery would miss, found from the tree's syntax (never run): a
unittest suite whose modules are not named like tests (`pkg/tests/asyncio.py`, run by its project as
`python -m pkg.tests`). The recipe then widens pytest's `python_files` by those modules' paths, so that
every run that takes the recipe's pytest arguments discovers them: the baseline, validation, the
eval_script and every grader (docs/environments.md, "Test discovery")."""

from __future__ import annotations

import ast
import fnmatch
import glob
import re
import shlex
from pathlib import Path

from bugforge.factory.project_files import ini
from bugforge.factory.pytest_config import has_pytest_config, unittest_style
from bugforge.factory.test_scope import python_files_in
from bugforge.records import Recipe

DEFAULT_PYTHON_FILES = ["test_*.py", "*_test.py"]
UNITTEST_STYLE = ["test*.py", "*_test.py", "tests.py"]  # a configuration-less unittest suite's file names
NOT_MODULES = {"__init__.py", "__main__.py", "conftest.py", "setup.py"}
TESTCASE_BASES = {"TestCase", "IsolatedAsyncioTestCase", "AsyncTestCase"}


def configured_python_files(repo: Path, pyproject: dict, setup_cfg, tox) -> list[str] | None:
    """pytest's `python_files` from the one file pytest itself would read (pytest.ini, pyproject.toml's
    [tool.pytest.ini_options] or [tool.pytest], tox.ini, setup.cfg); None when not configured there."""
    tool = pyproject.get("tool", {}).get("pytest", {})
    cfg = tool.get("ini_options", tool) if isinstance(tool, dict) else {}
    if (repo / "pytest.ini").exists():
        value = ini(repo / "pytest.ini").get("pytest", "python_files", fallback=None)
    elif cfg:
        value = cfg.get("python_files")
    else:
        cp, section = (tox, "pytest") if tox.has_section("pytest") else (setup_cfg, "tool:pytest")
        value = cp.get(section, "python_files", fallback=None) if cp.has_section(section) else None
    if value is None:
        return None
    return shlex.split(value) if isinstance(value, str) else [str(v) for v in value]


def matches(rel: str, patterns: list[str]) -> bool:
    """Whether the file at `rel` (relative to the root, posix) matches one of pytest's `python_files`
    patterns as pytest matches them (`fnmatch_ex`: the base name, or the path for a pattern with a /)."""
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(("/" + rel) if "/" in p else name, ("*/" + p) if "/" in p else p) for p in patterns)


def _classes(path: Path) -> list[tuple[str, list[str], bool]]:
    """(name, base names, defines a test* method) of each top-level class of the module at `path`."""
    try:
        tree = ast.parse(path.read_text(errors="replace"))
    except (SyntaxError, ValueError, OSError):
        return []
    out = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
            tests = any(
                isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test") for n in node.body
            )
            out.append((node.name, bases, tests))
    return out


def testcase_modules(files: dict[str, list[tuple[str, list[str], bool]]]) -> set[str]:
    """The modules (keys of `files`: path -> its classes) defining a unittest.TestCase subclass with tests:
    a class deriving, through classes of these files, from a base named like TestCase, that defines or
    inherits (from these files) a test* method."""
    cases = set(TESTCASE_BASES)
    tested: set[str] = set()
    changed = True
    while changed:
        changed = False
        for classes in files.values():
            for name, bases, tests in classes:
                case = any(b in cases or b.endswith("TestCase") for b in bases)
                if case and name not in cases:
                    cases.add(name)
                    changed = True
                if case and (tests or any(b in tested for b in bases)) and name not in tested:
                    tested.add(name)
                    changed = True
    return {p for p, classes in files.items() if any(n in tested for n, _, _ in classes)}


def suite_folder(rel: str) -> str | None:
    """The shallowest folder of the file at `rel` named like tests (tests/, testing/, unittests/); None
    where no folder of its path is."""
    parts = rel.split("/")[:-1]
    i = next((i for i, d in enumerate(parts) if "test" in d.lower()), None)
    return None if i is None else "/".join(parts[: i + 1])


def unnamed_unittest_modules(repo: Path, roots: list[str], patterns: list[str]) -> list[str]:
    """Modules (paths relative to `repo`) under a folder named like tests that define unittest.TestCase
    subclasses with tests, where no file anywhere under that folder matches `patterns` (pytest's
    python_files): pytest would collect nothing of that suite."""
    paths: list[str] = []
    for root in roots or ["."]:
        paths += [p.relative_to(repo).as_posix() for p in python_files_in(repo / root)]
    suites = {r: suite_folder(r) for r in dict.fromkeys(paths)}
    named = {suites[r] for r in suites if suites[r] is not None and matches(r, patterns)}
    files = {r: _classes(repo / r) for r, s in suites.items() if s is not None and s not in named}  # (only these read)
    return sorted(r for r in testcase_modules(files) if r.rsplit("/", 1)[1] not in NOT_MODULES)


def _word(p: str) -> str:
    """One pattern as an `args` ini value's word (pytest splits it with shlex); glob characters in a
    file's own path escaped."""
    return p if re.fullmatch(r"[^\s'\"\\]+", p) else shlex.quote(p)


def widen_discovery(repo: Path, r: Recipe, roots: list[str], pyproject: dict, setup_cfg, tox) -> None:
    """Add `-o python_files=...` to r.pytest_args where pytest's file names would miss tests: a
    configuration-less unittest suite (test*.py, tests.py); unittest modules not named like tests
    (unnamed_unittest_modules), each by its path, beside the patterns already in force."""
    configured = configured_python_files(repo, pyproject, setup_cfg, tox)
    patterns = list(configured or DEFAULT_PYTHON_FILES)
    style = not has_pytest_config(pyproject, setup_cfg, tox, repo) and unittest_style(repo)
    if style:
        patterns = list(UNITTEST_STYLE)
    extra = unnamed_unittest_modules(repo, roots, patterns)
    if not (style or extra):
        return
    r.pytest_args += ["-o", "python_files=" + " ".join(_word(p) for p in patterns + [glob.escape(e) for e in extra])]
    if style:
        r.notes.append("pytest: unittest-style file names (test*.py) collected too")
    if extra:
        shown = ", ".join(extra[:3]) + (f" and {len(extra) - 3} more" if len(extra) > 3 else "")
        r.notes.append(
            f"pytest: {len(extra)} unittest modules not named like tests collected too ({shown}):"
            " python_files widened by their paths"
        )
