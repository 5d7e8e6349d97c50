"""bugforge's evaluator (warm and fresh) against the official SWE-bench harness, on the same dataset and
predictions: prints the three resolved sets (must be identical) and wall seconds for each.

Predictions, by instance index: the gold patch; a wrong fix (another instance's bug on top); a no-op
patch (a new text file), so resolved and unresolved outcomes are both exercised.

    python bench/eval.py --dataset runs/textkit/instances.jsonl --n 51 --workers 4

Figures: docs/figures.md, "Evaluator vs the official harness".
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

from bugforge.records import read_jsonl
from bugforge.sandbox.evaluate import evaluate, find_environments
from bugforge.sandbox.harness import HarnessError, run_harness

NOOP = "diff --git a/NOTES.txt b/NOTES.txt\nnew file mode 100644\n--- /dev/null\n+++ b/NOTES.txt\n@@ -0,0 +1 @@\n+x\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="runs/textkit/instances.jsonl")
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--workers", type=int, default=4)
    a = ap.parse_args()
    rows = read_jsonl(Path(a.dataset))[: a.n]
    preds = [
        {
            "instance_id": r["instance_id"],
            "model_name_or_path": "bench",
            "model_patch": (r["patch"], rows[(i + 1) % len(rows)]["bug_patch"], NOOP)[i % 3],
        }
        for i, r in enumerate(rows)
    ]
    envs = find_environments(rows, Path(a.dataset).parent)
    if not envs:
        print(f"no environment record beside {a.dataset}: warm grading needs env.json and testmap.json.gz")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ds, pf = tmp / "ds.jsonl", tmp / "preds.jsonl"
        ds.write_text("".join(json.dumps(r) + "\n" for r in rows))
        pf.write_text("".join(json.dumps(p) + "\n" for p in preds))
        t = time.monotonic()
        ours, _ = evaluate(
            rows, preds, run_id="warm", workers=a.workers, log_dir=tmp / "logs", report_dir=tmp, envs=envs
        )
        ours_s = time.monotonic() - t
        t = time.monotonic()
        fresh, _ = evaluate(rows, preds, run_id="fresh", workers=a.workers, log_dir=tmp / "logs", report_dir=tmp)
        fresh_s = time.monotonic() - t
        t = time.monotonic()
        try:
            theirs = run_harness(ds, pf, cwd=tmp, run_id="official", workers=a.workers)
        except HarnessError as e:
            print(e)
            return 1
        theirs_s = time.monotonic() - t
        kinds = {"nothing": 0, "some": 0, "all": 0}  # how many of its tests each warm grading ran
        for f in (tmp / "logs" / "warm").glob("*/*/test_output.txt"):
            m = re.search(r"warm grading: ran (\d+) of (\d+)", f.read_text())
            if m:
                kinds["nothing" if m[1] == "0" else "all" if m[1] == m[2] else "some"] += 1
    n = len(rows)
    same = ours["resolved_ids"] == theirs["resolved_ids"] == fresh["resolved_ids"]
    print(f"instances: {n}  workers: {a.workers}  (predictions: gold / wrong fix / no-op by index)")
    print(
        f"resolved: warm {len(ours['resolved_ids'])}, fresh {len(fresh['resolved_ids'])}, official "
        f"{len(theirs['resolved_ids'])}; errors: warm {ours['error_instances']}, fresh {fresh['error_instances']}, "
        f"official {theirs['error_instances']}; identical resolved sets: {'yes' if same else 'NO'}"
    )
    print(
        f"warm grading ran no test for {kinds['nothing']}, the tests coverage picked for {kinds['some']}, "
        f"all of the instance's tests for {kinds['all']} (an import-time line, or a file read at import time)"
    )
    print(f"{'evaluator':<22}{'wall s':>10}{'s / instance':>15}")
    print(f"{'official harness':<22}{theirs_s:>10.1f}{theirs_s / n:>15.2f}")
    print(f"{'bugforge fresh':<22}{fresh_s:>10.1f}{fresh_s / n:>15.2f}")
    print(f"{'bugforge warm':<22}{ours_s:>10.1f}{ours_s / n:>15.2f}")
    print(
        f"ratio official/bugforge warm: {theirs_s / ours_s:.1f}x  (official/bugforge fresh: {theirs_s / fresh_s:.1f}x)"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
