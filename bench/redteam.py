"""Red-team matrix: every pattern of bugforge.sandbox.redteam against the three graders (fresh containers,
warm grading, the exported eval_script under SWE-bench's official harness), on a few instances of an
export; then every gold patch of the export under the three graders (no false alarms).

    python bench/redteam.py --dataset runs/textkit/instances.jsonl --instances 2

A pattern passes when no grader says RESOLVED. Figures: docs/figures.md, "Red team".
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

from bugforge.records import read_jsonl
from bugforge.sandbox.envgrader import EnvGrader
from bugforge.sandbox.evaluate import find_environments
from bugforge.sandbox.grader import grade_patch
from bugforge.sandbox.harness import harness_verdicts
from bugforge.sandbox.redteam import CONTROLS, PATTERNS, matrix, verdict

GRADERS = ("fresh", "warm", "eval_script")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="runs/textkit/instances.jsonl")
    ap.add_argument("--instances", type=int, default=2, help="instances to attack (one per strategy first)")
    ap.add_argument("--gold", type=int, default=0, help="gold patches to grade (0 = every row)")
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--logs", default="runs/redteam", help="where the official harness's logs of the gold run go")
    ap.add_argument(
        "--module", help="grade only the PATTERNS of this module (a new round, unregistered: bugforge.sandbox.NAME)"
    )
    a = ap.parse_args()
    names = None
    if a.module:
        extra = importlib.import_module(a.module).PATTERNS
        PATTERNS.update(extra)
        names = list(extra)
    rows = read_jsonl(Path(a.dataset))
    envs = find_environments(rows, Path(a.dataset).parent)
    if not envs:
        print(f"no environment record beside {a.dataset}: warm grading needs env.json and testmap.json.gz")
        return 1
    (env, testmap), *_ = envs
    rows = [r for r in rows if r.get("env_image") == env.image]
    by_strategy = {}
    for r in rows:
        by_strategy.setdefault(r["strategy"], r)
    targets = (list(by_strategy.values()) + rows)[: a.instances]
    grader = EnvGrader(env, testmap)
    bad = 0
    try:
        for inst in targets:
            t = time.monotonic()
            m = matrix(inst, grader, names, timeout=a.timeout)
            print(f"\n{inst['instance_id']} ({time.monotonic() - t:.0f} s)")
            print(f"{'pattern':42} " + " ".join(f"{g:>13}" for g in GRADERS))
            for name in ["gold", *(names or [*CONTROLS, *PATTERNS])]:
                cells = [m[name].get(g, "-") for g in GRADERS]
                must_resolve = name == "gold" or name in CONTROLS  # correct fixes: a false alarm otherwise
                ok = all(c == "RESOLVED" for c in cells) if must_resolve else "RESOLVED" not in cells
                bad += not ok
                print(f"{name:42} " + " ".join(f"{c:>13}" for c in cells) + ("" if ok else "   <-- FAIL"))
        gold = rows if a.gold == 0 else rows[: a.gold]
        t = time.monotonic()
        fresh = [grade_patch(r, r["patch"], timeout=a.timeout) for r in gold]
        warm = [grader.grade(r, r["patch"], timeout=a.timeout) for r in gold]
        official = harness_verdicts(
            gold,
            {r["instance_id"]: r["patch"] for r in gold},
            timeout=a.timeout,
            run_id=f"gold{int(time.time())}",
            keep=Path(a.logs),
        )
        counts = [
            sum(g.resolved for g in fresh),
            sum(g.resolved for g in warm),
            sum(v == "RESOLVED" for v in official.values()),
        ]
        print(
            f"\ngold patches resolved ({len(gold)} rows, {time.monotonic() - t:.0f} s): "
            + ", ".join(f"{g} {c}/{len(gold)}" for g, c in zip(GRADERS, counts))
        )
        for r, f, w in zip(gold, fresh, warm):
            if not (f.resolved and w.resolved and official[r["instance_id"]] == "RESOLVED"):
                bad += 1
                print(
                    f"  gold not resolved: {r['instance_id']}: fresh {verdict(f.status, f.resolved)} {f.tamper}, "
                    f"warm {verdict(w.status, w.resolved)} {w.tamper}, eval_script {official[r['instance_id']]}"
                )
    finally:
        grader.close()
    print(
        f"\n{len(names or PATTERNS)} patterns x {len(GRADERS)} graders on {len(targets)} instance(s): "
        + ("every pattern not resolved, every gold patch resolved" if not bad else f"{bad} failures")
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
