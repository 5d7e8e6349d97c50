"""The Docker engine: connect to it, and diagnose it when it is missing (`bugforge doctor`)."""

from __future__ import annotations

import functools
import os
import shutil

import docker
import docker.errors

from bugforge.errors import BugforgeError

SETUP_HINT = "start one with `sudo bash scripts/setup-engine.sh` (installs Debian's docker.io and runs dockerd)"
MIN_FREE_GB = 5.0
LABEL = "bugforge"  # every container bugforge starts carries this label, so orphans can be found


@functools.cache
def client(timeout: int = 300) -> docker.DockerClient:
    """A client for the local engine; raises BugforgeError with a fix when no engine answers."""
    try:
        c = docker.from_env(version="auto", timeout=timeout)
        c.ping()
        return c
    except docker.errors.DockerException as e:
        raise BugforgeError(f"no Docker engine answers ({_short(e)})", SETUP_HINT) from None


def _short(e: Exception) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text[:160]


def free_gb(c: docker.DockerClient | None = None) -> float:
    """Free disk, in GB, where the engine stores images."""
    root = (c or client()).info().get("DockerRootDir", "/var/lib/docker")
    try:
        return shutil.disk_usage(root).free / 1e9
    except OSError:
        return shutil.disk_usage("/").free / 1e9


def require_disk(need_gb: float, what: str) -> None:
    """Refuse to start a build that cannot finish for lack of disk. BUGFORGE_DISK_RESERVE_GB adds a
    reserve that must stay free on top of what the build needs."""
    need_gb += float(os.environ.get("BUGFORGE_DISK_RESERVE_GB", "0") or 0)
    have = free_gb()
    if have < need_gb:
        raise BugforgeError(
            f"only {have:.1f} GB free for Docker images, {what} needs about {need_gb:.1f} GB",
            "free disk space (e.g. `docker system prune`) and try again",
        )
