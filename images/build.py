"""Build images with the Docker engine: a generic `build_image` (streamed log, failing step reported)
and the base image, content-addressed so an unchanged rebuild is skipped."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker.errors

from bugforge.engine import client, require_disk
from bugforge.errors import BugforgeError

HERE = Path(__file__).parent
BASE_DOCKERFILE = HERE / "base.Dockerfile"
BASE_REPO = "bugforge/base"
ROOTFS_REPO = "bugforge/rootfs"
HOST_CA_BUNDLES = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"]
# Offline path: the Debian release fixes the Python version.
DEBIAN_FOR_PYTHON = {"3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie"}

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def image_exists(tag: str) -> bool:
    try:
        client().images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def _context_tar(context: dict[str, bytes | Path]) -> io.BytesIO:
    """The build context as a tar archive (bytes as files, a Path as a whole directory)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in context.items():
            if isinstance(data, Path):
                tar.add(data, arcname=name)
                continue
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


def build_image(
    context: dict[str, bytes | Path],
    tag: str,
    *,
    buildargs: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    log: Log = _quiet,
    log_file: Path | None = None,
    what: str = "image",
) -> str:
    """Build `context` (name -> bytes, or a directory to add whole; must hold a Dockerfile) as `tag`,
    with the host network.

    The tag is set only when the build succeeds. On failure: BugforgeError naming the failing step
    and the last lines of its output; the whole log is kept in `log_file`.
    """
    lines: list[str] = []
    step, error = "", ""
    out = open(log_file, "w") if log_file else None
    try:
        for chunk in client().api.build(
            fileobj=_context_tar(context),
            custom_context=True,
            tag=tag,
            buildargs=buildargs or {},
            labels=labels or {},
            network_mode="host",
            rm=True,
            forcerm=True,
            decode=True,
        ):
            error = chunk["error"].strip() if "error" in chunk else error
            text = error if "error" in chunk else chunk.get("stream") or chunk.get("status") or ""
            for line in text.splitlines():
                if out:
                    out.write(line + "\n")
                if line.startswith("Step "):
                    step = line
                    log(line)
                lines.append(line)
    except docker.errors.APIError as e:
        error = str(e.explanation or e)
    finally:
        if out:
            out.close()
    if error:
        tail = " | ".join(l.strip() for l in lines[-6:] if l.strip())
        where = f" at {step!r}" if step else ""
        hint = f"full log: {log_file}" if log_file else "rerun with a log file to see everything"
        raise BugforgeError(f"building {what} failed{where}: {error[:300]} [last output: {tail[-600:]}]", hint)
    return tag


@dataclass
class BaseImage:
    tag: str
    source: str  # "registry" or "bootstrap"
    built: bool  # False when an existing image was reused


def _ca_bytes(ca_bundle: str | None) -> bytes:
    """The CA bundle to inject: an explicit path, '' for none, None for the host's bundle if any."""
    if ca_bundle == "":
        return b""
    if ca_bundle is not None:
        p = Path(ca_bundle)
        if not p.is_file():
            raise BugforgeError(
                f"CA bundle {ca_bundle} does not exist", "pass an existing PEM file to --ca-bundle, or --no-ca-bundle"
            )
        return p.read_bytes()
    for p in HOST_CA_BUNDLES:
        if os.path.isfile(p):
            return Path(p).read_bytes()
    return b""


def _tag(python: str, source: str, base_ref: str, ca: bytes) -> str:
    h = hashlib.sha256()
    for part in (BASE_DOCKERFILE.read_bytes(), base_ref.encode(), ca):
        h.update(hashlib.sha256(part).digest())
    return f"{BASE_REPO}:py{python}-{source}-{h.hexdigest()[:12]}"


def find_base_image(python: str = "3.11") -> str | None:
    """The newest existing base image for this Python, whichever way it was built."""
    images = client().images.list(name=BASE_REPO)
    tags = sorted(
        (img.attrs.get("Created", ""), t)
        for img in images
        for t in img.tags
        if t.startswith(f"{BASE_REPO}:py{python}-")
    )
    return tags[-1][1] if tags else None


def ensure_base_image(
    python: str = "3.11",
    source: str = "auto",
    from_image: str | None = None,
    ca_bundle: str | None = None,
    log: Log = _quiet,
) -> BaseImage:
    """Build (or reuse) the base image. source: 'registry', 'bootstrap' or 'auto' (registry, then
    bootstrap). `from_image` names the registry image (default python:X-slim)."""
    if source not in ("auto", "registry", "bootstrap"):
        raise BugforgeError(f"unknown base image source {source!r}", "use auto, registry or bootstrap")
    ca = _ca_bytes(ca_bundle)
    registry_ref = from_image or f"python:{python}-slim"
    built = _existing_base(python, source, registry_ref, from_image, ca)
    if built is not None:
        return built
    if source in ("auto", "registry"):
        pulled = _pull(registry_ref)
        if pulled is None and (source == "registry" or from_image is not None):
            raise BugforgeError(
                f"base image {registry_ref!r} cannot be pulled (unknown name, or no registry answers)",
                "check the name, or use --source bootstrap to build offline",
            )
        if pulled:
            log(f"base: pulled {registry_ref} from the registry")
            return _build_base(python, "registry", registry_ref, registry_ref, ca, log)
        log("base: no registry answers; building offline from a debootstrap root file system")
    suite = DEBIAN_FOR_PYTHON.get(python)
    if suite is None:
        raise BugforgeError(
            f"Python {python} cannot be built offline (Debian offers {', '.join(DEBIAN_FOR_PYTHON)})",
            f"use a registry image such as python:{python}-slim",
        )
    rootfs = bootstrap_rootfs(suite, log)
    return _build_base(python, "bootstrap", suite, rootfs, ca, log)


def _existing_base(python: str, source: str, registry_ref: str, from_image: str | None, ca: bytes) -> BaseImage | None:
    """A base image built before from the registry image, else from debootstrap (as `source` allows)."""
    if source in ("auto", "registry"):
        tag = _tag(python, "registry", registry_ref, ca)
        if image_exists(tag):
            return BaseImage(tag, "registry", False)
    suite = DEBIAN_FOR_PYTHON.get(python)
    if source in ("auto", "bootstrap") and from_image is None and suite:
        tag = _tag(python, "bootstrap", suite, ca)
        if image_exists(tag):
            return BaseImage(tag, "bootstrap", False)
    return None


def _pull(ref: str) -> bool | None:
    try:
        client().images.get(ref)
        return True
    except docker.errors.ImageNotFound:
        pass
    try:
        repo, _, tag = ref.partition(":")
        client().images.pull(repo, tag=tag or "latest")
        return True
    except docker.errors.APIError:
        return None


def _build_base(python: str, source: str, base_ref: str, from_ref: str, ca: bytes, log: Log) -> BaseImage:
    tag = _tag(python, source, base_ref, ca)
    require_disk(2.0, "the base image")
    log(f"base: building {tag} from {from_ref}")
    build_image(
        {"Dockerfile": BASE_DOCKERFILE.read_bytes(), "ca-bundle.crt": ca},
        tag,
        buildargs={"BASE": from_ref},
        labels={"bugforge.python": python, "bugforge.source": source},
        log=log,
        what="the base image",
    )
    return BaseImage(tag, source, True)


def bootstrap_rootfs(suite: str = "bookworm", log: Log = _quiet, mirror: str | None = None) -> str:
    """A Debian root file system (debootstrap --variant=minbase) imported as an image; reused if present."""
    tag = f"{ROOTFS_REPO}:{suite}"
    if image_exists(tag):
        return tag
    if shutil.which("debootstrap") is None:
        raise BugforgeError(
            "debootstrap is not installed, so no offline base image can be made",
            "install it (apt-get install debootstrap) or make a registry reachable",
        )
    if os.geteuid() != 0:
        raise BugforgeError("debootstrap needs root", "run `sudo bugforge images bootstrap` once")
    require_disk(1.0, "a Debian root file system")
    with tempfile.TemporaryDirectory(prefix="bugforge-rootfs-") as tmp:
        root = Path(tmp) / "root"
        log(f"base: debootstrap --variant=minbase {suite} (about 30 s)")
        cmd = ["debootstrap", "--variant=minbase", suite, str(root)] + ([mirror] if mirror else [])
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            tail = " | ".join(r.stdout.splitlines()[-3:] + r.stderr.splitlines()[-3:])
            raise BugforgeError(
                f"debootstrap {suite} failed: {tail[-400:]}",
                "check that the Debian mirror is reachable, or pass --mirror",
            )
        tarball = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(tarball), "."], check=True)
        log(f"base: importing the root file system as {tag}")
        client().api.import_image_from_file(str(tarball), repository=ROOTFS_REPO, tag=suite)
    return tag
