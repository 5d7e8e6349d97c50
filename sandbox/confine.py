"""How the `process` backend (sandbox/process.py) runs a session's programs without a container engine:
bubblewrap around each of them, and the persistent shell on a pseudo-terminal of this machine.

`Jail` builds the command line: the environment's root file system (bugforge.images.rootfs) bound
read-only as /, the session's private copy of /testbed, /tmp and HOME bound read-write, the tools
read-only at /opt/bugforge, its own /proc and /dev, no network, its own pid, IPC and UTS namespaces, a
user namespace in which the session's user (the image's `agent`, uid from its /etc/passwd) owns the
workspace, `--die-with-parent --new-session`, and the session's rlimits (address space, CPU seconds,
processes, no core files) through `prlimit`, hard and soft alike. Unconfined (only when asked for), the
same programs run as this process's user on this machine's file system, in the session's folder. A
grading's jail (`root`, sandbox/processgrade.py) has no user namespace: it runs as this machine's root
with GRADING_CAPS only, so the tests can run as a second user (the image's `agent`, its real uid here).

`ProcessShell` is sandbox/shell.py's Shell (same protocol, markers, timeouts, output cap, restarts)
over a `PtyStream`, a local process on a pseudo-terminal that is its controlling terminal, so ^C
interrupts a command as in a container. Where a container would be restarted, the session's process
tree is killed (pid namespace: every process in it dies with its first one) and a new shell started;
files stay."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bugforge.sandbox.shell import SETUP, Shell
from bugforge.stream import ExecStream, StreamClosed
from bugforge.testing.tools import PROBE_DIR

# a session of its own whose controlling terminal is the pseudo-terminal on stdin (bwrap's --new-session
# left none), so ^C reaches the foreground command; then exec the shell
CTTY = (
    "import fcntl, os, sys, termios\n"
    "try:\n    os.setsid()\n    fcntl.ioctl(0, termios.TIOCSCTTY, 0)\nexcept OSError:\n    pass\n"
    "os.execvp(sys.argv[1], sys.argv[1:])"
)
SHELL = ["bash", "--noprofile", "--norc", "--noediting", "-i"]
# what grading's root keeps (a subset of Docker's default set): launch.py gives the tree to the test user
# (CHOWN), becomes it (SETUID, SETGID) and kills it (KILL); the sweep and git work on its files (DAC_OVERRIDE, FOWNER)
GRADING_CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_KILL", "CAP_SETGID", "CAP_SETUID")
# (not CAP_DAC_READ_SEARCH: outside Docker's set, and open_by_handle_at with it reaches the host's files)


def memory_bytes(text: str) -> int:
    """Docker's memory notation (512m, 2g, 1024k, 100000) in bytes."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmg]?)b?\s*", text.lower())
    if not m:
        raise ValueError(f"not a memory size: {text!r}")
    return int(float(m.group(1)) * 1024 ** "bkmg".index(m.group(2) or "b"))


@dataclass
class Jail:
    """Where a session's programs run and what confines them (module docstring)."""

    rootfs: Path
    """The environment's tree (read-only /)."""
    home: Path
    """The session's folder: testbed/, tmp/, home/ (all writable by the session)."""
    tools: Path
    """bugforge's in-container tools (read-only at PROBE_DIR)."""
    env: dict[str, str]
    """The image's environment (its Env), before the session's own variables."""
    uid: int = 0
    gid: int = 0
    user: str = "root"
    user_home: str = "/root"
    """HOME inside (a folder of the image; the session's home/ is bound there when it exists)."""
    workdir: str = "/testbed"
    limits: dict[str, int] = field(default_factory=dict)
    """prlimit options without dashes (as, cpu, nproc, core) -> value."""
    bwrap: str = "bwrap"
    unconfined: bool = False
    root: bool = False
    """Run as this machine's root with GRADING_CAPS only (bubblewrap keeps all of root's unless told to
    drop them) and no user namespace (only grading does; only when this process is root): launch.py can
    then give the tree to the test user, become it and kill it."""
    binds: list[tuple[str, str]] = field(default_factory=list)
    """More read-write binds (folder here, path inside): grading's test user's HOME."""

    @property
    def workspace(self) -> str:
        """The workspace as the session's programs see it (/testbed, or its folder when unconfined)."""
        return str(self.home / "testbed") if self.unconfined else self.workdir

    @property
    def tools_dir(self) -> str:
        return str(self.tools) if self.unconfined else PROBE_DIR

    @property
    def python(self) -> str:
        """The image's python3 (on its PATH), or this process's when unconfined."""
        return sys.executable if self.unconfined else "python3"

    def argv(self, cmd: list[str], *, chdir: str | None = None) -> list[str]:
        """`cmd` wrapped in the limits and (unless unconfined) bubblewrap."""
        limits = [f"--{k}={v}" for k, v in self.limits.items()]
        wrap = ["prlimit", *limits, "--"] if limits else []
        if self.unconfined:
            return [*wrap, *cmd]
        h = self.home
        home = (
            ["--bind", str(h / "home"), self.user_home] if (self.rootfs / self.user_home.lstrip("/")).is_dir() else []
        )
        return [
            *wrap,
            self.bwrap,
            "--ro-bind", str(self.rootfs), "/",
            "--bind", str(h / "testbed"), self.workdir,
            "--bind", str(h / "tmp"), "/tmp",
            *home,
            "--ro-bind", str(self.tools), PROBE_DIR,
            "--proc", "/proc", "--dev", "/dev",
            "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox",
            *(a for here, there in self.binds for a in ("--bind", here, there)),
            *self._user(),
            "--die-with-parent", "--new-session",
            "--chdir", chdir or self.workdir,
            *cmd,
        ]  # fmt: skip

    def _user(self) -> list[str]:
        """bubblewrap's options for who runs: the session's user in a user namespace, or root (`root`)."""
        if self.root:
            return ["--cap-drop", "ALL", *(a for cap in GRADING_CAPS for a in ("--cap-add", cap))]
        return ["--unshare-user", "--uid", str(self.uid), "--gid", str(self.gid)]

    def environ(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a session's program: the image's, then HOME/USER, then `extra`."""
        if self.unconfined:
            home = str(self.home / "home")  # the image's git configuration, so commits are the image's
            base = {**os.environ, "TMPDIR": str(self.home / "tmp")}
            if (self.rootfs / "etc" / "gitconfig").is_file():
                base["GIT_CONFIG_SYSTEM"] = str(self.rootfs / "etc" / "gitconfig")
        else:
            base = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", **self.env}
            home = self.user_home if (self.rootfs / self.user_home.lstrip("/")).is_dir() else "/tmp"
        return {**base, "HOME": home, "USER": self.user, "LOGNAME": self.user, **(extra or {})}

    def run(self, cmd: list[str], *, input: bytes = b"", timeout: float = 120) -> subprocess.CompletedProcess:
        """Run `cmd` confined, outside the agent's shell; output captured (stdout, stderr apart)."""
        return subprocess.run(
            self.argv(cmd),
            input=input,
            capture_output=True,
            env=self.environ(),
            cwd=self.workspace if self.unconfined else None,
            timeout=timeout,
        )

    def probe(self) -> str:
        """'' when bubblewrap runs here with this jail's options, else what went wrong (one line)."""
        try:
            r = self.run(["true"], timeout=30)
        except (OSError, subprocess.SubprocessError) as e:
            return str(e).splitlines()[0] if str(e) else type(e).__name__
        lines = r.stderr.decode(errors="replace").strip().splitlines()
        return "" if r.returncode == 0 else (lines[-1] if lines else f"exit status {r.returncode}")


class PtyStream(ExecStream):
    """ExecStream's interface (write, read_until, readline, take, out) over a local process whose stdin,
    stdout and stderr are a new pseudo-terminal: no engine, no socket."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str | None = None):
        master, slave = pty.openpty()
        try:
            self.proc = subprocess.Popen(
                argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True
            )
        finally:
            os.close(slave)
        self.fd, self.tty = master, True
        self.buf, self.out, self.err = b"", bytearray(), bytearray()

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as e:
            raise StreamClosed(str(e)) from None

    def _fill(self, timeout: float | None) -> None:
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            raise TimeoutError("no output from the session's shell")
        try:
            chunk = os.read(self.fd, 1 << 16)
        except OSError:  # EIO: every process that had the terminal open is gone
            chunk = b""
        if not chunk:
            raise StreamClosed("the session's shell closed its terminal")
        self.out.extend(chunk)

    def exit_code(self) -> int | None:
        """The shell's exit status, once its terminal closed: bubblewrap exits just after the shell, so a
        poll alone could come first (a flaky `exit 3` read as None); None if it is still running after 2 s."""
        try:
            return self.proc.wait(2)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        """Kill the process and everything it started (the sandbox's pid namespace goes with it)."""
        kill_tree(self.proc.pid)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, command name) of a process, None when it is gone."""
    try:
        stat = open(f"/proc/{pid}/stat", "rb").read().decode(errors="replace")
    except OSError:
        return None
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    return int(stat.rsplit(")", 1)[1].split()[1]), name


def descendants(root: int) -> list[tuple[int, str]]:
    """(pid, name) of `root` and every process below it, breadth first, read from /proc."""
    children: dict[int, list[tuple[int, str]]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit() and (st := _stat(int(d))):
            children.setdefault(st[0], []).append((int(d), st[1]))
    own = _stat(root)
    out, queue = [], [(root, own[1])] if own else []
    while queue:
        pid, name = queue.pop(0)
        out.append((pid, name))
        queue.extend(children.get(pid, []))
    return out


def kill_tree(root: int, *, spare: int | None = None) -> None:
    """SIGKILL `root` and its descendants (all but `spare`); parents first, so none forks a new one."""
    for pid, _ in descendants(root):
        if pid != spare:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class ProcessShell(Shell):
    """Shell (sandbox/shell.py) over a PtyStream in `jail` instead of an exec stream in a container."""

    def __init__(self, jail: Jail, *, output_cap: int, pids_limit: int):
        self.pids_limit = pids_limit
        super().__init__(jail, user=jail.user, workdir=jail.workspace, output_cap=output_cap)

    def _open(self) -> None:
        jail: Jail = self.container
        self.stream = PtyStream(jail.argv([jail.python, "-c", CTTY, *SHELL]), jail.environ(self.env), cwd=self._cwd())
        mark = self._marker()
        self.stream.write(f"{SETUP}; printf '%s\\n' {mark}\n".encode())
        head = self.stream.read_until(mark.encode() + b"\n", timeout=30)
        self.pid = int(re.findall(rb"(\d+)\s*$", head.strip())[-1])

    def _cwd(self) -> str | None:
        return self.container.workspace if self.container.unconfined else None

    def _shell_pid(self) -> int | None:
        """The shell's pid on this machine (the first bash below the stream's process)."""
        return next((p for p, name in descendants(self.stream.proc.pid) if name == "bash"), None)

    def _crowded(self) -> bool:
        return self.pids_limit > 0 and len(descendants(self.stream.proc.pid)) >= self.pids_limit // 2

    def _kill_foreground(self) -> None:
        """Kill every process below the shell (the shell stays)."""
        shell = self._shell_pid()
        if shell is not None:
            kill_tree(shell, spare=shell)

    def _kill_everything(self) -> None:
        """Kill the session's whole process tree; its files stay. The caller opens a new shell."""
        kill_tree(self.stream.proc.pid)
        try:
            self.stream.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass  # unkillable: the new shell starts beside it, and close() tries again


def passwd_user(rootfs: Path, name: str) -> tuple[int, int, str, str]:
    """(uid, gid, name, home) of user `name` in the tree's /etc/passwd; root's when it has none."""
    try:
        for line in (rootfs / "etc" / "passwd").read_text().splitlines():
            f = line.split(":")
            if len(f) >= 6 and f[0] == name:
                return int(f[2]), int(f[3]), name, f[5] or "/"
    except (OSError, ValueError):
        pass
    return 0, 0, "root", "/root"


def remove_folder(path: Path) -> None:
    """Delete a folder a session wrote, folders it made read-only included."""

    def retry(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            if not os.path.islink(p):  # chmod follows links: never to a file outside the folder
                os.chmod(p, 0o700)
        except OSError:
            pass
        try:
            func(p)
        except OSError:
            pass

    if Path(path).exists():
        shutil.rmtree(path, onerror=retry)
