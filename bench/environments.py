"""Corpus benchmark of `bugforge factory env`: how many real projects get an environment with no
hand-written recipe, and why the others do not (issue 23, item 5).

Runs the CLI, as a user would, on every project of bench/corpus/environments.txt (each into its own
folder under --out), then prints one row per project (built or not, tests, passing, excluded files,
repair steps, seconds), the success rate and the failure classes, every failure in one line; the same
table goes to OUT/table.md (for docs/figures.md). Resumable: one JSONL record per finished project in
OUT/results.jsonl; a rerun skips those (and reuses their images), --retry-failed runs failures again.

    python bench/environments.py --out runs/bench/environments --jobs 2
    python bench/environments.py --out runs/bench/environments --only six,jmespath --jobs 1
    python bench/environments.py --out runs/bench/environments --report     # the table of what is recorded
    python bench/environments.py --kinds git --git-mirror /srv/mirrors     # git sources from local bare mirrors
    python bench/environments.py --pool bench/corpus/pool.txt --sample fresh --seed 1234  # issue 38's measure

--pool FILE --sample debug|fresh: a seeded random split of the pool (the seed is printed; without --seed
one is drawn and printed): the first --fresh-size projects of the shuffled pool are the fresh sample, run
once after the last fix and reported as they come; the rest may be debugged against.
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
# One repair step as the CLI logs it (factory/repair.py): "repair: PROBLEM -> ACTION (WHY): RESULT".
REPAIR_LINE = re.compile(r"^repair: .+ -> .+: (fixed|not fixed|failed)")


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


def split_pool(pool: list[Project], seed: int, fresh_size: int) -> tuple[list[Project], list[Project]]:
    """(fresh sample, debug set): the pool shuffled by `seed`, its first `fresh_size` projects apart."""
    order = sorted(pool, key=lambda p: p.key)  # the pool file's order does not matter
    random.Random(seed).shuffle(order)
    return order[:fresh_size], order[fresh_size:]


def exc_name(text: str) -> str:
    """The last exception class name in `text` ("other" when there is none)."""
    m = re.search(r"\b([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt))\b", text)
    return m.group(1).split(".")[-1] if m else "other"


def failure_class(error: str) -> str:
    """A short class of a one-line error, for grouping failures (e.g. "collection error: ImportError")."""
    e = error.removeprefix("error: ")
    return _suite_failure(e) or _setup_failure(e) or " ".join(e.split()[:4]) or "unknown"


def _suite_failure(e: str) -> str | None:
    """The class of a failure of the test suite's runs (limits, collection), else None."""
    if e.startswith("timeout"):
        return "timeout (bench limit)"
    if "did not finish within" in e:
        return "suite timeout"
    if e.startswith("no test ran: collecting"):
        return f"collection error: {exc_name(e.split(' failed: ', 1)[-1])}"
    if e.startswith("no tests found"):
        return "no tests collected"
    if "cannot be collected after repair" in e:
        return f"over a quarter of files uncollectable: {exc_name(e.split('first: ', 1)[-1])}"
    return None


def _setup_failure(e: str) -> str | None:
    """The class of a failure before the suite ran (build, source, a crash), else None."""
    if e.startswith("building the environment of") or e.startswith("building a repair layer"):
        return "install step failed" if "RUN " in e or "returned a non-zero code" in e else "image build failed"
    if e.startswith("cannot clone") or "is not in http" in e:
        return "source unreachable"
    if e.startswith("cannot download the sdist"):
        return "sdist download failed"
    if e.startswith("crash:"):
        return f"crash: {exc_name(e)}"
    return None


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
    built = sum(r.built for r in res)
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
        f"Built: **{built} of {len(res)}** ({100 * built / max(len(res), 1):.0f}%); "
        f"{sum(r.seconds for r in res) / 60:.0f} min in all."
    )
    classes = Counter(r.failure for r in res if not r.built)
    if classes:
        lines += ["", "| failure class | projects |", "|---|---|"]
        for c, n in classes.most_common():
            names = ", ".join(r.key for r in res if not r.built and r.failure == c)
            lines.append(f"| {c} | {n}: {names} |")
    return "\n".join(lines) + "\n"


def report(projects: list[Project], done: dict[str, Result], out: Path) -> None:
    res = [done[p.key] for p in projects if p.key in done]
    print()
    for r in res:
        print(row_line(r))
        for x in r.excluded:
            print(f"{'':44s}excluded: {short(x, 150)}")
    built = sum(r.built for r in res)
    print(
        f"\nbuilt {built} of {len(res)} ({100 * built / max(len(res), 1):.1f}%), "
        f"{sum(r.seconds for r in res) / 60:.1f} min of project time"
    )
    missing = [p.key for p in projects if p.key not in done]
    if missing:
        print(f"not run yet: {len(missing)} ({', '.join(missing[:8])}{' …' if len(missing) > 8 else ''})")
    failures = [r for r in res if not r.built]
    if failures:
        print("\nfailure classes:")
        for c, n in Counter(r.failure for r in failures).most_common():
            print(f"  {n:3d}  {c}")
        print("\nevery failure:")
        for r in failures:
            print(f"  {r.key}: {short(r.error, 300)}")
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
    ap.add_argument(
        "--git-mirror",
        type=Path,
        help="read GitHub sources from bare mirrors DIR/OWNER+NAME[/repo] (git url.insteadOf)",
    )
    ap.add_argument("--pool", help="draw the projects from this pool file instead (with --sample)")
    ap.add_argument("--sample", choices=["fresh", "debug"], default="fresh", help="which side of the pool's split")
    ap.add_argument("--seed", type=int, help="seed of the pool's split (default: drawn, and printed)")
    ap.add_argument("--fresh-size", type=int, default=30, help="projects in the fresh sample (default 30)")
    ap.add_argument("--retry-failed", action="store_true", help="run recorded failures again")
    ap.add_argument("--report", action="store_true", help="print the table of the recorded results, run nothing")
    return ap.parse_args(argv)


def select(a: argparse.Namespace) -> tuple[list[Project], list[Project]]:
    """(the corpus the report covers, the projects to consider running): the corpus file's, or one side
    of the pool's split; narrowed by --only."""
    corpus = [p for p in read_corpus(Path(a.corpus)) if p.kind in a.kinds.split(",")]
    if a.pool:
        seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "big")
        fresh, debug = split_pool(read_corpus(Path(a.pool)), seed, a.fresh_size)
        corpus = fresh if a.sample == "fresh" else debug
        print(f"pool {a.pool}: seed {seed}; {a.sample} set of {len(corpus)} (fresh {len(fresh)}, debug {len(debug)})")
    projects = corpus
    if a.only:
        want = {w.strip() for w in a.only.split(",") if w.strip()}
        projects = [p for p in projects if p.key in want or p.key.rsplit("-", 1)[0] in want]
        if not projects:
            sys.exit(f"--only {a.only}: no such project in {a.corpus}")
    return corpus, projects


class Runner:
    """Runs projects on a thread pool, appending each one's result to results.jsonl as it finishes."""

    def __init__(self, a: argparse.Namespace, out: Path, done: dict[str, Result], todo: list[Project]):
        self.a, self.out, self.done, self.todo = a, out, done, todo
        self.results = out / "results.jsonl"
        self.lock, self.t0, self.finished = threading.Lock(), time.monotonic(), 0
        self.ran_before = dict(done)

    def _claim(self, p: Project) -> bool:
        with self.lock:
            now = load_results(self.results).get(p.key)  # another bench process on the same --out may have run it
            if now is not None and now != self.ran_before.get(p.key):
                print(f"  skip   {p.key} (recorded meanwhile)", flush=True)
                return False
            print(f"  start  {p.key}", flush=True)
            return True

    def work(self, p: Project) -> None:
        if not self._claim(p):
            return
        a = self.a
        try:
            r = run_one(p, self.out, a.limit, a.suite_timeout, a.git_mirror)
        except Exception as e:  # noqa: BLE001 - the bench's own failure on one project is recorded; the others go on
            r = Result(p.key, p.source, p.commit, False, 0.0, error=f"crash: bench: {e!r}"[:300])
            r.failure = failure_class(r.error)
        with self.lock:
            with open(self.results, "a") as f:
                f.write(json.dumps(asdict(r)) + "\n")
            self.done[p.key] = r
            self.finished += 1
            left = len(self.todo) - self.finished
            eta = (time.monotonic() - self.t0) / self.finished * left
            print(f"[{self.finished}/{len(self.todo)}] {row_line(r)}  (~{eta / 60:.0f} min left)", flush=True)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    corpus, projects = select(a)
    done = load_results(out / "results.jsonl")
    if a.report:
        report(corpus, done, out)
        return 0
    todo = [p for p in projects if p.key not in done or (a.retry_failed and not done[p.key].built)]
    print(
        f"{len(projects)} projects, {len(projects) - len(todo)} already recorded, {len(todo)} to run, "
        f"--jobs {a.jobs}, {a.limit:.0f} s each at most; logs in {out / 'logs'}",
        flush=True,
    )
    runner = Runner(a, out, done, todo)
    try:
        with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            list(pool.map(runner.work, todo))
    except KeyboardInterrupt:
        print("interrupted; finished projects are recorded, rerun to resume", file=sys.stderr)
        return 130
    report(corpus, done, out)  # every recorded project of the corpus, not only this run's
    return 0


if __name__ == "__main__":
    sys.exit(main())
