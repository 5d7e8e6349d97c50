"""Run pytest inside a container and read per-test outcomes from bugforge's structured report
(factory/probe.py), never from console text. Used by the factory's baseline and validation and by
grading, so every stage sees tests the same way."""
from __future__ import annotations

import io
import json
import shlex
import tarfile
import time
from pathlib import Path

import docker.errors
import requests

from bugforge.engine import LABEL, client
from bugforge.records import TestRun
from sandbox.stream import ExecStream, StreamClosed

PROBE = Path(__file__).resolve().parent.parent / "factory" / "probe.py"
ZYGOTE = PROBE.parent / "zygote.py"
TOOLS = {"bugforge_probe.py": PROBE, "bugforge_zygote.py": ZYGOTE,
         "bugforge_files.py": Path(__file__).resolve().parent / "files.py"}
OUT = "/tmp/bugforge-out"
PROBE_DIR = "/opt/bugforge"


def tools_archive() -> bytes:
    """A tar of /opt/bugforge: the probe plugin, the test server and the file helper, for any container."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        d = tarfile.TarInfo(PROBE_DIR.rsplit("/", 1)[1])
        d.type, d.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(d)
        for name, path in TOOLS.items():
            data = path.read_bytes()
            info = tarfile.TarInfo(f"{d.name}/{name}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def pytest_command(pytest_args: list[str], selection: list[str] | None, coverage: bool,
                   test_files: list[str] | None = None, workdir: str = "/testbed") -> str:
    """The shell command that runs pytest with the probe. `selection`: node ids to run (None = all)."""
    env = (f"PYTHONPATH={PROBE_DIR}${{PYTHONPATH:+:$PYTHONPATH}} PYTHONDONTWRITEBYTECODE=1 "
           f"BUGFORGE_REPORT={OUT}/report.jsonl BUGFORGE_ROOT={workdir}")
    if coverage:
        env += f" BUGFORGE_COVERAGE={OUT}/coverage.json"
    args = ["-p", "bugforge_probe", "-q", "-rN", "--color=no", *pytest_args]
    if selection is not None:
        env += f" BUGFORGE_SELECT={OUT}/select.txt"
        files = sorted({t.split("::")[0] for t in selection})
        args += files
    elif test_files:
        args += test_files
    return f"mkdir -p {OUT} && cd {workdir} && {env} python -m pytest {' '.join(shlex.quote(a) for a in args)}"


def run_tests(image: str, pytest_args: list[str], *, selection: list[str] | None = None,
              coverage: bool = False, timeout: float = 900, test_files: list[str] | None = None,
              setup: str = "", files: dict[str, bytes] | None = None,
              workdir: str = "/testbed") -> tuple[TestRun, dict | None]:
    """Run the suite (or `selection`) in a fresh container from `image` with no network.
    Returns the run and, with coverage=True, the raw coverage map {"files": {path: {line: [ids]}}}.
    `setup` is a shell snippet run before pytest (e.g. applying a patch); `files` are put into
    /tmp/bugforge-out before it starts (name -> content)."""
    cmd = pytest_command(pytest_args, selection, coverage, test_files, workdir)
    script = f"set -e; {setup}\n{cmd}" if setup else cmd
    c = client().containers.create(image, ["bash", "-c", script], network_mode="none", labels={LABEL: "testrun"},
                                   mem_limit="4g", pids_limit=2048, working_dir=workdir, user="root",
                                   stop_signal="SIGKILL")
    try:
        c.put_archive("/tmp", _dir_archive(OUT.split("/")[-1]))
        if selection is not None:
            c.put_archive(OUT, _file_archive("select.txt", "\n".join(selection).encode()))
        for name, data in (files or {}).items():
            c.put_archive(OUT, _file_archive(name, data))
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
        cov = json.loads(files["coverage.json"]) if "coverage.json" in files else None
        return run, cov
    finally:
        c.remove(force=True)


def _dir_archive(name: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.type, info.mode = tarfile.DIRTYPE, 0o777
        tar.addfile(info)
    return buf.getvalue()


def _file_archive(name: str, data: bytes) -> bytes:
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
    if run.timed_out:
        run.running = started


class Workbench:
    """A warm container for one image: apply a patch, run some tests, restore the tree; repeat.
    One container start serves many runs, and a test server inside it (factory/zygote.py) that has
    imported pytest once forks a child per run, so a run costs no interpreter start either. A run that
    times out is killed with its whole process group; a server that stops answering gets a fresh
    container."""

    def __init__(self, image: str, pytest_args: list[str], *, workdir: str = "/testbed"):
        self.image, self.pytest_args, self.workdir = image, pytest_args, workdir
        self.container = None
        self.server: ExecStream | None = None
        self._start()

    def _start(self) -> None:
        self.container = client().containers.run(
            self.image, ["sleep", "infinity"], detach=True, network_mode="none", labels={LABEL: "workbench"},
            mem_limit="4g", pids_limit=2048, working_dir=self.workdir, user="root", stop_signal="SIGKILL")
        self.container.put_archive("/tmp", _dir_archive(OUT.split("/")[-1]))
        self.container.put_archive(PROBE_DIR.rsplit("/", 1)[0], tools_archive())
        self.server = ExecStream(self.container, ["python", f"{PROBE_DIR}/bugforge_zygote.py"],
                                 env={"PYTHONDONTWRITEBYTECODE": "1"}, workdir=self.workdir)
        ready = self.server.readline(timeout=120)
        if b"ready" not in ready:
            raise RuntimeError(f"test server did not start in {self.image}: {ready[:300]!r}")

    def run(self, patch: str, selection: list[str] | None, timeout: float = 120) -> tuple[TestRun, bool]:
        """(the run, whether the patch applied). selection None = the whole suite."""
        args = ["-p", "bugforge_probe", "-q", "-rN", "--color=no", *self.pytest_args]
        env = {"PYTHONPATH": PROBE_DIR, "BUGFORGE_REPORT": f"{OUT}/report.jsonl", "BUGFORGE_ROOT": self.workdir}
        files = {f"{OUT}/patch.diff": patch}
        if selection is not None:
            env["BUGFORGE_SELECT"] = f"{OUT}/select.txt"
            files[f"{OUT}/select.txt"] = "\n".join(selection)
            args += sorted({t.split("::")[0] for t in selection})
        req = {"args": args, "env": env, "cwd": self.workdir, "timeout": timeout, "files": files,
               "setup": f"git apply {OUT}/patch.diff", "restore": "git checkout -q -- . && git clean -fdq",
               "report": f"{OUT}/report.jsonl"}
        start = time.monotonic()
        try:
            self.server.write((json.dumps(req) + "\n").encode())
            resp = json.loads(self.server.readline(timeout=timeout + 60))
        except (TimeoutError, StreamClosed, json.JSONDecodeError) as e:
            self.close()
            self._start()
            return TestRun(timed_out=True, wall=time.monotonic() - start, log_tail=f"test server lost: {e}"), True
        run = TestRun(exit_code=resp.get("exit"), wall=time.monotonic() - start, log_tail=resp.get("log", ""))
        if resp.get("error"):
            raise RuntimeError(f"test server error: {resp['error']}")
        if resp.get("setup_rc"):
            return run, False
        run.timed_out = bool(resp.get("timed_out"))
        _parse_report(resp.get("report", "").encode(), run)
        return run, True

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
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
