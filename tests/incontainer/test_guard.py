"""guard.py's hand-over of the tree to the test user and its rule on test modules' files (`given`):
real chown and setuid (root only, as the graders run these), a real tree on disk. Rounds 22 and 23
rewrote, renamed and linked test files during the run; the test user may now do none of that."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pytest

from bugforge.incontainer.guard import give_tree, given

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="chown and setuid need root, as the graders have")
FILES = ["pkg/__init__.py", "pkg/_speed.so", "pkg/testing/helpers.py", "tests/__init__.py", "tests/test_a.py",
         "tests/data/sample.txt", "conftest.py", "src/b_test.py", "README"]  # fmt: skip


def _as(user, fn):
    """fn() in a forked child running as `user`; whether it returned True."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            ok = fn()
        except BaseException:  # noqa: BLE001 - a forked child must never return into pytest
            ok = False
        os._exit(0 if ok is True else 1)
    return os.waitpid(pid, 0)[1] == 0


def _tree():
    tree = Path(tempfile.mkdtemp(prefix="bf-guard-"))  # (the test user must reach it: pytest's are root's only)
    os.chmod(tree, 0o755)
    for name in FILES:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("x = 1\n")
        os.chmod(tree / name, 0o666)
    return tree


def _refused(step):
    try:
        step()
    except PermissionError:
        return True
    return False


def test_the_tree_is_the_test_users_to_write_beside_but_not_to_change():
    """Every file of the tree is root's and unwritable to the test user (round 22 rewrote test modules, round
    23 renamed them, round 24 wrote its result into a golden data file and put it back at exit); a test
    may still make new files beside them."""
    tree, nobody = _tree(), pwd.getpwnam("nobody")
    try:
        give_tree(nobody, str(tree))
        assert all(os.stat(tree / n).st_uid == 0 and not os.stat(tree / n).st_mode & 0o022 for n in FILES)
        test, data = tree / "tests/test_a.py", tree / "tests/data/sample.txt"
        assert _as(nobody, lambda: _refused(lambda: test.write_text("")))  # rewritten in place (round 22)
        assert _as(nobody, lambda: _refused(lambda: os.rename(test, tree / "tests/away.py")))  # renamed (round 23)
        assert _as(nobody, lambda: _refused(lambda: os.unlink(test)))
        assert _as(nobody, lambda: _refused(lambda: data.write_text("5")))  # a golden file (round 24)
        assert _as(nobody, lambda: _refused(lambda: os.unlink(data)))
        assert _as(nobody, lambda: (tree / "tests/data/out.txt").write_text("ok") == 2)  # a test writes beside
    finally:
        shutil.rmtree(tree)


def test_a_test_module_is_the_graders_only_as_a_file_of_roots():
    """In an unprivileged run (every grader's) a test module of the tree is compiled as the tests' own only
    from a regular file of root's in a directory of root's, or a link of root's to one; not from a file
    or a link the test user made (round 23 linked test files to edited copies outside the tree)."""
    tree, nobody = _tree(), pwd.getpwnam("nobody")
    outside = Path(tempfile.mkdtemp(prefix="bf-out-"))
    try:
        os.chmod(outside, 0o755)
        (outside / "edited.py").write_text("")
        give_tree(nobody, str(tree))
        os.symlink(tree / "tests/test_a.py", tree / "tests/test_tracked_link.py")  # (root's: a tracked link)
        root = str(tree) + "/"
        assert given(tree / "README", root)  # (as root: the factory's own runs)

        def as_the_test_user():
            os.symlink(outside / "edited.py", tree / "tests/test_b.py")
            (tree / "tests/test_c.py").write_text("")
            return (
                given(tree / "tests/test_a.py", root)
                and given(tree / "tests/test_tracked_link.py", root)
                and not given(tree / "tests/test_b.py", root)
                and not given(tree / "tests/test_c.py", root)
                and given(outside / "edited.py", root)  # (outside the tree: pytester's files)
            )

        assert _as(nobody, as_the_test_user)
    finally:
        shutil.rmtree(tree)
        shutil.rmtree(outside)
