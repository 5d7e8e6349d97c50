"""`bugforge view` on a large dataset: writes N synthetic task instances (TaskInstance rows of realistic
size: diffs, statement, eval script, test lists) to a temp dir, serves the viewer in-process and prints
the dataset page's latency: the first request (builds the offset index), then warm requests with no
filter, each filter, a search, a late page and one instance page; side by side, the time to read the
whole file once (what a page that loads the file per request would pay at least).

    python bench/view.py --rows 50000

Figures: docs/figures.md, "Viewer".
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from fastapi.testclient import TestClient

from bugforge.records import TaskInstance, read_jsonl, to_dict
from bugforge.view import jsonl
from bugforge.view.app import create_app

STRATEGIES = ("op_swap", "remove_cond", "wrong_default", "swap_args", "remove_loop", "combine", "lm_rewrite")


def row(i: int) -> dict:
    f = f"pkg/module_{i % 97}.py"
    diff = (
        f"diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -{i % 300},7 +{i % 300},7 @@\n"
        + "".join(f" context line {k} of function_{i}\n" for k in range(3))
        + f"-    return a + {i}\n+    return a - {i}\n"
        + "".join(f" tail {k}\n" for k in range(3))
    )
    tests = [f"tests/test_module_{i % 97}.py::test_case_{k}" for k in range(1 + i % 9)]
    return to_dict(
        TaskInstance(
            instance_id=f"big.{STRATEGIES[i % 7]}.{i:08x}",
            repo=f"bugforge/big{i % 5}",
            base_commit=f"{i:040x}",
            patch=diff.replace("-    return a +", "+    return a +"),
            test_patch="",
            problem_statement=f"function_{i} returns the wrong value.\n\n" + "AssertionError: assert 41 == 42\n" * 8,
            FAIL_TO_PASS=json.dumps(tests),
            PASS_TO_PASS=json.dumps([f"tests/test_other.py::test_{k}" for k in range(40)]),
            version="1.0",
            created_at="2026-01-01T00:00:00+00:00",
            image=f"bugforge/task.big:{STRATEGIES[i % 7]}-{i:010x}-abcdef12",
            eval_script="#!/bin/bash\nset -uo pipefail\ncd /testbed\n" + "\n".join(tests) + "\npytest -rA\n",
            log_parser="parse_log_pytest",
            eval_type="pass_and_fail",
            strategy=STRATEGIES[i % 7],
            bug_patch=diff,
            files=[f],
            function=f"function_{i}",
            difficulty=("easy", "medium", "hard")[i % 3],
            env_image="bugforge/env.big:abc",
        )
    )


def timed(client: TestClient, url: str, n: int = 1) -> float:
    """Median wall milliseconds of `n` requests to `url` (each must answer 200)."""
    out = []
    for _ in range(n):
        t = time.perf_counter()
        r = client.get(url)
        out.append((time.perf_counter() - t) * 1000)
        assert r.status_code == 200, (url, r.status_code, r.text[-300:])
    return statistics.median(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        data = root / "big" / "instances.jsonl"
        data.parent.mkdir(parents=True)
        with open(data, "w") as f:
            for i in range(a.rows):
                f.write(json.dumps(row(i)) + "\n")
        size = data.stat().st_size / 1e6
        base = f"/dataset?path={quote('big/instances.jsonl')}"
        cold = timed(TestClient(create_app(root, warm=False)), base)
        jsonl._CACHE.clear()  # noqa: SLF001 (a fresh server)
        t = time.perf_counter()
        app = create_app(root)
        app.state.warmed.wait()
        warm_up = (time.perf_counter() - t) * 1000
        client = TestClient(app)
        first = timed(client, base)
        cases = {
            "no filter, page 1": base,
            "strategy filter": base + "&strategy=combine",
            "strategy + difficulty": base + "&strategy=op_swap&difficulty=hard",
            "file filter": base + "&file=pkg/module_13.py",
            "FAIL_TO_PASS 6-10": base + "&f2p=6-10",
            "search (2 words)": base + "&q=function_4242+wrong",
            "page 900": base + "&page=900",
            "instance page": f"/instance?path={quote('big/instances.jsonl')}&id=big.op_swap.{49 * 7:08x}",
        }
        warm = {name: timed(client, url, a.repeat) for name, url in cases.items()}
        t = time.perf_counter()
        read_jsonl(data)
        whole = (time.perf_counter() - t) * 1000
    print(f"dataset: {a.rows} rows, {size:.0f} MB")
    print(f"first request, no warm-up (builds the offset index): {cold:.0f} ms")
    print(f"start-up warm-up (indexes every dataset in the background): {warm_up:.0f} ms")
    print(f"first request after the warm-up: {first:.1f} ms")
    print(f"reading the whole file once (read_jsonl): {whole:.0f} ms")
    print(f"{'warm request (median of ' + str(a.repeat) + ')':<40} {'ms':>8} {'x faster than one whole read':>30}")
    for name, ms in warm.items():
        print(f"{name:<40} {ms:8.1f} {whole / ms:30.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
