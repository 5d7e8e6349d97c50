"""An experiment outside validation: could validation skip the tests after a changed function's tests
by checking that the state those tests can read came out the same?

The rule measured ("state check at file ends"): run the test files that hold a test which ran a changed
line, each from a snapshot of the baseline before that file; at each such file's end, fingerprint the
state later tests could read (bench/statefp.py) and compare it with the baseline's; where equal, skip
ahead to the next such file. This script measures what the rule would cost and whether it would be
exact, without building it: the whole suite once per candidate in a fresh container with the
fingerprinting plugin (twice at baseline, to see which file ends reproduce), then host-side, which
files the rule would run and whether any test it would skip changed outcome.

    python bench/state_skip.py --repo pypi:jsonschema==4.21.1 --candidates 20

Results and why the rule is not used: docs/figures.md, "State checks at file ends".
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from bugforge.factory import build_environment
from bugforge.factory.generate import PROCEDURAL, procedural_candidates
from bugforge.testing.selection import selection_for
from bugforge.testing.testmap import TestMap


def suite_run(
    image: str,
    exp: Path,
    name: str,
    pytest_args: list[str],
    test_files: list[str],
    patch: str | None = None,
    timeout: int = 600,
) -> tuple[list[dict], float]:
    """The whole suite in a fresh container with the fingerprinting plugin; its records and wall time."""
    out = exp / f"{name}.jsonl"
    out.unlink(missing_ok=True)
    setup = f"git apply /exp/{name}.diff && " if patch is not None else ""
    if patch is not None:
        (exp / f"{name}.diff").write_text(patch)
    args = " ".join(shlex.quote(a) for a in [*pytest_args, *test_files])
    script = (
        f"cd /testbed && {setup}PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1 STATEFP_OUT=/exp/run.jsonl "
        f"PYTHONPATH=/exp timeout {timeout} python -m pytest -p statefp -p no:cacheprovider -q {args}"
    )
    t0 = time.monotonic()
    subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            "--hostname",
            "statefp",
            "-v",
            f"{exp}:/exp",
            image,
            "bash",
            "-c",
            script,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = time.monotonic() - t0
    if (exp / "run.jsonl").exists():  # (every run writes the same path: its environment is the same)
        (exp / "run.jsonl").replace(out)
    recs = [json.loads(x) for x in out.read_text().splitlines()] if out.exists() else []
    return recs, wall


def outcomes(recs: list[dict]) -> dict[str, str]:
    out: dict[str, str] = {}
    for r in recs:
        if "test" in r:
            prev = out.get(r["test"], "passed")
            out[r["test"]] = (
                "failed"
                if r["outcome"] == "failed" or prev == "failed"
                else "skipped"
                if r["outcome"] == "skipped" or prev == "skipped"
                else "passed"
            )
    return out


def file_ends(recs: list[dict]) -> dict[str, dict]:
    return {r["file"]: r for r in recs if "file" in r}


def rule_files(files: list[str], direct_files: set[str], base: dict[str, dict], cand: dict[str, dict]) -> list[str]:
    """The files the state-check rule runs: each file holding a direct test, and after one whose end
    state differs from the baseline's, every next file until the states agree again."""
    run, differs = [], False
    for f in files:
        if f in direct_files or differs:
            run.append(f)
            b, c = base.get(f, {}).get("fp"), cand.get(f, {}).get("fp")
            differs = b is None or c is None or b != c
    return run


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default="pypi:jsonschema==4.21.1")
    ap.add_argument("--recipe")
    ap.add_argument("--out", default="runs/bench")
    ap.add_argument("--candidates", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--exp", default="/tmp/state-skip")
    a = ap.parse_args()
    env, _ = build_environment(a.repo, out=Path(a.out), recipe_path=a.recipe, log=lambda m: print(m, file=sys.stderr))
    testmap = TestMap.load(Path(env.testmap))
    cands, _ = procedural_candidates(env, testmap, set(PROCEDURAL), a.candidates, a.seed)
    exp = Path(a.exp)
    exp.mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(__file__).with_name("statefp.py"), exp / "statefp.py")
    args, tfiles = list(env.recipe.pytest_args), list(env.recipe.test_files or [])
    passing, root = set(env.passing), Path(env.repo_dir)
    dur = {t: o.duration for t, o in env.tests.items()}
    suite = sum(dur.values())

    b1, w1 = suite_run(env.image, exp, "base1", args, tfiles)
    b2, w2 = suite_run(env.image, exp, "base2", args, tfiles)
    e1, e2 = file_ends(b1), file_ends(b2)
    files = list(e1)
    same = [f for f in files if e2.get(f, {}).get("fp") == e1[f]["fp"]]
    walk = [r["seconds"] for r in e1.values()]
    print(f"repository: {a.repo}  tests: {len(env.tests)}  suite test time: {suite:.2f} s  test files: {len(files)}")
    print(
        f"baseline runs (wall, with fingerprints): {w1:.1f} s, {w2:.1f} s; fingerprint per file end: "
        f"mean {1000 * sum(walk) / max(len(walk), 1):.0f} ms, max {1000 * max(walk, default=0):.0f} ms, "
        f"objects up to {max((r['objects'] for r in e1.values()), default=0)}"
    )
    print(f"file ends that fingerprint the same in two baseline processes: {len(same)} of {len(files)}")
    unstable = Counter(
        m
        for f in files
        if f not in same
        for m, h in e1[f]["modules"].items()
        if e2.get(f, {}).get("modules", {}).get(m) != h
    )
    if unstable:
        print("  modules whose state differed between the two baseline runs:", dict(unstable.most_common(8)))

    unordered = dataclasses.replace(testmap, order=[])
    file_of = {t: t.split("::")[0] for t in dur}
    ran_default = ran_rule = ran_direct = 0.0
    walks_rule, decided, wrong, rows = 0, 0, [], []
    for i, c in enumerate(cands, 1):
        print(f"\rcandidates: {i}/{len(cands)}", end="", file=sys.stderr, flush=True)
        sel = selection_for(c.changed, testmap, passing, root=root, diff=c.patch)
        direct = selection_for(c.changed, unordered, passing, root=root, diff=c.patch)
        if sel is None or direct is None:
            ran_default += suite
            ran_rule += suite
            ran_direct += suite
            continue
        if not direct:
            continue
        decided += 1
        recs, _ = suite_run(env.image, exp, f"c{i}", args, tfiles, patch=c.patch)
        out, ends = outcomes(recs), file_ends(recs)
        run = rule_files(files, {file_of.get(t, "") for t in direct}, e1, ends)
        ran_tests = {t for t in dur if file_of[t] in run}
        f2p = sorted(t for t in passing if out.get(t, "failed") != "passed")
        missed = [t for t in f2p if t not in ran_tests]
        if missed:
            wrong.append((c.id, missed[:3]))
        ran_default += sum(dur.get(t, 0.0) for t in sel)
        ran_rule += sum(dur[t] for t in ran_tests)
        ran_direct += sum(dur.get(t, 0.0) for t in direct)
        walks_rule += len(run)
        rows.append(
            (c.id, len(f2p), len(run), len([f for f in run if ends.get(f, {}).get("fp") != e1.get(f, {}).get("fp")]))
        )
    print(file=sys.stderr)
    n = len(cands)
    print(f"candidates: {n}, decided by coverage: {decided}")
    for cid, nf, nr, nd in rows:
        print(f"  {cid}: {nf} tests fail in the full run; the rule runs {nr} files, {nd} of them end in another state")
    print("share of the suite's test time each rule must run per candidate (whole suite where coverage cannot decide):")
    for name, v in (
        ("default (every later test)", ran_default),
        ("state check at file ends", ran_rule),
        ("direct (unsound)", ran_direct),
    ):
        share = v / max(suite * n, 1e-9)
        print(f"  {name:<28}{100 * share:5.1f}%  (at most {1 / max(share, 1e-9):.1f}x cheaper by test time)")
    print(f"fingerprints the rule takes: {walks_rule} ({walks_rule / max(decided, 1):.1f} per decided candidate)")
    print(
        f"tests the rule would skip that changed outcome in the full run: {len(wrong)} candidates"
        + ("".join(f"\n  {cid}: {ts}" for cid, ts in wrong))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
