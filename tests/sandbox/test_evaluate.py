"""The warm grader pool (bugforge.sandbox.evaluate.GraderPool), with stand-in graders: no containers. The
evaluator itself, on real containers against the official harness, is tested in agent/test_agent.py
(beside the instances it grades)."""

from __future__ import annotations

import json
import time

import pytest


def test_grader_pool_lends_each_grader_to_one_worker_at_a_time():
    """Warm graders are started as needed up to the pool's size; a worker waits for a free one, and a
    grader that failed to start frees its place."""
    import threading

    from bugforge.sandbox.evaluate import GraderPool

    made, busy, peak, lock = [], set(), [0], threading.Lock()

    def make():
        if not made:
            made.append(None)
            raise RuntimeError("first start fails")
        made.append(object())
        return made[-1]

    pool = GraderPool(make, 2)
    with pytest.raises(RuntimeError):
        with pool.lend():
            pass

    both = threading.Barrier(2, timeout=10)  # two workers hold a grader at the same time

    def work():
        with pool.lend() as g:
            with lock:
                assert g not in busy
                busy.add(g)
                peak[0] = max(peak[0], len(busy))
            try:
                both.wait()
            except threading.BrokenBarrierError:
                pass  # (later workers: the barrier has done its job)
            time.sleep(0.01)
            with lock:
                busy.discard(g)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 3 and peak[0] == 2 and len(pool.all) == 2


def test_an_export_with_other_grading_tools_gets_one_warning_line():
    from bugforge.sandbox.evaluate import stale_tools
    from bugforge.testing.tools import tools_digest

    now = tools_digest()
    assert stale_tools([{"instance_id": "a", "tools": now}, {"instance_id": "b"}]) == ""  # unrecorded: no claim
    line = stale_tools([{"instance_id": "a", "tools": now}, {"instance_id": "b", "tools": "0" * 64}])
    assert "\n" not in line and line.startswith("warning: 1 of 2 instances") and "factory export` again" in line


def test_export_remakes_rows_made_with_other_grading_tools(tmp_path):
    from bugforge.factory.rows_file import drop_stale

    out = tmp_path / "instances.jsonl"
    rows = [
        {"instance_id": "a", "env_image": "env:1", "tools": "t1"},  # current
        {"instance_id": "b", "env_image": "env:0", "tools": "t1"},  # another environment image
        {"instance_id": "c", "env_image": "env:1", "tools": "t0"},  # other grading tools
        {"instance_id": "d", "env_image": "env:1"},  # tools unrecorded: kept
    ]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert drop_stale(out, "env:1", "t1") == 2
    assert [json.loads(line)["instance_id"] for line in out.read_text().splitlines()] == ["a", "d"]
    assert drop_stale(out, "env:1", "t1") == 0
