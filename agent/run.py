"""Run an agent over a dataset: K episodes at a time, each in its own sandbox session, graded in a fresh
container; predictions (SWE-bench format) and trajectories are appended as episodes finish, so a rerun
skips finished instances and an interrupted run loses only the episodes in flight."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict
from pathlib import Path

from bugforge.agent.loop import AgentConfig, run_episode
from bugforge.records import Trajectory, append_jsonl, read_jsonl


def run_dataset(
    rows: list[dict],
    make_policy: Callable[[dict], object],
    sandbox,
    *,
    predictions: Path,
    trajectories: Path | None = None,
    workers: int = 2,
    config: AgentConfig | None = None,
    grade: bool = True,
    progress: Callable[[str, int, int], None] = lambda *a: None,
) -> list[Trajectory]:
    """`make_policy(row)` gives the policy for an instance (the same client for a model; the gold patch
    for the oracle). `sandbox` is sandbox.connect(...): in-process Runtime or HTTP client."""
    from bugforge.sandbox.grader import grade_patch

    done = {r["instance_id"] for r in read_jsonl(predictions)}
    todo = [r for r in rows if r["instance_id"] not in done]
    total, finished = len(rows), len(rows) - len(todo)
    lock = threading.Lock()
    out: list[Trajectory] = []
    progress("episodes", finished, total)

    def episode(row: dict) -> Trajectory:
        policy = make_policy(row)
        try:
            session = sandbox.create(image=row["image"])
        except Exception as e:
            return Trajectory(
                row["instance_id"], getattr(policy, "model", "?"), exit_reason="sandbox_error", error=str(e)
            )
        try:
            traj = run_episode(row, policy, session, config)
        except Exception as e:  # the sandbox broke mid-episode: record it, go on with the next
            traj = Trajectory(
                row["instance_id"],
                getattr(policy, "model", "?"),
                exit_reason="sandbox_error",
                error=f"{type(e).__name__}: {e}",
            )
        finally:
            try:
                session.close()
            except Exception:
                pass
        if grade and traj.patch.strip():
            traj.grade = asdict(grade_patch(row, traj.patch))
        return traj

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for fut in as_completed([pool.submit(episode, r) for r in todo]):
            traj = fut.result()
            with lock:
                if trajectories:
                    append_jsonl(trajectories, traj)
                append_jsonl(
                    predictions,
                    {"instance_id": traj.instance_id, "model_name_or_path": traj.model, "model_patch": traj.patch},
                )
                finished += 1
                out.append(traj)
            progress("episodes", finished, total)
    return out
