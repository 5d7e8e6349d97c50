"""One test run of the test server: fork a child in a fresh process group that runs pytest with the
probe (or, in the preloaded server, the selected items of the held session, after swapping in the
changed code), with its output in the run's log; kill the whole group at the timeout and after the run.
A fork costs milliseconds; a fresh interpreter with pytest costs hundreds. docs/test-server.md.
Python 3.9, standard library and pytest only."""

import os
import signal
import sys
import time

import pytest

from .channel import ENV

PROBE = __package__ + ".probe"  # the probe plugin, as the runs load it (-p PROBE)
NOT_SWAPPABLE = 98  # a child's exit status: the live functions were not as the preloaded source made them


def run_child(server, req, log, guard, collector, theirs, plan=None):
    """(exit status, timed out) of a run. server: the zygote.Server (its live code and held session);
    guard: the Guard of the run's user, or None; collector, theirs: the verdict channel's two ends
    (channel.py), the collector reading while the run goes; plan: what LiveCode.swap swaps in first."""
    pid = os.fork()
    if pid == 0:  # child: never returns
        _child(server, req, log, guard, collector, theirs, plan)
    theirs.close()
    collector.expect(pid)
    deadline = time.monotonic() + float(req.timeout)
    timed_out, status = False, 0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            _, status = os.waitpid(pid, 0)
            break
        collector.poll(0.002)
    try:  # anything the run left behind in its process group
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
    return code, timed_out


def _child(server, req, log, guard, collector, theirs, plan):
    """The forked child: a fresh process group, output to the log, the run's user, pytest; exits."""
    try:
        collector.forget()  # (its report's descriptor too: the run must not write there)
        os.setsid()
        os.chdir(req.cwd)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)  # the server's request stream is not the run's to read
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        if guard:
            guard.drop_privileges()
        os.environ.update(req.env)
        os.environ[ENV] = str(theirs.fileno())
        sys.dont_write_bytecode = True
        sys.path[:0] = [p for p in req.env.get("PYTHONPATH", "").split(":") if p]
        if plan and not server.live.swap(plan):
            os._exit(NOT_SWAPPABLE)
        module = sys.modules.get(PROBE)
        probe = module.plugin if module is not None else None
        if probe is not None:  # loaded by the server, without a channel: this run's channel and limits,
            probe.reopen()  # then the probe's state as this run starts, for the monitor
            probe.pin()
        held = probe is not None and server.held.covers(req.args)
        code = server.held.run(probe, fd) if held else pytest.main(req.args)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(code))
    except BaseException:  # noqa: BLE001 (whatever the run raised, the child exits, never returns to the server's loop)
        os._exit(99)
