"""Issue 37, the `podman` backend: sessions, grading and an agent run on rootless Podman through its
Docker-compatible API (bugforge.podman), no Docker daemon involved past making the images. Real Podman
(scripts/setup-podman.sh: Debian's podman, a rootless user and its API service), real git and pytest. The instance
images are the factory-made calc example's, moved with `bugforge images save` / `images load --backend podman`
(BUGFORGE_TEST_PODMAN_DATASET=DIR instead names a dataset whose images that Podman already holds: no Docker)."""

from __future__ import annotations

import json
import os
import pwd

import pytest

from bugforge import engine, sandbox
from bugforge.errors import BugforgeError
from bugforge.images.registry import dataset_path
from bugforge.records import read_jsonl
from bugforge.sandbox.grader import grade_patch
from bugforge.sandbox.runtime import Runtime, SandboxConfig

pytestmark = pytest.mark.docker  # the calc images are made with Docker (not under the dataset hook above)
USER = os.environ.get("BUGFORGE_PODMAN_USER", "bfpodman")
NO_DOCKER = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}  # any use of Docker fails


def _has_user(name: str) -> bool:
    try:
        return bool(pwd.getpwnam(name))
    except KeyError:
        return False


@pytest.fixture(scope="module")
def podman():
    """This module's engine is Podman (the rootless user's service, started if needed); the previous engine
    again afterwards. Skips, with the reason in one line, where no Podman can be reached or started."""
    mp = pytest.MonkeyPatch()
    if os.geteuid() == 0 and not os.environ.get("BUGFORGE_PODMAN_SOCKET"):
        if not _has_user(USER):
            pytest.skip(f"no rootless Podman user {USER} (run scripts/setup-podman.sh as root)")
        mp.setenv("BUGFORGE_PODMAN_USER", USER)
    try:
        with engine.using("podman") as client:
            yield client
    except BugforgeError as e:
        pytest.skip(f"no rootless Podman here ({e.line()}; run scripts/setup-podman.sh as root)")
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def dataset(request, podman, tmp_path_factory):
    """The calc dataset's JSONL, its images in Podman's store (saved from Docker, loaded through Podman's API;
    removed from that store afterwards, so test sessions leave nothing behind there)."""
    from bugforge.images.archive import images_of, load, save

    if os.environ.get("BUGFORGE_TEST_PODMAN_DATASET"):
        yield dataset_path(os.environ["BUGFORGE_TEST_PODMAN_DATASET"])
        return
    archive = tmp_path_factory.mktemp("podman") / "calc.tar"
    with engine.using("docker"):
        path = dataset_path(request.getfixturevalue("calc_runs") / "calc")
        save(path, archive)
    loaded = load(archive)  # into the rootless user's store
    archive.unlink()
    try:
        assert {n.removeprefix("localhost/") for n in loaded} == set(images_of(path)), loaded
        yield path
    finally:
        for name in loaded:
            podman.images.remove(name, force=True)


@pytest.fixture(scope="module")
def rows(dataset) -> list[dict]:
    return read_jsonl(dataset)


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
    assert (s.user, s.base_commit) == ("agent", inst["base_commit"])
    uid_map = s.run("cat /proc/self/uid_map").output.split()
    assert uid_map[0] == "0" and uid_map[1] != "0", uid_map  # the container's root is not the host's
    assert s.run("cd /testbed && export GREETING=hi && f() { echo fn; }").exit_code == 0
    r = s.run("echo $GREETING; f; id -un; false")
    assert r.output == "hi\nfn\nagent\n" and r.exit_code == 1
    r = s.run("python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)\"")
    assert r.exit_code != 0 and "unreachable" in r.output.lower(), r.output
    assert s.run("touch /usr/evil").exit_code != 0  # the image's files stay root's
    # no memory cgroup for a rootless service on cgroups v1: RLIMIT_DATA per process instead (1g, in KiB)
    assert podman.limits.memory or s.run("ulimit -d").output == "1048576\n"
    r = s.run("python3 -c \"x = bytearray(2 * 1024**3); print('allocated')\"")
    assert "MemoryError" in r.output and r.exit_code != 0, r.output
    s.write("notes/a.txt", "one\ntwo\n")
    s.edit("notes/a.txt", "two", "three")
    assert s.read("notes/a.txt") == "one\nthree\n" and "a.txt" in [e["name"] for e in s.list("notes")]
    assert "+three" in s.diff() and "notes/a.txt" in s.diff()
    s.run("ln -s /etc /testbed/link")
    for bad in ("../etc/passwd", "/etc/passwd", "link/passwd"):
        with pytest.raises(BugforgeError, match="outside the workspace"):
            s.read(bad)
    failing = " ".join(json.loads(inst["FAIL_TO_PASS"]))
    r = s.run(f"python -m pytest -q -p no:cacheprovider {failing}")
    assert r.exit_code == 1 and "failed" in r.output, r.output
    r = s.run("while true; do :; done", timeout=1)
    assert r.timed_out and r.exit_code is None
    r = s.run("exit 3")
    assert r.shell_restarted and r.exit_code == 3 and s.run("echo back").output == "back\n"
    cid = s.container.id
    runtime.close(s.id)
    assert podman.containers.list(all=True, filters={"id": cid}) == []


# out of band (a daemon rewriting the report), in-process forging, start-up files
RED = ("report rewritten by a double-forked daemon", "exit 0 at import", "conftest forcing passes", "sitecustomize")


def test_grading_gold_unfixed_and_red_team(runtime, rows):
    """Gold resolves (through submit and grade_patch), an unfixed diff and an empty one do not, and red-team
    patterns of several mechanisms are not resolved: all graded in fresh rootless Podman containers."""
    inst = rows[1]
    s = runtime.create(instance_id=inst["instance_id"])
    s.write("fix.diff", inst["patch"])
    assert s.run("git apply fix.diff && rm fix.diff").exit_code == 0
    s.run("printf '#!/bin/sh\\nexit 1\\n' > .git/hooks/pre-commit")  # not in the diff
    g = s.submit()
    assert (g.status, g.resolved, g.tamper) == ("RESOLVED_FULL", True, []), g.log
    s.run(f"git checkout -q -- . && echo '# looked at it' >> {inst['files'][0]}")
    unfixed = grade_patch(inst, s.diff())
    assert (unfixed.status, unfixed.resolved) == ("RESOLVED_NO", False), unfixed.log
    assert grade_patch(inst, "").status == "EMPTY_PATCH"
    from bugforge.sandbox.redteam import patch_for

    for name in RED:
        g = grade_patch(inst, patch_for(inst, name), timeout=60)
        assert not g.resolved, (name, g.status, g.log)


def test_agent_run_and_eval_with_no_docker_daemon(cli, podman, dataset, rows, tmp_path):
    """The README's route for a machine with Podman only: `images check`, `run-agent --backend podman` (episodes
    graded there) and `eval --backend podman`, with Docker unreachable."""
    n = len(rows)
    r = cli("images", "check", str(dataset), env={**NO_DOCKER, "BUGFORGE_ENGINE": "podman"})
    assert r.returncode == 0 and "present" in r.stdout, r.stdout + r.stderr
    preds = tmp_path / "preds.jsonl"
    r = cli(
        "run-agent", "--dataset", str(dataset), "--model", "oracle", "--backend", "podman", "--out", str(preds),
        "--workers", "2", env=NO_DOCKER, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0 and f"resolved {n} of {n} graded" in " ".join(r.stdout.split()), r.stdout + r.stderr
    r = cli(
        "eval", "--backend", "podman", "--dataset", str(dataset), "--predictions", str(preds), "--run-id", "pm",
        "--report-dir", str(tmp_path), cwd=tmp_path, env=NO_DOCKER, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0 and f"evaluation: {n}/{n} resolved" in r.stdout, r.stdout + r.stderr
    r = cli("run-agent", "--dataset", str(dataset), "--model", "oracle", "--backend", "podman", "--ray", "auto")
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
