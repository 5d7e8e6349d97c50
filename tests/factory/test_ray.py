"""Validation on a real two-node Ray cluster on this machine (ray.cluster_utils.Cluster): the same labels
as the single-process run, a node removed mid-run, a killed driver resumed; evaluation over Ray gives the
same verdicts as without, and so does an agent run. Real Docker, real Ray."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bugforge.factory.generate import generate
from bugforge.records import read_jsonl

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

STRATEGIES = ["op_change", "remove_assign", "change_return", "flip_operators"]
NODE = {"num_cpus": 1, "resources": {"docker": 2}, "object_store_memory": 80 * 2**20}


@pytest.fixture(scope="module")
def cluster():
    """A head and one worker node, each advertising two units of the `docker` resource."""
    c = Cluster(initialize_head=True, head_node_args=NODE)
    c.add_node(**NODE)
    c.wait_for_nodes()
    yield c
    ray.shutdown()
    c.shutdown()


@pytest.fixture(scope="module")
def plain(calc_env, tmp_path_factory):
    """The single-process run's labels, keyed by candidate."""
    d = tmp_path_factory.mktemp("plain") / "env"
    shutil.copytree(Path(calc_env.testmap).parent, d)
    generate(d, max_candidates=6, workers=2, strategies=STRATEGIES, log=lambda m: None)
    return labels(d)


def labels(d: Path) -> dict[str, tuple]:
    rows = read_jsonl(d / "validations.jsonl")
    ids = [r["candidate"] for r in rows]
    assert len(ids) == len(set(ids)) == len(read_jsonl(d / "candidates.jsonl"))  # each labelled exactly once
    return {r["candidate"]: (r["status"], r["FAIL_TO_PASS"], r["PASS_TO_PASS"]) for r in rows}


def test_a_node_lost_mid_run_changes_no_label_and_duplicates_nothing(cluster, plain, calc_env, tmp_path):
    d = tmp_path / "env"
    shutil.copytree(Path(calc_env.testmap).parent, d)
    worker = cluster.add_node(**NODE)  # the node to lose
    cluster.wait_for_nodes()
    err = []

    def run():
        try:
            generate(d, max_candidates=6, workers=3, strategies=STRATEGIES, ray=cluster.address, log=lambda m: None)
        except BaseException as e:  # noqa: BLE001 - carried to the test's thread, which asserts on it
            err.append(e)

    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not read_jsonl(d / "validations.jsonl"):
        time.sleep(0.1)
    cluster.remove_node(worker)
    t.join(300)
    assert not t.is_alive() and not err, err
    assert labels(d) == plain
    assert any(s == "valid" for s, _, _ in plain.values())


def test_a_killed_driver_resumes_with_the_same_labels(cluster, plain, calc_env, tmp_path):
    d = tmp_path / "env"
    shutil.copytree(Path(calc_env.testmap).parent, d)
    cmd = [sys.executable, "-m", "bugforge.cli", "factory", "generate", str(d), "--ray", cluster.address]
    cmd += ["--max-candidates", "6", "--workers", "2", "--strategies", ",".join(STRATEGIES)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(read_jsonl(d / "validations.jsonl")) < 2 and p.poll() is None:
        time.sleep(0.1)
    p.kill()
    p.wait()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert labels(d) == plain


def test_eval_over_ray_gives_the_same_verdicts(cluster, calc_runs, instances, tmp_path):
    from bugforge.sandbox.evaluate import evaluate, find_environments

    a, b = instances
    envs = find_environments(instances, calc_runs)
    cases = {
        "gold": {a["instance_id"]: a["patch"], b["instance_id"]: b["patch"]},
        "other_bug": {a["instance_id"]: b["bug_patch"], b["instance_id"]: a["bug_patch"]},
    }
    keys = ("resolved_ids", "unresolved_ids", "empty_patch_ids", "error_ids")
    for name, patches in cases.items():
        preds = [{"instance_id": i, "model_name_or_path": name, "model_patch": p} for i, p in patches.items()]
        kw = {"log_dir": tmp_path / "logs", "report_dir": tmp_path, "workers": 2}
        plain, _ = evaluate(instances, preds, run_id=f"p{name}", envs=envs, **kw)
        warm, _ = evaluate(instances, preds, run_id=f"w{name}", envs=envs, ray=cluster.address, **kw)
        fresh = evaluate(instances, preds, run_id=f"f{name}", ray=cluster.address, **kw)[0] if name == "gold" else warm
        for key in keys:
            assert warm[key] == plain[key] == fresh[key], (name, key, plain[key], warm[key], fresh[key])
        assert len(list((tmp_path / "logs" / f"w{name}").glob("*/*/report.json"))) == len(warm["completed_ids"])
    assert plain["completed_ids"]  # (other_bug: the other instance's bug, graded)


def test_an_agent_run_over_ray_gives_the_same_verdicts(cluster, instances, tmp_path):
    """The SCRIPTED expert (it knows the gold patch; plumbing, not a model), with and without Ray: the
    same exit reasons, grades and patches, every record written once on the driver."""
    from bugforge.agent import AgentConfig, ExpertPolicy
    from bugforge.agent.run import run_dataset
    from bugforge.sandbox import connect

    policies = {"expert": lambda row: ExpertPolicy(row, "text")}
    box = connect(None)
    try:
        for name, make in policies.items():
            runs = {}
            for how, address in (("plain", None), ("ray", cluster.address)):
                preds = tmp_path / f"{name}-{how}.jsonl"
                trajs = run_dataset(
                    instances,
                    make,
                    box,
                    predictions=preds,
                    trajectories=preds.with_suffix(".traj"),
                    workers=2,
                    config=AgentConfig(mode="text"),
                    ray=address,
                )
                assert sorted(r["instance_id"] for r in read_jsonl(preds)) == sorted(
                    i["instance_id"] for i in instances
                )
                runs[how] = {t.instance_id: (t.exit_reason, t.patch, (t.grade or {}).get("status")) for t in trajs}
                empty = [(t.instance_id, t.steps) for t in trajs if not t.patch]  # (to see why, if it happens)
            assert runs["ray"] == runs["plain"], (runs, empty)
            assert {s for _, _, s in runs["plain"].values()} == {"RESOLVED_FULL"}, runs
    finally:
        box.shutdown()


def test_sandbox_sessions_on_ray_actors_behave_like_in_process_ones(cluster, instances):
    """RaySandbox (the sandbox of `train grpo --ray`): sessions spread over both nodes' actors; the same
    commands, edits, diffs and grades as in-process sessions; a session whose actor died says so; shutdown
    leaves no container."""
    import os

    from bugforge.engine import client
    from bugforge.errors import BugforgeError
    from bugforge.sandbox import connect
    from bugforge.sandbox.runtime import OWNER, SandboxConfig
    from bugforge.sandbox.shell import RunResult

    owner = f"ray-test-{os.getpid()}"
    by_id = {i["instance_id"]: i for i in instances}
    box = connect(ray=cluster.address, workers=2, instances=by_id, config=SandboxConfig(owner=owner))
    local = connect(None, instances=by_id, config=SandboxConfig(owner=f"{owner}-local"))
    ours = lambda: client().containers.list(all=True, filters={"label": f"{OWNER}={owner}"})  # noqa: E731
    try:
        assert len(set(box.nodes())) == 2  # one actor on each node
        sessions = {}
        for inst in instances:
            pair = (box.create(instance_id=inst["instance_id"]), local.create(instance_id=inst["instance_id"]))
            for s in pair:
                r = s.run("echo hi && false")
                assert isinstance(r, RunResult) and r.output.strip() == "hi" and r.exit_code == 1
                s.write("gold.diff", inst["patch"])
                assert s.run("git apply gold.diff && rm gold.diff").exit_code == 0
                s.write("NOTES.txt", "hello\n")
                s.edit("NOTES.txt", "hello", "bye")
                assert s.read("NOTES.txt") == "bye\n"
                assert "NOTES.txt" in {e["name"] for e in s.list(".")}
            assert pair[0].diff() == pair[1].diff() and "+bye" in pair[0].diff()
            sessions[inst["instance_id"]] = pair
        assert {s.actor for s, _ in sessions.values()} == {0, 1}  # fewest open sessions first: one each
        remote, plain = next(iter(sessions.values()))
        g1, g2 = remote.submit(), plain.submit()
        assert type(g1) is type(g2) and (g1.status, g1.resolved, g1.FAIL_TO_PASS) == (g2.status, True, g2.FAIL_TO_PASS)
        # an actor that dies (as on a lost node) takes its session with it: one clear error, new sessions work
        lost, _ = sessions[instances[1]["instance_id"]]
        ray.kill(box.actors[lost.actor], no_restart=False)
        with pytest.raises(BugforgeError, match="actor"):  # (ray.kill is asynchronous: the old actor may
            for _ in range(300):  # still answer a call or two before it goes)
                lost.run("true")
                time.sleep(0.1)
        for _ in range(2):
            assert box.create(image=instances[1]["image"]).run("echo ok").output.strip() == "ok"
    finally:
        box.shutdown()
        local.shutdown()
    # at most the container of the killed actor's session (a lost node's stay on that node); on one host, the
    # next runtime to start a container removes it, its owner process being gone (bugforge.engine.remove_orphans)
    left = ours()
    assert len(left) <= 1
    for c in left:
        c.remove(force=True)


def test_a_grpo_step_over_the_ray_sandbox(cluster, instances, make_tiny_model, tmp_path):
    """One GRPO step (TRL, a tiny random model) whose episodes' sessions live on Ray actors."""
    from bugforge.sandbox import connect
    from bugforge.training import GRPOTrainConfig
    from bugforge.training.grpo import train_grpo

    make_tiny_model(tmp_path / "tiny")
    cfg = GRPOTrainConfig(
        num_generations=2,
        max_steps=1,
        agent_steps=1,
        turn_tokens=8,
        max_completion_tokens=64,
        save_steps=10,
        rollout_workers=2,
        output_dir=str(tmp_path / "grpo"),
    )
    box = connect(ray=cluster.address, workers=2)
    try:
        trainer, rollout = train_grpo(instances[:1], str(tmp_path / "tiny"), cfg, sandbox=box)
        assert trainer.state.global_step == 1
        assert box.created == 2 and box.sessions() == []  # one session per episode, all closed
        assert {e.exit_reason for e in rollout.episodes} <= {"max_steps", "max_tokens", "submitted"}
    finally:
        box.shutdown()


@pytest.mark.docker  # the sandbox reaches the engine before it looks for the images
def test_a_ray_sandbox_whose_images_are_missing_on_a_node_stops_before_any_session(cluster):
    from bugforge.errors import BugforgeError
    from bugforge.sandbox import connect

    with pytest.raises(BugforgeError, match="image bugforge/task.nothing:missing is not on node"):
        connect(ray=cluster.address, workers=2, images=["bugforge/task.nothing:missing"])


def test_train_grpo_with_no_cluster_at_the_address_stops_with_one_line(instances, tmp_path):
    ds = tmp_path / "ds.jsonl"
    ds.write_text("".join(json.dumps(r) + "\n" for r in instances))
    args = ["train", "grpo", "--dataset", str(ds), "--ray", "127.0.0.1:9", "--out", str(tmp_path / "o")]
    r = subprocess.run([sys.executable, "-m", "bugforge.cli", *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") == 0 and "no Ray cluster answers at 127.0.0.1:9" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()  # nothing produced, no model loaded


def test_without_ray_nothing_of_ray_is_imported():
    code = (
        "import sys, bugforge.cli.factory, bugforge.cli.eval, bugforge.cli.agent, bugforge.factory.generate, "
        "bugforge.sandbox.evaluate, bugforge.agent.run, bugforge.sandbox.ray_sandbox, bugforge.cli.train, "
        "bugforge.training.grpo, bugforge.training.toolenv, "
        "bugforge.cluster; assert not [m for m in sys.modules if m.split('.')[0] == 'ray'], 'ray imported'"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
