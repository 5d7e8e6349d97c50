"""Root file systems of a dataset's environment images, for sessions without a container engine (the
`process` backend, bugforge.sandbox.process; docs/sandbox.md, "The process backend").

`export_rootfs(dataset, out)` runs where an engine is (`bugforge images rootfs runs/NAME`): for each
environment image the dataset's rows name (`env_image`), once, it exports the image's file system
(`docker create` + `export`, never started) into `out/<key>/`, a plain directory tree, and records the
image's configuration (Env, WorkingDir, User) in `out/<key>.json`, written last: that marker is what
makes an image complete, so a rerun skips it and an interrupted export (a `<key>.partial/` folder) is
redone. Then `out/manifest.json` lists the images and `out/instances.jsonl` holds the dataset's rows,
so the folder alone (no engine, no dataset beside it) is what a session needs on another machine.

What the trees are, for a user who copies them around: device nodes are left out (a session gets its own
/dev), setuid/setgid bits are cleared (an image's setuid-root programs must not become the host's), and
the mount points a session binds over are created (MOUNTPOINTS)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import docker.errors

from bugforge.engine import LABEL, client, error_line, owner_labels
from bugforge.errors import BugforgeError
from bugforge.images.registry import dataset_path, load_rows

FORMAT = 1
"""Version of the folder's layout; a session refuses a manifest of another one."""
MANIFEST = "manifest.json"
ROWS = "instances.jsonl"
MOUNTPOINTS = ("opt/bugforge", "testbed", "tmp")
"""Directories a session binds over (tools, workspace, /tmp): they must exist in the read-only tree."""


@dataclass
class RootfsResult:
    out: Path
    """The folder: one tree per image, markers, manifest.json, instances.jsonl."""
    exported: list[str] = field(default_factory=list)
    """Images exported by this call."""
    skipped: list[str] = field(default_factory=list)
    """Images a previous call exported completely (same image id)."""


def image_key(name: str) -> str:
    """The folder name of image `name`'s tree: its name with every character a path cannot hold
    comfortably replaced (bugforge/env.calc:0a1b-2c3d -> bugforge_env.calc_0a1b-2c3d)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_.") or "image"


def env_images(rows: list[dict], where: Path) -> list[str]:
    """The environment images of `rows` (`env_image`), each once, in order; an error when none has one."""
    names = list(dict.fromkeys(r["env_image"] for r in rows if r.get("env_image")))
    if not names:
        raise BugforgeError(
            f"no row of {where} names an environment image (env_image)",
            "pass a dataset exported by `bugforge factory export`",
        )
    return names


def export_rootfs(
    dataset: str | Path, out: str | Path | None = None, *, log: Callable[[str], None] = print
) -> RootfsResult:
    """Export the environment images of `dataset` (a run folder or a dataset JSONL) into `out` (default:
    a `rootfs` folder beside the dataset), resumably (module docstring). Needs the images in the local
    engine; an image already exported completely is skipped without asking the engine for it."""
    path = dataset_path(dataset)
    rows = load_rows(path)
    names = env_images(rows, path)
    out = Path(out) if out else path.parent / "rootfs"
    if out.exists() and not out.is_dir():
        raise BugforgeError(f"{out} exists and is not a folder", "pass --out DIR, a folder")
    out.mkdir(parents=True, exist_ok=True)
    res = RootfsResult(out)
    for i, name in enumerate(names, 1):
        key = image_key(name)
        if (out / f"{key}.json").is_file() and (out / key).is_dir():
            res.skipped.append(name)
            log(f"[{i}/{len(names)}] {name}: already exported ({out / key})")
            continue
        log(f"[{i}/{len(names)}] {name}: exporting to {out / key}")
        _export_one(name, out, key)
        res.exported.append(name)
        _write_manifest(out, names)
    _write_manifest(out, names)
    _write_json(out / ROWS, None, rows)
    return res


def _export_one(name: str, out: Path, key: str) -> None:
    """One image's tree into out/key (through out/key.partial), then its marker out/key.json."""
    try:
        image = client().images.get(name)
    except docker.errors.ImageNotFound:
        raise BugforgeError(
            f"environment image {name} is not in the local engine",
            "build it (`bugforge factory env`) or `bugforge images pull` the dataset first",
        ) from None
    partial = out / f"{key}.partial"
    if partial.exists():
        shutil.rmtree(partial)  # an interrupted export: redone from the start
    partial.mkdir()
    c = client().containers.create(image.id, ["true"], labels={LABEL: "rootfs", **owner_labels()}, network_mode="none")
    try:
        _untar(c.export(), partial)
    finally:
        c.remove(force=True)
    _sanitize(partial)
    if (out / key).exists():
        shutil.rmtree(out / key)
    partial.rename(out / key)
    cfg = image.attrs.get("Config") or {}
    marker = {
        "format": FORMAT,
        "image": name,
        "id": image.id,
        "dir": key,
        "env": list(cfg.get("Env") or []),
        "workdir": cfg.get("WorkingDir") or "/",
        "user": cfg.get("User") or "",
    }
    _write_json(out / f"{key}.json", marker)


def _untar(chunks, dest: Path) -> None:
    """Stream a `docker export` tar into `dest` with the system's tar (no device nodes)."""
    p = subprocess.Popen(
        ["tar", "-x", "-C", str(dest), "--numeric-owner", "--exclude=dev/*"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        for chunk in chunks:
            p.stdin.write(chunk)
        p.stdin.close()
    except (BrokenPipeError, docker.errors.DockerException) as e:
        p.kill()
        raise BugforgeError(f"exporting into {dest} failed: {error_line(e)}") from None
    finally:
        err = p.stderr.read().decode(errors="replace").strip()
        p.wait()
    if p.returncode != 0:
        raise BugforgeError(f"tar could not unpack the image into {dest}: {err.splitlines()[-1:] or p.returncode}")


def _sanitize(root: Path) -> None:
    """Clear setuid/setgid bits and create the session's mount points."""
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            st = os.lstat(p)
            if st.st_mode & 0o6000 and not os.path.islink(p):
                os.chmod(p, st.st_mode & 0o1777)
    for m in MOUNTPOINTS:
        d = root / m
        if d.is_symlink():
            raise BugforgeError(f"/{m} is a symbolic link in the image", "a session binds a folder there")
        d.mkdir(parents=True, exist_ok=True)


def _write_manifest(out: Path, names: list[str]) -> None:
    images = {}
    for name in names:
        marker = out / f"{image_key(name)}.json"
        if marker.is_file():
            images[name] = json.loads(marker.read_text())
    _write_json(out / MANIFEST, {"format": FORMAT, "images": images})


def _write_json(path: Path, data, rows: list[dict] | None = None) -> None:
    """Write atomically (a rename), as one JSON document or, with `rows`, as JSONL."""
    tmp = path.with_name(path.name + ".tmp")
    text = "".join(json.dumps(r) + "\n" for r in rows) if rows is not None else json.dumps(data, indent=1) + "\n"
    tmp.write_text(text)
    tmp.replace(path)


def read_manifest(folder: str | Path) -> dict:
    """The manifest of a rootfs folder: {"format", "images": {name: marker}}; a BugforgeError naming the
    fix when the folder is not one (of this format)."""
    folder = Path(folder)
    fix = "make it with `bugforge images rootfs runs/NAME --out DIR` where a Docker engine is"
    try:
        data = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        raise BugforgeError(f"{folder} is not a rootfs folder (no {MANIFEST})", fix) from None
    except (OSError, ValueError) as e:
        raise BugforgeError(f"cannot read {folder / MANIFEST}: {error_line(e)}", fix) from None
    if data.get("format") != FORMAT:
        raise BugforgeError(f"{folder} has rootfs format {data.get('format')}, this bugforge reads {FORMAT}", fix)
    return data
