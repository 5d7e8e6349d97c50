"""The preloaded test server's held pytest session. `preload` collects the suite in the server's own
process (so children fork with the project and its test modules imported) and, where pytest would start
running tests, holds the session and serves the next requests from inside that pytest run. A child then
runs the selected items of that one collection with pytest's own run loop and the session's finish
(Held.run): no configuration, no plugin registration, no collection per run. docs/test-server.md.
Python 3.9, standard library and pytest only."""

import os
import sys

import pytest

from .protocol import Response
from .pycache import settle
from .shell import tail
from .start import PROBE


class Held:
    """The session the preload collected, and the pytest arguments of that run."""

    def __init__(self):
        self.session = None
        self.args = None

    def covers(self, args):
        """Whether a run with these pytest arguments can go on the held session (they start with the
        preload's arguments: the test files that follow select from its collection)."""
        return self.session is not None and args[: len(self.args)] == self.args

    def run(self, probe, log_fd):
        """In a child: run the tests the request selects on the held session's items, as the rest of a
        pytest run would (pytest's run loop, then the session's finish), and return pytest's exit status.
        `probe`: the probe plugin the preload loaded."""
        session = self.session
        config = session.config
        if probe.limits.watching():  # (started at the session's start, which was the preload's)
            probe.limits.start_watchdog()
        items = list(session.items)
        probe.pytest_collection_modifyitems(session, config, items)  # BUGFORGE_SELECT: exactly those
        session.items, session.testscollected, session.testsfailed = items, len(items), 0
        capman = config.pluginmanager.getplugin("capturemanager")
        capturing = getattr(capman, "_global_capturing", None)
        for cap in (getattr(capturing, "out", None), getattr(capturing, "err", None)):
            if isinstance(getattr(cap, "targetfd_save", None), int):
                os.dup2(log_fd, cap.targetfd_save)  # what capturing restores between tests: this run's log
        status = 0
        try:
            config.hook.pytest_runtestloop(session=session)
            status = 1 if session.testsfailed else 0 if items else 5
        except BaseException:  # noqa: BLE001 (an interrupt: -x, a test raising KeyboardInterrupt or pytest.exit)
            status = 2
        config.hook.pytest_sessionfinish(session=session, exitstatus=status)
        config._ensure_unconfigure()
        return status


class _Hold:
    """The preloaded server's pytest plugin: where the preload's pytest run would start running tests,
    hand the session to `hold`."""

    def __init__(self, held, hold):
        self.held, self.hold = held, hold

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        if self.held.session is not None:
            return None  # a child running its tests: pytest's own loop does that
        capman = session.config.pluginmanager.getplugin("capturemanager")
        if capman is not None:
            capman.suspend_global_capture(in_=True)
        self.hold(session)


def preload(server, req):
    """Collect the suite in this process (server: the zygote.Server), then hold the session and serve
    the next requests from there; the answer comes from there too. Returns a Response only when pytest
    stopped before it would run tests (an error in the arguments or the configuration): children then
    run pytest themselves, on the project this collection imported."""
    cwd, log_path = req.cwd, req.need("log")
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    saved = os.dup(1), os.dup(2)
    old_env, old_path = dict(os.environ), list(sys.path)

    def restore():  # this server's own output, environment and imports, as they were
        sys.dont_write_bytecode = True
        if sys.pycache_prefix:
            settle(cwd)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.environ.clear()
        os.environ.update(old_env)
        sys.path[:] = old_path
        server.live.index(cwd)

    def hold(session):
        restore()
        probe = sys.modules.get(PROBE)
        if probe is not None:  # the clean tree's collection is the runs' starting point: snapshot it
            probe.plugin.integrity.snapshot()
            probe.plugin.pin()
        server.held.session, server.held.args = session, list(req.preload)
        server.answer(Response(preloaded=len(server.live.sources), held=True, exit=0, log=tail(log_path)))
        server.serve(sys.stdin)  # the next requests, from inside this pytest run
        os._exit(0)

    os.dup2(log, 1)
    os.dup2(log, 2)
    try:
        os.environ.update(req.env)
        # with a bytecode cache outside the tree (BUGFORGE_PYCACHE, root's), this one collection
        # leaves compiled modules and assertion-rewritten test modules for every later run to read
        sys.dont_write_bytecode = not sys.pycache_prefix
        sys.path[:0] = [p for p in req.env.get("PYTHONPATH", "").split(":") if p]
        code = int(pytest.main(list(req.preload), plugins=[_Hold(server.held, hold)]))
    finally:
        if server.held.session is None:
            restore()
    return Response(preloaded=len(server.live.sources), exit=code, log=tail(log_path))
