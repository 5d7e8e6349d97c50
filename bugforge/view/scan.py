"""What is under a runs directory, told apart by name and by the first record of each file (never by
reading whole files): environments (env.json with candidates/validations beside it), datasets
(JSONL of task instances: `factory export`'s instances.jsonl, subsets), trajectories and predictions
(`run-agent`), evaluation run reports (`bugforge eval`'s MODEL.RUN.json) and training runs
(metrics.jsonl). Paths are kept relative to the runs directory; `resolve` maps one back and refuses
any that leads outside it. A scan is cached for a few seconds."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bugforge.view.jsonl import first_record

SKIP = {".git", "logs", "final", "__pycache__", "node_modules", "repo", "history"}
"""Folders never descended into (evaluation logs are read by path, checkpoints and clones never)."""
DEPTH = 4


@dataclass
class Runs:
    root: Path
    envs: list[str] = field(default_factory=list)
    """Folders (relative) holding an env.json."""
    datasets: list[str] = field(default_factory=list)
    trajectories: list[str] = field(default_factory=list)
    predictions: list[str] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)
    training: list[str] = field(default_factory=list)
    """metrics.jsonl files."""
    unreadable: list[str] = field(default_factory=list)
    """Files that look like one of these kinds by name but whose first record could not be read."""


def kind_of(path: Path) -> str | None:
    """dataset | trajectories | predictions | report | training | None, from the name and first record."""
    name = path.name
    if name == "metrics.jsonl":
        return "training"
    if name.endswith(".jsonl"):
        return _jsonl_kind(path)
    if name.endswith(".json") and name.count(".") >= 2 and name not in ("env.json", "recipe.json"):
        return _report_kind(path)
    return None


def _jsonl_kind(path: Path) -> str | None:
    """The kind of a JSONL file, from its first record."""
    first = first_record(path)
    if first is None:
        return "unreadable" if path.name.startswith(("instances", "trajectories", "predictions")) else None
    if "instance_id" not in first:
        return None
    if "problem_statement" in first:
        return "dataset"
    if "turns" in first or "steps" in first or "exit_reason" in first:
        return "trajectories"
    return "predictions" if "model_patch" in first else None


def _report_kind(path: Path) -> str | None:
    """ "report" when a JSON file is (or, half-written, starts like) an evaluation report."""
    try:
        if path.stat().st_size > 64 << 20:
            return None
        text = path.read_bytes()
    except OSError:
        return None
    try:
        data = json.loads(text)
    except ValueError:  # half-written or damaged: a report if it starts like one (its page says what is wrong)
        return "report" if b'"total_instances"' in text[:4096] or b'"resolved_ids"' in text[:4096] else None
    if isinstance(data, dict) and "resolved_ids" in data and "submitted_ids" in data:
        return "report"
    return None


def scan(root: Path) -> Runs:
    runs = Runs(Path(root))
    buckets = {
        "dataset": runs.datasets,
        "trajectories": runs.trajectories,
        "predictions": runs.predictions,
        "report": runs.reports,
        "training": runs.training,
        "unreadable": runs.unreadable,
    }

    def walk(d: Path, depth: int) -> None:
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            p = Path(e.path)
            if e.is_dir(follow_symlinks=False):
                if depth < DEPTH and e.name not in SKIP and not e.name.startswith(("checkpoint-", ".")):
                    walk(p, depth + 1)
            elif e.is_file():
                rel = str(p.relative_to(runs.root))
                if e.name == "env.json":
                    runs.envs.append(str(p.parent.relative_to(runs.root)))
                    continue
                kind = kind_of(p)
                if kind:
                    buckets[kind].append(rel)

    walk(runs.root, 0)
    return runs


_CACHE: dict[str, tuple[float, Runs]] = {}
_LOCK = threading.Lock()
TTL = 3.0


def cached_scan(root: Path) -> Runs:
    key = str(Path(root).resolve())
    with _LOCK:
        hit = _CACHE.get(key)
        if hit and time.monotonic() - hit[0] < TTL:
            return hit[1]
        runs = scan(Path(key))
        _CACHE[key] = (time.monotonic(), runs)
        return runs


def resolve(root: Path, rel: str) -> Path:
    """`rel` under `root`; ValueError if it leads outside it or does not exist."""
    base = Path(root).resolve()
    p = (base / rel).resolve()
    if p != base and base not in p.parents:
        raise ValueError(f"{rel!r} is outside the runs directory")
    if not p.exists():
        raise ValueError(f"{rel!r} does not exist under {base}")
    return p
