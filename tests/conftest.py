"""Shared fixtures. Everything is real: a Docker engine, images, containers, git repositories built
by the tests, pytest runs inside containers. Nothing here mocks Docker, git or the test runner."""
from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from bugforge.engine import client


@pytest.fixture(scope="session")
def engine():
    return client()


@pytest.fixture(scope="session")
def base_image(engine) -> str:
    from images import ensure_base_image
    return ensure_base_image("3.11").tag


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def git_repo(root: Path, files: dict[str, str], message: str = "init") -> Path:
    """A real git repository with `files` committed."""
    write_tree(root, files)
    run = lambda *a: subprocess.run(["git", "-C", str(root), *a], check=True, capture_output=True)  # noqa: E731
    if not (root / ".git").exists():
        run("init", "-q", "-b", "main")
        run("config", "user.email", "t@t")
        run("config", "user.name", "t")
    run("add", "-A")
    run("commit", "-q", "-m", message)
    return root


MINI = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "mini"
        version = "0.1"
        requires-python = ">=3.9"
        [project.optional-dependencies]
        test = ["pytest"]
        """,
    "src/mini/__init__.py": """
        def f(x):
            y = x + 1
            return y * 2


        def g(x):
            return x - 1


        def h(x):
            return x * 10
        """,
    "tests/test_shared.py": """
        import pytest

        from mini import h


        @pytest.fixture(scope="module")
        def ten():
            return h(1)


        def test_uses_ten(ten):
            assert ten == 10


        def test_uses_ten_too(ten):
            assert ten + 1 == 11
        """,
    "tests/test_mini.py": """
        from mini import f, g


        def test_f():
            assert f(1) == 4


        def test_g():
            assert g(1) == 0


        def test_constant():
            assert 2 + 2 == 4
        """,
}
