"""Task images through a registry (docs/scale.md, "Images through a registry").

`push(run_dir, registry)` pushes an export's environment image(s) and instance images to
`HOST[:PORT]/NS` (the engine sends a layer the registry already holds only once: the base and
environment layers go with the first image) and writes `instances.pushed.jsonl` beside the export's
`instances.jsonl`: the same rows with `image`/`image_name`/`docker_image` set to the pushed names pinned
by digest (`HOST/NS/task.NAME@sha256:...`) and `env_image_pushed` set to the environment's. The export's
own `instances.jsonl` is never touched (a rerun of `factory export` still finds its local image names);
each push is appended to `pushes.jsonl` as it lands, so a rerun skips what is pushed, and the pushed
dataset is written last, atomically.

`pull(rows)` fetches a dataset's missing images and tags each pulled environment image with its local,
content-keyed name (`env_image`), which warm grading and validation look up; `missing(rows)` names the
images a machine lacks; `ensure(name, refs)` is the one-image form that Ray actors call on their node.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import docker.errors

from bugforge.engine import client, error_line
from bugforge.errors import BugforgeError
from bugforge.images.build import image_exists
from bugforge.records import append_jsonl, load_env, read_jsonl

PUSHED_FILE = "instances.pushed.jsonl"
"""The pushed dataset, beside the export's instances.jsonl."""
LOG_FILE = "pushes.jsonl"
"""One record per image pushed: local name, local image id, registry, pinned reference."""
FIELDS = ("image", "image_name", "docker_image")
"""The fields of a row that name its instance image (SWE-bench, mini-swe-agent, SWE-agent)."""
ENV_REF = "env_image_pushed"
"""The field of a pushed row that names its environment image in the registry (pinned)."""

_HOST = re.compile(r"(localhost|[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*)(:\d{1,5})?")
_PATH = re.compile(r"[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*")


def parse_registry(text: str) -> str:
    """`HOST[:PORT]/NS` (NS: one or more lower-case path components), normalised; a BugforgeError
    naming what is wrong otherwise."""
    t = text.strip().rstrip("/")
    host, _, ns = t.partition("/")
    fix = "pass --registry HOST[:PORT]/NAMESPACE, e.g. --registry 127.0.0.1:5000/bugforge (no scheme)"
    if "://" in t:
        raise BugforgeError(f"registry {text!r} has a scheme", fix)
    if not ns or not _HOST.fullmatch(host) or not _PATH.fullmatch(ns):
        raise BugforgeError(f"registry {text!r} is not HOST[:PORT]/NAMESPACE", fix)
    return f"{host}/{ns}"


def split_name(name: str) -> tuple[str, str]:
    """(repository, tag or "@digest") of an image name; tag "latest" when it has neither."""
    if "@" in name:
        repo, digest = name.split("@", 1)
        return repo, "@" + digest
    repo, sep, tag = name.rpartition(":")
    if sep and "/" not in tag:
        return repo, tag
    return name, "latest"


def is_remote(name: str) -> bool:
    """Whether `name` names a registry (its first component is a host: has a dot or a port, or is
    localhost), so that pulling it means something. bugforge's local names (bugforge/...) do not."""
    first, sep, _ = name.partition("/")
    return bool(sep) and ("." in first or ":" in first or first == "localhost")


def remote_name(local: str, registry: str) -> tuple[str, str]:
    """(repository, tag) of local image `local` in `registry`: its last path component under NS
    (bugforge/task.calc:op_change-1a2b -> HOST/NS/task.calc:op_change-1a2b)."""
    repo, tag = split_name(local)
    return f"{registry}/{repo.rsplit('/', 1)[-1]}", tag.lstrip("@").replace(":", "-")


def dataset_images(rows: Iterable[dict]) -> list[tuple[str, str | None]]:
    """Every image a dataset's rows need, once, in order: (name, where to pull it from or None). The
    instance image (pulled by its own name when that names a registry) and the environment image
    (`env_image`, pulled from `env_image_pushed` when the row has one)."""
    seen: dict[str, str | None] = {}
    for r in rows:
        img = r.get("image")
        if img and img not in seen:
            seen[img] = img if is_remote(img) else None
        env = r.get("env_image")
        if env and (env not in seen or (seen[env] is None and r.get(ENV_REF))):
            seen[env] = r.get(ENV_REF) or (env if is_remote(env) else None)
    return list(seen.items())


# --- push ----------------------------------------------------------------------------------------------


@dataclass
class PushResult:
    out: Path
    """The pushed dataset (instances.pushed.jsonl), or the push log when the run has no instances yet."""
    pushed: list[str] = field(default_factory=list)
    """Local names pushed by this call."""
    skipped: list[str] = field(default_factory=list)
    """Local names a previous call pushed (same image id)."""
    layers_sent: int = 0
    layers_reused: int = 0
    """Layers the registry already held (sent once, by an earlier image or push)."""


def push(run_dir: Path, registry: str, *, log: Callable[[str], None] = lambda m: None) -> PushResult:
    """Push the images of the export in `run_dir` (env.json's environment, instances.jsonl's rows) to
    `registry` and write the pushed dataset (module docstring). Resumable: what pushes.jsonl holds for
    this registry and the same image id is not pushed again."""
    run_dir, registry = Path(run_dir), parse_registry(registry)
    rows = read_jsonl(run_dir / "instances.jsonl")
    envs = [load_env(run_dir / "env.json").image] if (run_dir / "env.json").is_file() else []
    if not rows and not envs:
        raise BugforgeError(
            f"{run_dir} has neither env.json nor instances.jsonl", "pass a run folder (runs/NAME) of `bugforge factory`"
        )
    if any(is_remote(r.get("image", "")) for r in rows):
        raise BugforgeError(f"{run_dir}/instances.jsonl already names registry images", "push the run that built them")
    names = list(
        dict.fromkeys([*envs, *(r["env_image"] for r in rows if r.get("env_image")), *(r["image"] for r in rows)])
    )
    done = {d["local"]: d for d in read_jsonl(run_dir / LOG_FILE) if d.get("registry") == registry}
    res = PushResult(run_dir / PUSHED_FILE if rows else run_dir / LOG_FILE)
    refs: dict[str, str] = {}
    for i, name in enumerate(names, 1):
        try:
            image = client().images.get(name)
        except docker.errors.ImageNotFound:
            if name in done:  # pushed, then removed here: the registry still has it
                refs[name] = done[name]["ref"]
                res.skipped.append(name)
                continue
            raise BugforgeError(
                f"image {name} of {run_dir} is not on this machine",
                f"rebuild it (`bugforge factory export {run_dir}` rebuilds missing instance images), then push again",
            ) from None
        if name in done and done[name]["id"] == image.id:
            refs[name] = done[name]["ref"]
            res.skipped.append(name)
            continue
        repo, tag = remote_name(name, registry)
        log(f"push {i}/{len(names)}: {name} -> {repo}:{tag}")
        image.tag(repo, tag)
        digest, sent, reused = _push(repo, tag, name)
        refs[name] = f"{repo}@{digest}"
        res.layers_sent, res.layers_reused = res.layers_sent + sent, res.layers_reused + reused
        append_jsonl(run_dir / LOG_FILE, {"local": name, "id": image.id, "registry": registry, "ref": refs[name]})
        res.pushed.append(name)
    if rows:
        pushed = [
            r | {k: refs[r["image"]] for k in FIELDS} | ({ENV_REF: refs[r["env_image"]]} if r.get("env_image") else {})
            for r in rows
        ]
        write_rows(res.out, pushed)
    return res


def _push(repo: str, tag: str, local: str) -> tuple[str, int, int]:
    """Push repo:tag; (its digest, layers sent, layers the registry already had)."""
    digest, layers = "", {}
    try:
        for msg in client().api.push(repo, tag=tag, stream=True, decode=True):
            if "error" in msg or "errorDetail" in msg:
                err = msg.get("error") or msg["errorDetail"].get("message", "")
                raise BugforgeError(f"push of {local} to {repo} failed: {err[:200]}", _registry_hint(repo))
            status, lid = msg.get("status", ""), msg.get("id")
            if lid and (status in ("Pushed", "Layer already exists") or status.startswith("Mounted from")):
                layers[lid] = status == "Pushed"
            digest = (msg.get("aux") or {}).get("Digest") or digest
    except docker.errors.APIError as e:
        raise BugforgeError(f"push of {local} to {repo} failed: {error_line(e)}", _registry_hint(repo)) from None
    if not digest:
        raise BugforgeError(f"push of {local} to {repo} reported no digest", _registry_hint(repo))
    return digest, sum(layers.values()), len(layers) - sum(layers.values())


def _registry_hint(repo: str) -> str:
    host = repo.split("/", 1)[0]
    return (
        f"check that a registry answers at {host} (`curl http://{host}/v2/`), that you are logged in "
        f"(`docker login {host}`) if it needs it, and for plain HTTP that the engine lists {host} under "
        "insecure-registries (127.0.0.0/8 is by default)"
    )


def write_rows(path: Path, rows: Sequence[dict]) -> None:
    """Write `rows` to `path` atomically: a reader sees the old file or the new one, never a part."""
    import json

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# --- pull and check -----------------------------------------------------------------------------------


def missing(rows: Iterable[dict]) -> list[str]:
    """The images of a dataset this machine's engine lacks, in order."""
    return [name for name, _ in dataset_images(rows) if not image_exists(name)]


def pull(rows: Iterable[dict], *, log: Callable[[str], None] = lambda m: None) -> tuple[int, int]:
    """Pull every image of a dataset the engine lacks; (pulled, already present). An image that names no
    registry and has no pushed reference cannot be pulled: one BugforgeError naming how many, after the
    others are pulled."""
    todo = [(n, ref) for n, ref in dataset_images(rows) if not image_exists(n)]
    have = len(dataset_images(rows)) - len(todo)
    local_only = [n for n, ref in todo if ref is None]
    for i, (name, ref) in enumerate([t for t in todo if t[1]], 1):
        log(f"pull {i}/{len(todo) - len(local_only)}: {ref}")
        fetch(name, ref)
    if local_only:
        more = f" (+{len(local_only) - 1} more)" if len(local_only) > 1 else ""
        raise BugforgeError(
            f"image {local_only[0]}{more} is in no registry",
            "push the run from the machine that built it (`bugforge images push --registry HOST/NS runs/NAME`) "
            "and use its instances.pushed.jsonl",
        )
    return len(todo), have


def fetch(name: str, ref: str) -> None:
    """Pull `ref` and, when `name` is another name (a local environment name), tag the image `name`."""
    try:
        img = client().images.pull(ref)
    except docker.errors.APIError as e:
        raise BugforgeError(f"cannot pull {ref}: {error_line(e)}", _registry_hint(ref)) from None
    if name != ref:
        img.tag(*split_name(name))


def ensure(name: str, refs: Sequence[str] = (), *, where: str = "this machine") -> bool:
    """Make image `name` present: nothing when it is; else pull it (by its own name when that names a
    registry, else from the first of `refs`, tagged `name`). True when it pulled. A BugforgeError when it
    is missing and there is nowhere to pull it from, or the pull fails."""
    if image_exists(name):
        return False
    sources = [name] if is_remote(name) else list(refs)
    if not sources:
        raise BugforgeError(
            f"image {name} is not on {where}",
            "build the environment there from its recipe.json, or push it (`bugforge images push`) and pull "
            "it there (docs/scale.md)",
        )
    fetch(name, sources[0])
    return True


def local_refs(name: str) -> list[str]:
    """The registry references (repo@digest) this engine knows for local image `name` (a push or pull
    records them); [] when there is none, or no engine."""
    try:
        return list(client().images.get(name).attrs.get("RepoDigests") or [])
    except (docker.errors.DockerException, BugforgeError):  # no such image; no engine answers
        return []


def dataset_path(path: str | Path) -> Path:
    """A dataset given as a JSONL file or as a run folder: the folder's instances.pushed.jsonl when a
    push wrote one (its images can be pulled), else its instances.jsonl."""
    p = Path(path)
    if p.is_dir():
        for name in (PUSHED_FILE, "instances.jsonl"):
            if (p / name).is_file():
                return p / name
        raise BugforgeError(f"{p} holds no {PUSHED_FILE} or instances.jsonl", "pass a dataset JSONL or a run folder")
    if not p.is_file():
        raise BugforgeError(f"dataset {p} does not exist", "pass a dataset JSONL or a run folder (runs/NAME)")
    return p


def load_rows(path: str | Path) -> list[dict]:
    """The rows of the dataset at `path` (dataset_path); a BugforgeError when one names no image."""
    p = dataset_path(path)
    try:
        rows = read_jsonl(p)
    except (OSError, ValueError) as e:
        raise BugforgeError(f"cannot read dataset {p}: {error_line(e)}", "pass a JSONL of task instances") from None
    if not all(isinstance(r, dict) and r.get("image") for r in rows):
        raise BugforgeError(f"dataset {p} has a row without an image", "pass SWE-bench-format rows")
    return rows
