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
    images = sorted(
        (i for i in df["Images"] if _ours(i, only, scope)), key=lambda i: "bugforge.instance" not in (i["Labels"] or {})
    )
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
    stay = {i["Id"] for i in df["Images"] if i["Id"] not in ids or _names(i) & keep or i["Id"] in users}
    held = _built_on(c, stay)
    out = Pruned()
    run = _Removal(c, dry_run, out, log)
    containers = sum(run.container(k) for k in stopped)
    images_own = sum(run.image(i, users, held) for i in images if not _names(i) & keep)
    # Layers shared only among the removed images go too: measure what the engine gave back.
    layers = 0 if dry_run else df["LayersSize"] - c.df()["LayersSize"]
    out.reclaimed = containers + max(images_own, layers)
    return out


def _tags(img: dict) -> set[str]:
    return {t for t in img.get("RepoTags") or [] if t != "<none>:<none>"}


def _names(img: dict) -> set[str]:  # a pulled image may be named only by digest (images push/pull)
    return _tags(img) | set(img.get("RepoDigests") or [])


def _ours(img: dict, only: list[str] | None, scope: set[str]) -> bool:
    """Whether prune may consider `img`: bugforge's by name (or, untagged, by label); with `only`, one of
    those environments' images."""
    if only:
        return bool(_tags(img)) and all(t.rsplit(":", 1)[0] in scope for t in _tags(img))
    if _tags(img):
        return all(t.startswith(PREFIXES) for t in _tags(img))
    return any(k in (img.get("Labels") or {}) for k in LABELS)


def _built_on(c, stay: set[str]) -> set[str]:
    """Every image the images in `stay` are built on (their parents, recursively)."""
    parent = {i["Id"]: i["ParentId"] for i in c.api.images(all=True)}
    held = set()
    for x in stay:
        while (x := parent.get(x)) and x not in held:
            held.add(x)
    return held


class _Removal:
    """Removes (or, dry, says it would remove) one container or image at a time, counting in `out`."""

    def __init__(self, c, dry_run: bool, out: Pruned, log: Log):
        self.c, self.dry_run, self.out, self.log = c, dry_run, out, log
        self.verb = "would remove" if dry_run else "removed"

    def container(self, k: dict) -> int:
        """Remove stopped container `k`; the bytes it frees (0 when skipped)."""
        name = f"container {k['Names'][0].lstrip('/')} ({k['Image']}, {k['State']})"
        if not self.dry_run:
            try:
                self.c.api.remove_container(k["Id"])
            except docker.errors.APIError as e:
                self.out.skipped += 1
                self.log(f"skipped {name}: {e.explanation or e}")
                return 0
        self.out.removed += 1
        self.log(f"{self.verb} {name} ({size(k.get('SizeRw') or 0)})")
        return k.get("SizeRw") or 0

    def image(self, i: dict, users: dict[str, str], held: set[str]) -> int:
        """Remove image `i` unless a container uses it or a kept image is built on it; the bytes of the
        layers no other image shares (0 when skipped)."""
        name = f"image {', '.join(sorted(_tags(i))) or i['Id'][7:19]}"
        why = None
        if i["Id"] in users:
            why = f"in use by container {users[i['Id']]}"
        elif i["Id"] in held:
            why = "a kept image is built on it"
        elif not self.dry_run:
            try:
                for ref in sorted(_tags(i)) or [i["Id"]]:
                    self.c.api.remove_image(ref)
            except docker.errors.APIError as e:
                why = str(e.explanation or e)
        if why:
            self.out.skipped += 1
            self.log(f"skipped {name}: {why}")
            return 0
        self.out.removed += 1
        own = i["Size"] - max(i["SharedSize"], 0)  # the layers no other image shares
        self.log(f"{self.verb} {name} ({size(own)})")
        return own
