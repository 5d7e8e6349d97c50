"""The test server's file and shell helpers, as root: read a file's tail, write a file fresh (never
through a link a test run left behind), run a shell command, walk directory trees without following
links. Python 3.9, standard library only."""

import os
import stat
import subprocess


def tail(path, n=3000):
    """The last `n` bytes of a file, decoded ("" when it cannot be read; a link is not followed)."""
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def write_fresh(path, text):
    """Write as root without following a link or reusing a file someone else left there."""
    if os.path.lexists(path):
        os.remove(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def sh(cmd, cwd, capture=False):
    """(status, output) of a bash command; with `capture`, only its stdout (stderr is dropped)."""
    r = subprocess.run(
        ["bash", "-c", cmd],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if not capture else subprocess.DEVNULL,
    )
    return r.returncode, r.stdout.decode("utf-8", "replace")


def walk(roots, skip):
    """Every path under `roots` (directories that are not links), less the directories in `skip`."""
    for root in roots:
        if not os.path.isdir(root) or os.path.islink(root):
            continue
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if os.path.join(d, x) not in skip]
            for name in dirs + files:
                yield os.path.join(d, name)


def files_under(root, skip=()):
    """{path: lstat} of the files (not directories) under root."""
    out = {}
    for path in walk([root], set(skip)):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            out[path] = st
    return out
