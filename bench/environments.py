"""Corpus benchmark of `bugforge factory env`: how many real projects get an environment with no
hand-written recipe, and why the others do not (issue 23, item 5).

Runs the CLI, as a user would, on every project of bench/corpus/environments.txt (each into its own
folder under --out), then prints one row per project (built or not, tests, passing, excluded files,
repair steps, seconds), the success rate and the failure classes, every failure in one line; the same
table goes to OUT/table.md (for docs/figures.md). Resumable: one JSONL record per finished project in
OUT/results.jsonl; a rerun skips those (and reuses their images), --retry-failed runs failures again.

    python bench/environments.py --out runs/bench/environments --jobs 2
    python bench/environments.py --out runs/bench/environments --report     # the table of what is recorded
    python bench/environments.py --kinds git --git-mirror /srv/mirrors     # git sources from local bare mirrors
    python bench/environments.py --pool bench/corpus/pool.txt --sample fresh --seed 1234  # issue 38's measure

--pool FILE --sample debug|fresh: a seeded random split of the pool (the seed is printed; without --seed
one is drawn and printed): the first --fresh-size projects of the shuffled pool are the fresh sample, run
once after the last fix and reported as they come; the rest may be debugged against. A project of
--seen (bench/corpus/seen.txt: earlier fresh samples, debugged against since) is never drawn fresh.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus" / "environments.txt"
SEEN = CORPUS.with_name("seen.txt")  # pool projects an earlier fresh sample used: never fresh again
# One repair step as the CLI logs it (factory/repair.py): "repair: PROBLEM -> ACTION (WHY): RESULT".
REPAIR_LINE = re.compile(r"^repair: .+ -> .+: (fixed|not fixed|failed|reverted)")
NOT_APPLICABLE = "not applicable"  # a project bugforge does not claim (wheels only): out of the success rate


@dataclass
class Project:
    source: str
    commit: str | None
    why: str

    @property
    def key(self) -> str:
        """A short, file-name-safe name: `six-1.17.0`, `rich-v15.0.0`."""
        if self.source.startswith("pypi:"):
            base = self.source[5:].replace("==", "-")
        else:
            base = self.source.rstrip("/").split("/")[-1].removesuffix(".git")
        base += f"-{self.commit}" if self.commit else ""
        return re.sub(r"[^A-Za-z0-9._-]+", "-", base)

    @property
    def kind(self) -> str:
        return "pypi" if self.source.startswith("pypi:") else "git"


@dataclass
class Result:
    key: str
    source: str
    commit: str | None
    built: bool
    seconds: float
    tests: int = 0
    passing: int = 0
    flaky: int = 0
    excluded: list[str] = field(default_factory=list)
    """`PATH: reason` of each file left out."""
    repairs: list[str] = field(default_factory=list)
    """`PROBLEM -> ACTION: RESULT` of each repair step."""
    error: str = ""
    """The one-line error (built=False)."""
    failure: str = ""
    """A short class of the error, for grouping."""
    log: str = ""


def read_corpus(path: Path) -> list[Project]:
    """Lines `SOURCE [@REF] -- why`; `#` starts a comment."""
    out = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split(" #")[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        head, _, why = line.partition(" -- ")
        parts = head.split()
        if len(parts) > 2 or (len(parts) == 2 and not parts[1].startswith("@")) or not why.strip():
            sys.exit(f"{path}:{n}: expected `SOURCE [@REF] -- why`, got {raw!r}")
        out.append(Project(parts[0], parts[1][1:] if len(parts) == 2 else None, why.strip()))
    keys = Counter(p.key for p in out)
    if dup := [k for k, c in keys.items() if c > 1]:
        sys.exit(f"{path}: listed twice: {', '.join(dup)}")
    return out


def split_pool(
    pool: list[Project], seed: int, fresh_size: int, seen=frozenset()
) -> tuple[list[Project], list[Project]]:
    """(fresh sample, debug set): the pool shuffled by `seed`, its first `fresh_size` projects apart; a
    project whose source is in `seen` (drawn fresh before, debugged against since) is never fresh."""
    order = sorted((p for p in pool if p.source not in seen), key=lambda p: p.key)  # the file's order does not matter
    random.Random(seed).shuffle(order)
    return order[:fresh_size], order[fresh_size:] + [p for p in pool if p.source in seen]


def exc_name(text: str) -> str:
    """The last exception class name in `text` ("other" when there is none)."""
    m = re.search(r"\b([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt))\b", text)
    return m.group(1).split(".")[-1] if m else "other"


def failure_class(error: str) -> str:
    """A short class of a one-line error, for grouping failures (e.g. "collection error: ImportError")."""
    e = error.removeprefix("error: ")
    for matches, label in FAILURE_CLASSES:
        if matches(e):
            return label(e) if callable(label) else label
    return " ".join(e.split()[:4]) or "unknown"


FAILURE_CLASSES = [  # (does the error match, its class or how to name it), first match wins
    (lambda e: e.startswith("timeout"), "timeout (bench limit)"),
    (lambda e: "did not finish within" in e, "suite timeout"),
    (
        lambda e: e.startswith("no test ran: collecting"),
        lambda e: "collection error: " + exc_name(e.split(" failed: ", 1)[-1]),
    ),
    (lambda e: e.startswith("no tests found"), "no tests collected"),
    (
        lambda e: "cannot be collected after repair" in e,
        lambda e: f"over a quarter of files uncollectable: {exc_name(e.split('first: ', 1)[-1])}",
    ),
    (
        lambda e: e.startswith(("building the environment of", "building a repair layer")),
        lambda e: "install step failed" if "RUN " in e or "returned a non-zero code" in e else "image build failed",
    ),
    (lambda e: e.startswith("cannot clone") or "is not in http" in e, "source unreachable"),
    (lambda e: "publishes wheels only" in e, NOT_APPLICABLE),  # out of scope: not counted as bugforge's failure
    (lambda e: e.startswith("cannot download the sdist"), "sdist download failed"),
    (lambda e: e.startswith("crash:"), lambda e: f"crash: {exc_name(e)}"),
]


def last_error(log_text: str, rc: int) -> str:
    """The CLI's one error line (`error: ...`), else the last line of a traceback, else the exit code."""
    lines = [ln.strip() for ln in log_text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith("error: "):
            return ln
    if any(ln.startswith("Traceback") for ln in lines):
        return f"crash: {lines[-1][:300]}"
    return f"exit code {rc}: {lines[-1][:300] if lines else 'no output'}"


def env_dir(out: Path) -> Path | None:
    """The environment folder the CLI wrote under a project's --out (`out/NAME/env.json`)."""
    found = sorted(out.glob("*/env.json")) if out.is_dir() else []
    return found[0].parent if found else None


def mirror_config(mirror: Path | None) -> dict[str, str]:
    """Git configuration (GIT_CONFIG_COUNT/KEY_n/VALUE_n) that reads https://github.com/OWNER/NAME[.git]
    from the bare mirror OWNER+NAME/repo (or OWNER+NAME) under `mirror`: for the corpus' git sources and
    for the repositories that sdists with incomplete tests fall back to, on a machine without GitHub."""
    pairs = []
    for d in sorted(mirror.iterdir()) if mirror else []:
        repo = d / "repo" if (d / "repo" / "HEAD").is_file() else d
        if "+" in d.name and (repo / "HEAD").is_file() and (repo / "objects").is_dir():
            owner, name = d.name.split("+", 1)
            for url in (f"https://github.com/{owner}/{name}.git", f"https://github.com/{owner}/{name}"):
                pairs.append((f"url.{repo.resolve()}.insteadOf", url))  # the longest match wins
    env = {"GIT_CONFIG_COUNT": str(len(pairs))} if pairs else {}
    for i, (k, v) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = k, v
    return env


def run_one(p: Project, out: Path, limit: float, suite_timeout: float | None, mirror: Path | None = None) -> Result:
    """`bugforge factory env SOURCE --out OUT/envs/KEY` in a subprocess, within `limit` seconds."""
    proj_out = out / "envs" / p.key
    log_path = out / "logs" / f"{p.key}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "bugforge.cli", "factory", "env", p.source, "--out", str(proj_out)]
    cmd += ["--commit", p.commit] if p.commit else []
    cmd += ["--timeout", str(suite_timeout)] if suite_timeout else []
    t0 = time.monotonic()
    with open(log_path, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        env = {**os.environ, "COLUMNS": "10000", "NO_COLOR": "1", **mirror_config(mirror)}  # one line per message
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=limit)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out, rc = True, -1
            os.killpg(proc.pid, signal.SIGINT)  # the CLI stops cleanly on an interrupt
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    seconds = round(time.monotonic() - t0, 1)
    text = log_path.read_text(errors="replace").replace("\0", "")  # a log two writers shared
    d = env_dir(proj_out)
    res = Result(p.key, p.source, p.commit, built=False, seconds=seconds, log=str(log_path))
    if rc == 0 and d is not None:
        rec = json.loads((d / "env.json").read_text())
        recipe = rec["recipe"]
        tests = rec["tests"].values()
        res.built = True
        res.tests = len(rec["tests"])
        res.passing = sum(t["outcome"] == "passed" and not t["flaky"] for t in tests)
        res.flaky = sum(bool(t["flaky"]) for t in tests)
        res.excluded = [f"{x['path']}: {x['reason']}" for x in recipe.get("excluded", [])]
        res.repairs = [f"{r['problem']} -> {r['action']}: {r['result']}" for r in recipe.get("repairs", [])]
        return res
    # Failed: recipe.json holds no repairs yet (written at the end), so read the steps from the log.
    res.repairs = [ln.removeprefix("repair: ") for ln in text.splitlines() if REPAIR_LINE.match(ln)]
    res.error = f"timeout: stopped after {limit:.0f} s" if timed_out else last_error(text, rc)
    res.failure = failure_class(res.error)
    return res


def load_results(path: Path) -> dict[str, Result]:
    """The latest record per project."""
    done: dict[str, Result] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                r = Result(**json.loads(line))
                done[r.key] = r
    return done


def short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def row_line(r: Result) -> str:
    if r.built:
        what = f"built     {r.tests:6d} tests {r.passing:6d} passing  {len(r.excluded):2d} excluded  {len(r.repairs):2d} repairs"
    else:
        what = f"FAILED    [{r.failure}] {short(r.error, 160)}"
    return f"{r.key:32s} {r.seconds:7.0f} s  {what}"


def markdown(projects: list[Project], done: dict[str, Result]) -> str:
    """The table for docs/figures.md: one row per project, the rate, the failure classes."""
    rows = [p for p in projects if p.key in done]
    res = [done[p.key] for p in rows]
    built, n = sum(r.built for r in res), sum(r.failure != NOT_APPLICABLE for r in res)
    lines = [
        "| project | source | built | tests | passing | excluded | repairs | seconds | note |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for p, r in zip(rows, res):
        if r.built:
            note = "; ".join(short(x, 80) for x in r.excluded[:3]) + (" …" if len(r.excluded) > 3 else "")
        else:
            note = f"**{r.failure}**: {short(r.error, 200)}"
        src = p.source + (f" @{p.commit}" if p.commit else "")
        cells = [p.key, f"`{src}`", "yes" if r.built else "**no**"]
        cells += [str(r.tests), str(r.passing), str(len(r.excluded)), str(len(r.repairs)), f"{r.seconds:.0f}"]
        lines.append("| " + " | ".join(cells + [note.replace("|", "\\|")]) + " |")
    lines.append("")
    lines.append(
        f"Built: **{built} of {n}** ({100 * built / max(n, 1):.0f}%; {len(res) - n} {NOT_APPLICABLE} left out); "
        f"{sum(r.seconds for r in res) / 60:.0f} min in all."
    )
    return "\n".join(lines + class_table(res)) + "\n"


def class_table(res: list[Result]) -> list[str]:
    """Markdown lines: each failure class with its count and projects, the commonest first."""
    classes = Counter(r.failure for r in res if not r.built).most_common()
    names = {c: ", ".join(r.key for r in res if not r.built and r.failure == c) for c, _ in classes}
    return ["", "| failure class | projects |", "|---|---|"] + [f"| {c} | {n}: {names[c]} |" for c, n in classes]


def report(projects: list[Project], done: dict[str, Result], out: Path) -> None:
    res = [done[p.key] for p in projects if p.key in done]
    print()
    for r in res:
        print(row_line(r))
        for x in r.excluded:
            print(f"{'':44s}excluded: {short(x, 150)}")
    built, n = sum(r.built for r in res), sum(r.failure != NOT_APPLICABLE for r in res)
    print(
        f"\nbuilt {built} of {n} ({100 * built / max(n, 1):.1f}%; {len(res) - n} {NOT_APPLICABLE} left out), "
        f"{sum(r.seconds for r in res) / 60:.1f} min of project time"
    )
    if missing := [p.key for p in projects if p.key not in done]:
        print(f"not run yet: {len(missing)} ({', '.join(missing[:8])}{' …' if len(missing) > 8 else ''})")
    if failures := [r for r in res if not r.built]:
        print("\n".join(class_table(res)) + "\n\nevery failure:")
        print("\n".join(f"  {r.key}: {short(r.error, 300)}" for r in failures))
    (out / "table.md").write_text(markdown(projects, done))
    print(f"\ntable: {out / 'table.md'}; records: {out / 'results.jsonl'}; logs: {out / 'logs'}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", default="runs/bench/environments", help="output folder (default: %(default)s)")
    ap.add_argument("--corpus", default=str(CORPUS), help="corpus file (default: bench/corpus/environments.txt)")
    ap.add_argument("--jobs", type=int, default=1, help="projects built at once (default 1)")
    ap.add_argument("--limit", type=float, default=2400, help="seconds per project, all stages (default 2400)")
    ap.add_argument("--suite-timeout", type=float, help="seconds per baseline run (CLI --timeout; default its own)")
    ap.add_argument("--only", help="comma-separated project keys or names (six-1.17.0 or six)")
    ap.add_argument("--kinds", default="pypi,git", help="which sources: pypi, git or both (default: %(default)s)")
    ap.add_argument("--git-mirror", type=Path, help="GitHub sources from bare mirrors DIR/OWNER+NAME[/repo]")
    ap.add_argument("--pool", help="draw the projects from this pool file instead (with --sample)")
    ap.add_argument("--sample", choices=["fresh", "debug"], default="fresh", help="which side of the pool's split")
    ap.add_argument("--seed", type=int, help="seed of the pool's split (default: drawn, and printed)")
    ap.add_argument("--fresh-size", type=int, default=30, help="projects in the fresh sample (default 30)")
    ap.add_argument("--seen", default=str(SEEN), help="projects never drawn fresh (default: bench/corpus/seen.txt)")
    ap.add_argument("--retry-failed", action="store_true", help="run recorded failures again")
    ap.add_argument("--report", action="store_true", help="print the table of the recorded results, run nothing")
    return ap.parse_args(argv)


def select(a: argparse.Namespace) -> tuple[list[Project], list[Project]]:
    """(the corpus the report covers, the projects to consider running): the corpus file's, or one side
    of the pool's split; narrowed by --only."""
    corpus = [p for p in read_corpus(Path(a.corpus)) if p.kind in a.kinds.split(",")]
    if a.pool:
        seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "big")
        seen = frozenset(p.source for p in read_corpus(Path(a.seen))) if a.seen else frozenset()
        fresh, debug = split_pool(read_corpus(Path(a.pool)), seed, a.fresh_size, seen)
        corpus = fresh if a.sample == "fresh" else debug
        sizes = f"fresh {len(fresh)}, debug {len(debug)} with {len(seen)} seen before"
        print(f"pool {a.pool}: seed {seed}; {a.sample} set of {len(corpus)} ({sizes}, --seen {a.seen})")
    projects = corpus
    if a.only:
        want = {w.strip() for w in a.only.split(",") if w.strip()}
        projects = [p for p in projects if p.key in want or p.key.rsplit("-", 1)[0] in want]
        if not projects:
            sys.exit(f"--only {a.only}: no such project in {a.corpus}")
    return corpus, projects


def run_all(a: argparse.Namespace, out: Path, done: dict[str, Result], todo: list[Project]) -> None:
    """Run `todo` on a thread pool, appending each project's result to results.jsonl as it finishes."""
    results, lock, t0, finished, ran_before = out / "results.jsonl", threading.Lock(), time.monotonic(), [0], dict(done)

    def work(p: Project) -> None:
        with lock:
            now = load_results(results).get(p.key)  # another bench process on the same --out may have run it
            if now is not None and now != ran_before.get(p.key):
                return print(f"  skip   {p.key} (recorded meanwhile)", flush=True)
            print(f"  start  {p.key}", flush=True)
        try:
            r = run_one(p, out, a.limit, a.suite_timeout, a.git_mirror)
        except Exception as e:  # noqa: BLE001 - the bench's own failure on one project is recorded; the others go on
            r = Result(p.key, p.source, p.commit, False, 0.0, error=f"crash: bench: {e!r}"[:300])
            r.failure = failure_class(r.error)
        with lock, open(results, "a") as f:
            f.write(json.dumps(asdict(r)) + "\n")
            done[p.key] = r
            finished[0] += 1
            eta = (time.monotonic() - t0) / finished[0] * (len(todo) - finished[0])
            print(f"[{finished[0]}/{len(todo)}] {row_line(r)}  (~{eta / 60:.0f} min left)", flush=True)

    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        list(pool.map(work, todo))


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    corpus, projects = select(a)
    done = load_results(out / "results.jsonl")
    if a.report:
        return report(corpus, done, out) or 0
    todo = [p for p in projects if p.key not in done or (a.retry_failed and not done[p.key].built)]
    ran = f"{len(projects)} projects, {len(projects) - len(todo)} already recorded, {len(todo)} to run"
    print(f"{ran}, --jobs {a.jobs}, {a.limit:.0f} s each at most; logs in {out / 'logs'}", flush=True)
    try:
        run_all(a, out, done, todo)
    except KeyboardInterrupt:
        print("interrupted; finished projects are recorded, rerun to resume", file=sys.stderr)
        return 130
    report(corpus, done, out)  # every recorded project of the corpus, not only this run's
    return 0


if __name__ == "__main__":
    sys.exit(main())
