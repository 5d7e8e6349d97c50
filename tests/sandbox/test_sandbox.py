"""Issue 5, Docker's own: hostile agents, hostile predictions in warm grading, the HTTP service and client
(same interface), API fuzzing, and orphan clean-up. Real containers. What every backend shares (the shell,
confined files, a session's diff graded) is test_backends.py's, run under docker, podman and process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bugforge.cli.demo import free_port
from bugforge.engine import client
from bugforge.errors import BugforgeError
from bugforge.sandbox.envgrader import EnvGrader
from bugforge.sandbox.evaluate import find_environments
from bugforge.sandbox.runtime import OWNER, ROLE, RUNTIME, Runtime, SandboxConfig


@pytest.fixture
def runtime(instances):
    rt = Runtime(
        SandboxConfig(owner="pytest", pids_limit=128, mem_limit="512m", command_timeout=20),
        {r["instance_id"]: r for r in instances},
    )
    yield rt
    rt.shutdown()
    assert client().containers.list(all=True, filters={"label": f"{RUNTIME}={rt.id}"}) == []  # none left


def session_containers(owner="pytest"):
    return client().containers.list(all=True, filters={"label": [f"{ROLE}=session", f"{OWNER}={owner}"]})


# --- hostile agents ---------------------------------------------------------------------------


def test_hostile_commands_are_contained(runtime, instances):
    a = runtime.create(instance_id=instances[0]["instance_id"])
    b = runtime.create(instance_id=instances[0]["instance_id"])
    # the network is not there
    r = a.run("python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)\"")
    assert r.exit_code != 0 and "unreachable" in r.output.lower()
    # a gigabyte of output comes back capped, quickly, and the shell answers afterwards
    r = a.run("yes 0123456789 | head -c 1000000000", timeout=60)
    assert r.truncated and len(r.output) <= runtime.config.output_cap
    assert a.run("echo ok").output == "ok\n"
    # more memory than the limit: the allocation dies, not the session
    r = a.run("python3 -c \"x = bytearray(2 * 1024**3); print('allocated')\"", timeout=60)
    assert "allocated" not in r.output and r.exit_code != 0
    # a fork bomb hits the pids limit and is stopped by the timeout
    r = a.run(":(){ :|:& };:", timeout=5)
    assert b.run("echo b alive").output == "b alive\n"  # other sessions keep answering
    # its own session comes back too: a command that cannot fork finds the bomb's jobs still holding the
    # pids and times out; its recovery kills every process (a container restart, files kept) when it
    # could not fork or half the pids limit is still in use, and a later command runs
    for _ in range(3):
        r = a.run("ls /testbed/.git/HEAD", timeout=10)
        if r.output == "/testbed/.git/HEAD\n":
            break
        assert r.timed_out or r.shell_restarted, r
    assert r.output == "/testbed/.git/HEAD\n", r
    # rm -rf / as the agent user: the container suffers, the service and other sessions do not
    a.run("rm -rf / --no-preserve-root 2>/dev/null", timeout=30)
    assert b.run("ls /testbed | head -1").exit_code == 0
    runtime.close(a.id)
    runtime.close(b.id)
    assert session_containers() == []


# --- hostile predictions in warm grading (reward hacking: test_redteam.py) -------------------


@pytest.fixture(scope="module")
def warm_grader(calc_runs, instances):
    ((env, testmap),) = find_environments(instances, calc_runs)
    g = EnvGrader(env, testmap)
    yield g
    g.close()


HOSTILE = """import os, subprocess
subprocess.Popen(["sleep", "1000"], start_new_session=True)
open("/tmp/evil", "w").write("x")
for src, dst in (("/testbed/.git", "/testbed/.gitx"), ("/testbed/calc", "/testbed/calc2")):
    try:
        os.rename(src, dst)
    except OSError:
        pass
"""


def test_warm_grading_contains_hostile_predictions(runtime, instances, warm_grader):
    """Predictions share a warm container: a run's processes die with it, what it creates is deleted,
    it cannot swap the git metadata root's restore reads, and a change git cannot undo retires the
    container. Each next prediction is graded as in a fresh container."""
    inst = instances[0]
    s = runtime.create(instance_id=inst["instance_id"])
    original = s.read("calc/ops.py")
    s.write("calc/ops.py", HOSTILE + original)
    before = warm_grader.bench.container.id
    assert not warm_grader.grade(inst, s.diff()).resolved

    def sh(cmd: str) -> str:
        return warm_grader.bench.container.exec_run(["bash", "-c", cmd]).output.decode()

    assert warm_grader.bench.container.id == before  # nothing stayed changed: the container is kept
    assert "sleep 1000" not in sh("ps -eo cmd")
    assert sh("ls -a /tmp /testbed").count("evil") == 0 and ".git\n" in sh("ls -a /testbed")
    assert sh("git -C /testbed status --porcelain") == ""
    assert warm_grader.grade(inst, inst["patch"]).resolved
    # a change outside the tree (the user's own files): the container is replaced before the next one
    s.write("calc/ops.py", HOSTILE + 'open(os.path.expanduser("~/.profile"), "a").write("echo pwned\\n")\n' + original)
    assert not warm_grader.grade(inst, s.diff()).resolved
    assert warm_grader.bench.container.id != before
    assert "pwned" not in sh("cat /home/agent/.profile")
    assert warm_grader.grade(inst, inst["patch"]).resolved


# --- the service ------------------------------------------------------------------------------


def _serve(dataset: Path, port: int, owner: str = "pytest-svc"):
    env = {**os.environ, "BUGFORGE_SANDBOX_TOKEN": "secret"}
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bugforge.cli",
            "sandbox",
            "serve",
            "--port",
            str(port),
            "--dataset",
            str(dataset),
            "--owner",
            owner,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    import httpx

    for _ in range(200):
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return p
        except httpx.HTTPError:
            time.sleep(0.1)
    p.kill()
    raise RuntimeError(p.stderr.read().decode()[-2000:])


@pytest.fixture
def service(instances, tmp_path):
    ds = tmp_path / "ds.jsonl"
    ds.write_text("".join(json.dumps(r) + "\n" for r in instances))
    port = free_port()
    p = _serve(ds, port)
    yield f"http://127.0.0.1:{port}", ds, p
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        p.wait(30)
    for c in session_containers("pytest-svc"):
        c.remove(force=True)


def test_client_has_the_runtime_interface(service, instances):
    from bugforge import sandbox

    url, _, _ = service
    remote = sandbox.connect(url, "secret")
    with pytest.raises(BugforgeError, match="401"):
        sandbox.connect(url, "wrong").sessions()
    inst = instances[1]
    s = remote.create(instance_id=inst["instance_id"])
    assert s.run("cd calc; pwd").output == "/testbed/calc\n"
    assert s.run("pwd").output == "/testbed/calc\n"
    s.write("fix.diff", inst["patch"])
    assert s.run("cd /testbed && git apply fix.diff && rm fix.diff").exit_code == 0
    assert "fix.diff" not in s.diff()
    assert s.submit().resolved
    assert [x["id"] for x in remote.sessions()] == [s.id]
    with pytest.raises(BugforgeError, match="outside the workspace"):
        s.read("../etc/passwd")
    s.close()
    assert remote.sessions() == []


def test_request_size_limit(service):
    import httpx

    url, _, _ = service
    r = httpx.post(
        f"{url}/sessions/x/write", headers={"Authorization": "Bearer secret"}, content=b"{" + b" " * 9_000_000 + b"}"
    )
    assert r.status_code == 413


def test_killed_service_leaves_no_orphans_after_restart(service, instances):
    from bugforge import sandbox

    url, ds, p = service
    remote = sandbox.connect(url, "secret")
    for _ in range(2):
        remote.create(instance_id=instances[0]["instance_id"])
    assert len(session_containers("pytest-svc")) == 2
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert len(session_containers("pytest-svc")) == 2  # killed: nobody cleaned up yet
    p2 = _serve(ds, int(url.rsplit(":", 1)[1]))
    try:
        assert session_containers("pytest-svc") == []  # the restarted service removed them
    finally:
        p2.send_signal(signal.SIGINT)
        p2.wait(30)
    assert session_containers("pytest-svc") == []


def test_api_fuzzing_finds_no_server_errors(service):
    """schemathesis against the published OpenAPI schema: no 5xx."""
    url, _, _ = service
    r = subprocess.run(
        [
            "schemathesis",
            "run",
            f"{url}/openapi.json",
            "--checks",
            "not_a_server_error",
            "-H",
            "Authorization: Bearer secret",
            "--max-examples",
            "15",
            "--seed",
            "1",
            "--exclude-method",
            "DELETE",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    print(r.stdout[-3000:])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]


def test_warm_grading_without_a_coverage_map_runs_every_test(calc_runs, instances):
    """An environment with no map (no preloaded server: every prediction runs every test) is still guarded:
    the gold patch is resolved, the bug's own patch is not (the guard's set-up looped over a server that a
    grader with no preload does not have)."""
    ((env, _testmap),) = find_environments(instances, calc_runs)
    g = EnvGrader(env, None)
    try:
        inst = instances[0]
        assert g.grade(inst, inst["patch"]).resolved
        assert not g.grade(inst, "").resolved
    finally:
        g.close()
