"""Train / held-out splits by source function: every instance is keyed by (repo, file, function) of its
bug, and a whole key goes to one side, so no function has instances on both sides (a model cannot pass
the held-out set by remembering a fix it trained on). Deterministic for a seed; written as splits.json."""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bugforge.errors import BugforgeError


@dataclass
class Splits:
    seed: int
    held_out_fraction: float
    train: list[str] = field(default_factory=list)
    """Instance ids."""
    held_out: list[str] = field(default_factory=list)
    functions: dict[str, str] = field(default_factory=dict)
    """Function key -> "train" | "held_out"."""
    sources: list[str] = field(default_factory=list)
    """The datasets split (paths as given)."""
    max_difficulty: float | None = None
    """Only instances whose difficulty estimate was at most this were split (training.curriculum); None: all."""


def function_key(row: dict) -> str:
    """repo:file:function of the bug (its first file; the module when the bug is outside a function)."""
    files = row.get("files") or []
    return f"{row.get('repo', '')}:{files[0] if files else ''}:{row.get('function') or '<module>'}"


def split(rows: list[dict], held_out_fraction: float = 0.4, seed: int = 0, sources=()) -> Splits:
    """Functions shuffled by `seed` within each repo; the first ~fraction of each repo's instances (whole
    functions) are held out, so every repo with two functions or more is on both sides."""
    if not 0 < held_out_fraction < 1:
        raise BugforgeError(f"held-out fraction {held_out_fraction} is not between 0 and 1", "use e.g. 0.4")
    out = Splits(seed, held_out_fraction, sources=[str(s) for s in sources])
    by_repo: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        by_repo.setdefault(r.get("repo", ""), {}).setdefault(function_key(r), []).append(r["instance_id"])
    rng = random.Random(seed)
    for repo in sorted(by_repo):
        keys = sorted(by_repo[repo])
        rng.shuffle(keys)
        total, held, trained = sum(len(v) for v in by_repo[repo].values()), 0, False
        for i, k in enumerate(keys):
            last_chance = i == len(keys) - 1 and not trained
            side = "held_out" if held < held_out_fraction * total and not last_chance else "train"
            trained |= side == "train"
            out.functions[k] = side
            ids = by_repo[repo][k]
            (out.held_out if side == "held_out" else out.train).extend(ids)
            held += len(ids) if side == "held_out" else 0
    return out


def write_splits(rows: list[dict], splits: Splits, out_dir: Path) -> dict[str, Path]:
    """splits.json, train.jsonl and held_out.jsonl in out_dir (the rows as given)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "splits.json").write_text(json.dumps(asdict(splits), indent=1) + "\n")
    by_id = {r["instance_id"]: r for r in rows}
    paths = {}
    for side in ("train", "held_out"):
        paths[side] = out_dir / f"{side}.jsonl"
        paths[side].write_text("".join(json.dumps(by_id[i]) + "\n" for i in getattr(splits, side)))
    paths["splits"] = out_dir / "splits.json"
    return paths
