"""Red-team matrix under the process backend: every pattern of bugforge.sandbox.redteam (and the controls,
and the gold patch) on instances of a `bugforge images rootfs` folder, graded by the process backend
(sandbox/processgrade.py: bubblewrap, no engine) and by the Docker fresh grader (sandbox/grader.py), side
by side. The patterns' patches are made in containers of the instance images (redteam.patch_for), so
this runs where Docker is; the process grader itself uses no engine.

    python bench/redteam_process.py --rootfs DIR [--instances 1] [--timeout 60] [--out matrix.json]
        [--module bugforge.sandbox.attacks_roundN]   # only that round's patterns (gold and controls too)

A pattern passes when neither grader says RESOLVED; the verdicts should agree. Figures: docs/figures.md,
"Red team"."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections import Counter

from bugforge.sandbox.grader import grade_patch
from bugforge.sandbox.process import ProcessRuntime
from bugforge.sandbox.redteam import CONTROLS, PATTERNS, patch_for, verdict


def row_of(rt: ProcessRuntime, inst: dict, name: str, timeout: int) -> dict[str, str]:
    """{"process": verdict, "docker": verdict} of one pattern (or "gold") on one instance."""
    patch = inst["patch"] if name == "gold" else patch_for(inst, name)
    mine, fresh = rt.grade(inst, patch, timeout=timeout), grade_patch(inst, patch, timeout=timeout)
    return {"process": verdict(mine.status, mine.resolved), "docker": verdict(fresh.status, fresh.resolved)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rootfs", required=True, help="a `bugforge images rootfs` folder (its instances.jsonl)")
    ap.add_argument("--instances", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--out", help="write the whole matrix here (JSON)")
    ap.add_argument("--module", help="grade only the PATTERNS of this module (bugforge.sandbox.NAME)")
    a = ap.parse_args()
    extra = importlib.import_module(a.module).PATTERNS if a.module else {}
    PATTERNS.update(extra)  # (a round not registered yet)
    names = list(extra or PATTERNS)
    rt = ProcessRuntime(rootfs=a.rootfs)
    out: dict[str, dict[str, dict[str, str]]] = {}
    try:
        for inst in list(rt.instances.values())[: a.instances]:
            iid = inst["instance_id"]
            out[iid] = {n: row_of(rt, inst, n, a.timeout) for n in ["gold", *names, *CONTROLS]}
            rows = out[iid]
            patterns = [rows[n] for n in names]
            print(f"{iid}: {len(patterns)} patterns; verdicts (process, docker): "
                  f"{dict(Counter((r['process'], r['docker']) for r in patterns))}")  # fmt: skip
            print(f"  resolved under process: {[n for n in names if rows[n]['process'] == 'RESOLVED']}")
            print(f"  disagreeing: {[n for n, r in rows.items() if r['process'] != r['docker']]}")
            print(f"  gold and controls: {[(n, rows[n]) for n in ['gold', *CONTROLS]]}")
    finally:
        rt.shutdown()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
