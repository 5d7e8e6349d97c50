"""Validation cost, side by side: bugforge's default (`selected`) against SWE-smith's way (`full`: a
fresh container and the whole suite per candidate), on the same candidates of a real repository.

Prints whether both label every candidate identically, CPU-seconds (the whole machine's busy time,
/proc/stat: daemon, container start-up and tests all count) and wall-seconds per valid instance, their
ratio, and the shares of the suite's test time the selections must run (see test_time_shares).

    python bench/validation.py --repo pypi:jsonschema==4.21.1 --candidates 40

Figures: docs/figures.md, "Validation cost".
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

from bugforge.factory import build_environment
from bugforge.factory.generate import PROCEDURAL, procedural_candidates
from bugforge.factory.validate import Validator
from bugforge.testing.selection import selection_for
from bugforge.testing.testmap import TestMap


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


def test_time_shares(env, testmap, cands) -> dict[str, float]:
    """Shares of the whole suite's test time (baseline durations, no start-up, import or collection)
    that a rule must run over `cands`, the whole suite where the map cannot decide; the inverse of a
    share bounds what choosing tests by that rule can save. "default": the default's selections (the
    tests that ran a changed line and every test after the first of them). "per-file": the same if
    each test file ran in a fresh process in both modes (a different label semantics; later tests only
    to the file's end). "direct": only the tests that ran a changed line (unsound: state left behind)."""
    dur = {t: o.duration for t, o in env.tests.items()}
    suite, passing, root = sum(dur.values()), set(env.passing), Path(env.repo_dir)
    unordered = dataclasses.replace(testmap, order=[])  # no later tests: the direct selection
    position = {t: i for i, t in enumerate(testmap.order)}
    ran = {"default": 0.0, "per-file": 0.0, "direct": 0.0}
    for c in cands:
        sel = selection_for(c.changed, testmap, passing, root=root, diff=c.patch)
        direct = selection_for(c.changed, unordered, passing, root=root, diff=c.patch)
        if sel is None or direct is None:
            for rule in ran:
                ran[rule] += suite
            continue
        first: dict[str, int] = {}
        for t in direct:
            f = t.split("::")[0]
            first[f] = min(first.get(f, len(position)), position.get(t, len(position)))
        per_file = set(direct) | {t for t, i in position.items() if i > first.get(t.split("::")[0], len(position))}
        for rule, tests in (("default", sel), ("per-file", per_file), ("direct", direct)):
            ran[rule] += sum(dur.get(t, 0.0) for t in tests)
    return {rule: v / max(suite * len(cands), 1e-9) for rule, v in ran.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--repo", default="pypi:python-dateutil==2.9.0.post0", help="any source `bugforge factory env` takes"
    )
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
    disagree = [
        c.id
        for c in cands
        if (sel[c.id].status == "valid") != (full[c.id].status == "valid")
        or sel[c.id].FAIL_TO_PASS != full[c.id].FAIL_TO_PASS
        or (sel[c.id].status == "valid" and sel[c.id].PASS_TO_PASS != full[c.id].PASS_TO_PASS)
    ]
    n_valid = sum(r.status == "valid" for r in full.values())
    modes = {m: sum(r.mode == m for r in sel.values()) for m in ("selected", "suite")}
    print(
        f"valid instances: {n_valid} of {len(cands)}  (default mode ran {modes['selected']} with selected tests, "
        f"{modes['suite']} with the whole suite, {len(cands) - sum(modes.values())} needed no run)"
    )
    print(f"identical labels: {'yes' if not disagree else 'no'}  (disagreements: {len(disagree)})")
    if n_valid:
        rows = [
            ("full (SWE-smith)", full_cpu / n_valid, full_wall / n_valid),
            ("selected (default)", sel_cpu / n_valid, sel_wall / n_valid),
        ]
        print(f"{'mode':<20}{'CPU s / valid':>15}{'wall s / valid':>16}")
        for name, c, w in rows:
            print(f"{name:<20}{c:>15.3f}{w:>16.3f}")
        print(
            f"ratio full/default: CPU {full_cpu / max(sel_cpu, 1e-9):.1f}x, wall {full_wall / max(sel_wall, 1e-9):.1f}x"
        )
    shares = test_time_shares(env, testmap, cands)
    print(
        f"tests the default must run: {100 * shares['default']:.0f}% of the suite's test time per candidate "
        f"(counting test time alone, at most {1 / max(shares['default'], 1e-9):.1f}x cheaper; the rest of the "
        f"ratio is start-up, import and collection)"
    )
    print(
        "the same share for other rules (host-side, from the map): "
        + ", ".join(
            f"{rule} {100 * v:.0f}% ({1 / max(v, 1e-9):.1f}x)" for rule, v in shares.items() if rule != "default"
        )
        + "  [per-file: each test file in a fresh process in both modes; direct: unsound, state left behind]"
    )
    for cid in disagree[:10]:
        print("disagreement:", cid, sel[cid].status, full[cid].status, sel[cid].FAIL_TO_PASS, full[cid].FAIL_TO_PASS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
