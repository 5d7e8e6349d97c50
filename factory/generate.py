"""Stage 2 of the factory: candidate bugs -> validated bugs, resumable.

Files under the environment's directory (all JSON lines, appended as work finishes):
  candidates.jsonl   every candidate proposed (after parse and duplicate checks)
  validations.jsonl  one Validation per candidate that has been run
A rerun skips what these files already hold, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import random
import subprocess
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from bugforge.errors import BugforgeError
from bugforge.factory.mutations import sites as mutation_sites
from bugforge.factory.operators import OPERATORS, STRATEGY_OF
from bugforge.factory.validate import validate_all
from bugforge.records import Candidate, EnvRecord, Validation, append_jsonl, from_dict, load_env, read_jsonl
from bugforge.testing.patches import changed_lines, file_diff, files_of, patch_id
from bugforge.testing.testmap import TestMap

PROCEDURAL = sorted({STRATEGY_OF.get(op.name, op.name) for op in OPERATORS})
OTHER = ["lm_modify", "lm_rewrite", "history", "combine"]
ALL_STRATEGIES = PROCEDURAL + OTHER
Progress = Callable[[str, int, int], None]


def _no_progress(phase: str, done: int, total: int) -> None:
    pass


@dataclass
class GenerateConfig:
    """Options of `generate` (and of `bugforge factory generate`, which takes its defaults from here)."""

    strategies: list[str] | None = None
    """Strategies to run (ALL_STRATEGIES); None: every procedural one, history and combine."""
    max_candidates: int = 300
    """Procedural candidates to validate, drawn round-robin over the strategies (history: a tenth)."""
    workers: int = 2
    """Validations at once, each in its own warm container."""
    seed: int = 0
    """Seeds the draw of candidates and of combinations (the same seed draws the same bugs)."""
    mode: str = "selected"
    """Validation mode (factory/validate.py MODES): selected (coverage-chosen tests, warm) or full."""
    ray: str | None = None
    """A Ray cluster's address (`auto`: the running one) to validate on, `workers` actors over its nodes."""


@dataclass
class StrategyReport:
    candidates: int = 0
    valid: int = 0
    seconds: float = 0.0
    statuses: Counter = field(default_factory=Counter)

    @property
    def yield_(self) -> float:
        return self.valid / self.candidates if self.candidates else 0.0

    @property
    def seconds_per_valid(self) -> float | None:
        return self.seconds / self.valid if self.valid else None


def is_test_file(path: str, test_files: set[str]) -> bool:
    name = path.rsplit("/", 1)[-1]
    parts = path.split("/")[:-1]
    return (
        path in test_files
        or name == "conftest.py"
        or name.startswith("test_")
        or name.endswith("_test.py")
        or any(p in ("tests", "test", "testing") for p in parts)
    )


def source_files(env: EnvRecord) -> list[str]:
    """Python files a bug may go into: tracked, not tests, not packaging or docs."""
    out = subprocess.run(
        ["git", "-C", env.repo_dir, "ls-files", "*.py"], capture_output=True, text=True, check=True
    ).stdout.split()
    test_files = {t.split("::")[0] for t in env.tests}
    return [
        p
        for p in out
        if not is_test_file(p, test_files)
        and p.rsplit("/", 1)[-1] not in ("setup.py", "conftest.py")
        and not p.startswith(("docs/", "doc/", "examples/", "benchmarks/"))
    ]


def procedural_candidates(
    env: EnvRecord, testmap: TestMap, strategies: set[str], limit: int, seed: int
) -> tuple[list[Candidate], int]:
    """Up to `limit` distinct mutations, drawn round-robin over strategies (seeded, so every strategy is
    represented), dropping any that does not parse or duplicates an earlier patch. Returns them and
    the number of sites there were to draw from."""
    by_strategy: dict[str, list] = defaultdict(list)
    sources: dict[str, str] = {}
    for path in source_files(env):
        covered = testmap.covered_lines(path)
        if covered:
            sources[path] = (Path(env.repo_dir) / path).read_text()
            for site in mutation_sites(sources[path], covered, strategies):
                by_strategy[site.strategy].append((path, site))
    n_sites = sum(len(v) for v in by_strategy.values())
    rng = random.Random(seed)
    queues = []
    for name in sorted(by_strategy):
        rng.shuffle(by_strategy[name])
        queues.append(by_strategy[name])
    out, seen, i = [], set(), 0
    while len(out) < limit and any(queues):
        q = queues[i % len(queues)]
        i += 1
        if not q:
            continue
        path, site = q.pop()
        m = site.make()
        if m is None:
            continue
        try:
            compile(m.source, path, "exec")
        except (SyntaxError, ValueError):
            continue
        old = sources[path]
        patch = file_diff(path, old, m.source)
        cid = patch_id(patch)
        if cid in seen:
            continue
        seen.add(cid)
        out.append(
            Candidate(
                cid,
                m.strategy,
                patch,
                [path],
                {path: sorted(changed_lines(old, m.source))},
                m.function,
                list(m.line_span),
            )
        )
    return out, n_sites


class Scratch:
    """A scratch clone of the snapshot repo, for combining patches with git itself."""

    def __init__(self, repo_dir: str):
        self.tmp = tempfile.TemporaryDirectory(prefix="bugforge-scratch-")
        self.dir = Path(self.tmp.name) / "r"
        subprocess.run(["git", "clone", "-q", "--shared", repo_dir, str(self.dir)], check=True, capture_output=True)

    def combine(self, patches: list[str], reverse: bool = False) -> str | None:
        """The patches applied in turn, as one diff (reverse: the diff that undoes them); None if one
        does not apply."""
        undo = ["-R", "--src-prefix=a/", "--dst-prefix=b/"] if reverse else []
        try:
            for p in patches:  # bugs in neighbouring functions share context lines: one matching line will do
                subprocess.run(
                    ["git", "-C", str(self.dir), "apply", "-C1", "-"],
                    input=p,
                    text=True,
                    check=True,
                    capture_output=True,
                )
            return subprocess.run(
                ["git", "-C", str(self.dir), "diff", *undo], capture_output=True, text=True, check=True
            ).stdout
        except subprocess.CalledProcessError:
            return None
        finally:
            subprocess.run(["git", "-C", str(self.dir), "checkout", "-q", "--", "."], check=True)
            subprocess.run(["git", "-C", str(self.dir), "clean", "-fdq"], check=True)

    def close(self):
        self.tmp.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _groups_in_file(items: list[tuple[Candidate, Validation]], rng: random.Random) -> list[list[Candidate]]:
    """Groups of 2-3 of one file's bugs, each in a different function (shuffled by `rng`)."""
    items = sorted(items, key=lambda cv: cv[0].id)
    rng.shuffle(items)
    groups, group, used_funcs = [], [], set()
    size = rng.choice((2, 3))  # drawn once per group (drawn at every step, a group could outgrow both)
    for c, _ in items:
        if c.function in used_funcs:
            continue
        group.append(c)
        used_funcs.add(c.function)
        if len(group) == size:
            groups.append(group)
            group, used_funcs, size = [], set(), rng.choice((2, 3))
    return groups


def combinations(valid: list[tuple[Candidate, Validation]], limit: int, seed: int, repo_dir: str) -> list[Candidate]:
    """2-3 valid single bugs in the same file, in different functions, combined into one."""
    rng = random.Random(seed)
    by_file = defaultdict(list)
    for c, v in valid:
        if len(c.files) == 1 and not c.parents:
            by_file[c.files[0]].append((c, v))
    groups = [g for _path, items in sorted(by_file.items()) for g in _groups_in_file(items, rng)]
    rng.shuffle(groups)
    scratch = Scratch(repo_dir)
    out = []
    try:
        for group in groups[:limit]:
            patch = scratch.combine([c.patch for c in group])
            if not patch:
                continue
            changed: dict[str, list[int]] = defaultdict(list)
            for c in group:
                for f, ls in c.changed.items():
                    changed[f] = sorted(set(changed[f]) | set(ls))
            out.append(
                Candidate(
                    patch_id(patch),
                    "combine",
                    patch,
                    files_of(patch),
                    dict(changed),
                    " + ".join(c.function for c in group),
                    [],
                    [c.id for c in group],
                    {"strategies": [c.strategy for c in group]},
                )
            )
    finally:
        scratch.close()
    return out


def propose(env, testmap: TestMap, wanted: set[str], max_candidates: int, seed: int, lm, log) -> list[Candidate]:
    """The single-bug candidates of the wanted strategies: procedural mutations, history reverts, LM bugs."""
    singles: list[Candidate] = []
    procedural = wanted & set(PROCEDURAL)
    if procedural:
        drawn, n_sites = procedural_candidates(env, testmap, procedural, max_candidates, seed)
        log(f"generate: {n_sites} mutation sites on covered lines; drew {len(drawn)} distinct candidates (seed {seed})")
        singles += drawn
    if "history" in wanted:
        from bugforge.factory.history import history_candidates

        singles += history_candidates(env, limit=max(10, max_candidates // 10))
    if wanted & {"lm_modify", "lm_rewrite"}:
        if lm is None:
            raise BugforgeError(
                "LM strategies need a model endpoint",
                "pass --lm-model and --lm-base-url (or set OPENAI_BASE_URL), or drop lm_* strategies",
            )
        from bugforge.factory.lm_bugs import lm_candidates

        singles += lm_candidates(env, testmap, lm, sorted(wanted & {"lm_modify", "lm_rewrite"}), seed=seed, log=log)
    return singles


def generate(
    env_path: str | Path,
    *,
    strategies: list[str] | None = GenerateConfig.strategies,
    max_candidates: int = GenerateConfig.max_candidates,
    workers: int = GenerateConfig.workers,
    seed: int = GenerateConfig.seed,
    mode: str = GenerateConfig.mode,
    ray: str | None = GenerateConfig.ray,
    max_combos: int | None = None,
    lm=None,
    progress: Progress = _no_progress,
    log: Callable[[str], None] = print,
) -> dict[str, StrategyReport]:
    """Propose, validate and record bugs for one environment. Returns the per-strategy report."""
    env_path = Path(env_path)
    if env_path.is_dir():
        env_path = env_path / "env.json"
    if not env_path.exists():
        raise BugforgeError(f"environment record {env_path} does not exist", "run `bugforge factory env REPO` first")
    env = load_env(env_path)
    wanted = set(strategies or PROCEDURAL + ["history", "combine"])
    unknown = wanted - set(ALL_STRATEGIES)
    if unknown:
        raise BugforgeError(f"unknown strategies {sorted(unknown)}", f"choose from {', '.join(ALL_STRATEGIES)}")
    testmap = TestMap.load(Path(env.testmap))
    work = env_path.parent
    cand_path, val_path = work / "candidates.jsonl", work / "validations.jsonl"
    known = {r["id"]: from_dict(Candidate, r) for r in read_jsonl(cand_path)}
    done = {r["candidate"]: from_dict(Validation, r) for r in read_jsonl(val_path)}

    def add(cands: list[Candidate]) -> list[Candidate]:
        fresh = []
        for c in cands:
            if c.id not in known:
                known[c.id] = c
                append_jsonl(cand_path, c)
            fresh.append(known[c.id])
        return fresh

    singles = propose(env, testmap, wanted, max_candidates, seed, lm, log)
    singles = add(singles)
    validate = partial(
        validate_all, env, testmap, mode=mode, workers=workers, path=val_path, progress=progress, ray=ray
    )
    done = validate(singles, done, phase="validate")
    combos: list[Candidate] = []
    if "combine" in wanted:
        valid = [(c, done[c.id]) for c in singles if done.get(c.id) and done[c.id].status == "valid"]
        limit = max_combos if max_combos is not None else max(5, len(valid) // 5)
        combos = add(combinations(valid, limit, seed, env.repo_dir))
        done = validate(combos, done, phase="combine")
    return report(singles + combos, done)


def report(cands: list[Candidate], done: dict[str, Validation]) -> dict[str, StrategyReport]:
    out: dict[str, StrategyReport] = defaultdict(StrategyReport)
    for c in cands:
        r = out[c.strategy]
        r.candidates += 1
        v = done.get(c.id)
        if v:
            r.statuses[v.status] += 1
            r.seconds += v.seconds
            r.valid += v.status == "valid"
    return dict(sorted(out.items()))


def load_validated(env_dir: Path) -> list[tuple[Candidate, Validation]]:
    """Valid candidates with their validations, in the order they were proposed."""
    cands = [from_dict(Candidate, r) for r in read_jsonl(env_dir / "candidates.jsonl")]
    done = {r["candidate"]: from_dict(Validation, r) for r in read_jsonl(env_dir / "validations.jsonl")}
    return [(c, done[c.id]) for c in cands if c.id in done and done[c.id].status == "valid"]
