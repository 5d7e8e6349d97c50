"""bugforge's test server, run as root inside a warm container (`python -c SERVER`, see
bugforge.testing.tools): it imports pytest once, answers {"ready": true}, then serves requests on stdin
(one JSON object a line, a protocol.Request) and answers each with one JSON line on stdout (a
protocol.Response; a request that raises is answered {"error": ...}, the server never dies).

A request's steps, each optional, in order: files, before, setup (non-zero stops there), capture, args
(a forked child runs pytest with the probe, with a timeout: child.py), after. Special requests:
`preload` makes this server a preloaded one, holding its collected pytest session (held.py) and taking
runs with `hot` (the changed files, swapped into the live functions: hotswap.py); `guard` lets later
runs with `user` go unprivileged, the container checked after each (guard.py). BUGFORGE_PYCACHE names
a bytecode cache the preload writes and runs only read (pycache.py).

docs/test-server.md describes the design. Runs under the image's Python (3.9+): no bugforge imports,
no newer syntax."""

import gc
import os
import signal
import sys

import _pytest.config  # noqa: F401
import pytest  # noqa: F401  (the point: imported once, inherited by every child)

from .channel import Collector, pair
from .child import NOT_SWAPPABLE, run_child
from .guard import Guard
from .held import Held, preload
from .hotswap import LiveCode, changes_defaults
from .protocol import Request, Response
from .pycache import BytecodeCache
from .shell import sh, tail, write_fresh
from .start import load_runner, restore


class Server:
    """One test server's state: the guards of its users, its bytecode cache, the preloaded project's
    live code and the held pytest session (those two only in a preloaded server)."""

    def __init__(self, pycache_prefix=None):
        self.guards = {}  # user -> Guard: what the guarded places held when the user was first seen
        self.cache = BytecodeCache(pycache_prefix) if pycache_prefix else None
        self.live = LiveCode()
        self.held = Held()

    def answer(self, resp):
        sys.stdout.write(resp.to_json() + "\n")
        sys.stdout.flush()

    def serve(self, stream):
        for line in stream:
            if not line.strip():
                continue
            try:
                resp = self.serve_one(Request.from_json(line))
            except Exception as e:  # noqa: BLE001 (answer every request, never die: the error is the answer)
                resp = Response(error="%s: %s" % (type(e).__name__, e))
            self.answer(resp)

    def serve_one(self, req):
        if req.preload:
            return preload(self, req)
        if req.guard:
            return self._guard(req)
        for path, text in req.files.items():
            write_fresh(path, text)
        if req.before:
            sh(req.before, req.cwd)
        out = Response(setup_rc=0)
        if req.setup:
            rc, log = sh(req.setup, req.cwd)
            if rc != 0:
                return Response(setup_rc=rc, setup_log=log[-3000:])
        if req.capture:
            out.captured = sh(req.capture, req.cwd, capture=True)[1]
        if req.args is not None:
            return self._run(req, out)
        if req.after:
            sh(req.after, req.cwd)
        return out

    def _guard(self, req):
        """A guard for the run's user, made before any run: the tree as every restore leaves it."""
        if req.after:
            sh(req.after, req.cwd)
        self.guards[req.guard] = Guard(req.guard, req.cwd, req.need("out"))
        return Response(guarded=req.guard)

    def _run(self, req, out):
        plan = self.live.plan(req.hot, req.cwd) if req.hot is not None else None
        if self.live.sources and plan is None:  # this server's imports would be stale for this change
            out.not_swappable = True
            return out
        user = req.user
        if user and user not in self.guards:  # a snapshot taken now would hold this request's set-up tree
            raise RuntimeError("a run as %s needs a guard request first, while the tree is clean" % user)
        guard = self.guards.get(user)
        report, log, since = self._fresh_report(req)
        mine, theirs = pair()
        collector = Collector(mine, report)
        code, timed_out = run_child(self, req, log, guard, collector, theirs, plan)
        if guard:  # nothing of the run may speak after it
            guard.kill_user()
        collector.exited(code)
        collector.close()
        if code == NOT_SWAPPABLE and changes_defaults(plan):
            out.not_swappable = True  # (the child stopped before pytest: nothing ran)
            return out
        if self.cache:
            self.cache.check()
        out.exit, out.timed_out, out.report, out.log = code, timed_out, tail(report, 10**8), tail(log)
        if req.after:
            sh(req.after, cwd=req.cwd)
        if guard:
            out.tainted = guard.check(since)
        return out

    def _fresh_report(self, req):
        """(report, log, ctime in ns before the run): the run's report (root's: the collector writes it)
        and log, new files."""
        report = req.need("report")
        log = report + ".log"
        for p in (report, log):
            if os.path.lexists(p):
                os.remove(p)
        write_fresh(report, "")
        if self.cache:  # the cache as the preload left it (this server's first run)
            self.cache.remember()
        marker = os.path.join(os.path.dirname(report), ".since")
        write_fresh(marker, "")
        return report, log, os.lstat(marker).st_ctime_ns


def freeze():
    """Move what this server holds out of the collector's sight. A child's collections then scan only
    the objects the child made, instead of the whole inherited heap (which also copies every page of it:
    the collector writes to the objects it scans), which was a third of a short run's time."""
    gc.collect()
    gc.freeze()


def main(saved):
    """`saved`: sys.path to put back once the runner is loaded (the server starts as start.py says)."""
    load_runner()
    restore(saved)
    if os.environ.get("BUGFORGE_PYCACHE"):  # set only now: pytest and the standard library keep their own caches
        sys.pycache_prefix = os.environ["BUGFORGE_PYCACHE"]
    server = Server(sys.pycache_prefix)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    freeze()
    server.answer(Response(ready=True))
    server.serve(sys.stdin)


if __name__ == "__main__":
    main(list(sys.path))
