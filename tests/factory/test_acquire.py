"""factory/acquire.py: a local git source read again after it moved on (the clone cache is refreshed), a
tree git cannot write out, a pypi: release dated by its sdist."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bugforge.factory.acquire import acquire


def test_a_local_repository_is_read_at_its_current_head(git_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("BUGFORGE_HOME", str(tmp_path / "home"))
    src = git_repo(tmp_path / "proj", {"m.py": "x = 1\n"})
    first = acquire(str(src), None, tmp_path / "a")
    assert (tmp_path / "a" / "m.py").read_text() == "x = 1\n"
    git_repo(src, {"m.py": "x = 2\n"}, "second")  # a new commit: the cached clone must see it
    second = acquire(str(src), None, tmp_path / "b")
    assert (tmp_path / "b" / "m.py").read_text() == "x = 2\n"
    assert second.source_commit != first.source_commit
    subprocess.run(["git", "-C", str(src), "checkout", "-q", first.source_commit], check=True)  # detached HEAD
    acquire(str(src), None, tmp_path / "c")
    assert (tmp_path / "c" / "m.py").read_text() == "x = 1\n"
    acquire(str(src), "main", tmp_path / "d")  # a branch by name
    assert (tmp_path / "d" / "m.py").read_text() == "x = 2\n"


def test_a_bare_mirror_is_a_git_source(git_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("BUGFORGE_HOME", str(tmp_path / "home"))
    src = git_repo(tmp_path / "proj", {"m.py": "x = 1\n"})
    subprocess.run(["git", "-C", str(src), "tag", "v1"], check=True)
    git_repo(src, {"m.py": "x = 2\n"}, "second")
    bare = tmp_path / "proj.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(src), str(bare)], check=True)
    got = acquire(str(bare), "v1", tmp_path / "a")
    assert got.name == "proj" and (tmp_path / "a" / "m.py").read_text() == "x = 1\n"
    acquire(str(bare), None, tmp_path / "b")  # its HEAD
    assert (tmp_path / "b" / "m.py").read_text() == "x = 2\n"


@pytest.mark.network
def test_an_sdist_pip_cannot_prepare_is_taken_from_the_index(tmp_path, monkeypatch):
    """html5lib 1.1's setup.py imports pkg_resources, which current setuptools lacks: pip download fails
    preparing its metadata; the file comes from the package index (PyPI) directly, its hash checked, and
    its date from PyPI's upload time."""
    monkeypatch.setenv("BUGFORGE_HOME", str(tmp_path / "home"))
    got = acquire("pypi:html5lib==1.1", None, tmp_path / "a")
    assert got.name == "html5lib" and (tmp_path / "a" / "html5lib" / "tests").is_dir()
    assert "Version: 1.1" in (tmp_path / "a" / "PKG-INFO").read_text()
    assert got.date == "2020-06-22T23:32:38Z"  # PyPI's upload time of the sdist: the release's period date


def test_a_tree_git_cannot_write_out_is_one_error_line(git_repo, tmp_path):
    """python-docx's repository fallback (issue 38): the tag's commit is there but a blob of its tree is
    not (a mirror without its large files), so `git archive` fails: one line, exit 1, no tree written."""
    src = git_repo(tmp_path / "proj", {"m.py": "x = 1\n", "big.pdf": "%PDF\n"})
    blob = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD:big.pdf"], capture_output=True, text=True)
    (src / ".git" / "objects" / blob.stdout[:2] / blob.stdout.strip()[2:]).unlink()
    env = {**os.environ, "BUGFORGE_HOME": str(tmp_path / "home")}
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "bugforge.cli", "factory", "env", str(src), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert line == r.stderr.splitlines()[-1] and "git archive:" in line and blob.stdout.strip() in line
    assert not list(out.glob(".staging/*/repo")) and not (out / "proj").exists()


def test_a_pypi_release_is_dated_by_its_sdist(tmp_path, monkeypatch, sdist, package_index):
    """A pypi: source has no history: its period date is the release's (here, from an index that gives no
    upload time: the newest build time inside the sdist), so the period-correct rung can run for it."""
    monkeypatch.setenv("BUGFORGE_HOME", str(tmp_path / "home"))
    files = {
        "pyproject.toml": '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "bugforge-dated-fixture"\nversion = "1.0"\n',
        "PKG-INFO": "Metadata-Version: 2.1\nName: bugforge-dated-fixture\nVersion: 1.0\n",
        "dated.py": "X = 1\n",
    }
    name = "bugforge_dated_fixture-1.0.tar.gz"
    data = sdist(tmp_path / name, files, {"dated.py": 1614643200}).read_bytes()  # 2021-03-02
    listing = {"files": [{"filename": name, "url": f"../../f/{name}", "hashes": {}}]}
    package_index({"/simple/bugforge-dated-fixture/": json.dumps(listing).encode(), f"/f/{name}": data})
    got = acquire("pypi:bugforge-dated-fixture==1.0", None, tmp_path / "a")
    assert (tmp_path / "a" / "dated.py").read_text() == "X = 1\n" and got.history_dir is None
    assert got.date == "2021-03-02T00:00:00Z"
