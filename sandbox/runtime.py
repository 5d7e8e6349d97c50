"""The in-process sandbox runtime: sessions in containers, a warm pool, and the same interface the HTTP
client (sandbox/client.py) offers, so an agent or trainer switches between them with one argument.

A session is one container from a task-instance image (or any image with the repo at /testbed):
network none, memory/CPU/pids limits, a non-root user where the image has one, labelled so orphans can
be found. Commands go to a persistent shell (sandbox/shell.py); file operations go through a separate
exec as the session's user, confined to the workspace (bugforge/incontainer/files.py). See docs/sandbox.md.

Ownership: every container carries bugforge.engine.owner_labels() (host, pid, the pid's start time) and
this Runtime's own id. `shutdown` removes this Runtime's containers only; `remove_orphans` is
bugforge.engine.remove_orphans: containers whose owning process is gone. Neither touches a container
of another live process or of another Runtime in this one.

Errors: an engine or stream failure inside a session (its container removed under it, the engine gone)
is raised as one BugforgeError line naming the session; an unknown session id raises NoSession (a
KeyError); an image the engine does not have is an error, never a pull."""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field

import docker.errors

from bugforge import engine
from bugforge.engine import LABEL, client
from bugforge.errors import BugforgeError
from bugforge.sandbox.fileops import FileOps
from bugforge.sandbox.sessions import NoSession, SessionTable  # noqa: F401  (NoSession: the service's)
from bugforge.sandbox.shell import RunResult, Shell
from bugforge.stream import StreamClosed
from bugforge.testing.testrun import PACKAGE, tools_archive
from bugforge.testing.testrun import PROBE_DIR as TOOLS

ROLE = "bugforge.role"
OWNER = "bugforge.owner"
RUNTIME = "bugforge.runtime"  # the id of the Runtime that started a container (what its shutdown removes)
log = logging.getLogger("bugforge.sandbox")


@contextlib.contextmanager
def _engine_errors(session_id: str, what: str):
    """Turn an engine or stream failure inside a session into one BugforgeError line."""
    try:
        yield
    except docker.errors.NotFound:
        raise BugforgeError(
            f"session {session_id}: {what} failed: its container is gone (removed outside this session)",
            "create a new session",
        ) from None
    except (docker.errors.DockerException, StreamClosed, OSError) as e:
        raise BugforgeError(
            f"session {session_id}: {what} failed: {engine.error_line(e)}", "create a new session"
        ) from None


DIFF_EXCLUDES = ["*.pyc", "__pycache__", ".pytest_cache", "*.egg-info", ".coverage"]


def diff_script(workdir: str, base_commit: str) -> str:
    """The bash script that prints the patch of `workdir` against `base_commit` (new files included,
    DIFF_EXCLUDES left out) without touching the repository's own index. Every backend's diff()."""
    excl = (
        " ".join(f"':(exclude){p}'" for p in DIFF_EXCLUDES)
        + " "
        + " ".join(f"':(exclude)**/{p}'" for p in DIFF_EXCLUDES)
    )
    return (
        f"cd {workdir} && export GIT_INDEX_FILE=$(mktemp) && git read-tree {base_commit} && "
        f"git add -A -- . {excl} && git diff --cached --binary {base_commit}; rc=$?; "
        "rm -f $GIT_INDEX_FILE; exit $rc"
    )


@dataclass
class SandboxConfig:
    """Limits and defaults for every session of a runtime."""

    mem_limit: str = "2g"
    """Memory (and memory+swap) limit per container."""
    cpus: float = 1.0
    """CPUs per container."""
    pids_limit: int = 256
    """Processes per container (stops fork bombs)."""
    output_cap: int = 100_000
    """Bytes of a command's output returned; the rest is cut (and the result says so)."""
    command_timeout: float = 60.0
    """Default seconds a command may run before it is interrupted."""
    user: str = "agent"
    """User the agent acts as, when the image has it (bugforge's images do); root otherwise."""
    workdir: str = "/testbed"
    pool_size: int = 0
    """Containers kept started per image, ahead of demand."""
    pool_idle_s: float = 600.0
    """A pooled container unused this long is removed."""
    cpu_time_s: int = 3600
    """CPU seconds any one process may use (process backend only: RLIMIT_CPU; 0: no limit). Docker
    sessions limit the CPU rate (`cpus`) instead."""
    owner: str = "sandbox"
    """A free label value (bugforge.owner) to find a runtime's containers by; clean-up does not use it
    (ownership is the process: bugforge.engine.owner_labels)."""


@dataclass
class Session(FileOps):
    id: str
    image: str
    container: object
    shell: Shell
    user: str
    base_commit: str
    config: SandboxConfig
    instance: dict | None = None
    """The task instance (a dataset row) this session works on, if any: what `submit` grades against."""
    created: float = field(default_factory=time.time)
    last_used: float = field(default_factory=time.time)
    lock: threading.Lock = field(default_factory=threading.Lock)

    # --- commands ---------------------------------------------------------------------------
    def run(self, command: str, timeout: float | None = None) -> RunResult:
        with self.lock, _engine_errors(self.id, "the command"):
            self.last_used = time.time()
            return self.shell.run(command, timeout or self.config.command_timeout)

    # --- files (confined to the workspace: FileOps) ----------------------------------------------
    def _helper(self, req: dict) -> bytes:
        with _engine_errors(self.id, f"file {req.get('op')}"):
            self.last_used = time.time()
            req.setdefault("root", self.config.workdir)
            cmd = ["python3", f"{TOOLS}/{PACKAGE}/files.py"]
            api = client().api
            eid = api.exec_create(self.container.id, cmd, stdin=True, user=self.user)["Id"]
            sock = api.exec_start(eid, socket=True)
            raw = getattr(sock, "_sock", sock)
            raw.sendall(json.dumps(req).encode())
            raw.shutdown(1)  # end of stdin
            data = b""
            while True:
                chunk = raw.recv(65536)
                if not chunk:
                    break
                data += chunk
            raw.close()
            return _demux(data)

    def diff(self) -> str:
        """The session's changes against the instance's state, as a patch (new files included)."""
        script = diff_script(self.config.workdir, self.base_commit)
        with _engine_errors(self.id, "diff"):
            code, out = self.container.exec_run(["bash", "-c", script], user=self.user)
        if code != 0:
            raise BugforgeError(f"diff failed in session {self.id}: {out.decode(errors='replace')[-300:]}")
        return out.decode(errors="replace")

    def submit(self):
        """Grade the session's diff against its instance, in a fresh container (sandbox.grader)."""
        from bugforge.sandbox.grader import grade_patch

        if self.instance is None:
            raise BugforgeError(
                f"session {self.id} was not created for a task instance, so it cannot be graded",
                "create it with an instance id",
            )
        return grade_patch(self.instance, self.diff())

    @property
    def instance_id(self) -> str | None:
        return (self.instance or {}).get("instance_id")

    def close(self) -> None:
        try:
            self.shell.close()
        finally:
            engine.remove_container(self.container)


def _demux(data: bytes) -> bytes:
    out, i = bytearray(), 0
    while i + 8 <= len(data):
        kind, size = data[i], int.from_bytes(data[i + 4 : i + 8], "big")
        if kind == 1:
            out += data[i + 8 : i + 8 + size]
        i += 8 + size
    return bytes(out)


@dataclass
class _Warm:
    container: object
    shell: Shell
    user: str
    base_commit: str
    born: float = field(default_factory=time.time)


class Runtime(SessionTable):
    """Creates and tracks sessions. Thread-safe."""

    def __init__(self, config: SandboxConfig | None = None, instances: dict[str, dict] | None = None):
        self.config = config or SandboxConfig()
        self.instances = instances or {}
        self.sessions: dict[str, Session] = {}
        self.pool: dict[str, list[_Warm]] = {}
        self.lock = threading.Lock()
        self._tools = tools_archive()
        self.id = secrets.token_hex(6)
        self._swept = False  # whether the first start removed dead processes' containers yet

    # --- containers -----------------------------------------------------------------------------
    def _start(self, image: str) -> _Warm:
        cfg = self.config
        if not self._swept:  # a killed run's containers go once a later one starts (never a live one's)
            self._swept = True
            engine.remove_orphans()
        labels = {LABEL: "session", ROLE: "session", OWNER: cfg.owner, RUNTIME: self.id, **engine.owner_labels()}
        try:  # create, then start: `containers.run` would pull an image the engine lacks
            c = client().containers.create(
                image,
                ["sleep", "infinity"],
                detach=True,
                network_mode="none",
                mem_limit=cfg.mem_limit,
                memswap_limit=cfg.mem_limit,
                nano_cpus=int(cfg.cpus * 1e9),
                pids_limit=cfg.pids_limit,
                labels=labels,
                working_dir=cfg.workdir,
                stop_signal="SIGKILL",
                init=False,
            )
        except docker.errors.ImageNotFound:
            raise BugforgeError(
                f"image {image!r} is not in the local engine (sessions never pull images)",
                "build it (bugforge factory export), or `docker pull`/`docker load` it first",
            ) from None
        except docker.errors.APIError as e:
            raise BugforgeError(f"cannot start a container from {image!r}: {e.explanation or e}") from None
        try:
            c.start()
            c.put_archive(TOOLS.rsplit("/", 1)[0], self._tools)
            code, out = c.exec_run(
                [
                    "sh",
                    "-c",
                    f"id -u {cfg.user} >/dev/null 2>&1 && echo user; "
                    f"cd {cfg.workdir} 2>/dev/null && git rev-parse HEAD 2>/dev/null",
                ],
                user="root",
            )
            lines = out.decode(errors="replace").split()
            user = cfg.user if "user" in lines else "root"
            base = next((l for l in lines if len(l) == 40), "HEAD")
            if user != "root":  # the workspace belongs to the agent (bugforge's instance images already do)
                c.exec_run(
                    ["sh", "-c", f'[ "$(stat -c %U {cfg.workdir})" = {user} ] || chown -R {user} {cfg.workdir}'],
                    user="root",
                )
            shell = Shell(c, user=user, workdir=cfg.workdir, output_cap=cfg.output_cap)
            return _Warm(c, shell, user, base)
        except BaseException as e:
            engine.remove_container(c)
            if isinstance(e, (docker.errors.DockerException, StreamClosed)):
                raise BugforgeError(f"cannot start a session from {image!r}: {engine.error_line(e)}") from None
            raise

    def create(self, image: str | None = None, instance_id: str | None = None) -> Session:
        """A session from the warm pool when one is ready, else a fresh container. Give an image, or
        the id of an instance this runtime knows (its image is used and `submit` grades against it)."""
        instance = None
        if instance_id is not None:
            instance = self.instances.get(instance_id)
            if instance is None:
                raise BugforgeError(f"unknown instance {instance_id!r}", "load a dataset that has it")
            image = image or instance["image"]
        if not image:
            raise BugforgeError("a session needs an image or an instance id")
        warm = None
        with self.lock:
            if self.pool.get(image):
                warm = self.pool[image].pop()
        if warm is None:
            warm = self._start(image)
        if self.config.pool_size:
            self._refill_later(image)
        s = Session(
            secrets.token_hex(8), image, warm.container, warm.shell, warm.user, warm.base_commit, self.config, instance
        )
        with self.lock:
            self.sessions[s.id] = s
        return s

    # --- warm pool ------------------------------------------------------------------------------
    def warm(self, image: str, size: int | None = None) -> None:
        """Fill the pool for `image` up to `size` (default: config.pool_size) now."""
        size = self.config.pool_size if size is None else size
        while len(self.pool.get(image, [])) < size:
            w = self._start(image)
            with self.lock:
                self.pool.setdefault(image, []).append(w)

    def _refill_later(self, image: str) -> None:
        threading.Thread(target=self._safe_warm, args=(image,), daemon=True).start()

    def _safe_warm(self, image: str) -> None:
        """The pool's refill in the background: a failure is logged (the next create starts a container
        of its own and says what is wrong, if it still is)."""
        try:
            self.warm(image)
        except BugforgeError as e:
            log.warning("warm pool for %s not refilled: %s", image, e.line())
        except Exception:
            log.exception("warm pool for %s not refilled", image)

    def reap(self, session_ttl: float | None = None) -> list[str]:
        """Close sessions idle longer than `session_ttl` and pooled containers past pool_idle_s."""
        now, closed = time.time(), self.close_idle(session_ttl)
        with self.lock:
            stale = [(img, w) for img, ws in self.pool.items() for w in ws if now - w.born > self.config.pool_idle_s]
            for img, w in stale:
                self.pool[img].remove(w)
        self._discard(w for _, w in stale)
        return closed

    @staticmethod
    def remove_orphans() -> int:
        """Remove bugforge containers whose owning process is gone (bugforge.engine.remove_orphans, the one
        clean-up routine); never a live process's, this one's included. Returns how many."""
        return engine.remove_orphans()

    def _discard(self, warm) -> None:
        for w in warm:
            w.shell.close()
            engine.remove_container(w.container)

    def shutdown(self) -> None:
        """Close this runtime's sessions and pool, and remove any other container it started (one a failed
        start left); containers of other runtimes and processes stay."""
        for sid in list(self.sessions):
            self.close(sid)
        with self.lock:
            pooled = [w for ws in self.pool.values() for w in ws]
            self.pool.clear()
        self._discard(pooled)
        for c in client().containers.list(all=True, filters={"label": f"{RUNTIME}={self.id}"}, ignore_removed=True):
            engine.remove_container(c)
