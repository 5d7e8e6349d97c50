"""`bugforge images prune`: remove the environment and instance images that no run record refers to,
and bugforge's stopped containers. Base images (`bugforge images build`) are never touched."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker.errors

from bugforge.engine import LABEL, client
from bugforge.errors import BugforgeError
from bugforge.records import read_jsonl

# Environment images (factory/environment.py) and instance images (factory/export.py). An untagged one
# (its tag moved to a rebuild) is known by its labels: the base image carries neither.
PREFIXES = ("bugforge/env.", "bugforge/task.")
LABELS = ("bugforge.instance", "bugforge.commit")
Log = Callable[[str], None]


@dataclass
class Pruned:
    removed: int = 0
    skipped: int = 0
    reclaimed: int = 0
    """Bytes; with dry_run, what the listed images and containers hold alone (a lower bound)."""


def referenced(runs: list[str | Path]) -> set[str]:
    """The images the records under `runs` name: env.json's image, a JSONL row's image or env_image, in
    each directory and one level down (runs/NAME/); a path may also be a dataset JSONL itself."""
    for d in runs:
        if not Path(d).exists():
            raise BugforgeError(
                f"run directory {d} does not exist",
                "pass the directories `bugforge factory env --out` wrote to (default: runs)",
            )
    names: set[str] = set()
    for d in map(Path, runs):
        files = (
            [d]
            if d.is_file()
            else [*d.glob("env.json"), *d.glob("*/env.json"), *d.glob("*.jsonl"), *d.glob("*/*.jsonl")]
        )
        for f in files:
            if f.suffix == ".jsonl":
                rows = read_jsonl(f)
            else:
                try:
                    rows = [json.loads(f.read_text())]
                except (json.JSONDecodeError, UnicodeDecodeError):
                    raise BugforgeError(
                        f"record {f} is not valid JSON, so what it refers to is unknown",
                        "repair or remove it, then prune again",
                    ) from None
            names |= {r.get(k) for r in rows if isinstance(r, dict) for k in ("image", "env_image")}
    return {n for n in names if isinstance(n, str)}


def size(n: float) -> str:
    for unit in ("B", "kB", "MB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def prune(runs: list[str | Path], *, dry_run: bool = False, only: list[str] | None = None, log: Log = print) -> Pruned:
    """Remove every environment and instance image no record under `runs` refers to (instance images
    first: an environment image goes once nothing is built on it), and bugforge's stopped containers
    (first: they would hold their images). `only`: just these environments' images and their containers.
    An image a container still uses, or that a kept image is built on, is skipped and said so."""
    keep = referenced(runs)  # before anything is removed: bad input removes nothing
    c = client()
    df = c.df()
    scope = {f"{p}{n}" for p in PREFIXES for n in only or []}

    def tags(img: dict) -> set[str]:
        return {t for t in img.get("RepoTags") or [] if t != "<none>:<none>"}

    def names(img: dict) -> set[str]:  # a pulled image may be named only by digest (images push/pull)
        return tags(img) | set(img.get("RepoDigests") or [])

    def ours(img: dict) -> bool:
        if only:
            return bool(tags(img)) and all(t.rsplit(":", 1)[0] in scope for t in tags(img))
        if tags(img):
            return all(t.startswith(PREFIXES) for t in tags(img))
        return any(k in (img.get("Labels") or {}) for k in LABELS)

    images = sorted((i for i in df["Images"] if ours(i)), key=lambda i: "bugforge.instance" not in (i["Labels"] or {}))
    ids = {i["Id"] for i in images}
    stopped = [
        k
        for k in df["Containers"]
        if LABEL in (k.get("Labels") or {})
        and k["State"] in ("exited", "created")
        and (not only or k["ImageID"] in ids)
    ]
    gone = {k["Id"] for k in stopped}
    users = {k["ImageID"]: k["Names"][0].lstrip("/") for k in df["Containers"] if k["Id"] not in gone}
    stay = {i["Id"] for i in df["Images"] if i["Id"] not in ids or names(i) & keep or i["Id"] in users}
    parent = {i["Id"]: i["ParentId"] for i in c.api.images(all=True)}
    held = set()  # what the images that stay are built on
    for x in stay:
        while (x := parent.get(x)) and x not in held:
            held.add(x)
    verb = "would remove" if dry_run else "removed"
    out = Pruned()
    containers = images_own = 0
    for k in stopped:
        name = f"container {k['Names'][0].lstrip('/')} ({k['Image']}, {k['State']})"
        if not dry_run:
            try:
                c.api.remove_container(k["Id"])
            except docker.errors.APIError as e:
                out.skipped += 1
                log(f"skipped {name}: {e.explanation or e}")
                continue
        out.removed += 1
        containers += k.get("SizeRw") or 0
        log(f"{verb} {name} ({size(k.get('SizeRw') or 0)})")
    for i in images:
        if names(i) & keep:
            continue
        name = f"image {', '.join(sorted(tags(i))) or i['Id'][7:19]}"
        why = (
            f"in use by container {users[i['Id']]}"
            if i["Id"] in users
            else "a kept image is built on it"
            if i["Id"] in held
            else None
        )
        if why is None and not dry_run:
            try:
                for ref in sorted(tags(i)) or [i["Id"]]:
                    c.api.remove_image(ref)
            except docker.errors.APIError as e:
                why = str(e.explanation or e)
        if why:
            out.skipped += 1
            log(f"skipped {name}: {why}")
            continue
        out.removed += 1
        own = i["Size"] - max(i["SharedSize"], 0)  # the layers no other image shares
        images_own += own
        log(f"{verb} {name} ({size(own)})")
    # Layers shared only among the removed images go too: measure what the engine gave back.
    layers = 0 if dry_run else df["LayersSize"] - c.df()["LayersSize"]
    out.reclaimed = containers + max(images_own, layers)
    return out
