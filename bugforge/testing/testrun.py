"""Run pytest inside a container and read per-test outcomes from bugforge's structured report
(factory/probe.py), never from console text. Used by the factory's baseline and validation and by
grading, so every stage sees tests the same way."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shlex
import socket
import tarfile
import time
from pathlib import Path

import docker.errors
import requests

from bugforge import incontainer
from bugforge.engine import LABEL, client
from bugforge.records import TestLimits, TestRun
from bugforge.stream import ExecStream, StreamClosed

INCONTAINER = Path(incontainer.__file__).resolve().parent  # copied into every container as PACKAGE
PROBE_DIR = "/opt/bugforge"  # on the test runs' PYTHONPATH
PACKAGE = "bugforge_incontainer"
PROBE_PLUGIN = f"{PACKAGE}.probe"
OUT = "/tmp/bugforge-out"
OWNER_HOST, OWNER_PID = "bugforge.host", "bugforge.pid"  # a workbench's owner: host and process
HOST = socket.gethostname()
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
# the test server, with sys.path[0] what running a script in PROBE_DIR would give (not the working directory)
SERVER = f"import sys; sys.path[0] = {PROBE_DIR!r}; from {PACKAGE}.zygote import main; main()"
PYCACHE = "/var/cache/bugforge-pyc"  # the workbench's bytecode cache: root's, outside the tree (factory/zygote.py)


def tools_files() -> list[Path]:
    """The in-container package's modules (bugforge/incontainer)."""
    return sorted(INCONTAINER.glob("*.py"))


def tools_digest() -> str:
    """A digest of the in-container code: it decides what a baseline measures."""
    h = hashlib.sha256()
    for path in tools_files():
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def tools_archive() -> bytes:
    """A tar of /opt/bugforge/{PACKAGE}: the probe plugin, the test server, the syntax-tree helpers it
    shares with the test map, and the file helper, for any container."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in (PROBE_DIR.rsplit("/", 1)[1], f"{PROBE_DIR.rsplit('/', 1)[1]}/{PACKAGE}"):
            d = tarfile.TarInfo(name)
            d.type, d.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(d)
        for path in tools_files():
            data = path.read_bytes()
            info = tarfile.TarInfo(f"{name}/{path.name}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def probe_args(pytest_args: list[str]) -> list[str]:
    """pytest's arguments for every run with the probe, before the test files a selection names."""
    return ["-p", PROBE_PLUGIN, "-q", "-rN", "--color=no", *pytest_args]


def probe_env(
    workdir: str,
    selection: list[str] | None = None,
    coverage: bool = False,
    test_limit: TestLimits | None = None,
    lookups: bool = False,
) -> dict[str, str]:
    """What the probe reads from the environment (factory/probe.py): where to write its report, the
    tree's root, the selection's file (written to {OUT}/select.txt), the coverage map's file, the
    lookup map's file, and the seconds one test may take (the slow tests' in {OUT}/limits.txt)."""
    env = {"BUGFORGE_REPORT": f"{OUT}/report.jsonl", "BUGFORGE_ROOT": workdir}
    if selection is not None:
        env["BUGFORGE_SELECT"] = f"{OUT}/select.txt"
    if coverage:
        env["BUGFORGE_COVERAGE"] = f"{OUT}/coverage.json"
    if lookups:
        env["BUGFORGE_LOOKUPS"] = f"{OUT}/lookups.json"
    if test_limit:
        env["BUGFORGE_TEST_LIMIT"] = f"{test_limit.default:g}"
        if test_limit.slow:
            env["BUGFORGE_TEST_LIMITS"] = f"{OUT}/limits.txt"
        if test_limit.budget:
            env["BUGFORGE_RUN_BUDGET"] = f"{test_limit.budget:g}"
    return env


def selection_files(selection: list[str]) -> list[str]:
    """The test files to name on pytest's command line for a selection of node ids."""
    return sorted({t.split("::")[0] for t in selection})


def pytest_command(
    pytest_args: list[str],
    selection: list[str] | None,
    coverage: bool,
    test_files: list[str] | None = None,
    workdir: str = "/testbed",
    test_limit: TestLimits | None = None,
    lookups: bool = False,
) -> str:
    """The shell command that runs pytest with the probe. `selection`: node ids to run (None = all);
    `test_limit`: seconds one test may take (factory/probe.py)."""
    env = " ".join(
        f"{k}={shlex.quote(v)}" for k, v in probe_env(workdir, selection, coverage, test_limit, lookups).items()
    )
    env = f"PYTHONPATH={PROBE_DIR}${{PYTHONPATH:+:$PYTHONPATH}} PYTHONDONTWRITEBYTECODE=1 {env}"
    args = probe_args(pytest_args) + (selection_files(selection) if selection is not None else test_files or [])
    return f"mkdir -p {OUT} && cd {workdir} && {env} python -m pytest {' '.join(shlex.quote(a) for a in args)}"


def run_tests(
    image: str,
    pytest_args: list[str],
    *,
    selection: list[str] | None = None,
    coverage: bool = False,
    timeout: float = 900,
    test_files: list[str] | None = None,
    setup: str = "",
    files: dict[str, bytes] | None = None,
    workdir: str = "/testbed",
    test_limit: TestLimits | None = None,
    lookups: bool = False,
) -> tuple[TestRun, dict | None]:
    """Run the suite (or `selection`) in a fresh container from `image` with no network.
    Returns the run and, with coverage=True, the raw coverage map {"files": {path: {line: [ids]}}}, or
    with lookups=True (and no coverage) the raw lookup map {"seen": {"attr:...": [ids]}, "fixtures": ...}.
    `setup` is a shell snippet run before pytest (e.g. applying a patch); `files` are put into
    /tmp/bugforge-out before it starts (name -> content)."""
    cmd = pytest_command(pytest_args, selection, coverage, test_files, workdir, test_limit, lookups)
    script = f"set -e; {setup}\n{cmd}" if setup else cmd
    c = client().containers.create(
        image,
        ["bash", "-c", script],
        network_mode="none",
        labels={LABEL: "testrun"},
        mem_limit="4g",
        pids_limit=2048,
        working_dir=workdir,
        user="root",
        stop_signal="SIGKILL",
    )
    try:
        c.put_archive("/tmp", _dir_archive(OUT.split("/")[-1]))
        if selection is not None:
            c.put_archive(OUT, file_archive("select.txt", "\n".join(selection).encode()))
        if test_limit and test_limit.slow:
            c.put_archive(OUT, file_archive("limits.txt", test_limit.lines().encode()))
        for name, data in (files or {}).items():
            c.put_archive(OUT, file_archive(name, data))
        c.put_archive(PROBE_DIR.rsplit("/", 1)[0], tools_archive())
        start = time.monotonic()
        c.start()
        run = TestRun()
        try:
            status = c.wait(timeout=timeout)
            run.exit_code = status.get("StatusCode")
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            run.timed_out = True
            c.kill()
        run.wall = time.monotonic() - start
        run.log_tail = c.logs(tail=40).decode(errors="replace")
        files = _read_out(c)
        _parse_report(files.get("report.jsonl", b""), run)
        name = "coverage.json" if coverage else "lookups.json"
        return run, json.loads(files[name]) if name in files else None
    finally:
        c.remove(force=True)


def _dir_archive(name: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.type, info.mode = tarfile.DIRTYPE, 0o777
        tar.addfile(info)
    return buf.getvalue()


def file_archive(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _read_out(c) -> dict[str, bytes]:
    try:
        stream, _ = c.get_archive(OUT)
    except docker.errors.NotFound:
        return {}
    buf = io.BytesIO(b"".join(stream))
    out = {}
    with tarfile.open(fileobj=buf) as tar:
        for m in tar.getmembers():
            if m.isfile():
                out[m.name.split("/")[-1]] = tar.extractfile(m).read()
    return out


def _parse_report(data: bytes, run: TestRun) -> None:
    started = None
    for line in data.decode(errors="replace").splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line from a killed run
        ev = r.get("event")
        if ev == "start":
            started = r["nodeid"]
        elif ev == "test":
            run.outcomes[r["nodeid"]] = r["outcome"]
            run.durations[r["nodeid"]] = r["duration"]
            if r.get("message"):
                run.messages[r["nodeid"]] = r["message"]
            started = None
        elif ev == "collect_error":
            run.collect_errors[r["nodeid"]] = r.get("message", "")
        elif ev == "timeout":  # a test ran past its limit, or the tests past the run's budget (probe.py)
            run.timed_out, run.limit, run.budget = True, r.get("limit"), r.get("budget")
    if run.timed_out:
        run.running = started


class Workbench:
    """A warm container for one image: apply a patch, run some tests, restore the tree; repeat.
    One container start serves many runs, and a test server inside it (factory/zygote.py) that has
    imported pytest once forks a child per run, so a run costs no interpreter start either. With
    `preload`, a second server collects the suite once, holds that session, and serves runs whose change
    is confined to function bodies (and literal defaults) by swapping code objects and running the
    selected items of its own collection, so such a run costs no import, configuration or collection. A run
    that times out is killed with its whole process group; a server that stops answering, or an
    untrusted run that leaves the container changed, gets a fresh container.
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
            if b"ready" not in ready:
                for s in servers:
                    s.close()
                raise RuntimeError(f"test server did not start in {self.image}: {ready[:300]!r}")
        return servers

    @staticmethod
    def remove_orphans() -> int:
        """Remove workbenches whose process died without closing them (a killed `factory generate`)."""
        n = 0
        for c in client().containers.list(all=True, filters={"label": [f"{LABEL}=workbench", f"{OWNER_HOST}={HOST}"]}):
            pid = int(c.labels.get(OWNER_PID, "0") or 0)
            if pid and not Path(f"/proc/{pid}").exists():
                try:
                    c.remove(force=True)
                    n += 1
                except docker.errors.APIError:
                    pass  # another process removed it first
        return n

    def _start(self) -> None:
        self.remove_orphans()
        self.container = client().containers.run(
            self.image,
            ["sleep", "infinity"],
            detach=True,
            network_mode="none",
            labels={LABEL: "workbench", OWNER_HOST: HOST, OWNER_PID: str(os.getpid())},
            mem_limit="4g",
            pids_limit=2048,
            working_dir=self.workdir,
            user="root",
            stop_signal="SIGKILL",
        )
        self.container.put_archive("/tmp", _dir_archive(OUT.split("/")[-1]))
        self.container.put_archive(PROBE_DIR.rsplit("/", 1)[0], tools_archive())
        self.server, *warm = self._servers(2 if self.preload else 1)
        if self.preload:
            self.warm = warm[0]
            # the runs' own arguments: the server holds this collection and runs their tests on it
            req = {
                "preload": probe_args(self.pytest_args) + (self.collect or []),
                "env": {"BUGFORGE_ROOT": self.workdir},
                "cwd": self.workdir,
                "log": f"{OUT}/preload.log",
            }
            try:
                resp = self._ask(self.warm, req, 600)
            except RuntimeError as e:  # collecting in-process failed outright
                resp = {"error": str(e)}
            self.held = bool(resp.get("held"))  # runs go on the preload's collection, not one of their own
            if not resp.get("preloaded"):  # nothing to gain (or collection failed): plain runs only
                self.warm.close()
                self.warm = None
        # what RESTORE keeps: the ignored files there now and the untracked ones as they are now (it puts
        # those back if a run removed or changed them), the preload's collection's among them (a fresh
        # run's collection makes them again, and a held session's runs do not collect); anything a run
        # leaves later goes
        self._ask(self.server, {"before": SNAPSHOT}, 120)
        for server in (self.server, self.warm) if self.guard else ():
            self._ask(server, {"guard": self.guard, "cwd": self.workdir, "out": OUT, "after": RESTORE}, 120)

    def _ask(self, server: ExecStream, req: dict, timeout: float) -> dict:
        try:
            server.write((json.dumps(req) + "\n").encode())
            resp = json.loads(server.readline(timeout=timeout + 60))
        except (TimeoutError, StreamClosed, json.JSONDecodeError) as e:
            self.restart()
            return {"lost": f"test server lost: {e}"}
        if resp.get("error"):
            raise RuntimeError(f"test server error: {resp['error']}")
        if resp.get("tainted"):  # an untrusted run changed the container where git cannot restore it
            self.restart()
        return resp

    def request(self, req: dict, timeout: float, hot: list[str] | None = None) -> dict:
        """Send one request to a test server (factory/zygote.py documents the fields). A run with `hot`
        (the changed .py files, when coverage says none of their changed lines runs at import time) goes
        to the preloaded server first. A server that stops answering is replaced with a fresh container
        and the answer says `lost`."""
        if req.get("before") == RESTORE and self.clean:  # the last request restored the tree already
            req = {k: v for k, v in req.items() if k != "before"}
        self.clean = False
        if hot is not None and self.warm is not None and req.get("args") is not None:
            resp = self._ask(self.warm, {**req, "hot": hot}, timeout)
            if not resp.get("not_swappable"):
                return self._restored(req, resp)
        return self._restored(req, self._ask(self.server, req, timeout))

    def _restored(self, req: dict, resp: dict) -> dict:
        self.clean = bool(
            resp.get("lost")
            or resp.get("tainted")  # (a fresh container)
            or (req.get("after") == RESTORE and not resp.get("setup_rc"))
        )
        return resp

    def pytest_request(self, selection: list[str] | None, timeout: float, test_limit: TestLimits | None = None) -> dict:
        """The part of a request that runs pytest with the probe on `selection` (None = the whole suite);
        `test_limit`: seconds one test may take (factory/probe.py)."""
        args = probe_args(self.pytest_args) + (self.collect or [])
        env = {"PYTHONPATH": PROBE_DIR, **probe_env(self.workdir, selection, test_limit=test_limit)}
        files = {f"{OUT}/select.txt": "\n".join(selection)} if selection is not None else {}
        if test_limit and test_limit.slow:
            files[f"{OUT}/limits.txt"] = test_limit.lines()
        return {
            "args": args,
            "env": env,
            "cwd": self.workdir,
            "timeout": timeout,
            "files": files,
            "report": f"{OUT}/report.jsonl",
        }

    @staticmethod
    def test_run(resp: dict, wall: float) -> TestRun:
        run = TestRun(exit_code=resp.get("exit"), wall=wall, log_tail=resp.get("log", "") or resp.get("lost", ""))
        run.timed_out = bool(resp.get("timed_out") or resp.get("lost"))
        _parse_report(resp.get("report", "").encode(), run)
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
        resp = self.request(
            {"files": {f"{OUT}/patch.diff": patch}, "before": RESTORE, "setup": f"git apply {OUT}/patch.diff"}, timeout
        )
        if resp.get("lost"):
            return self.test_run(resp, time.monotonic() - start), True
        if resp.get("setup_rc"):
            self.request({"after": RESTORE}, timeout)
            return TestRun(wall=time.monotonic() - start), False
        resp = self.request({**self.pytest_request(selection, timeout, test_limit), "after": RESTORE}, timeout, hot)
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
