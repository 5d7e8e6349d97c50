"""The in-container code on the host side: the package bugforge/incontainer ships into containers as
PACKAGE under PROBE_DIR (tools_archive), and the probe's pytest arguments and environment for a run
(probe_args, probe_env, pytest_command); the probe's report read back into a TestRun (parse_report).
docs/probe.md and docs/test-server.md describe the two sides."""

from __future__ import annotations

import hashlib
import io
import json
import shlex
import tarfile
from pathlib import Path

from bugforge import incontainer
from bugforge.incontainer.start import program
from bugforge.records import TestLimits, TestRun

INCONTAINER = Path(incontainer.__file__).resolve().parent  # copied into every container as PACKAGE
PROBE_DIR = "/opt/bugforge"  # on the test runs' PYTHONPATH
PACKAGE = "bugforge_incontainer"
PROBE_PLUGIN = f"{PACKAGE}.probe"  # the plugin module (the test server finds it in sys.modules by this name)
OUT = "/tmp/bugforge-out"
TEST_USER = "agent"  # untrusted runs go as this user (every image has it: images/base.Dockerfile)
# the test server, with sys.path[0] what running a script in PROBE_DIR would give (not the working directory),
# started as every test process is (incontainer/start.py: the tree off sys.path until the runner is loaded)
SERVER = program("zygote", first=PROBE_DIR)
LAUNCH = f"python -I -S {PROBE_DIR}/{PACKAGE}/launch.py"  # a run with its verdict channel (incontainer/launch.py)
PYCACHE = "/var/cache/bugforge-pyc"  # the workbench's bytecode cache: root's, outside the tree (incontainer/pycache.py)


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


def dir_archive(name: str) -> bytes:
    """A tar of one directory, root's, that only root can write (the runs' reports go there)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(info)
    return buf.getvalue()


def file_archive(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def probe_args(pytest_args: list[str]) -> list[str]:
    """pytest's arguments for every run with the probe, before the test files a selection names. The
    test modules are always compiled by assertion rewriting, which gives them the witness (witness.py)."""
    return ["-p", PROBE_PLUGIN, "-q", "-rN", "--color=no", *pytest_args, "--assert=rewrite"]


def probe_env(
    workdir: str,
    selection: list[str] | None = None,
    coverage: bool = False,
    test_limit: TestLimits | None = None,
    lookups: bool = False,
) -> dict[str, str]:
    """What the probe reads from the environment (docs/probe.md): where to write its report, the
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
    user: str | None = None,
) -> str:
    """The shell command that runs pytest with the probe, its records collected into {OUT}/report.jsonl
    over the verdict channel (incontainer/launch.py). `selection`: node ids to run (None = all);
    `test_limit`: seconds one test may take (docs/probe.md); `user`: run the tests as this user (an
    untrusted run: every grader's), else as the caller."""
    env = " ".join(
        f"{k}={shlex.quote(v)}" for k, v in probe_env(workdir, selection, coverage, test_limit, lookups).items()
    )
    env = f"PYTHONPATH={PROBE_DIR}${{PYTHONPATH:+:$PYTHONPATH}} PYTHONDONTWRITEBYTECODE=1 {env}"
    args = probe_args(pytest_args) + (selection_files(selection) if selection is not None else test_files or [])
    launch = f"{LAUNCH}{f' --user {shlex.quote(user)}' if user else ''} {OUT}/report.jsonl --"
    return f"mkdir -p {OUT} && cd {workdir} && {env} {launch} {' '.join(shlex.quote(a) for a in args)}"


def run_script(setup: str, command: str) -> str:
    """What a test run's container runs: the `setup` lines (set -e: a failing line ends it with its
    status), then `command` (pytest_command's)."""
    return f"set -e; {setup}\n{command}" if setup else command


def parse_report(data: bytes, run: TestRun) -> None:
    """Fill `run` from the probe's report (JSON lines; a torn last line from a killed run is skipped):
    outcomes, durations, messages, collection errors, a timeout with the test that was running,
    tampering the probe saw, and whether pytest's session finished."""
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
            _test_record(r, run)
            started = None
        else:
            _run_record(ev, r, run)
    if run.timed_out:
        run.running = started


def _test_record(r: dict, run: TestRun) -> None:
    """One test's outcome, duration and message."""
    run.outcomes[r["nodeid"]] = r["outcome"]
    run.durations[r["nodeid"]] = r["duration"]
    if r.get("message"):
        run.messages[r["nodeid"]] = r["message"]


def _run_record(ev: str | None, r: dict, run: TestRun) -> None:
    """A record about the whole run: a collection error, tampering, the finish, a timeout."""
    if ev == "collect_error":
        run.collect_errors[r["nodeid"]] = r.get("message", "")
    elif ev == "tamper":  # the probe's integrity checks (bugforge/incontainer/integrity.py)
        run.tamper.append(r.get("reason", ""))
    elif ev == "finish":
        run.finished = True
    elif ev == "timeout":  # a test ran past its limit, or the tests past the run's budget (report.py)
        run.timed_out, run.limit, run.budget = True, r.get("limit"), r.get("budget")
