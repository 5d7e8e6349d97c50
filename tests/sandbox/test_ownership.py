"""Issue 35: who removes a container. Sessions are owned by their process (host, pid, the pid's start
time); starting or stopping one bugforge process (a service, a run) never removes another live process's
sessions; a dead process's containers go at the next clean-up. Real containers, real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from bugforge import engine
from bugforge.engine import OWNER_PID, OWNER_START, client, owner_gone, owner_labels
from bugforge.errors import BugforgeError
from bugforge.sandbox.runtime import RUNTIME, Runtime, SandboxConfig

# A process that holds one session (as `run-agent` or a trainer does): it prints its session's container
# id, then runs each stdin line in the session and prints the result as JSON; on "exit" it shuts its
# runtime down and runs the shared clean-up, as a finishing run does. Default config: the same owner
# label (bugforge.owner=sandbox) as every run and service, as the user had.
HOLDER = """
import json, sys
from bugforge import sandbox
box = sandbox.connect(None)
s = box.create(image=sys.argv[1])
print(json.dumps({"container": s.container.id}), flush=True)
for line in sys.stdin:
    if line.strip() == "exit":
        box.shutdown()
        box.remove_orphans()
        print(json.dumps({"bye": True}), flush=True)
        break
    r = s.run(line)
    print(json.dumps({"output": r.output, "exit_code": r.exit_code}), flush=True)
"""


class Holder:
    """A live process holding one session."""

    def __init__(self, image: str):
        self.p = subprocess.Popen(
            [sys.executable, "-c", HOLDER, image],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.container = self._answer()["container"]

    def _answer(self) -> dict:
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(self.p.stderr.read()[-2000:])
        return json.loads(line)

    def run(self, command: str) -> dict:
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        return self._answer()

    def exit(self) -> None:
        self.p.stdin.write("exit\n")
        self.p.stdin.flush()
        assert self._answer() == {"bye": True}
        self.p.wait(30)

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(30)


def exists(container_id: str) -> bool:
    return bool(client().containers.list(all=True, filters={"id": container_id}))


def serve_and_stop(tmp_path) -> str:
    """Start `bugforge sandbox serve` (its default owner label), wait until it answers, stop it with
    SIGINT (its shutdown runs); its stderr."""
    import httpx

    from bugforge.cli.demo import free_port

    port = free_port()
    err = tmp_path / f"serve-{port}.err"
    with open(err, "w") as f:
        p = subprocess.Popen(
            [sys.executable, "-m", "bugforge.cli", "sandbox", "serve", "--port", str(port)],
            env={**os.environ, "BUGFORGE_SANDBOX_TOKEN": "secret"},
            stdout=subprocess.DEVNULL,
            stderr=f,
        )
    try:
        for _ in range(300):
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.HTTPError:
                assert p.poll() is None, err.read_text()[-2000:]
                time.sleep(0.1)
        else:
            raise AssertionError("the service never answered: " + err.read_text()[-2000:])
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(60)
    return err.read_text()


@pytest.fixture
def runtime(engine):  # the engine fixture marks its tests `docker`
    rt = Runtime(SandboxConfig(mem_limit="256m"))  # the default owner label, as every run's
    yield rt
    rt.shutdown()
    assert client().containers.list(all=True, filters={"label": f"{RUNTIME}={rt.id}"}) == []


def test_a_service_started_and_stopped_beside_live_sessions_leaves_them(runtime, base_image, tmp_path):
    mine = runtime.create(image=base_image)  # this process's session
    other = Holder(base_image)  # another process's session
    try:
        assert other.run("echo before")["output"] == "before\n"
        serve_and_stop(tmp_path)
        serve_and_stop(tmp_path)  # a second start and stop, as a restarted service
        assert mine.run("echo still here").output == "still here\n"
        assert other.run("echo still here")["output"] == "still here\n"
    finally:
        other.kill()


def test_one_run_finishing_leaves_a_concurrent_runs_sessions(base_image):
    a, b = Holder(base_image), Holder(base_image)
    try:
        assert a.run("echo a")["output"] == "a\n" and b.run("echo b")["output"] == "b\n"
        a.exit()  # shutdown + the shared clean-up, in a's process
        assert not exists(a.container)  # a removed its own
        assert b.run("echo b again")["output"] == "b again\n"
        b.exit()
        assert not exists(b.container)
    finally:
        a.kill()
        b.kill()


def test_a_killed_process_containers_go_at_the_next_clean_up(runtime, base_image):
    dead = Holder(base_image)
    dead.kill()  # SIGKILL: no clean-up of its own
    assert exists(dead.container)
    live = runtime.create(image=base_image)
    engine.remove_orphans()  # what every component runs (the runtime's first start ran it too)
    assert not exists(dead.container)
    assert live.run("echo ok").output == "ok\n"


def test_owner_gone_compares_the_process_start_time():
    me = owner_labels()
    assert not owner_gone(me)
    assert owner_gone({**me, OWNER_START: str(int(me[OWNER_START]) + 1)})  # the pid was reused
    assert not owner_gone({**me, "bugforge.host": "another-host"})  # not ours to judge
    assert not owner_gone({})  # no owner named: left alone
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert owner_gone({**me, OWNER_PID: str(p.pid), OWNER_START: "1"})


def test_unknown_image_is_a_clear_error_and_never_pulled(runtime):
    with pytest.raises(BugforgeError, match="not in the local engine") as e:
        runtime.create(image="bugforge-test/no-such-image:never")
    assert "never pull" in e.value.line() and "\n" not in e.value.line()


def test_a_session_whose_container_is_gone_says_so_in_one_line(runtime, base_image):
    s = runtime.create(image=base_image)
    s.container.remove(force=True)
    for call in (lambda: s.run("echo hi"), lambda: s.read("x"), s.diff):
        with pytest.raises(BugforgeError) as e:
            call()
        assert e.value.what.startswith(f"session {s.id}:") and "\n" not in e.value.line()
    runtime.close(s.id)  # closing a session whose container is gone is not an error


def test_the_service_answers_404_only_for_its_own_unknown_sessions(base_image):
    """Unknown session: 404. A session whose container is gone, or an image the engine lacks: 400 with
    one line (not a traceback, not "no session")."""
    from fastapi.testclient import TestClient

    from bugforge.sandbox.service import create_app

    rt = Runtime(SandboxConfig(mem_limit="256m"))
    auth = {"Authorization": "Bearer t"}
    try:
        with TestClient(create_app(rt, "t")) as http:
            r = http.post("/sessions/nope/run", json={"command": "true"}, headers=auth)
            assert (r.status_code, r.json()["detail"]) == (404, "no session nope")
            r = http.post("/sessions", json={"image": "bugforge-test/no-such-image:never"}, headers=auth)
            assert r.status_code == 400 and "not in the local engine" in r.json()["detail"]
            sid = http.post("/sessions", json={"image": base_image}, headers=auth).json()["id"]
            rt.get(sid).container.remove(force=True)
            r = http.post(f"/sessions/{sid}/run", json={"command": "true"}, headers=auth)
            assert r.status_code == 400 and "its container is gone" in r.json()["detail"]
            assert "\n" not in r.json()["detail"]
    finally:
        rt.shutdown()
