"""Packaging: installed into a fresh virtual environment (regular and editable), the repository adds one
top-level import name, `bugforge`, whose subpackages (the top-level folders mapped by pyproject's
package-dir) import from a directory outside the repository. No download: the environment sees the host's
packages (--system-site-packages) and pip installs with --no-deps --no-build-isolation --no-index."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SUBPACKAGES = ["factory", "sandbox", "agent", "training", "images", "cli", "testing", "incontainer", "view"]
IMPORT = "import bugforge, " + ", ".join(f"bugforge.{p}" for p in SUBPACKAGES) + "; print(bugforge.__file__)"
PIP_ENV = {"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONNOUSERSITE": "1"}


def run(*args, cwd: Path) -> subprocess.CompletedProcess:
    r = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **PIP_ENV}, timeout=600
    )
    assert r.returncode == 0, (args, r.stdout[-2000:], r.stderr[-3000:])
    return r


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A copy of the working tree's files (tracked, and untracked but not ignored): building a wheel in
    place would leave build/ and *.egg-info in the repository."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    dst = tmp_path_factory.mktemp("src") / "bugforge"
    for name in filter(None, (f.decode() for f in files)):
        if (REPO / name).is_file():
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dst / name)
    return dst


def venv(root: Path) -> tuple[Path, Path]:
    """A fresh virtual environment seeing the host's packages: (its python, its site-packages)."""
    run(sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", root, cwd=root.parent)
    python = root / "bin" / "python"
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=root).stdout.strip()
    return python, Path(site)


def added_names(site: Path, before: set[str]) -> set[str]:
    """Import names the install added to site-packages (its .dist-info folder and __pycache__ left out)."""
    names = set()
    for entry in set(os.listdir(site)) - before:
        if entry.endswith(".dist-info") or entry == "__pycache__":
            continue
        names.add(entry.removesuffix(".py").removesuffix(".pth"))
    return names


@pytest.fixture(scope="module")
def regular(source, tmp_path_factory) -> tuple[Path, Path, set[str]]:
    """A regular (not editable) install of the tree into a fresh venv: (its python, its site-packages, the
    names site-packages held before)."""
    root = tmp_path_factory.mktemp("regular")
    python, site = venv(root / "venv")
    before = set(os.listdir(site))
    run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", source, cwd=root)
    return python, site, before


def test_a_regular_install_adds_only_bugforge(regular, tmp_path):
    python, site, before = regular
    assert added_names(site, before) == {"bugforge"}
    # the distribution's own record says the same: every file it installed is under bugforge/
    files = run(
        python,
        "-c",
        "from importlib.metadata import distribution as d\nfor f in d('bugforge').files: print(f)",
        cwd=tmp_path,
    ).stdout.split()
    tops = {f.split("/")[0] for f in files if not f.startswith("..") and ".dist-info/" not in f}
    assert tops == {"bugforge"}, tops
    assert any(f.startswith("bugforge/images/") and f.endswith(".Dockerfile") for f in files)  # package data
    assert any(f.startswith("bugforge/factory/templates/") for f in files)
    assert "bugforge/factory/data/import_map.json" in files  # the repair loop's import-name map
    assert "bugforge/view/templates/base.html" in files and "bugforge/view/static/style.css" in files  # the viewer's
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = run(python, "-c", IMPORT, cwd=elsewhere).stdout.strip()
    assert Path(out).parent == site / "bugforge"  # the installed copy, not the repository
    for name in ("factory", "sandbox", "agent", "training", "images"):  # no stray top-level names
        r = subprocess.run([python, "-c", f"import {name}"], cwd=elsewhere, capture_output=True, text=True)
        assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr, name


def test_an_editable_install_maps_the_folders_into_bugforge(source, tmp_path):
    python, site = venv(tmp_path / "venv")
    before = set(os.listdir(site))
    run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", source, cwd=tmp_path)
    added = added_names(site, before)
    assert all("bugforge" in n for n in added), added  # its .pth and import finder, nothing else
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = IMPORT + "; print(bugforge.factory.__file__); print(bugforge.sandbox.__file__)"
    out = run(python, "-c", code, cwd=elsewhere).stdout.split()
    assert out == [str(source / p / "__init__.py") for p in ("bugforge", "factory", "sandbox")]
    for name in ("factory", "sandbox", "agent", "training", "images"):
        r = subprocess.run([python, "-c", f"import {name}"], cwd=elsewhere, capture_output=True, text=True)
        assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr, name


def test_the_installed_demo_finds_its_example_from_anywhere(regular, tmp_path):
    """The demo's example library is package data: found from another directory, identical to the
    source's; without it, `bugforge demo` stops at once with one line and writes nothing."""
    python, site, _ = regular
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    bugforge = python.parent / "bugforge"
    assert "--max-candidates" in run(bugforge, "demo", "--help", cwd=elsewhere).stdout
    found = run(python, "-c", "from bugforge.cli.demo import example_dir; print(example_dir())", cwd=elsewhere)
    example = Path(found.stdout.strip())
    assert example == site / "bugforge" / "examples" / "textkit"
    shipped = {str(f.relative_to(example)) for f in example.rglob("*") if f.is_file() and f.suffix != ".pyc"}
    tracked = subprocess.run(
        ["git", "ls-files", "examples/textkit"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert shipped == {f.removeprefix("examples/textkit/") for f in tracked}
    hidden = example.with_name("textkit.hidden")
    example.rename(hidden)
    try:
        r = subprocess.run(
            [bugforge, "demo", "--out", "runs"], cwd=elsewhere, capture_output=True, text=True, timeout=120
        )
    finally:
        hidden.rename(example)
    assert r.returncode == 1 and r.stderr.startswith("error: the bundled example textkit is not installed"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (elsewhere / "runs").exists()


def test_bench_scripts_run_against_the_installed_package(regular, source, tmp_path):
    """Bench scripts import the installed bugforge (none puts the repository on sys.path): each one's
    --help runs from another directory with the venv's python, and its `bugforge` is the installed one."""
    python, site, _ = regular
    benches = sorted((source / "bench").glob("*.py"))
    assert benches and not [b.name for b in benches if "sys.path" in b.read_text()]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for b in [b for b in benches if "__main__" in b.read_text()]:  # scripts (statefp.py is a pytest plugin)
        r = subprocess.run([python, b, "--help"], cwd=elsewhere, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "usage:" in r.stdout, (b.name, r.stderr[-2000:])
    # the modules a bench imports at its top are the installed ones
    code = "import runpy, sys; runpy.run_path(sys.argv[1]); print(sys.modules['bugforge.sandbox.evaluate'].__file__)"
    r = run(python, "-c", code, source / "bench" / "eval.py", cwd=elsewhere)
    assert Path(r.stdout.strip().splitlines()[-1]) == site / "bugforge" / "sandbox" / "evaluate.py"
