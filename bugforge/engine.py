"""The Docker engine: connect to it, diagnose it when it is missing (`bugforge doctor`), and own containers.

Ownership (docs/sandbox.md, "Who removes a container"): every long-lived container bugforge starts
carries `owner_labels()`: the host, the process id and that process's start time. `remove_orphans()`
is the one clean-up routine every component calls (sandbox runtime and service, workbench): it removes
a bugforge container only when its owner is provably gone (same host, and no such process, or a
process of that id that started at another time). A container of a live process, of another host, or
without owner labels is never touched, so starting or stopping one bugforge process never removes
another live process's containers.

Which engine: `select(name)` (or BUGFORGE_ENGINE; default "docker") names it for the whole process, one of
ENGINES; "podman" is Podman's Docker-compatible API, with the explicit code where it is not compatible in
bugforge.podman. Everything that talks to an engine goes through `client()`."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import socket

import docker
import docker.errors

from bugforge.errors import BugforgeError

ENGINES = ("docker", "podman")
SETUP_HINT = "start one with `sudo bash scripts/setup-engine.sh` (installs Debian's docker.io and runs dockerd)"
MIN_FREE_GB = 5.0
LABEL = "bugforge"  # every container bugforge starts carries this label, so orphans can be found
OWNER_HOST, OWNER_PID, OWNER_START = "bugforge.host", "bugforge.pid", "bugforge.pid-start"
HOST = socket.gethostname()
log = logging.getLogger("bugforge.engine")


_selected: list[str] = []  # select()'s choice; empty: BUGFORGE_ENGINE, else docker


def select(name: str | None) -> None:
    """Make `name` (one of ENGINES) the engine `client()` returns, for the whole process; None: the default
    again (BUGFORGE_ENGINE, else docker)."""
    if name is not None and name not in ENGINES:
        raise BugforgeError(f"unknown container engine {name!r}", f"use one of {', '.join(ENGINES)}")
    _selected[:] = [name] if name else []


@contextlib.contextmanager
def using(name: str):
    """select(name) for the block (which gets its client()), then the previous choice again."""
    saved = list(_selected)
    select(name)
    try:
        yield client()
    finally:
        _selected[:] = saved


def selected() -> str:
    """The engine client() connects to: select()'s choice, else BUGFORGE_ENGINE, else "docker"."""
    name = _selected[0] if _selected else os.environ.get("BUGFORGE_ENGINE") or "docker"
    if name not in ENGINES:
        raise BugforgeError(f"BUGFORGE_ENGINE={name!r} is no engine", f"use one of {', '.join(ENGINES)}")
    return name


def client(timeout: int = 300) -> docker.DockerClient:
    """A client for the selected engine (selected()); raises BugforgeError with a fix when none answers."""
    return _client(selected(), timeout)


@functools.cache
def _client(name: str, timeout: int) -> docker.DockerClient:
    if name == "podman":
        from bugforge import podman

        return podman.connect(timeout)
    try:
        c = docker.from_env(version="auto", timeout=timeout)
        c.ping()
        return c
    except docker.errors.DockerException as e:
        raise BugforgeError(f"no Docker engine answers ({error_line(e)})", SETUP_HINT) from None


def error_line(e: Exception) -> str:
    """An exception's first line, short enough for a one-line message. For an engine API error, its status
    and the engine's own explanation: str() of one starts with the request's URL (a container's 64-digit id
    in it), which used to fill the line and cut the reason off ("400 Client Error for http+docker://...")."""
    text = str(e)
    if isinstance(e, docker.errors.APIError) and e.explanation:
        why = e.explanation.decode(errors="replace") if isinstance(e.explanation, bytes) else str(e.explanation)
        head = " ".join(str(x) for x in (e.status_code, getattr(e.response, "reason", None)) if x)
        text = f"{head}: {why}" if head else why
    text = text.strip().splitlines()[0] if text.strip() else type(e).__name__
    return text[:300]


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


def process_start(pid: int) -> str:
    """When process `pid` started (clock ticks after boot, /proc/PID/stat field 22); "" when there is no
    such process (or no /proc to ask)."""
    try:
        stat = open(f"/proc/{pid}/stat", "rb").read().decode(errors="replace")
    except OSError:
        return ""
    fields = stat.rsplit(")", 1)[-1].split()  # the command name, in parentheses, may hold spaces
    return fields[19] if len(fields) > 19 else ""


def owner_labels() -> dict[str, str]:
    """The labels that name this process as a container's owner (host, pid, the pid's start time)."""
    pid = os.getpid()
    return {OWNER_HOST: HOST, OWNER_PID: str(pid), OWNER_START: process_start(pid)}


def owner_gone(labels: dict[str, str]) -> bool:
    """Whether the process that owns a container with these labels is provably gone: it was on this host,
    and its pid is not running, or runs a process that started at another time (the pid was reused).
    False when the labels name no owner or another host: such a container is not ours to judge."""
    if labels.get(OWNER_HOST) != HOST:
        return False
    try:
        pid = int(labels.get(OWNER_PID) or 0)
    except ValueError:
        return False
    if pid <= 0:
        return False
    started = process_start(pid)
    if not started:
        return os.path.isdir("/proc")  # no such process (without /proc nothing is provable)
    return bool(labels.get(OWNER_START)) and labels[OWNER_START] != started


def remove_orphans(kind: str | None = None) -> int:
    """Remove the bugforge containers (of label value `kind`, or any) whose owner is gone (owner_gone);
    returns how many. Never touches a live process's containers. A container another process removes
    first is skipped; any other engine error is logged, and the rest are still tried."""
    label = f"{LABEL}={kind}" if kind else LABEL
    n = 0
    for c in client().containers.list(
        all=True, filters={"label": [label, f"{OWNER_HOST}={HOST}"]}, ignore_removed=True
    ):
        if owner_gone(c.labels):
            n += remove_container(c)
    return n


def remove_container(c) -> bool:
    """Force-remove container `c`; False when it was already gone or being removed (another process's
    clean-up got there first). Any other engine error is logged, not raised: clean-up goes on."""
    try:
        c.remove(force=True)
        return True
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as e:
        if e.status_code != 409:  # 409: a removal already under way
            log.warning("cannot remove container %s: %s", c.short_id, error_line(e))
        return False
