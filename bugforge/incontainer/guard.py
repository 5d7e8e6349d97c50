"""The container guard: untrusted runs go as an unprivileged user, and after each one the server
kills every process of that user and checks every place the user can write (the repository's contents,
the temporary directories, the home directory) by change time, which a process cannot forge. Files the
run created are deleted; a changed file that git does not restore is `tainted`. The repository
directory itself and its .git stay root's. docs/test-server.md. Python 3.9, standard library only."""

import os
import pwd
import shutil
import signal
import stat
from pathlib import PosixPath

from .shell import sh, walk


def give_tree(pw, cwd):
    """Hand the repository's contents (not the directory itself, not .git) over for a run as the user `pw`:
    every file is root's and unwritable to the user; every directory root's, sticky and writable by all
    (as /tmp): a test may still make new files beside the tree's, and no one but root may rename or
    remove a file of root's there. So a test module is imported from root's file (the witness checks it:
    witness.given; rounds 22 and 23 rewrote, renamed and linked test files during the run), native code
    is root's (installed.py), and the data a test compares with is the commit's (round 24 wrote its
    result into a golden file beside the test and put it back at exit). A test that rewrites a file of
    the tree in place fails (docs/security.md, known limits)."""
    tops = [os.path.join(cwd, name) for name in os.listdir(cwd) if name != ".git"]
    for path in [*tops, *walk(tops, set())]:  # (one walk, no process: four find passes a run cost grading time)
        try:
            _give(path, os.lstat(path))
        except FileNotFoundError:  # (gone since it was listed: nothing to give)
            pass


def _give(path, st):
    if stat.S_ISDIR(st.st_mode):
        os.chown(path, 0, 0)
        os.chmod(path, 0o1777)
    else:
        os.lchown(path, 0, 0)
        if stat.S_ISREG(st.st_mode):
            os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o022)


def given(fn, root=os.environ.get("BUGFORGE_ROOT", "/testbed").rstrip("/") + "/"):
    """Whether a test module's file may be compiled as the tests' own: outside the tree (pytester's), in a
    run as root (the factory's), or a regular file of root's in a directory of root's, or a link of root's
    (a tracked one) to such a file (guard.give_tree: rounds 22 and 23 rewrote, renamed, linked them)."""
    path = os.path.abspath(str(fn))  # (the path pytest imports, not where a link leads)
    try:
        if os.getuid() == 0 or not path.startswith(root):
            return True
        st, where = os.lstat(path), os.lstat(os.path.dirname(path))
        if stat.S_ISLNK(st.st_mode):
            return st.st_uid == 0 and os.path.realpath(path) != path and given(os.path.realpath(path), root)
        return stat.S_ISREG(st.st_mode) and st.st_uid == 0 and stat.S_ISDIR(where.st_mode) and where.st_uid == 0
    except OSError:
        return False


def plain_path(fn, audit, tamper):
    """One plain path for a test module's name and its text (round 24 handed pytest's rewrite a Path whose
    str() named the test file and whose read_bytes() gave an edited one): a path that is not a plain
    string is told to the monitor (`audit(tamper, reason)`)."""
    path = os.fspath(fn)
    if type(path) is not str:
        audit(tamper, "a test module's path is not a plain path")
        path = str.__str__(path)
    return PosixPath(path)


def become(pw):
    """In a run's child: become the user `pw` (a pwd entry), with its home."""
    os.setgroups([])
    os.setgid(pw.pw_gid)
    os.setuid(pw.pw_uid)
    os.environ.update(HOME=pw.pw_dir, USER=pw.pw_name, LOGNAME=pw.pw_name)


def kill_user(uid, gid):
    """kill(-1) from a process of that user reaches every process of the user, forks included."""
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


class Guard:
    """What the guarded places held when the tree was clean, for one user."""

    def __init__(self, user, cwd, out_dir):
        """Give the repository's contents (not the directory itself, not .git) to `user` and record the
        places the user can write as they are now (the tree must be as every restore leaves it)."""
        pw = pwd.getpwnam(user)
        give_tree(pw, cwd)
        self.user, self.uid, self.gid, self.home = user, pw.pw_uid, pw.pw_gid, pw.pw_dir
        self.roots = [cwd, "/tmp", "/var/tmp", "/dev/shm", pw.pw_dir]
        self.skip = {os.path.join(cwd, ".git"), out_dir}
        _, tracked = sh("git ls-files -z", cwd, capture=True)
        self.known = set(walk(self.roots, self.skip))
        self.tracked = {os.path.join(cwd, p) for p in tracked.split("\0") if p}

    def drop_privileges(self):
        """In a run's child: become the user, with its home."""
        become(pwd.getpwnam(self.user))

    def kill_user(self):
        kill_user(self.uid, self.gid)

    def check(self, since_ns):
        """Delete what the run created in the guarded places; name what it changed that stays changed."""
        now = set(walk(self.roots, self.skip))
        tainted = sorted(p for p in self.known - now if p not in self.tracked)  # deleted, and git will not bring back
        for path in sorted(now, reverse=True):  # children before their parents
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if st.st_ctime_ns < since_ns or path in self.tracked:
                continue
            is_dir = stat.S_ISDIR(st.st_mode)  # lstat: a link to a directory is not one
            if path not in self.known:
                if is_dir:
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.remove(path)
            elif not is_dir:
                tainted.append(path)
        for root in self.roots:
            if not os.path.isdir(root) or os.path.islink(root):
                tainted.append(root)
        return tainted
