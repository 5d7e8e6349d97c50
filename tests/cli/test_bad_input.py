"""Issue 35, item 8: bad input tried as a new user would, through the real command line. Each gets one
line on stderr (`error: ...`, no traceback), a non-zero exit, and nothing written outside the run folder
(the test's own folder, which is also the working directory)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from bugforge.cli.demo import free_port
from bugforge.records import read_jsonl


def one_error_line(r) -> str:
    """The single `error:` line a failed command printed on stderr."""
    assert r.returncode != 0, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    return lines[0]


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in Path(root).rglob("*")}


# --- sandbox serve --port -------------------------------------------------------------------------------


@pytest.mark.parametrize("port", ["99999", "-1", "0"])
def test_serve_rejects_a_port_out_of_range(cli, tmp_path, port):
    r = cli("sandbox", "serve", f"--port={port}", "--token", "t", cwd=tmp_path, timeout=60)
    assert f"--port {port} is not a port number" in one_error_line(r)
    assert r.stdout == "" and files_under(tmp_path) == set()


def test_serve_and_serve_model_reject_a_port_in_use(cli, tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        for args in (["sandbox", "serve", "--token", "t"], ["serve-model"]):
            r = cli(*args, "--port", port, cwd=tmp_path, timeout=60)
            assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in one_error_line(r)
    r = cli("serve-model", "--port", "70000", cwd=tmp_path, timeout=60)  # before loading the model
    assert "--port 70000 is not a port number" in one_error_line(r)
    assert files_under(tmp_path) == set()


# --- eval: the export folder as the dataset; run and model names ------------------------------------------


def test_eval_takes_the_export_folder_as_its_dataset(cli, calc_runs, tmp_path):
    """mini-swe-agent and `datasets` take the folder: eval does too (its instances.jsonl), with a
    mini-swe-agent preds.json whose model name has a slash (one folder, SWE-bench's `org__model`)."""
    folder = calc_runs / "calc"
    rows = read_jsonl(folder / "instances.jsonl")
    preds = {r["instance_id"]: {"model_name_or_path": "org/model", "model_patch": r["patch"]} for r in rows}
    (tmp_path / "preds.json").write_text(json.dumps(preds))
    r = cli("eval", "--dataset", str(folder), "--predictions", "preds.json", "--run-id", "r1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "org__model.r1.json").read_text())
    assert report["resolved_instances"] == len(rows) > 0
    logs = [p.relative_to(tmp_path).parts[:4] for p in tmp_path.rglob("report.json")]
    assert len(logs) == len(rows) and set(logs) == {("logs", "run_evaluation", "r1", "org__model")}

    empty = tmp_path / "empty"
    empty.mkdir()
    r = cli("eval", "--dataset", str(empty), "--predictions", "gold", cwd=tmp_path, timeout=60)
    assert "is a folder without instances.jsonl" in one_error_line(r)


@pytest.fixture
def dataset(tmp_path) -> Path:
    """A dataset file whose image is not present: every check below must come before the images are
    looked up, let alone anything graded."""
    rows = [{"instance_id": "calc.op_change.1", "image": "bugforge-test/absent:1", "patch": "x"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "data.jsonl"


@pytest.mark.parametrize("run_id", ["../../x", "..", ".", "a/b", ""])
def test_eval_rejects_a_run_id_that_is_not_a_name(cli, tmp_path, dataset, run_id):
    work = tmp_path / "work"
    work.mkdir()
    r = cli("eval", "--dataset", str(dataset), "--predictions", "gold", "--run-id", run_id, cwd=work, timeout=60)
    assert f"--run-id {run_id!r} is not a name" in one_error_line(r)
    assert files_under(tmp_path) == {"data.jsonl", "work"}


@pytest.mark.parametrize("model", ["..", ".", "a\\b"])
def test_eval_rejects_a_model_name_that_is_not_a_name(cli, tmp_path, dataset, model):
    work = tmp_path / "work"
    work.mkdir()
    pred = {"instance_id": "calc.op_change.1", "model_name_or_path": model, "model_patch": "x"}
    (work / "preds.jsonl").write_text(json.dumps(pred) + "\n")
    r = cli("eval", "--dataset", str(dataset), "--predictions", "preds.jsonl", cwd=work, timeout=60)
    assert f"model name {model!r} is not a name" in one_error_line(r)
    assert files_under(tmp_path) == {"data.jsonl", "work", "work/preds.jsonl"}
    r = cli("run-agent", "--dataset", str(dataset), "--model", model, cwd=work, timeout=60)
    assert f"model name {model!r} is not a name" in one_error_line(r)
    assert files_under(tmp_path) == {"data.jsonl", "work", "work/preds.jsonl"}


# --- run-agent against a dead endpoint ---------------------------------------------------------------------


def test_run_agent_against_a_dead_endpoint_fails_and_a_rerun_retries(cli, calc_runs, tmp_path):
    """A closed localhost port: every episode fails (model_error), the run exits non-zero with one line,
    no prediction is written (the failure is in the trajectories), and a rerun with a working policy
    runs the episode instead of skipping it as done."""
    data = str(calc_runs / "calc" / "instances.jsonl")
    dead = f"http://127.0.0.1:{free_port()}/v1"
    args = ["run-agent", "--dataset", data, "--limit", "1", "--out", "preds.jsonl", "--workers", "1"]
    r = cli(*args, "--model", "m", "--base-url", dead, cwd=tmp_path, timeout=300)
    line = one_error_line(r)
    assert "all 1 episodes failed" in line and "model_error" in line and dead in line
    assert "Connection refused" in line  # the cause, not only the client's "Connection error."
    assert read_jsonl(tmp_path / "preds.jsonl") == []
    [traj] = read_jsonl(tmp_path / "preds.trajectories.jsonl")
    assert traj["exit_reason"] == "model_error"
    assert files_under(tmp_path) == {"preds.trajectories.jsonl"} | (
        {"preds.jsonl"} if (tmp_path / "preds.jsonl").exists() else set()
    )

    r = cli(*args, "--model", "oracle", cwd=tmp_path, timeout=300)  # the rerun: retried, not skipped
    assert r.returncode == 0, r.stderr
    assert "1 episodes (submitted 1)" in r.stdout
    [pred] = read_jsonl(tmp_path / "preds.jsonl")
    assert pred["model_name_or_path"].startswith("oracle") and pred["model_patch"].strip()
    assert [t["exit_reason"] for t in read_jsonl(tmp_path / "preds.trajectories.jsonl")] == [
        "model_error",
        "submitted",
    ]


# --- factory env on an unreachable git URL ------------------------------------------------------------------


def test_factory_env_on_an_unreachable_url_says_why(cli, tmp_path):
    home, runs = tmp_path / "home", tmp_path / "runs"
    port = free_port()
    cases = {
        f"http://127.0.0.1:{port}/nothing.git": "Couldn't connect to server",
        (tmp_path / "absent.git").as_uri(): "does not appear to be a git repository",
    }
    for url, reason in cases.items():
        r = cli("factory", "env", url, "--out", str(runs), env={"BUGFORGE_HOME": str(home)}, cwd=tmp_path, timeout=120)
        line = one_error_line(r)
        assert line.startswith(f"error: cannot clone {url}: fatal: ") and reason in line, line
    assert not list((home / "clones").iterdir())  # no half-made clone left in the cache
    assert not runs.exists() or not any(p.is_file() for p in runs.rglob("*"))
