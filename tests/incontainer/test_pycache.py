"""The test server's bytecode cache (bugforge.incontainer.pycache), on the host: it settles past the newest source."""

from __future__ import annotations

import os
import sys
import time


def test_bytecode_cache_settles_past_the_newest_source(tmp_path, monkeypatch):
    """The test server's bytecode cache trusts a source's size and mtime in whole seconds: after the
    preload it waits until the clock has passed the newest stamp in the tree, and drops the cache when a
    stamp lies further ahead than it would wait."""
    from bugforge.incontainer import pycache

    tree, cache = tmp_path / "tree", tmp_path / "cache"
    (tree / ".git").mkdir(parents=True)
    cache.mkdir()
    monkeypatch.setattr(sys, "pycache_prefix", str(cache))
    src = tree / "mod.py"
    src.write_text("X = 1\n")
    pycache.settle(str(tree))
    assert int(time.time()) > int(src.stat().st_mtime) and cache.exists()  # an edit now gets another second
    (tree / ".git" / "future").write_text("")  # git's own files are not sources
    os.utime(tree / ".git" / "future", (time.time() + 3600,) * 2)
    pycache.settle(str(tree))
    assert cache.exists()
    os.utime(src, (time.time() + 3600,) * 2)
    pycache.settle(str(tree))
    assert not cache.exists()
