"""What the test process's monitor (monitor.py) judges: the probe's own events, the events that are
tampering when code of the tree causes them, and the tables the judging reads.

The monitor raises tamper records when code of the tree (not a test file or conftest: the first frame
outward that is not installed code) walks objects or other threads' frames (gc, sys._current_frames),
sets a trace or profile function, swaps a function's code or defaults (a function the integrity
snapshot holds: whoever swaps it), loads native code (ctypes),
makes code objects or compiles code under an installed file's name, adds an audit hook, lists a
process's descriptors, or wraps the channel's descriptor in a socket; and when the test process
itself tries to exec another program (refused: the pid would stay and the probe would not).
Python 3.9, standard library only."""

import re

from . import casecode, witness

CHANNEL, RECORD, TAMPER = "bugforge.channel", "bugforge.record", "bugforge.tamper"
PIN, ITEMS = "bugforge.pin", "bugforge.items"
EXIT, COMPILED = witness.EXIT, witness.COMPILED
REGISTERED, ASSERTER, HELD, FAILED = casecode.REGISTERED, casecode.ASSERTER, casecode.HELD, casecode.FAILED
OWN_EVENTS = (RECORD, EXIT, COMPILED, CHANNEL, PIN, ITEMS, TAMPER, REGISTERED, ASSERTER, HELD, FAILED)  # (the grader's)
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
    "ctypes.string_at": "read raw memory (ctypes)",
    "ctypes.wstring_at": "read raw memory (ctypes)",
    "ctypes.dlsym/handle": "loaded native code (ctypes)",
    "code.__new__": "made a code object",
    "sys.addaudithook": "added an audit hook",
    "cpython.PyInterpreterState_New": "created a subinterpreter (whose code no audit hook of this one sees)",
}
MARSHAL = ("marshal.loads", "marshal.load")  # (what they make is judged: names.py)
# events of the monitor thread that give the tree's code nothing: ids, reads that lead to no frame
ATTR, HARMLESS = "object.__getattr__", frozenset(("builtins.id",))
FRAME_READS = frozenset(("f_code", "tb_frame", "gi_frame", "cr_frame", "ag_frame"))
PROC_FD = re.compile(r"^/proc/(self|\d+)/fd")
# events judged by their own source only: libraries the tree uses make code objects, compile and set
# defaults as a matter of course (glom through boltons' function builder)
DIRECT = ("code.__new__", "compile", "object.__setattr__")
SWAPS = ("__code__", "__defaults__", "__kwdefaults__")
# another thread whose stack is string-compiled and installed code is the tree's (culprit, monitor.py); for a
# tracer, so is such a stack in the main thread; for a walk, another thread of installed code only too (the
# tree picks a thread's target: round 17)
TRACING = ("sys.settrace", "sys.setprofile")
# ctypes' loads: an installed module's own at its import (dill resolves C functions when imported) are not the
# tree's, whoever imports it
LOADS = ("ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle")
WALKS = ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames")
# walks that read the collector's generations: the permanent one (gc.freeze), where the grader's objects
# made before the tree's code are, is never among them (docs/security.md, 3d)
HIDDEN_FROM = ("gc.get_objects", "gc.get_referrers")


def is_file_source(args):
    """Whether compile's source is the named file's content."""
    source, path = args[0], args[1]
    if type(source) not in (str, bytes) or type(path) is not str:
        return False
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return source == data or (type(source) is str and source.encode("utf-8", "surrogateescape") == data)
