"""Issue 37, the `podman` backend's own: sessions and grading on rootless Podman through its Docker-compatible API
(bugforge.podman), no Docker daemon involved past making the images. Real Podman (scripts/setup-podman.sh: Debian's
podman, a rootless user and its API service), real git and pytest. The instance images are the factory-made calc
example's, moved with `bugforge images save` / `images load --backend podman` (conftest's podman_dataset;
BUGFORGE_TEST_PODMAN_DATASET=DIR instead names a dataset whose images that Podman already holds: no Docker). What
every backend shares (the shell, confined files, a session's diff graded, run-agent and eval with Docker
unreachable) is test_backends.py's."""

from __future__ import annotations

import pytest

from bugforge import engine, sandbox
from bugforge.errors import BugforgeError
from bugforge.records import read_jsonl
from bugforge.sandbox.grader import grade_patch
from bugforge.sandbox.runtime import Runtime, SandboxConfig

pytestmark = pytest.mark.docker  # the calc images are made with Docker (not under the dataset hook above)
NO_DOCKER = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}  # any use of Docker fails


@pytest.fixture(scope="module")
def rows(podman_dataset) -> list[dict]:
    return read_jsonl(podman_dataset)


@pytest.fixture
def runtime(podman, rows):
    rt = Runtime(
        SandboxConfig(command_timeout=20, mem_limit="1g", owner="podman-test"), {r["instance_id"]: r for r in rows}
    )
    yield rt
    rt.shutdown()
    assert podman.containers.list(all=True, filters={"label": f"bugforge.runtime={rt.id}"}) == []


def test_session_is_rootless_confined_and_limited(podman, runtime, rows):
    inst = rows[0]
    assert podman.limits.rootless
    s = runtime.create(instance_id=inst["instance_id"])
    uid_map = s.run("cat /proc/self/uid_map").output.split()
    assert uid_map[0] == "0" and uid_map[1] != "0", uid_map  # the container's root is not the host's
    r = s.run("python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)\"")
    assert r.exit_code != 0 and "unreachable" in r.output.lower(), r.output
    assert s.run("touch /usr/evil").exit_code != 0  # the image's files stay root's
    # no memory cgroup for a rootless service on cgroups v1: RLIMIT_DATA per process instead (1g, in KiB)
    assert podman.limits.memory or s.run("ulimit -d").output == "1048576\n"
    r = s.run("python3 -c \"x = bytearray(2 * 1024**3); print('allocated')\"")
    assert "MemoryError" in r.output and r.exit_code != 0, r.output
    cid = s.container.id
    runtime.close(s.id)
    assert podman.containers.list(all=True, filters={"id": cid}) == []


# out of band (a daemon rewriting the report), in-process forging, start-up files
RED = ("report rewritten by a double-forked daemon", "exit 0 at import", "conftest forcing passes", "sitecustomize")


def test_red_team_patterns_are_not_resolved(podman, rows):
    """Red-team patterns of several mechanisms, graded in fresh rootless Podman containers: none resolved."""
    from bugforge.sandbox.redteam import patch_for

    inst = rows[1]
    for name in RED:
        g = grade_patch(inst, patch_for(inst, name), timeout=60)
        assert not g.resolved, (name, g.status, g.log)


def test_images_check_and_ray_refusal_with_no_docker_daemon(cli, podman_dataset):
    """The README's route for a machine with Podman only starts with `images check` on Podman (Docker unreachable;
    run-agent and eval there: test_backends.py); --ray with --backend podman is a one-line error."""
    r = cli("images", "check", str(podman_dataset), env={**NO_DOCKER, "BUGFORGE_ENGINE": "podman"})
    assert r.returncode == 0 and "present" in r.stdout, r.stdout + r.stderr
    r = cli("run-agent", "--dataset", str(podman_dataset), "--model", "oracle", "--backend", "podman", "--ray", "auto")
    assert r.returncode == 1 and r.stderr.startswith("error: --backend podman runs sessions"), r.stderr


def test_connect_selects_podman_and_errors_are_one_line(podman, rows):
    with engine.using("docker"):
        rt = sandbox.connect(backend="podman")
        assert isinstance(rt, Runtime) and engine.selected() == "podman"
        with pytest.raises(BugforgeError, match="chooses this process's engine"):
            sandbox.connect("http://127.0.0.1:1", backend="podman")
        with pytest.raises(BugforgeError, match="is not in the local engine") as e:
            rt.create(image="bugforge/task.nothing:here")
        assert "\n" not in e.value.line()
        rt.shutdown()
