"""Issue 37: what every sandbox backend shares, one test code run under each (`backend`, parametrized): docker,
podman (real rootless Podman: conftest's podman_dataset) and process (real bubblewrap, from the tree `bugforge images
rootfs` exported: conftest's rootfs). A session keeps shell state and exit codes, a timeout interrupts and the shell
survives, `exit` restarts the shell, file operations are confined to the tree, a session's gold diff grades resolved
and an unfixed or empty one does not, and `run-agent` (the scripted oracle, which knows the gold patch: not a model)
then `eval` grade like Docker, with Docker unreachable for podman and process. The runtime comes from
`sandbox.connect(backend=...)` for all three. What only one backend has: test_sandbox.py (Docker: hostile agents,
warm grading, the HTTP service), test_podman_backend.py, test_process_backend.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bugforge import engine, sandbox
from bugforge.errors import BugforgeError
from bugforge.records import read_jsonl
from bugforge.sandbox.grader import grade_patch
from bugforge.sandbox.runtime import RUNTIME, SandboxConfig

pytestmark = pytest.mark.docker  # every backend's instances come from the calc images Docker made
NO_DOCKER = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}  # any use of Docker fails


@dataclass
class Backend:
    name: str
    dataset: Path
    """The rows' JSONL: what run-agent and eval are given."""
    rows: list[dict]
    options: dict = field(default_factory=dict)
    """sandbox.connect's own options for this backend (process: rootfs, work_dir)."""
    cli: list[str] = field(default_factory=list)
    """run-agent's and eval's options beyond --backend."""
    env: dict = field(default_factory=dict)
    """The command line's environment: no Docker where the backend must not need it."""


@pytest.fixture(scope="module", params=sandbox.BACKENDS)
def backend(request, calc_runs, tmp_path_factory):
    """One backend, its rows and how to reach it; docker and podman are this process's engine while their tests
    run (the previous choice again after). Podman and process skip, in one line, where they cannot run."""
    name = request.param
    if name == "process":
        root = request.getfixturevalue("rootfs")
        work = tmp_path_factory.mktemp("process")
        yield Backend(
            name,
            root / "instances.jsonl",
            read_jsonl(root / "instances.jsonl"),
            {"rootfs": root, "work_dir": work},
            ["--rootfs", str(root)],
            NO_DOCKER,
        )
        return
    dataset = request.getfixturevalue("podman_dataset") if name == "podman" else calc_runs / "calc" / "instances.jsonl"
    with engine.using(name):
        yield Backend(name, dataset, read_jsonl(dataset), env=NO_DOCKER if name == "podman" else {})


@pytest.fixture
def runtime(backend):
    rt = sandbox.connect(
        backend=backend.name,
        config=SandboxConfig(command_timeout=20, mem_limit="1g", owner="pytest-backends"),
        instances={r["instance_id"]: r for r in backend.rows},
        **backend.options,
    )
    yield rt
    rt.shutdown()
    if backend.name == "process":  # its folder went with it
        assert list(backend.options["work_dir"].glob("bugforge-process.*")) == []
    else:  # none of its containers left
        assert engine.client().containers.list(all=True, filters={"label": f"{RUNTIME}={rt.id}"}) == []


def grade(runtime, inst: dict, patch: str):
    """The backend's own grader, as `submit` calls it: the runtime's where it has one (process), else the
    engine's fresh container (docker, podman)."""
    return runtime.grade(inst, patch) if hasattr(runtime, "grade") else grade_patch(inst, patch)


# --- the shell --------------------------------------------------------------------------------


def test_shell_keeps_state_and_reports_exit_codes(runtime, backend):
    inst = backend.rows[0]
    s = runtime.create(instance_id=inst["instance_id"])
    assert (s.user, s.base_commit) == ("agent", inst["base_commit"])
    assert s.run("cd calc && export GREETING=hi && f() { echo fn; }").exit_code == 0
    r = s.run("pwd; echo $GREETING; f; id -un; false")
    assert r.output == "/testbed/calc\nhi\nfn\nagent\n" and r.exit_code == 1
    assert s.run("printf 'no newline'").output == "no newline"
    assert s.run("printf 'a\\x03b\\x04c'").output == "a\x03b\x04c"  # control bytes are output, not keys
    assert s.run("echo \x03 typed").output == "\x03 typed\n"  # ... nor keys when typed in a command
    assert s.run("cat").output == ""  # stdin is empty, never the terminal
    assert s.run("head -c 300 /dev/urandom | wc -c").output.strip() == "300"
    # a background job that ends later is not announced ("[1]+  Done ...") in some later command's output
    assert s.run("sleep 0.2 & echo started").output.endswith("started\n")
    assert s.run("sleep 0.5").output == ""
    assert s.run("echo after").output == "after\n"


def test_timeout_interrupts_and_shell_survives(runtime, backend):
    s = runtime.create(instance_id=backend.rows[0]["instance_id"])
    s.run("cd /tmp && X=kept")
    r = s.run("while true; do :; done", timeout=1)
    assert r.timed_out and r.exit_code is None and r.seconds < 1.8, r  # ^C reached it: a real terminal
    r = s.run("trap '' INT; sleep 1000", timeout=1)  # ignores ^C: killed instead
    assert r.timed_out
    r = s.run("pwd; echo $X")
    assert r.output == "/tmp\nkept\n" and r.exit_code == 0 and not r.shell_restarted


def test_exit_restarts_the_shell(runtime, backend):
    s = runtime.create(instance_id=backend.rows[0]["instance_id"])
    s.run("cd /tmp && X=gone")
    r = s.run("exit 3")
    assert r.shell_restarted and r.exit_code == 3
    assert s.run("echo back $X; pwd").output == "back\n/testbed\n"  # a new shell, where sessions start


# --- files ------------------------------------------------------------------------------------


def test_file_operations_are_confined(runtime, backend):
    s = runtime.create(instance_id=backend.rows[0]["instance_id"])
    s.write("notes/a.txt", "one\ntwo\n")
    assert s.read("notes/a.txt") == "one\ntwo\n"
    s.edit("notes/a.txt", "two", "three")
    assert s.read("/testbed/notes/a.txt") == "one\nthree\n"
    with pytest.raises(BugforgeError, match="exactly once"):
        s.edit("notes/a.txt", "missing", "x")
    assert "a.txt" in [e["name"] for e in s.list("notes")]
    s.run("ln -s /etc /testbed/etc_link; ln -s ../../etc/passwd /testbed/notes/pw")
    for bad in ("../etc/passwd", "/etc/passwd", "etc_link/passwd", "notes/pw", "notes/../../root"):
        with pytest.raises(BugforgeError, match="outside the workspace"):
            s.read(bad)
    with pytest.raises(BugforgeError, match="outside the workspace"):
        s.write("etc_link/evil", "x")
    assert "notes/a.txt" in s.diff() and "+three" in s.diff()


# --- grading ----------------------------------------------------------------------------------


def test_session_diffs_grade_gold_resolved_and_unfixed_or_empty_not(runtime, backend):
    """The agent's route: the tests fail, the gold fix makes them pass, `submit` grades the session's diff
    (resolved; what is not in the diff, a git hook, stays out); an unfixed diff, an empty one and a patch that
    does not apply are not resolved."""
    inst = backend.rows[1]
    failing = " ".join(json.loads(inst["FAIL_TO_PASS"]))
    s = runtime.create(instance_id=inst["instance_id"])
    assert s.run(f"python -m pytest -q -p no:cacheprovider {failing}").exit_code == 1
    s.write("fix.diff", inst["patch"])
    assert s.run("git apply fix.diff && rm fix.diff").exit_code == 0
    r = s.run(f"python -m pytest -q -p no:cacheprovider {failing}")
    assert r.exit_code == 0 and "passed" in r.output, r.output
    s.run("echo junk > /tmp/junk && printf '#!/bin/sh\\nexit 1\\n' > .git/hooks/pre-commit")  # not in the diff
    g = s.submit()
    assert (g.status, g.resolved, g.tamper) == ("RESOLVED_FULL", True, []), g.log
    s.run(f"git checkout -q -- . && echo '# looked at it' >> {inst['files'][0]}")
    g = s.submit()
    assert (g.status, g.resolved) == ("RESOLVED_NO", False), g.log
    s.run("git checkout -q -- .")
    assert s.diff() == "" and s.submit().status == "EMPTY_PATCH"
    assert grade(runtime, inst, "not a patch\n").status == "PATCH_FAILED"


# --- an agent run and its evaluation ------------------------------------------------------------


def test_agent_run_and_eval_grade_like_docker(cli, backend, tmp_path):
    """`run-agent --backend B` with the scripted oracle (applies the gold patch; not a model): each episode's
    grade is the gold verdict the Docker fresh grader gives (every FAIL_TO_PASS test passes, none of
    PASS_TO_PASS fails, no tampering), and `eval --backend B` resolves every prediction."""
    n, ds = len(backend.rows), str(backend.dataset)
    how = ["--backend", backend.name, *backend.cli]
    preds = tmp_path / "preds.jsonl"
    r = cli(
        "run-agent", "--dataset", ds, "--model", "oracle", *how, "--out", str(preds), "--workers", "2",
        env=backend.env, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0 and f"resolved {n} of {n} graded" in " ".join(r.stdout.split()), r.stdout + r.stderr
    want = {i["instance_id"]: sorted(json.loads(i["FAIL_TO_PASS"])) for i in backend.rows}
    for t in read_jsonl(preds.with_suffix(".trajectories.jsonl")):
        g = t["grade"]
        assert (g["status"], g["tamper"], g["FAIL_TO_PASS"]["failure"], g["PASS_TO_PASS"]["failure"]) == (
            "RESOLVED_FULL", [], [], []
        ), (t["instance_id"], g)  # fmt: skip
        assert sorted(g["FAIL_TO_PASS"]["success"]) == want.pop(t["instance_id"])
    assert want == {}  # one episode per instance
    r = cli(
        "eval", *how, "--dataset", ds, "--predictions", str(preds), "--run-id", backend.name,
        "--report-dir", str(tmp_path), cwd=tmp_path, env=backend.env, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0 and f"evaluation: {n}/{n} resolved" in r.stdout, r.stdout + r.stderr
