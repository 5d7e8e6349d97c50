"""The export's rows file (instances.jsonl) kept right across reruns: rows from another environment image
or other grading tools dropped to be made again (drop_stale), rows of older bugforge versions given the
fields added since (upgrade), and the dataset card that names the file (write_card). Each rewrite is
atomic."""

from __future__ import annotations

import json
from pathlib import Path

from bugforge.records import TaskInstance, from_dict, read_jsonl, to_dict

SPLIT = "test"
"""The split the dataset card declares (SWE-bench's name for its evaluation rows)."""

CARD_MARK = "<!-- written by bugforge factory export -->"


def drop_stale(out: Path, env_image: str, tools: str) -> int:
    """Remove (atomically) the rows of `out` made from another environment image or with other grading
    tools than these, so that export makes them again; returns how many. Rows are otherwise kept."""
    rows = read_jsonl(out)
    keep = [r for r in rows if r.get("env_image", env_image) == env_image and r.get("tools", tools) in (tools, "")]
    if len(keep) < len(rows):
        tmp = out.with_suffix(out.suffix + ".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in keep))
        tmp.replace(out)
    return len(rows) - len(keep)


def upgrade(out: Path) -> None:
    """Rewrite `out` (atomically) when a row lacks a field TaskInstance now fills in (image_name,
    docker_image): each row read as a TaskInstance and written back, fields TaskInstance lacks kept."""
    rows = read_jsonl(out)
    names = TaskInstance.__dataclass_fields__
    if all(set(names) <= set(r) for r in rows):
        return

    def filled(r: dict) -> dict:
        try:
            return (
                to_dict(from_dict(TaskInstance, {k: v for k, v in r.items() if k in names}))
                | r
                | {k: r.get(k) or r["image"] for k in ("image_name", "docker_image")}
            )
        except (TypeError, KeyError):  # not a row bugforge wrote: as it is
            return r

    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text("".join(json.dumps(filled(r)) + "\n" for r in rows))
    tmp.replace(out)


def write_card(out: Path) -> None:
    """A README.md beside `out` whose YAML header names `out` as the data file of split SPLIT (the folder
    also holds other JSONL files: candidates, validations). A README.md bugforge did not write is left
    as it is."""
    card = out.parent / "README.md"
    if card.exists() and CARD_MARK not in card.read_text(errors="replace"):
        return
    card.write_text(
        "---\n"
        "configs:\n"
        "- config_name: default\n"
        "  data_files:\n"
        f"  - split: {SPLIT}\n"
        f"    path: {out.name}\n"
        "---\n"
        f"{CARD_MARK}\n\n"
        f"Task instances (SWE-bench 5.x rows, one image each) exported by bugforge: `{out.name}`, split `{SPLIT}`.\n"
        f'Load with `datasets.load_dataset("<this folder>", split="{SPLIT}")`; run agents on them as\n'
        "bugforge's docs/mini-swe-agent.md shows; score predictions with `bugforge eval` or the SWE-bench harness.\n"
    )
