"""guard.py's hand-over of the tree to the test user, and the witness's rule on test modules' files:
real chown and setuid (root only: the graders run these as root), a real tree on disk. Round 22 rewrote
test files during the run, before the grader compiled them; the test user may now write none."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pytest

from bugforge.incontainer.guard import give_tree
from bugforge.incontainer.witness import given

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="chown and setuid need root, as the graders have")
FILES = ["pkg/__init__.py", "pkg/_speed.so", "pkg/testing/helpers.py", "tests/__init__.py", "tests/test_a.py",
         "tests/data/sample.txt", "conftest.py", "src/b_test.py", "README"]  # fmt: skip


def test_the_tree_is_the_test_users_but_for_python_and_native_modules(tmp_path):
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
        os.chmod(tmp_path / name, 0o666)
    nobody = pwd.getpwnam("nobody")
    give_tree(nobody, str(tmp_path))
    roots = {n for n in FILES if os.stat(tmp_path / n).st_uid == 0}
    assert roots == {n for n in FILES if n.endswith((".py", ".so"))}  # (any python_files pattern's modules)
    assert all(not os.stat(tmp_path / n).st_mode & 0o022 for n in roots)
    assert os.stat(tmp_path / "tests/data").st_uid == nobody.pw_uid  # (a test may still write beside its files)


def test_a_test_module_the_test_user_owns_is_not_the_graders():
    """In an unprivileged run (every grader's), a test module of the tree is compiled as the tests' own
    only from a file of root's; outside the tree (pytester's) any file is."""
    tmp_path = Path(tempfile.mkdtemp(prefix="bf-guard-"))  # (the test user must reach it: pytest's are root's only)
    os.chmod(tmp_path, 0o755)
    mine, theirs, outside = tmp_path / "tree/tests/test_a.py", tmp_path / "tree/tests/test_b.py", tmp_path / "t.py"
    for f in (mine, theirs, outside):
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("")
    nobody = pwd.getpwnam("nobody")
    os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
    os.chown(outside, nobody.pw_uid, nobody.pw_gid)
    root = str(tmp_path / "tree") + "/"
    assert given(theirs, root)  # (as root: the factory's own runs)
    pid = os.fork()
    if pid == 0:
        try:
            os.setuid(nobody.pw_uid)
            ok = given(mine, root) and not given(theirs, root) and given(outside, root)
        except BaseException:  # noqa: BLE001 - a forked child must never return into pytest
            ok = False
        os._exit(0 if ok else 1)
    status = os.waitpid(pid, 0)[1]
    shutil.rmtree(tmp_path)
    assert status == 0
