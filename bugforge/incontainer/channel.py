"""The verdict channel: the probe's records travel from the test process to a collector that the test
user cannot reach, over a Unix socket pair, never through a file the test user can write.

The collector (launch.py for a fresh container and the exported eval_script, the test server for warm
grading) makes the pair, starts the test process with one end (BUGFORGE_CHANNEL names its descriptor),
sends it the run's key first, and reads records from the other end with the kernel's credentials of
each sender (SO_PASSCRED: a process cannot send another's pid). In the test process the monitor
(monitor.py) alone holds the descriptor and the key. The collector accepts a record only from the
process it started, with an HMAC under the key over it and the next sequence number, and only until
that process's `finish` record; the process must
exit with the status `finish` gave. It folds each test's `phase` records into the test's outcome,
holding each phase to the `call` record of pytest's call of it, and writes a `test` record at the
test's `end`, once and after its `start`. Anything else is a `tamper` event in the report, which it
writes as records arrive (a killed run still tells which tests finished). docs/security.md.
Python 3.9, standard library only."""

import hmac
import json
import os
import random
import resource
import select
import socket
import struct
import sys

from .monitor import CHANNEL

ENV = "BUGFORGE_CHANNEL"
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
_MAX = 1 << 20  # bytes of one record
SENT = frozenset(("start", "phase", "end", "finish", "tamper", "collect_error", "timeout"))  # (report.py's)


def pair():
    """(the collector's end, the test process's end)."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    mine.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    return mine, theirs


def sender():
    """In the test process, before any code of the tree: hand the channel's end BUGFORGE_CHANNEL names,
    and the token the collector sent on it, to the monitor (monitor.py), which alone sends records from
    now on. The descriptor moves to a number drawn at random, not inherited by the tests' subprocesses.
    False in a run without a channel."""
    fd = os.environ.pop(ENV, None)
    if not fd:
        return False
    fd = int(fd)
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft > 4096:
        for _ in range(8):
            target = random.SystemRandom().randrange(1024, min(soft, 1 << 20))
            try:
                os.fstat(target)
            except OSError:  # free
                os.dup2(fd, target, inheritable=False)
                os.close(fd)
                fd = target
                break
    os.set_inheritable(fd, False)
    token = os.read(fd, 256).decode()
    sys.audit(CHANNEL, fd, token)
    return True


class Collector:
    """Reads the records of one run into `report` (a path the collector owns)."""

    def __init__(self, sock, report):
        self.sock = sock
        self.pid = None
        self.finished = False
        self.closed = False
        self.tamper = []
        self.started, self.ended = set(), set()  # node ids with a `start`, with a `test` record
        self.phases = {}  # node id -> its outcome so far, folded from its `phase` records
        self.status = None  # the exit status the `finish` record gave
        self.token = os.urandom(32).hex()  # the key, given to the test process first: its records carry a MAC
        self.seq = 0  # the last record's sequence number (each record's is one more)
        fd = os.open(report, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.out = os.fdopen(fd, "w", buffering=1)

    def expect(self, pid):
        """The pid of the process started with the other end: the only sender accepted. It gets the
        run's token now (monitor.py keeps it out of the tree's reach)."""
        self.pid = pid
        try:
            self.sock.send(self.token.encode())
        except OSError:  # it ended already (a test server's child that stopped before pytest): no records
            pass

    def forget(self):
        """In a child forked after the collector was made: close its socket and report, unread."""
        self.sock.close()
        os.close(self.out.fileno())

    def poll(self, timeout=0.0):
        """Take the records waiting (waiting at most `timeout` seconds for the first)."""
        while not self.closed and select.select([self.sock], [], [], timeout)[0]:
            self._take_one()
            timeout = 0.0

    def _take_one(self):
        record = self._receive()
        if record is not None:
            self._dispatch(record)

    def _receive(self):
        """The next record, authentic and from the test process, or None (nothing waiting, the other end
        closed, or a record refused as tampering)."""
        try:
            data, anc, _flags, _addr = self.sock.recvmsg(_MAX, socket.CMSG_SPACE(_UCRED.size))
        except (BlockingIOError, InterruptedError):
            return None
        except ConnectionResetError:  # the other end closed with the token unread: it sent nothing
            self.closed = True
            return None
        if not data:  # every copy of the other end is closed
            self.closed = True
            return None
        pid = None
        for level, kind, cred in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(cred) >= _UCRED.size:
                pid = _UCRED.unpack(cred[: _UCRED.size])[0]
        if pid != self.pid:
            self._tamper("a record came from process %s, not the test process %s" % (pid, self.pid))
            return None
        if self.finished:
            self._tamper("a record arrived after the test session finished")
            return None
        return self._authentic(data)

    def _dispatch(self, record):
        event = record.get("event")
        if event not in SENT:  # (a `test` record is the collector's own: round 21 appended passed ones)
            self._tamper("the test process sent a record of a kind the probe never sends (%.40s)" % event)
        elif event == "phase":
            self._fold(record)
        elif event == "end":
            self._end(record.get("nodeid"), record.get("duration"))
        elif event == "tamper":
            self._tamper(str(record.get("reason", "")))
        else:
            if event == "start":
                self.started.add(record.get("nodeid"))
            self.out.write(json.dumps(record) + "\n")
            if event == "finish":
                self.finished, self.status = True, record.get("exitstatus")

    def _fold(self, p):
        """One phase into its test's outcome, as pytest's own summary folds them (subtests: one phase many
        times, a failure staying); its record says what pytest's call of it did too: one that raised is not
        passed, one that raised a failure is not skipped unless the test expected to fail."""
        nodeid, when, outcome, wasxfail = p.get("nodeid"), p.get("when"), p.get("outcome"), bool(p.get("wasxfail"))
        raised, failure = p.get("raised") is True, p.get("failure") is True
        if outcome not in ("passed", "failed", "skipped"):  # (pytest's only words: a plugin's "rerun" is not one)
            self._tamper("%s: its %s was reported %r, not an outcome pytest gives" % (nodeid, when, outcome))
        if (raised and outcome == "passed") or (failure and outcome == "skipped" and not wasxfail):
            self._tamper("%s: its %s raised, yet was reported %s" % (nodeid, when, outcome))
        r = self.phases.setdefault(nodeid, {"outcome": "passed", "duration": 0.0, "message": ""})
        r["duration"] += float(p.get("duration") or 0.0)
        if when == "call":
            r["called"] = True
            if wasxfail:
                r["outcome"] = "xpassed" if outcome == "passed" else "xfailed"
            elif outcome in ("skipped", "failed"):
                r["outcome"] = outcome
        elif outcome == "failed" and r["outcome"] in ("passed", "skipped"):
            r["outcome"] = "error"  # setup or teardown failed
        elif when == "setup" and outcome == "skipped":
            r["outcome"] = "xfailed" if wasxfail else "skipped"
        if outcome == "failed" and not r["message"]:
            r["message"] = str(p.get("message") or "")

    def _end(self, nodeid, seconds=None):
        """A test's protocol ended: its `test` record, once, after its `start` (`seconds`: what its phases
        that were not reported, a passed teardown's, took)."""
        r = self.phases.pop(nodeid, None)
        if r is None:
            if nodeid not in self.started or nodeid in self.ended:
                return
            r = {"outcome": "passed", "duration": 0.0, "message": ""}  # (its setup passed, unreported; no call)
        if type(seconds) is float:
            r["duration"] += seconds
        if nodeid in self.ended:
            self._tamper("%s was reported twice" % nodeid)
        elif nodeid not in self.started:
            self._tamper("%s was reported without having started" % nodeid)
        self.ended.add(nodeid)
        if not r.pop("called", False) and r["outcome"] == "passed":  # (pytest's --setup-only: no call, no test)
            self._tamper("%s ended without its call phase" % nodeid)
            r["outcome"] = "error"
        self.out.write(json.dumps(dict(r, event="test", nodeid=nodeid)) + "\n")

    def _authentic(self, data):
        """The record `data` carries, if the monitor sent it: its body with an HMAC under the run's key,
        and the next sequence number (a descriptor hijacked on the way sees records, but can neither
        forge one nor drop or replay one unseen). None (and tampering) otherwise."""
        try:
            wire = json.loads(data.decode("utf-8"))
        except ValueError:
            self._tamper("the test process sent a record that is not JSON")
            return None
        body, mac = (wire.get("body"), wire.get("mac")) if isinstance(wire, dict) else (None, None)
        record = None
        if isinstance(body, str) and isinstance(mac, str):
            good = hmac.compare_digest(hmac.new(bytes.fromhex(self.token), body.encode(), "sha256").hexdigest(), mac)
            record = json.loads(body) if good else None
        if record is None:
            self._tamper("a record came without the run's token (not from the probe)")
            return None
        if not isinstance(record, dict) or record.pop("seq", None) != self.seq + 1:
            self._tamper("a record came out of sequence (one was dropped, replayed or forged)")
            return None
        self.seq += 1
        return record

    def exited(self, status):
        """The started process's exit status: it must be the one its `finish` record gave."""
        if self.finished and status != self.status:
            self._tamper("the test process exited with %s after reporting %s" % (status, self.status))

    def _tamper(self, reason):
        if reason not in self.tamper:
            self.tamper.append(reason)
            self.out.write(json.dumps({"event": "tamper", "reason": reason}) + "\n")

    def close(self):
        """After every process of the test user is gone: take what is left, then close."""
        self.sock.setblocking(False)
        while not self.closed:
            try:
                self._take_one()
            except OSError:
                break
            if not select.select([self.sock], [], [], 0)[0]:
                break
        self.sock.close()
        self.out.close()
