"""A long-lived process inside a container, talked to over one open `docker exec` stream: write to its
stdin, read its stdout line by line. No new exec (and no new process) per request; this is how the
warm workbench's test server and the sandbox's persistent shell answer in well under a millisecond of
transport overhead."""

from __future__ import annotations

import select
import socket
import struct

from bugforge.engine import client


class StreamClosed(Exception):
    pass


class ExecStream:
    def __init__(
        self,
        container,
        cmd: list[str],
        *,
        env: dict[str, str] | None = None,
        user: str = "root",
        workdir: str | None = None,
        tty: bool = False,
    ):
        api = client().api
        self.tty = tty  # with a terminal, output is one raw stream (no frames) and ^C interrupts
        self.exec_id = api.exec_create(
            container.id,
            cmd,
            stdin=True,
            stdout=True,
            stderr=True,
            tty=tty,
            environment=env,
            user=user,
            workdir=workdir,
        )["Id"]
        sock = api.exec_start(self.exec_id, socket=True, tty=tty)
        self.sock: socket.socket = getattr(sock, "_sock", sock)
        self.sock.setblocking(True)
        self.buf = b""  # raw, still framed
        self.out = bytearray()  # demultiplexed stdout
        self.err = bytearray()  # demultiplexed stderr

    def write(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise StreamClosed(str(e)) from None

    def _fill(self, timeout: float | None) -> None:
        r, _, _ = select.select([self.sock], [], [], timeout)
        if not r:
            raise TimeoutError("no output from the container process")
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise StreamClosed("the container process closed its output")
        if self.tty:
            self.out.extend(chunk)
            return
        self.buf += chunk
        while len(self.buf) >= 8:
            kind, size = self.buf[0], struct.unpack(">I", self.buf[4:8])[0]
            if len(self.buf) < 8 + size:
                break
            payload, self.buf = self.buf[8 : 8 + size], self.buf[8 + size :]
            (self.err if kind == 2 else self.out).extend(payload)

    def pending(self) -> int:
        """Bytes of output read but not yet consumed."""
        return len(self.out)

    def take(self, n: int) -> bytes:
        data = bytes(self.out[:n])
        del self.out[:n]
        return data

    def readline(self, timeout: float | None = None) -> bytes:
        """The next stdout line (without its newline)."""
        while b"\n" not in self.out:
            self._fill(timeout)
        i = self.out.index(b"\n")
        line = bytes(self.out[:i])
        del self.out[: i + 1]
        return line

    def read_until(self, marker: bytes, timeout: float | None = None) -> bytes:
        """stdout up to (not including) `marker`, which is consumed."""
        while marker not in self.out:
            self._fill(timeout)
        i = self.out.index(marker)
        data = bytes(self.out[:i])
        del self.out[: i + len(marker)]
        return data

    def exit_code(self) -> int | None:
        return client().api.exec_inspect(self.exec_id).get("ExitCode")

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
