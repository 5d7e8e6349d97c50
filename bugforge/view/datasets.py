"""Datasets and environments as the pages show them: a dataset's rows summarised once per file version
(counts by strategy, difficulty, file and FAIL_TO_PASS size; search and filters over the summaries;
a page of rows), one instance read whole by its offset, and an environment's record with its
validation cost (factory/generate.py's validations.jsonl)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bugforge.records import EnvRecord, TaskInstance, Validation, from_dict, load_env
from bugforge.view.jsonl import JsonlIndex, index

PAGE = 50
F2P_BUCKETS = ("1", "2", "3-5", "6-10", "11+")


def f2p_bucket(n: int) -> str:
    return "0" if n <= 0 else "1" if n == 1 else "2" if n == 2 else "3-5" if n <= 5 else "6-10" if n <= 10 else "11+"


def tests_of(value) -> list[str]:
    """FAIL_TO_PASS / PASS_TO_PASS as a list: SWE-bench rows hold a JSON-encoded list, some a list."""
    if isinstance(value, list):
        return [str(v) for v in value]
    if not value:
        return []
    out = json.loads(value)
    if not isinstance(out, list):
        raise ValueError("FAIL_TO_PASS/PASS_TO_PASS is not a list")
    return [str(v) for v in out]


@dataclass(frozen=True)
class InstanceSummary:
    instance_id: str
    strategy: str
    difficulty: str
    files: tuple[str, ...]
    function: str
    repo: str
    f2p: int
    p2p: int
    text: str
    """Lower-cased search text: id, files, function, problem statement."""


def summarize_instance(d: dict) -> InstanceSummary:
    iid = d["instance_id"]
    if not isinstance(iid, str):
        raise ValueError("instance_id is not a string")
    files = tuple(d.get("files") or ())
    f2p, p2p = tests_of(d.get("FAIL_TO_PASS")), tests_of(d.get("PASS_TO_PASS"))
    text = " ".join([iid, *files, d.get("function") or "", (d.get("problem_statement") or "")[:4000]]).lower()
    return InstanceSummary(
        iid,
        d.get("strategy") or "-",
        d.get("difficulty") or "-",
        files,
        d.get("function") or "",
        d.get("repo") or "-",
        len(f2p),
        len(p2p),
        text,
    )


def dataset_index(path: Path) -> JsonlIndex:
    return index(path, summarize_instance, "dataset")


@dataclass
class Stats:
    rows: int
    by_strategy: list[tuple[str, int]]
    by_difficulty: list[tuple[str, int]]
    by_file: list[tuple[str, int]]
    by_f2p: list[tuple[str, int]]
    ids: dict[str, int] = field(repr=False, default_factory=dict)
    """instance id -> position in the index's rows."""


_STATS: dict[str, tuple[int, Stats]] = {}


def stats(idx: JsonlIndex) -> Stats:
    """Counts and the id lookup of a dataset, computed once per version of its index."""
    key = str(idx.path)
    hit = _STATS.get(key)
    if hit and hit[0] == idx.version:
        return hit[1]
    sums = [r.summary for r in idx.rows]
    files = Counter(f for s in sums for f in s.files)
    f2p = Counter(f2p_bucket(s.f2p) for s in sums)
    order = ["easy", "medium", "hard"]
    diff = Counter(s.difficulty for s in sums)
    st = Stats(
        len(sums),
        Counter(s.strategy for s in sums).most_common(),
        sorted(diff.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else 9, kv[0])),
        files.most_common(15),
        [(b, f2p[b]) for b in ("0", *F2P_BUCKETS) if f2p[b]],
        {s.instance_id: i for i, s in enumerate(sums)},
    )
    _STATS[key] = (idx.version, st)
    return st


@dataclass
class Filters:
    q: str = ""
    strategy: str = ""
    difficulty: str = ""
    file: str = ""
    f2p: str = ""
    page: int = 1

    def active(self) -> bool:
        return any((self.q, self.strategy, self.difficulty, self.file, self.f2p))


def matches(s: InstanceSummary, f: Filters, words: list[str]) -> bool:
    return (
        (not f.strategy or s.strategy == f.strategy)
        and (not f.difficulty or s.difficulty == f.difficulty)
        and (not f.file or f.file in s.files)
        and (not f.f2p or f2p_bucket(s.f2p) == f.f2p)
        and all(w in s.text for w in words)
    )


def select(idx: JsonlIndex, f: Filters, page_size: int = PAGE) -> tuple[list[InstanceSummary], int, int]:
    """(the rows of page `f.page`, how many match, how many pages)."""
    words = f.q.lower().split()
    rows = idx.rows
    if f.active():
        hits = [r.summary for r in rows if matches(r.summary, f, words)]
    else:
        hits = None
    total = len(hits) if hits is not None else len(rows)
    pages = max(1, -(-total // page_size))
    page = min(max(1, f.page), pages)
    lo, hi = (page - 1) * page_size, page * page_size
    shown = hits[lo:hi] if hits is not None else [r.summary for r in rows[lo:hi]]
    return shown, total, pages


def instance(idx: JsonlIndex, iid: str) -> TaskInstance:
    pos = stats(idx).ids.get(iid)
    if pos is None:
        raise KeyError(f"no instance {iid!r} in {idx.path.name}")
    data = idx.read(idx.rows[pos])
    known = TaskInstance.__dataclass_fields__
    return from_dict(TaskInstance, {k: v for k, v in data.items() if k in known})


def summarize_validation(d: dict) -> Validation:
    return from_dict(Validation, {k: v for k, v in d.items() if k != "messages"})


def validations(env_dir: Path) -> JsonlIndex | None:
    p = env_dir / "validations.jsonl"
    return index(p, summarize_validation, "validations") if p.exists() else None


@dataclass
class Cost:
    candidates: int
    by_status: list[tuple[str, int]]
    by_mode: list[tuple[str, int]]
    seconds: float
    tests_run: int

    @property
    def per_candidate(self) -> float:
        return self.seconds / self.candidates if self.candidates else 0.0


def cost(idx: JsonlIndex) -> Cost:
    vals = [r.summary for r in idx.rows]
    return Cost(
        len(vals),
        Counter(v.status for v in vals).most_common(),
        Counter(v.mode or "-" for v in vals).most_common(),
        sum(v.seconds for v in vals),
        sum(v.tests_run for v in vals),
    )


def validation_of(idx: JsonlIndex, iid: str) -> dict | None:
    """The validation record of an exported instance (its id ends in the candidate id's first 8 chars)."""
    short = iid.rsplit(".", 1)[-1]
    for r in idx.rows:
        if r.summary.candidate.startswith(short):
            return idx.read(r)
    return None


def environment(env_dir: Path) -> EnvRecord:
    return load_env(env_dir / "env.json")


def candidates_count(env_dir: Path) -> int | None:
    p = env_dir / "candidates.jsonl"
    return len(index(p, None, "plain").rows) if p.exists() else None
