"""The test process's monitor: an audit hook (PEP 578) that holds the verdict channel and its token.

`install` runs when the probe is imported, before any code of the tree (start.py); no Python code can
remove an audit hook, and this one is referenced by nothing but the interpreter, so what its closure
holds (the channel's descriptor, the run's token, the genuine code of the probe's `Report.emit`) is out
of reach of code that cannot walk objects or frames, and walking them is itself an event it watches.

- The run's records travel only through it: `sys.audit("bugforge.record", record)` from the probe's
  `Report.emit` (checked by its caller's code object) is sent with the token the collector gave the
  run; the collector refuses a record without it (channel.py). A record from anywhere else is refused.
- `sys.audit("bugforge.tamper", reason)` sends a tamper record, from anywhere (integrity.py uses it).
- `sys.audit("bugforge.pin", [(name, namespace, keys)])`, once per process (or again before the
  channel is set, as the test server does when it holds a collected session): the probe's own
  classes and state, checked before each `test` and `finish` record is sent (the checks that find
  tampering are the probe's code: replacing them must not silence them).
- It raises tamper records itself when code of the tree (not a test file or conftest: the first frame
  outward that is not installed code) walks objects or other threads' frames (gc, sys._current_frames),
  sets a trace or profile function, swaps a function's code or defaults, loads native code (ctypes),
  makes code objects or compiles code under an installed file's name, adds an audit hook, lists a
  process's descriptors, or wraps the channel's descriptor in a socket; and when the test process
  itself tries to exec another program (refused: the pid would stay and the probe would not).
Python 3.9, standard library only."""

import json
import os
import re
import sys

CHANNEL, RECORD, TAMPER, PIN = "bugforge.channel", "bugforge.record", "bugforge.tamper", "bugforge.pin"
# events that are tampering when code of the tree causes them
WATCHED = {
    "gc.get_objects": "walked the interpreter's objects (gc)",
    "gc.get_referrers": "walked the interpreter's objects (gc)",
    "gc.get_referents": "walked the interpreter's objects (gc)",
    "sys._current_frames": "read other threads' frames",
    "sys.settrace": "set a trace function",
    "sys.setprofile": "set a profile function",
    "ctypes.dlopen": "loaded native code (ctypes)",
    "ctypes.dlsym": "loaded native code (ctypes)",
    "ctypes.cdata": "read raw memory (ctypes)",
    "ctypes.addressof": "read raw memory (ctypes)",
    "code.__new__": "made a code object",
    "sys.addaudithook": "added an audit hook",
}
PROC_FD = re.compile(r"^/proc/(self|\d+)/fd")
_STARTED = []  # one install per process


def install(root, own_dir, installed, emit_code):
    """Add the hook (once per process). root: the tree; own_dir: the probe's package directory;
    installed: directories of installed code; emit_code: the code object of the probe's Report.emit."""
    if _STARTED:
        return
    _STARTED.append(True)
    state = {"fd": None, "token": "", "pid": None, "busy": False, "pinned": [], "pin_pid": None}
    dumps, write, getpid, getframe = json.dumps, os.write, os.getpid, sys._getframe
    root = root.rstrip("/") + "/"

    def tree_code(filename):
        name = os.path.basename(filename)
        return (
            filename.startswith(root)
            and not filename.startswith(own_dir)
            and not (name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py"))
        )

    def culprit():
        """Whether the event comes from the tree's non-test code: the first frame outward that is a file
        neither installed nor of the tree's tests (code compiled from a string is passed over; a file
        outside the tree and the installed directories, one written at run time, counts as the tree's)."""
        frame = getframe(3)
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith("/") and not filename.startswith(installed):
                return tree_code(filename) or not filename.startswith(root)
            frame = frame.f_back
        return False

    def send(record):
        if state["fd"] is not None and getpid() == state["pid"]:
            record = dict(record, token=state["token"])
            try:
                write(state["fd"], dumps(record).encode())
            except OSError:
                pass

    def tamper(reason):
        send({"event": "tamper", "reason": reason})

    def hook(event, args):
        if state["busy"]:
            return
        state["busy"] = True
        try:
            _handle(event, args)
        finally:
            state["busy"] = False

    def unpinned():
        """What changed among the pinned objects (the probe's own classes and state)."""
        return ["%s.%s was replaced during the run" % (where, key) for where, ns, key, value in state["pinned"]
                if ns.get(key, state) is not value]  # fmt: skip

    def _handle(event, args):
        if event == RECORD:
            if getframe(2).f_code is not emit_code:
                tamper("a record was sent from outside the probe")
                return
            if args[0].get("event") in ("test", "finish"):
                for reason in unpinned():
                    tamper(reason)
            send(args[0])
        elif event == PIN:  # the probe's own state once it is whole: once per process, or before the channel
            if state["pid"] == getpid() and state["pin_pid"] == getpid():
                tamper("the probe's pinned state was replaced")
            else:
                state["pin_pid"] = getpid()
                state["pinned"] = [(w, ns, k, ns[k]) for w, ns, keys in args[0] for k in (keys or list(ns)) if k in ns]
        elif event == TAMPER:
            tamper(str(args[0]))
        elif event == CHANNEL:
            if state["pid"] == getpid():
                tamper("the verdict channel was replaced")
            else:
                state.update(fd=args[0], token=args[1], pid=getpid())
        elif event == "os.exec" and getpid() == state["pid"]:
            tamper("the test process tried to run another program in its place")
            raise PermissionError("bugforge: the test process may not exec")
        else:
            reason = _judge(event, args)
            if reason and culprit():
                tamper("code of the tree %s (%s)" % (reason, event))

    def _judge(event, args):
        if event in WATCHED:
            return WATCHED[event]
        if event == "object.__setattr__" and args[1] in ("__code__", "__defaults__", "__kwdefaults__"):
            return "swapped a function's %s" % args[1]
        if event == "compile" and isinstance(args[1], str) and args[1].startswith(installed + (own_dir,)):
            return "compiled code under an installed file's name"
        if event in ("os.listdir", "os.scandir", "open") and args and PROC_FD.match(str(args[0])):
            return "listed a process's descriptors"
        if event == "socket.__new__" and state["fd"] is not None:
            try:
                same = args[0].fileno() == state["fd"]
            except (OSError, AttributeError):
                same = False
            return "wrapped the verdict channel in a socket" if same else None
        return None

    sys.addaudithook(hook)
