"""The test server's bytecode cache (sys.pycache_prefix, root's, outside the tree; BUGFORGE_PYCACHE):
the preload's collection writes it, every later run reads it and none writes it. An entry is valid
while its source keeps its size and its mtime in whole seconds. docs/test-server.md.
Python 3.9, standard library only."""

import os
import shutil
import sys
import time

from .shell import files_under


class BytecodeCache:
    """The cache as runs must find it: a run that wrote it anyway (a test calling compileall as root)
    could leave bytecode of a changed source behind, so then the whole cache goes, before the next run
    of either server (the runs of one workbench come one at a time)."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.expected = None  # {path: (size, mtime)}, once a run has looked

    def _state(self):
        return {path: (st.st_size, st.st_mtime_ns) for path, st in files_under(self.prefix).items()}

    def remember(self):
        """Before this server's first run: the cache as the preload left it."""
        if self.expected is None:
            self.expected = self._state()

    def check(self):
        """After a run: drop the cache if the run changed it."""
        if self._state() != self.expected:
            shutil.rmtree(self.prefix, ignore_errors=True)
            self.expected = {}


def settle(cwd):
    """A source in the tree changed in the current second (or stamped in the future) could be changed
    again, to the same size, within its second and still match its cache entry: wait for the clock to
    pass it (a second at most), or drop the cache (sys.pycache_prefix) when a stamp lies further ahead."""
    newest = max((st.st_mtime for st in files_under(cwd, [os.path.join(cwd, ".git")]).values()), default=0)
    wait = int(newest) + 1.01 - time.time()
    if wait > 2:
        shutil.rmtree(sys.pycache_prefix, ignore_errors=True)
    elif wait > 0:
        time.sleep(wait)
