"""Task images through a registry (`bugforge images push | pull | check`): a real export's images pushed
from this machine's engine to a real registry on 127.0.0.1, pulled by a second engine with its own
storage (another node), and the dataset graded there with the gold patches: the same verdicts. The
grading on the second engine goes through a Ray actor's body (cluster._Host), which pulls the images
of the rows it is given, as a `--ray` command does on a node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import docker.errors
import pytest

from bugforge.errors import BugforgeError
from bugforge.images import registry as reg
from bugforge.records import read_jsonl
from bugforge.sandbox.grader import grade_patch

ON_NODE = textwrap.dedent(
    """
    import json, sys
    from bugforge.cluster import _Host
    from bugforge.sandbox.grader import grade_patch

    rows = [json.loads(line) for line in open(sys.argv[1])]
    host = _Host(lambda: None, None)  # what a Ray actor holds on its node
    grade = lambda worker, item: grade_patch(*item)
    for r in rows:
        g = host.call(grade, (r, r["patch"]))
        print(json.dumps({"id": r["instance_id"], "status": g.status, "resolved": g.resolved,
                          "f2p": g.FAIL_TO_PASS, "p2p": g.PASS_TO_PASS}))
    """
)


def test_names():
    assert reg.parse_registry("127.0.0.1:5000/bf/") == "127.0.0.1:5000/bf"
    assert reg.parse_registry("ghcr.io/me/tasks") == "ghcr.io/me/tasks"
    for bad in ("http://127.0.0.1:5000/bf", "127.0.0.1:5000", "host/Upper", ""):
        with pytest.raises(BugforgeError, match="registry"):
            reg.parse_registry(bad)
    assert reg.remote_name("bugforge/task.calc:op-1a2b", "h:1/ns") == ("h:1/ns/task.calc", "op-1a2b")
    assert reg.is_remote("h:1/ns/task.calc@sha256:00") and reg.is_remote("localhost/x")
    assert not reg.is_remote("bugforge/env.calc:k") and not reg.is_remote("python:3.11")
    rows = [
        {"image": "h:1/ns/t@sha256:1", "env_image": "bugforge/env.a:k", reg.ENV_REF: "h:1/ns/env.a@sha256:2"},
        {"image": "h:1/ns/t@sha256:3", "env_image": "bugforge/env.a:k", reg.ENV_REF: "h:1/ns/env.a@sha256:2"},
        {"image": "bugforge/task.b:x", "env_image": "bugforge/env.b:k"},
    ]
    assert reg.dataset_images(rows) == [
        ("h:1/ns/t@sha256:1", "h:1/ns/t@sha256:1"),
        ("bugforge/env.a:k", "h:1/ns/env.a@sha256:2"),
        ("h:1/ns/t@sha256:3", "h:1/ns/t@sha256:3"),
        ("bugforge/task.b:x", None),
        ("bugforge/env.b:k", None),
    ]


def _on(engine) -> dict:
    """cli()'s keyword arguments that point the command at `engine`."""
    return {"env": {"DOCKER_HOST": engine.host}}


def on_second_engine(run, pushed: list[dict], rows: list[dict], second_engine, cli) -> None:
    """The pushed dataset on a second engine that has none of its images: check fails in one line; a node's
    actor body pulls and grades as here; check, pull and prune then see them."""
    chk = cli("images", "check", str(run), **_on(second_engine))
    assert chk.returncode == 1 and chk.stdout == "", chk.stdout
    assert len(chk.stderr.strip().splitlines()) == 1 and "missing here" in chk.stderr, chk.stderr

    # graded there by a node's actor body (it pulls the rows' images), and here from the export's rows
    node = subprocess.run(
        [sys.executable, "-c", ON_NODE, str(run / reg.PUSHED_FILE)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "DOCKER_HOST": second_engine.host},
    )
    assert node.returncode == 0, node.stderr[-2000:]
    there = [json.loads(line) for line in node.stdout.splitlines()]
    here = []
    for r0 in rows:
        g = grade_patch(r0, r0["patch"])
        here.append(
            {"id": r0["instance_id"], "status": g.status, "resolved": g.resolved,
             "f2p": g.FAIL_TO_PASS, "p2p": g.PASS_TO_PASS}
        )  # fmt: skip
    assert there == here
    assert all(h["resolved"] for h in here), here

    ok = cli("images", "check", str(run), **_on(second_engine))
    assert ok.returncode == 0, ok.stderr  # the environment image too: pulled and tagged by its local name
    assert second_engine.client.images.get(rows[0]["env_image"])

    # one image gone: one line naming it; `images pull` brings it back
    second_engine.client.images.remove(pushed[-1]["image"], force=True)
    chk = cli("images", "check", str(run / reg.PUSHED_FILE), **_on(second_engine))
    assert chk.returncode == 1 and pushed[-1]["image"] in chk.stderr, chk.stderr
    assert len(chk.stderr.strip().splitlines()) == 1
    pulled = cli("images", "pull", str(run), **_on(second_engine))
    assert pulled.returncode == 0 and "1 pulled" in pulled.stdout, pulled.stdout + pulled.stderr
    assert cli("images", "check", str(run), **_on(second_engine)).returncode == 0

    # prune there keeps what the pushed dataset names (instance images are named only by digest there)
    pr = cli("images", "prune", "--runs", str(run), **_on(second_engine))
    assert pr.returncode == 0, pr.stderr
    assert "nothing to prune" in pr.stdout, pr.stdout
    assert cli("images", "check", str(run), **_on(second_engine)).returncode == 0


def test_push_pull_grade_on_second_engine(calc_runs, registry, second_engine, engine, cli, tmp_path):
    run = tmp_path / "runs" / "calc"
    shutil.copytree(calc_runs / "calc", run)  # the session's run stays as it is
    original = (run / "instances.jsonl").read_bytes()
    rows = read_jsonl(run / "instances.jsonl")
    ns = f"{registry}/bf"
    try:
        r = cli("images", "push", "--registry", ns, str(run))
        assert r.returncode == 0, r.stderr
        assert "dataset with pushed images" in r.stdout, r.stdout
        assert (run / "instances.jsonl").read_bytes() == original  # the export's own file is untouched
        pushed = read_jsonl(run / reg.PUSHED_FILE)
        assert [p["instance_id"] for p in pushed] == [r["instance_id"] for r in rows]
        for p, r0 in zip(pushed, rows):
            assert p["image"].startswith(f"{ns}/task.calc@sha256:"), p["image"]
            assert p["image_name"] == p["docker_image"] == p["image"]
            assert p["env_image"] == r0["env_image"] and p[reg.ENV_REF].startswith(f"{ns}/env.calc@sha256:")
            assert {k: v for k, v in p.items() if k not in (*reg.FIELDS, reg.ENV_REF)} == {
                k: v for k, v in r0.items() if k not in reg.FIELDS
            }
        log_lines = (run / reg.LOG_FILE).read_text().splitlines()
        assert len(log_lines) == 1 + len({r["image"] for r in rows})  # the environment, then each instance

        again = cli("images", "push", "--registry", ns, str(run))  # a rerun pushes nothing again
        assert again.returncode == 0 and "0 pushed" in again.stdout, again.stdout + again.stderr
        assert (run / reg.LOG_FILE).read_text().splitlines() == log_lines
        assert read_jsonl(run / reg.PUSHED_FILE) == pushed
        assert pushed[0][reg.ENV_REF] in reg.local_refs(rows[0]["env_image"])  # what fan_out hands its nodes

        on_second_engine(run, pushed, rows, second_engine, cli)
    finally:
        for d in read_jsonl(run / reg.LOG_FILE):  # the registry names this test gave the shared engine's images
            repo, tag = reg.remote_name(d["local"], ns)
            try:
                engine.images.remove(f"{repo}:{tag}")
            except docker.errors.APIError:  # not made (the test stopped earlier), or in use: clean-up goes on
                pass


def test_push_refuses_bad_input(calc_runs, cli, tmp_path):
    r = cli("images", "push", "--registry", "http://127.0.0.1:5000/bf", str(calc_runs / "calc"))
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "scheme" in r.stderr
    r = cli("images", "push", "--registry", "127.0.0.1:5000/bf", str(tmp_path))
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "env.json" in r.stderr
    r = cli("images", "check", str(tmp_path / "none.jsonl"))
    assert r.returncode == 1 and "does not exist" in r.stderr
