"""Validation cost, side by side: bugforge's default (coverage-selected tests in a warm container with a
forking test server) against SWE-smith's way (`--validation full`: a fresh container and the whole
suite per candidate), on the same candidates of a real repository, in one run.

Prints whether the two label every candidate identically, and CPU-seconds and wall-seconds per valid
instance for each, with the ratio. CPU is the whole machine's busy time (/proc/stat), so the Docker
daemon, container start-up (the default's warm container and its preload too) and the tests themselves
all count. It also prints the share of the suite's test time the default's selections must run: the
bound on what choosing tests alone can save, whatever the runner.

    python bench/validation.py --repo pypi:python-dateutil==2.9.0.post0 \
        --recipe bench/recipes/python-dateutil.json --candidates 60
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from factory import build_environment  # noqa: E402
from factory.generate import PROCEDURAL, procedural_candidates  # noqa: E402
from factory.testmap import TestMap  # noqa: E402
from factory.validate import Validator, selection_for  # noqa: E402


def busy_seconds() -> float:
    fields = open("/proc/stat").readline().split()[1:]
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def run(mode: str, env, testmap, cands):
    """Each mode's whole cost: the default's warm container and preloaded test server start inside it."""
    results = {}
    cpu0, t0 = busy_seconds(), time.monotonic()
    v = Validator(env, testmap, mode)
    try:
        for i, c in enumerate(cands, 1):
            results[c.id] = v.validate(c)
            print(f"\r{mode}: {i}/{len(cands)}", end="", file=sys.stderr, flush=True)
    finally:
        v.close()
    print(file=sys.stderr)
    return results, busy_seconds() - cpu0, time.monotonic() - t0


def test_time_share(env, testmap, cands) -> float:
    """The share of the whole suite's test time (baseline durations, no start-up, import or collection)
    that the default must run over `cands`: the tests its selection names, or the whole suite where the
    map cannot decide. Its inverse bounds what choosing tests alone can save."""
    dur = {t: o.duration for t, o in env.tests.items()}
    suite, passing, ran = sum(dur.values()), set(env.passing), 0.0
    for c in cands:
        sel = selection_for(c.changed, testmap, passing, root=Path(env.repo_dir), diff=c.patch)
        ran += suite if sel is None else sum(dur.get(t, 0.0) for t in sel)
    return ran / max(suite * len(cands), 1e-9)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default="pypi:python-dateutil==2.9.0.post0", help="any source `bugforge factory env` takes")
    ap.add_argument("--recipe", help="an edited recipe.json (see bench/recipes/)")
    ap.add_argument("--out", default="runs/bench")
    ap.add_argument("--candidates", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    env, _ = build_environment(a.repo, out=Path(a.out), recipe_path=a.recipe, log=lambda m: print(m, file=sys.stderr))
    testmap = TestMap.load(Path(env.testmap))
    cands, _ = procedural_candidates(env, testmap, set(PROCEDURAL), a.candidates, a.seed)
    print(f"repository: {a.repo}  tests: {len(env.tests)}  suite: {env.suite_seconds:.2f} s  candidates: {len(cands)}")
    sel, sel_cpu, sel_wall = run("selected", env, testmap, cands)
    full, full_cpu, full_wall = run("full", env, testmap, cands)
    disagree = [c.id for c in cands if (sel[c.id].status == "valid") != (full[c.id].status == "valid")
                or sel[c.id].FAIL_TO_PASS != full[c.id].FAIL_TO_PASS
                or (sel[c.id].status == "valid" and sel[c.id].PASS_TO_PASS != full[c.id].PASS_TO_PASS)]
    n_valid = sum(r.status == "valid" for r in full.values())
    modes = {m: sum(r.mode == m for r in sel.values()) for m in ("selected", "suite")}
    print(f"valid instances: {n_valid} of {len(cands)}  (default mode ran {modes['selected']} with selected tests, "
          f"{modes['suite']} with the whole suite, {len(cands) - sum(modes.values())} needed no run)")
    print(f"identical labels: {'yes' if not disagree else 'no'}  (disagreements: {len(disagree)})")
    if n_valid:
        rows = [("full (SWE-smith)", full_cpu / n_valid, full_wall / n_valid),
                ("selected (default)", sel_cpu / n_valid, sel_wall / n_valid)]
        print(f"{'mode':<20}{'CPU s / valid':>15}{'wall s / valid':>16}")
        for name, c, w in rows:
            print(f"{name:<20}{c:>15.3f}{w:>16.3f}")
        print(f"ratio full/default: CPU {full_cpu / max(sel_cpu, 1e-9):.1f}x, wall {full_wall / max(sel_wall, 1e-9):.1f}x")
    share = test_time_share(env, testmap, cands)
    print(f"tests the default must run: {100 * share:.0f}% of the suite's test time per candidate "
          f"(counting test time alone, at most {1 / max(share, 1e-9):.1f}x cheaper; the rest of the ratio is "
          f"start-up, import and collection)")
    for cid in disagree[:10]:
        print("disagreement:", cid, sel[cid].status, full[cid].status, sel[cid].FAIL_TO_PASS, full[cid].FAIL_TO_PASS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
