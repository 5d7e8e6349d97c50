"""A persistent bash inside a container, over one open exec stream with a terminal: state (cwd,
variables, functions) survives between commands, a command costs one write and one read on an open
socket, and a command that runs too long is interrupted with ^C like a person would — the shell
stays. If ^C does not stop it within INTERRUPT_GRACE seconds, the session's other processes are killed
(found through /proc: images without procps work too); if even that fails within KILL_GRACE, or the
command starved for processes, the container's processes are all killed (files stay) and a new shell
starts. Whichever way it ends, a command past its timeout returns soon after it, saying `timed_out`.
Job control is off (`set +m`). See docs/sandbox.md."""

from __future__ import annotations

import base64
import re
import secrets
import time
from dataclasses import dataclass

import docker.errors
import requests

from bugforge.stream import ExecStream, StreamClosed

FORK_FAILED = re.compile(r"\bfork: (retry: )?Resource temporarily unavailable")  # bash's, sh's words
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
INTERRUPT_GRACE = 1.0  # seconds a command has to stop after ^C before its processes are killed
KILL_GRACE = 2.0  # seconds after the kill before the shell itself is given up (and restarted)
# every process of session SID but the shell: /proc/PID/stat's 6th field (4th after "comm) ") is the session
KILL_SESSION = (
    'for d in /proc/[0-9]*; do s=$(cat "$d/stat" 2>/dev/null) || continue; set -- ${s##*) }; '
    'p=${d#/proc/}; [ "$4" = "{sid}" ] && [ "$p" != "{sid}" ] && kill -9 "$p" 2>/dev/null; done; true'
)
SETUP = "stty -echo -onlcr -icanon min 1; set +m; PS1=''; PS2=''; PROMPT_COMMAND=''; unset HISTFILE; set +o history; echo \"$$\""


@dataclass
class RunResult:
    output: str
    exit_code: int | None
    timed_out: bool = False
    truncated: bool = False
    seconds: float = 0.0
    shell_restarted: bool = False


class Shell:
    def __init__(
        self,
        container,
        *,
        user: str = "root",
        workdir: str = "/testbed",
        env: dict | None = None,
        output_cap: int = 100_000,
        runaway: int = 5_000_000,
    ):
        self.container, self.user, self.workdir = container, user, workdir
        self.env = {"TERM": "dumb", "PS1": "", "PS2": "", "HISTFILE": "/dev/null", **(env or {})}
        self.output_cap, self.runaway = output_cap, runaway
        self.nonce = secrets.token_hex(8)
        self.n = 0
        self._open()

    def _open(self) -> None:
        self.stream = ExecStream(
            self.container,
            ["bash", "--noprofile", "--norc", "--noediting", "-i"],
            env=self.env,
            user=self.user,
            workdir=self.workdir,
            tty=True,
        )
        mark = self._marker()
        self.stream.write(f"{SETUP}; printf '%s\\n' {mark}\n".encode())
        head = self.stream.read_until(mark.encode() + b"\n", timeout=30)
        self.pid = int(re.findall(rb"(\d+)\s*$", head.strip())[-1])

    def _marker(self) -> str:
        self.n += 1
        return f"__bugforge_{self.nonce}_{self.n}__"

    def run(self, command: str, timeout: float = 60) -> RunResult:
        t0 = time.monotonic()
        if CONTROL.search(command):  # a stray ^C or ^D in the text must not reach the terminal as a key
            command = f'eval "$(printf %s {base64.b64encode(command.encode()).decode()} | base64 -d)"'
        mark = self._marker()
        try:
            self.stream.write(f"{{ {command}\n}} < /dev/null; printf '\\n%s %d\\n' {mark} $?\n".encode())
            out, rc, truncated, timed_out = self._collect(mark, t0 + timeout)
        except (StreamClosed, OSError) as e:
            code = self.stream.exit_code()
            self.close()
            what = f"the shell exited ({e}); a new one was started in {self.workdir}"
            stuck = "could not be stopped" in str(e)  # past its timeout (or runaway), e.g. a fork bomb
            if stuck:
                self._kill_everything()
                what = f"{e}: every process in the sandbox was killed (files are kept); a new shell was started"
            try:
                self._open()
            except (TimeoutError, StreamClosed, OSError):
                self._kill_everything()
                self._open()
            return RunResult(
                what,
                code,
                timed_out=stuck and time.monotonic() > t0 + timeout,
                seconds=time.monotonic() - t0,
                shell_restarted=True,
            )
        if out.endswith("\n") and (timed_out or rc is None):
            out = out[:-1]  # the newline that ^C left
        starved = "Resource temporarily unavailable" in out  # the words of fork() failing (and of EAGAIN)
        # a fork bomb's jobs, still forking: the command could not fork until it timed out, or half the
        # pids limit is still in use (killing the session's processes one by one races with their forking)
        if (timed_out and FORK_FAILED.search(out)) or ((timed_out or starved) and self._crowded()):
            self.close()
            self._kill_everything()
            self._open()
            out += "\n[the sandbox's process limit is held by running processes (a fork bomb?): every process was killed (files are kept); a new shell was started]"
            return RunResult(out, rc, timed_out, truncated, time.monotonic() - t0, shell_restarted=True)
        return RunResult(out, rc, timed_out, truncated, time.monotonic() - t0)

    def _crowded(self) -> bool:
        """Half the container's pids limit or more in use (counted by the engine, no exec needed)."""
        limit = (self.container.attrs.get("HostConfig") or {}).get("PidsLimit") or 0
        try:
            return limit > 0 and len(self.container.top(ps_args="-e").get("Processes") or []) >= limit // 2
        except (docker.errors.DockerException, requests.exceptions.RequestException):
            return True  # the engine cannot count them: assume crowded (the shell is restarted)

    def _collect(self, mark: str, deadline: float) -> tuple[str, int | None, bool, bool]:
        """Read until `mark`; keep the first `output_cap` bytes. Past the deadline (or past `runaway`
        bytes of output): ^C; INTERRUPT_GRACE later: kill the session's processes; KILL_GRACE later: give
        up on this shell."""
        key = f"\n{mark} ".encode()
        head, total = bytearray(), 0
        truncated = timed_out = False
        phase, recovery = "run", None
        while True:
            buf = self.stream.out
            i = buf.find(key)
            j = buf.find(f"\n{recovery} ".encode()) if recovery else -1
            if i >= 0 or j >= 0:
                chunk = self.stream.take(i if i >= 0 else j)
                total += len(chunk)
                head.extend(chunk[: max(0, self.output_cap - len(head))])
                self.stream.take(len(key) if i >= 0 else len(f"\n{recovery} "))
                rc_line = self.stream.readline(timeout=5)
                if i >= 0 and recovery:  # it finished after all: consume the recovery marker too
                    self.stream.read_until(f"\n{recovery} ".encode(), timeout=5)
                    self.stream.readline(timeout=5)
                rc = int(rc_line.strip() or -1) if i >= 0 else None
                return head.decode("utf-8", "replace"), rc, truncated or total > self.output_cap, timed_out
            keep = len(key) + 64  # what might be the start of a marker stays in the buffer
            if len(buf) > keep:
                chunk = self.stream.take(len(buf) - keep)
                total += len(chunk)
                head.extend(chunk[: max(0, self.output_cap - len(head))])
            now = time.monotonic()
            if phase == "run" and (total > self.runaway or now > deadline):
                truncated, timed_out = total > self.runaway, now > deadline
                recovery, phase, deadline = self._interrupt(), "interrupted", now + INTERRUPT_GRACE
            elif now > deadline and phase == "interrupted":
                self._kill_foreground()
                phase, deadline = "killed", now + KILL_GRACE
            elif now > deadline:
                raise StreamClosed("the command could not be stopped")
            try:
                self.stream._fill(max(0.01, min(1.0, deadline - now)))
            except TimeoutError:
                pass

    def _interrupt(self) -> str:
        """^C to the foreground job, then a marker the shell prints once it is back."""
        recovery = self._marker()
        self.stream.write(b"\x03")
        self.stream.write(f"printf '\\n%s %d\\n' {recovery} 130\n".encode())
        return recovery

    def _kill_foreground(self) -> None:
        """For commands that ignore ^C: kill every process of the shell's session except the shell. Read
        from /proc, not with pgrep: slim images (python:3.11-slim) have no procps, and there the kill
        silently did nothing. A failure here is not raised: the caller gives up on the shell KILL_GRACE
        later and restarts it, which needs no exec."""
        try:
            self.container.exec_run(["bash", "-c", KILL_SESSION.replace("{sid}", str(self.pid))], user="root")
        except Exception:  # noqa: BLE001 (stated above: the restart that follows handles it)
            pass

    def _kill_everything(self) -> None:
        """Restart the container: its processes die with its first one, its filesystem stays. No exec is
        needed, so it works when the pids limit is exhausted."""
        self.container.restart(timeout=0)

    def close(self) -> None:
        self.stream.close()
