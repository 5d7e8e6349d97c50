"""Our evaluator against the official SWE-bench harness, side by side on the same dataset and
predictions: prints both resolved sets (must be identical) and wall seconds per instance for each.

Predictions: for every instance, the gold patch, an empty patch or a no-op patch (by instance index),
so both resolved and unresolved outcomes are exercised.

    python bench/eval.py --dataset runs/textkit/instances.jsonl --n 50 --workers 4
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bugforge.records import read_jsonl  # noqa: E402
from sandbox.evaluate import evaluate  # noqa: E402

NOOP = "diff --git a/NOTES.txt b/NOTES.txt\nnew file mode 100644\n--- /dev/null\n+++ b/NOTES.txt\n@@ -0,0 +1 @@\n+x\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="runs/textkit/instances.jsonl")
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--workers", type=int, default=4)
    a = ap.parse_args()
    rows = read_jsonl(Path(a.dataset))[:a.n]
    preds = [{"instance_id": r["instance_id"], "model_name_or_path": "bench",
              "model_patch": (r["patch"], r["patch"], NOOP)[i % 3]} for i, r in enumerate(rows)]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ds, pf = tmp / "ds.jsonl", tmp / "preds.jsonl"
        ds.write_text("".join(json.dumps(r) + "\n" for r in rows))
        pf.write_text("".join(json.dumps(p) + "\n" for p in preds))
        t = time.monotonic()
        ours, _ = evaluate(rows, preds, run_id="bench", workers=a.workers, log_dir=tmp / "logs", report_dir=tmp)
        ours_s = time.monotonic() - t
        t = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "swebench.harness.run_evaluation", "-d", str(ds), "-p", str(pf),
                            "--run_id", "official", "--max_workers", str(a.workers)], cwd=tmp, capture_output=True,
                           text=True)
        theirs_s = time.monotonic() - t
        if r.returncode:
            print(r.stderr[-2000:])
            return 1
        theirs = json.loads((tmp / "bench.official.json").read_text())
    n = len(rows)
    same = ours["resolved_ids"] == theirs["resolved_ids"]
    print(f"instances: {n}  workers: {a.workers}  (predictions: gold / gold / no-op by index)")
    print(f"resolved: ours {len(ours['resolved_ids'])}, official {len(theirs['resolved_ids'])};"
          f" identical resolved sets: {'yes' if same else 'NO'}")
    print(f"{'evaluator':<22}{'wall s':>10}{'s / instance':>15}")
    print(f"{'official harness':<22}{theirs_s:>10.1f}{theirs_s / n:>15.2f}")
    print(f"{'bugforge eval':<22}{ours_s:>10.1f}{ours_s / n:>15.2f}")
    print(f"ratio official/bugforge: {theirs_s / ours_s:.1f}x")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
