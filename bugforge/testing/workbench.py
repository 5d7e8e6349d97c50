"""A warm container for many test runs (Workbench): apply a patch, run some tests with the test server
inside it, restore the tree; repeat. Requests and responses are bugforge.incontainer.protocol's
Request and Response, the same types the server reads and writes. docs/test-server.md describes the
server; docs/test-selection.md what the preloaded server is for."""

from __future__ import annotations

import time
from dataclasses import replace

import docker.errors

from bugforge import engine
from bugforge.engine import LABEL, OWNER_HOST, OWNER_PID, client
from bugforge.incontainer.protocol import Request, Response
from bugforge.records import TestLimits, TestRun
from bugforge.stream import ExecStream, StreamClosed
from bugforge.testing.tools import (
    OUT,
    PROBE_DIR,
    PYCACHE,
    SERVER,
    dir_archive,
    parse_report,
    probe_args,
    probe_env,
    tools_archive,
)

__all__ = ["OWNER_HOST", "OWNER_PID", "RESTORE", "SNAPSHOT", "Workbench"]  # owner labels: bugforge.engine
IGNORED = "/var/lib/bugforge-ignored"  # the ignored files the tree had when the container started
# file by file, into ignored directories too: a new file in a directory that was there at the start goes
IGNORED_NOW = "git -c core.quotePath=false ls-files -o -i --exclude-standard"
UNTRACKED = "/var/lib/bugforge-untracked.tar"  # the untracked files (not ignored) there at the start, as they were
SNAPSHOT = f"{IGNORED_NOW} > {IGNORED} && git ls-files -o --exclude-standard -z | tar --null -T - -cf {UNTRACKED}"
# back to the committed tree, less anything a run left behind, ignored files included (a .hypothesis
# database, a cache a test wrote): the untracked files there at the start are put back as they were, and
# the ignored ones there at the start (a built extension) stay; a directory a run made stays, emptied
RESTORE = (
    f"git reset -q --hard && git clean -fdq && tar -xf {UNTRACKED} && {{ {IGNORED_NOW} | grep -vxF -f {IGNORED} "
    "| tr '\\n' '\\0' | xargs -0r rm -rf -- ; }"
)


class Workbench:
    """A warm container for one image: apply a patch, run some tests, restore the tree; repeat.
    One container start serves many runs, and a test server inside it that has imported pytest once
    forks a child per run, so a run costs no interpreter start either. With `preload`, a second server
    collects the suite once, holds that session, and serves runs whose change is confined to function
    bodies (and literal defaults) by swapping code objects and running the selected items of its own
    collection, so such a run costs no import, configuration or collection. A run that times out is
    killed with its whole process group; a server that stops answering, or an untrusted run that leaves
    the container changed, gets a fresh container.
    Every run collects what the whole suite collects (`collect`: the recipe's test files; None or []:
    pytest's own discovery) and runs its selection of that, so a selected run imports what a run of the
    whole suite imports: a test can depend on which modules collection imported before it (a warning
    issued once)."""

    def __init__(
        self,
        image: str,
        pytest_args: list[str],
        *,
        workdir: str = "/testbed",
        preload: bool = False,
        guard: str | None = None,
        collect: list[str] | None = None,
    ):
        self.image, self.pytest_args, self.workdir, self.preload = image, pytest_args, workdir, preload
        self.collect = collect
        self.guard = guard  # runs are untrusted and go as this user; the servers guard the container
        self.container = None
        self.clean = False  # whether the tree is as RESTORE leaves it (then a request need not restore it first)
        self.server: ExecStream | None = None
        self.warm: ExecStream | None = None
        self.held = False
        self._start()

    def _servers(self, n: int) -> list[ExecStream]:
        """Start `n` test servers at once (each imports pytest: a few hundred milliseconds)."""
        servers = [
            ExecStream(
                self.container,
                ["python", "-c", SERVER],
                env={"PYTHONDONTWRITEBYTECODE": "1", "BUGFORGE_PYCACHE": PYCACHE},
                workdir=self.workdir,
            )
            for _ in range(n)
        ]
        for server in servers:
            ready = server.readline(timeout=120)
            if not _ready(ready):
                for s in servers:
                    s.close()
                raise RuntimeError(f"test server did not start in {self.image}: {ready[:300]!r}")
        return servers

    @staticmethod
    def remove_orphans() -> int:
        """Remove workbenches whose process died without closing them (a killed `factory generate`):
        bugforge.engine.remove_orphans, the one clean-up routine (never a live process's containers)."""
        return engine.remove_orphans("workbench")

    def _start(self) -> None:
        self.remove_orphans()
        self.container = client().containers.run(
            self.image,
            ["sleep", "infinity"],
            detach=True,
            network_mode="none",
            labels={LABEL: "workbench", **engine.owner_labels()},
            mem_limit="4g",
            pids_limit=2048,
            working_dir=self.workdir,
            user="root",
            stop_signal="SIGKILL",
        )
        self.container.put_archive("/tmp", dir_archive(OUT.split("/")[-1]))
        self.container.put_archive(PROBE_DIR.rsplit("/", 1)[0], tools_archive())
        self.server, *warm = self._servers(2 if self.preload else 1)
        if self.preload:
            self.warm = warm[0]
            # the runs' own arguments: the server holds this collection and runs their tests on it
            req = Request(
                preload=probe_args(self.pytest_args) + (self.collect or []),
                env={"BUGFORGE_ROOT": self.workdir},
                cwd=self.workdir,
                log=f"{OUT}/preload.log",
            )
            try:
                resp = self._ask(self.warm, req, 600)
            except RuntimeError as e:  # collecting in-process failed outright
                resp = Response(error=str(e))
            self.held = bool(resp.held)  # runs go on the preload's collection, not one of their own
            if not resp.preloaded:  # nothing to gain (or collection failed): plain runs only
                self.warm.close()
                self.warm = None
        # what RESTORE keeps: the ignored files there now and the untracked ones as they are now (it puts
        # those back if a run removed or changed them), the preload's collection's among them (a fresh
        # run's collection makes them again, and a held session's runs do not collect); anything a run
        # leaves later goes
        self._ask(self.server, Request(before=SNAPSHOT), 120)
        for server in (s for s in (self.server, self.warm) if s is not None and self.guard):  # (no preload: no warm)
            self._ask(server, Request(guard=self.guard, cwd=self.workdir, out=OUT, after=RESTORE), 120)

    def _ask(self, server: ExecStream, req: Request | dict, timeout: float) -> Response:
        try:
            server.write((Request.of(req).to_json() + "\n").encode())
            resp = Response.from_json(server.readline(timeout=timeout + 60))
        except (TimeoutError, StreamClosed, ValueError) as e:  # (ValueError: not JSON, or not a Response)
            self.restart()
            return Response(lost=f"test server lost: {e}")
        if resp.error:
            raise RuntimeError(f"test server error: {resp.error}")
        if resp.tainted:  # an untrusted run changed the container where git cannot restore it
            self.restart()
        return resp

    def request(self, req: Request | dict, timeout: float, hot: list[str] | None = None) -> Response:
        """Send one request to a test server (docs/test-server.md). A run with `hot` (the changed .py
        files, when coverage says none of their changed lines runs at import time) goes to the preloaded
        server first. A server that stops answering is replaced with a fresh container and the answer
        says `lost`."""
        req = Request.of(req)
        if req.before == RESTORE and self.clean:  # the last request restored the tree already
            req = replace(req, before="")
        self.clean = False
        if hot is not None and self.warm is not None and req.args is not None:
            resp = self._ask(self.warm, replace(req, hot=hot), timeout)
            if not resp.not_swappable:
                return self._restored(req, resp)
        return self._restored(req, self._ask(self.server, req, timeout))

    def _restored(self, req: Request, resp: Response) -> Response:
        self.clean = bool(
            resp.lost
            or resp.tainted
            or (req.after == RESTORE and not resp.setup_rc)  # (lost, tainted: a fresh container)
        )
        return resp

    def pytest_request(
        self, selection: list[str] | None, timeout: float, test_limit: TestLimits | None = None
    ) -> Request:
        """The part of a request that runs pytest with the probe on `selection` (None = the whole suite);
        `test_limit`: seconds one test may take (docs/probe.md)."""
        args = probe_args(self.pytest_args) + (self.collect or [])
        env = {"PYTHONPATH": PROBE_DIR, **probe_env(self.workdir, selection, test_limit=test_limit)}
        files = {f"{OUT}/select.txt": "\n".join(selection)} if selection is not None else {}
        if test_limit and test_limit.slow:
            files[f"{OUT}/limits.txt"] = test_limit.lines()
        return Request(args=args, env=env, cwd=self.workdir, timeout=timeout, files=files, report=f"{OUT}/report.jsonl")

    @staticmethod
    def test_run(resp: Response | dict, wall: float) -> TestRun:
        resp = Response.of(resp)
        run = TestRun(exit_code=resp.exit, wall=wall, log_tail=resp.log or resp.lost or "")
        run.timed_out = bool(resp.timed_out or resp.lost)
        parse_report((resp.report or "").encode(), run)
        return run

    def run(
        self,
        patch: str,
        selection: list[str] | None,
        timeout: float = 120,
        hot: list[str] | None = None,
        test_limit: TestLimits | None = None,
    ) -> tuple[TestRun, bool]:
        """(the run, whether the patch applied). selection None = the whole suite."""
        start = time.monotonic()
        setup = Request(files={f"{OUT}/patch.diff": patch}, before=RESTORE, setup=f"git apply {OUT}/patch.diff")
        resp = self.request(setup, timeout)
        if resp.lost:
            return self.test_run(resp, time.monotonic() - start), True
        if resp.setup_rc:
            self.request(Request(after=RESTORE), timeout)
            return TestRun(wall=time.monotonic() - start), False
        resp = self.request(replace(self.pytest_request(selection, timeout, test_limit), after=RESTORE), timeout, hot)
        return self.test_run(resp, time.monotonic() - start), True

    def restart(self) -> None:
        self.close()
        self._start()

    def close(self) -> None:
        for server in (self.server, self.warm):
            if server is not None:
                server.close()
        self.server = self.warm = None
        if self.container is not None:
            try:
                self.container.remove(force=True)
            except docker.errors.APIError:
                pass
            self.container = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _ready(line: bytes) -> bool:
    """Whether a server's first line is its {"ready": true}."""
    try:
        return bool(Response.from_json(line).ready)
    except (ValueError, TypeError):
        return False
