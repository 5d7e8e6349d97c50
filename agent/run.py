"""Run an agent over a dataset: K episodes at a time, each in its own sandbox session, graded in a fresh
container; predictions (SWE-bench format) and trajectories are appended as episodes finish, so a rerun
skips finished instances and an interrupted run loses only the episodes in flight.

An episode that FAILED (the model endpoint or the sandbox broke: exit reason in FAILED) is not finished:
its trajectory is recorded (with the error) but no prediction is written, so a rerun tries it again and
an evaluation counts it as not submitted, never as the model's empty answer."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict
from functools import partial
from pathlib import Path

from bugforge.agent.loop import AgentConfig, run_episode
from bugforge.records import Trajectory, append_jsonl, read_jsonl

log = logging.getLogger("bugforge.agent")

FAILED = ("model_error", "sandbox_error")
"""Exit reasons of episodes that did not run to an answer: not written as predictions, retried on rerun."""


def run_dataset(
    rows: list[dict],
    make_policy: Callable[[dict], object],
    sandbox,
    *,
    predictions: Path,
    trajectories: Path | None = None,
    workers: int = 2,
    config: AgentConfig | None = None,
    grade: bool | Callable[[dict, str], object] = True,
    ray: str | None = None,
    progress: Callable[[str, int, int], None] = lambda *a: None,
) -> list[Trajectory]:
    """`make_policy(row)` gives the policy for an instance (the same client for a model; the gold patch
    for the oracle). `sandbox` is sandbox.connect(...): in-process Runtime or HTTP client. `ray`: a Ray
    cluster's address: the episodes run on `workers` actors, each with an in-process sandbox on its node
    (`sandbox` is then unused; `make_policy` travels by cloudpickle, and a model endpoint must answer
    from the nodes); the records are written here, as without Ray. `grade`: grade each patch in a fresh
    container (True), with this callable (row, patch) -> GradeResult (the process backend's
    ProcessRuntime.grade), or not (False). Returns this run's trajectories,
    failed ones included (exit reason in FAILED: only the others are done and have a prediction)."""
    done = {r["instance_id"] for r in read_jsonl(predictions)}
    todo = [r for r in rows if r["instance_id"] not in done]
    total, finished = len(rows), len(rows) - len(todo)
    out: list[Trajectory] = []
    progress("episodes", finished, total)
    call = partial(episode, make_policy=make_policy, config=config, grade=grade)
    if ray is not None:
        from bugforge.cluster import fan_out

        items = [(r["instance_id"], r) for r in todo]
        results = (t for _, t in fan_out(ray, _NodeSandbox, call, items, workers=workers))
    else:
        pool = ThreadPoolExecutor(max_workers=max(1, workers))
        results = (f.result() for f in as_completed([pool.submit(call, sandbox, r) for r in todo]))
    try:
        for traj in results:
            if trajectories:
                append_jsonl(trajectories, traj)
            out.append(traj)
            if traj.exit_reason in FAILED:  # not done: no prediction, so a rerun tries it again
                continue
            append_jsonl(
                predictions,
                {"instance_id": traj.instance_id, "model_name_or_path": traj.model, "model_patch": traj.patch},
            )
            finished += 1
            progress("episodes", finished, total)
    finally:
        results.close()  # (on Ray: the actors go)
        if ray is None:
            pool.shutdown()
    return out


def episode(sandbox, row: dict, *, make_policy, config: AgentConfig | None, grade: bool | Callable) -> Trajectory:
    """One instance's episode in a session of `sandbox`, graded when it left a patch (`grade`: run_dataset's).
    A sandbox that fails is recorded as the episode's exit reason (sandbox_error), not raised."""
    from bugforge.sandbox.grader import grade_patch

    policy = make_policy(row)
    try:
        session = sandbox.create(image=row["image"])
    except Exception as e:  # noqa: BLE001 - a worker: any failed start is this episode's sandbox_error; the run goes on
        return Trajectory(row["instance_id"], getattr(policy, "model", "?"), exit_reason="sandbox_error", error=str(e))
    try:
        traj = run_episode(row, policy, session, config)
    except Exception as e:  # noqa: BLE001 - the sandbox broke mid-episode: recorded as sandbox_error, the run goes on
        traj = Trajectory(
            row["instance_id"],
            getattr(policy, "model", "?"),
            exit_reason="sandbox_error",
            error=f"{type(e).__name__}: {e}",
        )
    finally:
        try:
            session.close()
        except Exception as e:  # noqa: BLE001 - a failed clean-up must not mask the episode's own result
            log.warning("episode %s: closing its session failed: %s", row["instance_id"], e)
    if grade and traj.patch.strip() and traj.exit_reason not in FAILED:
        traj.grade = asdict((grade if callable(grade) else grade_patch)(row, traj.patch))
    return traj


class _NodeSandbox:
    """What a Ray actor of `run_dataset` holds: an in-process sandbox on its node."""

    def __init__(self):
        from bugforge.sandbox import connect

        self.box = connect(None)

    def create(self, **kw):
        return self.box.create(**kw)

    def close(self) -> None:
        self.box.shutdown()
