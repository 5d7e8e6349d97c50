"""factory/acquire.py: a local git source read again after it moved on (the clone cache is refreshed), a
tree git cannot write out, a release with wheels only."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from bugforge.errors import BugforgeError
from bugforge.factory.acquire import _sdist_from_index, acquire, wheels_only


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
    preparing its metadata; the file comes from the package index (PyPI) directly, its hash checked."""
    monkeypatch.setenv("BUGFORGE_HOME", str(tmp_path / "home"))
    got = acquire("pypi:html5lib==1.1", None, tmp_path / "a")
    assert got.name == "html5lib" and (tmp_path / "a" / "html5lib" / "tests").is_dir()
    assert "Version: 1.1" in (tmp_path / "a" / "PKG-INFO").read_text()


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


TRITON_FILES = [  # triton's index entries: wheels of each release, never an sdist (fresh sample, issue 38)
    "triton-3.8.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    "triton-3.9.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    "triton-3.9.0-cp313-cp313-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl",
]


def test_a_release_with_wheels_only_is_one_not_applicable_line(tmp_path, monkeypatch):
    assert wheels_only(TRITON_FILES, "triton", "3.9.0") and not wheels_only(TRITON_FILES, "triton", "3.10.0")
    both = ["python_docx-1.2.0-py3-none-any.whl", "python_docx-1.2.0.tar.gz"]
    assert not wheels_only(both, "python-docx", "1.2.0") and wheels_only(both[:1], "Python.Docx", "1.2.0")
    listing = json.dumps({"files": [{"filename": f, "url": f"../../f/{f}", "hashes": {}} for f in TRITON_FILES]})

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200 if self.path == "/simple/triton/" else 404)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.end_headers()
            self.wfile.write(listing.encode() if self.path == "/simple/triton/" else b"{}")

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{server.server_address[1]}/simple")
    try:
        with pytest.raises(BugforgeError) as e:
            _sdist_from_index("triton", "3.9.0", tmp_path)
        assert _sdist_from_index("triton", "3.10.0", tmp_path) is None  # not listed at all: pip's error stands
    finally:
        server.shutdown()
    assert "\n" not in e.value.line() and "not a pure-Python project with an sdist" in e.value.what
    assert not list(tmp_path.iterdir())
