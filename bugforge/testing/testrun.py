"""Run pytest inside a fresh container and read per-test outcomes from bugforge's structured report
(the probe, docs/probe.md), never from console text. Used by the factory's baseline and validation and
by grading, so every stage sees tests the same way. The warm container for many runs is
bugforge.testing.workbench.Workbench; the names other modules import from here stay importable here."""

from __future__ import annotations

import io
import json
import tarfile
import time

import docker.errors
import requests

from bugforge.engine import LABEL, client
from bugforge.records import TestLimits, TestRun
from bugforge.testing.tools import (
    OUT,
    PACKAGE,
    PROBE_DIR,
    PROBE_PLUGIN,
    SERVER,
    TEST_USER,
    dir_archive,
    file_archive,
    parse_report,
    probe_args,
    probe_env,
    pytest_command,
    run_script,
    selection_files,
    tools_archive,
    tools_digest,
    tools_files,
)
from bugforge.testing.workbench import OWNER_HOST, OWNER_PID, RESTORE, SNAPSHOT, Workbench

__all__ = [
    "OUT",
    "OWNER_HOST",
    "OWNER_PID",
    "PACKAGE",
    "PROBE_DIR",
    "PROBE_PLUGIN",
    "RESTORE",
    "SERVER",
    "SNAPSHOT",
    "TEST_USER",
    "Workbench",
    "file_archive",
    "probe_args",
    "probe_env",
    "pytest_command",
    "run_tests",
    "selection_files",
    "tools_archive",
    "tools_digest",
    "tools_files",
]


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
    user: str | None = None,
) -> tuple[TestRun, dict | None]:
    """Run the suite (or `selection`) in a fresh container from `image` with no network.
    Returns the run and, with coverage=True, the raw coverage map {"files": {path: {line: [ids]}}}, or
    with lookups=True (and no coverage) the raw lookup map {"seen": {"attr:...": [ids]}, "fixtures": ...}.
    `setup` is a shell snippet run before pytest (e.g. applying a patch); `files` are put into
    /tmp/bugforge-out before it starts (name -> content); `user`: the tests run as this user (untrusted
    code: graders), their verdict collected by root (incontainer/launch.py)."""
    cmd = pytest_command(pytest_args, selection, coverage, test_files, workdir, test_limit, lookups, user)
    script = run_script(setup, cmd)
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
        c.put_archive("/tmp", dir_archive(OUT.split("/")[-1]))
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
        parse_report(files.get("report.jsonl", b""), run)
        name = "coverage.json" if coverage else "lookups.json"
        return run, json.loads(files[name]) if name in files else None
    finally:
        c.remove(force=True)


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
