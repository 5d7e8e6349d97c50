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


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default="pypi:jsonschema==4.21.1")
    ap.add_argument("--recipe")
    ap.add_argument("--out", default="runs/bench")
    ap.add_argument("--candidates", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--exp", default="/tmp/state-skip")
    return ap.parse_args()


@dataclasses.dataclass
class Experiment:
    """The environment and where the runs go."""

    env: object
    testmap: TestMap
    exp: Path
    args: list[str]
    tfiles: list[str]

    @property
    def dur(self) -> dict[str, float]:
        return {t: o.duration for t, o in self.env.tests.items()}

    def run(self, name: str, patch: str | None = None):
        return suite_run(self.env.image, self.exp, name, self.args, self.tfiles, patch=patch)


@dataclasses.dataclass
class Tally:
    """Test time each rule runs, and what the state rule missed."""

    ran_default: float = 0.0
    ran_rule: float = 0.0
    ran_direct: float = 0.0
    walks_rule: int = 0
    decided: int = 0
    wrong: list = dataclasses.field(default_factory=list)
    rows: list = dataclasses.field(default_factory=list)


def baselines(x: Experiment, repo: str) -> tuple[dict, list[str]]:
    """Two baseline runs with fingerprints: (the first's file ends, the test files); prints how stable
    the fingerprints were between the two processes."""
    b1, w1 = x.run("base1")
    b2, w2 = x.run("base2")
    e1, e2 = file_ends(b1), file_ends(b2)
    files = list(e1)
    same = [f for f in files if e2.get(f, {}).get("fp") == e1[f]["fp"]]
    walk = [r["seconds"] for r in e1.values()]
    print(
        f"repository: {repo}  tests: {len(x.env.tests)}  suite test time: {sum(x.dur.values()):.2f} s  test files: {len(files)}"
    )
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
    return e1, files


def try_candidate(x: Experiment, i: int, c, e1: dict, files: list[str], tally: Tally) -> None:
    """Run candidate `c` whole (with fingerprints) and count what each rule would have run."""
    passing, root, dur = set(x.env.passing), Path(x.env.repo_dir), x.dur
    suite = sum(dur.values())
    sel = selection_for(c.changed, x.testmap, passing, root=root, diff=c.patch)
    direct = selection_for(c.changed, dataclasses.replace(x.testmap, order=[]), passing, root=root, diff=c.patch)
    if sel is None or direct is None:
        tally.ran_default += suite
        tally.ran_rule += suite
        tally.ran_direct += suite
        return
    if not direct:
        return
    tally.decided += 1
    file_of = {t: t.split("::")[0] for t in dur}
    recs, _ = x.run(f"c{i}", c.patch)
    out, ends = outcomes(recs), file_ends(recs)
    run = rule_files(files, {file_of.get(t, "") for t in direct}, e1, ends)
    ran_tests = {t for t in dur if file_of[t] in run}
    f2p = sorted(t for t in passing if out.get(t, "failed") != "passed")
    missed = [t for t in f2p if t not in ran_tests]
    if missed:
        tally.wrong.append((c.id, missed[:3]))
    tally.ran_default += sum(dur.get(t, 0.0) for t in sel)
    tally.ran_rule += sum(dur[t] for t in ran_tests)
    tally.ran_direct += sum(dur.get(t, 0.0) for t in direct)
    tally.walks_rule += len(run)
    tally.rows.append(
        (c.id, len(f2p), len(run), len([f for f in run if ends.get(f, {}).get("fp") != e1.get(f, {}).get("fp")]))
    )


def summary(t: Tally, n: int, suite: float) -> None:
    print(f"candidates: {n}, decided by coverage: {t.decided}")
    for cid, nf, nr, nd in t.rows:
        print(f"  {cid}: {nf} tests fail in the full run; the rule runs {nr} files, {nd} of them end in another state")
    print("share of the suite's test time each rule must run per candidate (whole suite where coverage cannot decide):")
    for name, v in (
        ("default (every later test)", t.ran_default),
        ("state check at file ends", t.ran_rule),
        ("direct (unsound)", t.ran_direct),
    ):
        share = v / max(suite * n, 1e-9)
        print(f"  {name:<28}{100 * share:5.1f}%  (at most {1 / max(share, 1e-9):.1f}x cheaper by test time)")
    print(f"fingerprints the rule takes: {t.walks_rule} ({t.walks_rule / max(t.decided, 1):.1f} per decided candidate)")
    print(
        f"tests the rule would skip that changed outcome in the full run: {len(t.wrong)} candidates"
        + ("".join(f"\n  {cid}: {ts}" for cid, ts in t.wrong))
    )


def main() -> int:
    a = parse_args()
    env, _ = build_environment(a.repo, out=Path(a.out), recipe_path=a.recipe, log=lambda m: print(m, file=sys.stderr))
    testmap = TestMap.load(Path(env.testmap))
    cands, _ = procedural_candidates(env, testmap, set(PROCEDURAL), a.candidates, a.seed)
    exp = Path(a.exp)
    exp.mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(__file__).with_name("statefp.py"), exp / "statefp.py")
    x = Experiment(env, testmap, exp, list(env.recipe.pytest_args), list(env.recipe.test_files or []))
    e1, files = baselines(x, a.repo)
    tally = Tally()
    for i, c in enumerate(cands, 1):
        print(f"\rcandidates: {i}/{len(cands)}", end="", file=sys.stderr, flush=True)
        try_candidate(x, i, c, e1, files, tally)
    print(file=sys.stderr)
    summary(tally, len(cands), sum(x.dur.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
