"""The test process's monitor: an audit hook (PEP 578) that holds the verdict channel and its key.

`install` runs when the probe is imported, before any code of the tree (start.py); no Python code can
remove an audit hook. The state (the channel's descriptor, the run's key) and every check live in the
monitor's own thread (handoff.py), which the tree's code reaches only through audited steps, each refused.
The grader's own events (events.OWN_EVENTS; docs/security.md, 3), each from its own code only: records
(Report.emit: HMAC under the run's key, sequence number, channel.py), the probe's pinned state, collected
tests, the witness's compiled modules and test exits, what unittest registers, looks up and makes
(casecode.py); `bugforge.tamper` from anywhere. It also judges what events.py lists. Python 3.9+."""

import _hashlib
import _socket
import gc
import hmac
import json
import os
import sys
import types
import unittest

from . import handoff, names, origin, witness
from .defined import item_problems
from .events import (  # (the probe imports the events from here too)
    ASSERTER,
    ATTR,
    CHANNEL,
    COMPILED,
    DIRECT,
    EXIT,
    FAILED,
    FRAME_READS,
    HARMLESS,
    HELD,
    HIDDEN_FROM,
    ITEMS,
    MARSHAL,
    OWN_EVENTS,
    PIN,
    PROC_FD,
    RECORD,
    REGISTERED,
    SWAPS,
    TAMPER,
    WATCHED,
)
from .installed import CLASS_DICT, FROZEN, MRO, installed_value, native_is_the_images, plain_keys  # noqa: I001

CODE, FRAME, TRACEBACK = types.CodeType, types.FrameType, types.TracebackType
RESUMABLE = 0x20 | 0x80 | 0x200  # a generator's, coroutine's or async generator's code (CO_ flags)
CHAIN, _STARTED = 256, []  # (entries of a traceback judged at its first read; one install per process)


class Refused(Exception):
    """An event the monitor refuses: raised in the thread that raised it, as a PermissionError."""


def install(root, own_dir, installed, codes):  # noqa: C901, PLR0915 (one closure: its state is in no namespace)
    """Add the hook (once per process). root: the tree; own_dir: the probe's package directory;
    installed: directories of installed code; codes: the code objects of the probe's own functions that
    alone may raise each event ({RECORD: Report.emit, CHANNEL: channel.sender, PIN: Probe.pin, ITEMS:
    the probe's collection hook, "watchdog": Limits._watchdog, the one thread that may send a record})."""
    if _STARTED:
        return
    _STARTED.append(True)
    import threading

    state = {"fd": None, "key": b"", "seq": 0, "pid": None, "pinned": (), "snap": None, "compare": None,
             "accepted": {}, "pin_pid": None, "watched": frozenset(), "items": {}, "items_pid": None, "started": False,
             "bindings": (), "defined": [], "shadows": (), "current": None}  # fmt: skip
    dumps, loads, write, getpid, getframe = json.dumps, json.loads, os.write, os.getpid, sys._getframe
    mac_of, seen = getattr(_hashlib, "hmac_digest", None) or hmac.digest, witness.Witness()  # (OpenSSL's C)
    main, walking, cleared = threading.main_thread().ident, [False], {}  # (walking: see inline; cleared: handoff)
    root = root.rstrip("/") + "/"

    def own_walk(fn):
        """fn walks the event's frames by exact types only (frames' f_code and f_back, code's co_filename,
        methods of exact str): no code of the tree can run in it, so `inline` does not judge its reads
        of f_code again (each such judgement walks the monitor thread's stack: the cost of grading)."""

        def walked(*args):
            if walking[0]:
                return fn(*args)
            walking[0] = True
            try:
                return fn(*args)
            finally:
                walking[0] = False

        return walked

    def send(record):
        """A record to the collector: its JSON with the next sequence number, and an HMAC of that under
        the run's key (channel.py), computed by OpenSSL's C function bound before any code of the tree."""
        if state["fd"] is not None and getpid() == state["pid"]:
            state["seq"] += 1
            body = dumps(dict(record, seq=state["seq"]))
            mac = mac_of(state["key"], body.encode(), "sha256").hex()
            try:
                write(state["fd"], dumps({"body": body, "mac": mac}).encode())
            except OSError:
                pass

    def tamper(reason):
        send({"event": "tamper", "reason": reason})

    def hide():
        """Out of every walk's sight, before any code of the tree (docs/security.md, 3d): gc.freeze puts
        what the collector tracks in its permanent generation, which gc.get_objects and get_referrers never
        read. The monitor's dicts that fill later are tracked when it runs (an empty dict, or one of atoms
        after a collection, is not: once filled it would be young, in sight) and stay so, frozen."""
        later = [
            state,
            state["items"],
            state["accepted"],
            cleared,
            *(d for d in vars(seen).values() if type(d) is dict),
        ]
        later += [state["accepted"]["volatile"]] if "volatile" in state["accepted"] else []
        for d in later:
            d[hide] = []  # (a container: the dict is tracked from here)
        gc.freeze()
        for d in later:
            del d[hide]

    def inline(event, args):
        """An event raised in the monitor thread: only the grader's own code (or installed code it
        called) may raise one there; code of the tree that ran there (a method of an object a check
        read, a finalizer the collector ran) is refused at its first audited step."""
        if walking[0] or event in HARMLESS or (event == ATTR and not (plain(args, 1) and args[1] in FRAME_READS)):
            return  # (the walk's own events; the checks' reads of ids and function code)
        walking[0] = True
        try:
            frame, foreign = getframe(2), False
            while frame is not None and not foreign:
                name = frame.f_code.co_filename
                foreign = frame.f_globals is not hook_globals and (
                    (type(name) is not str or not name.startswith(trusted)) and id(frame.f_code) not in frozen
                )
                frame = frame.f_back
        finally:
            walking[0] = False
        if foreign:
            tamper("code of the tree ran inside the grader's checks (%s)" % event)
            raise PermissionError("bugforge: code of the tree may not run inside the grader's checks")

    def judge(event, args, frame, thread):
        """An event another thread raised (handoff.py): a refusal's message, or None."""
        if frame is None:
            return tamper("an event came from a thread that was not waiting for the monitor")
        try:
            _handle(event, args, frame, thread)
        except Refused as e:
            return e.args[0]
        except BaseException as e:  # noqa: BLE001 (the tree's code, refused, or a failed check: not raised there)
            tamper(
                "the grader's check of an event failed (%s)" % ("refused" if type(e) is PermissionError else "an error")
            )
        return None

    def reaches_monitor(frame):
        """Whether a frame's callers lead into the monitor thread (to serve, at its stack's bottom)."""
        while type(frame) is FRAME:
            if frame.f_globals is serving:
                return True
            frame = frame.f_back
        return False

    @own_walk
    def caller_is(event, frame):  # (HELD: one of unittest's recompiled methods)
        return any(frame.f_code is c for c in codes[event]) if event == HELD else frame.f_code is codes[event]

    caller_code = own_walk(lambda frame: getattr(frame.f_back, "f_code", frame.f_code))

    # a traceback whose frame's callers (a function's: a generator's change as it resumes) are not the monitor's
    settled = own_walk(lambda tb: not tb.tb_frame.f_code.co_flags & RESUMABLE and not reaches_monitor(tb.tb_frame))

    frame_code = own_walk(lambda frame: frame.f_code)

    def end_current(seconds):
        """The running test's protocol is over (the next one starts, or the session finishes): its `end`,
        with the seconds its passed teardown took (report.py), after the checks of a test's end."""
        if state["current"] is not None:
            deliver(
                {"event": "end", "nodeid": state["current"], "duration": seconds if type(seconds) is float else 0.0}
            )

    def deliver(record):
        seen.record(record)
        for reason in checks(record) if record.get("event") in ("start", "end", "finish") else ():
            tamper(reason)
        send(record)

    def checks(record):
        """Before a test's start (the first), its end and the session's finish: what changed."""
        kind = record.get("event")
        if kind == "start" and state["started"]:
            return []
        state["started"] = True
        held = state["pinned"] + state["bindings"]
        out = sorted({"%s holds a key that is not a string" % w for w, ns, _k, _v in held if not plain_keys(ns)})
        out += [
            "%s.%s was replaced during the run" % (w, k)
            for w, ns, k, v in (held if not out else ())  # (a lookup among such keys runs their code)
            if ns.get(k, state) is not v
        ]
        if kind == "finish":
            out += state["defined"]
        if state["snap"] is not None:
            out += state["compare"](state["snap"], kind == "finish", state["accepted"])
        if kind == "end" and state["items"]:
            out += item_problems(record.get("nodeid"), state["items"].get(record.get("nodeid")))
        if kind == "end":
            out += seen.problems(record.get("nodeid"))
        shadowed = [w for w, ns, hidden in state["shadows"] if not plain_keys(ns) or not hidden.isdisjoint(ns)]
        out += ["%s was given a global that hides a builtin" % w for w in shadowed]  # (plain keys: no key's code runs)
        return out

    def _handle(event, args, frame, thread):  # noqa: C901, PLR0915 (one branch per event the monitor judges)
        """frame: the frame that raised the event (sys.audit's caller); thread: its thread's ident."""
        if event in HIDDEN_FROM and not gc.get_freeze_count():
            gc.freeze()  # (gc.unfreeze, which no event tells, put the grader's objects back in sight: hidden again)
        if event == RECORD:
            # (a copy in exact types, by json's C code: a node id of the tree's str subclass would run
            # its __hash__ and __eq__ in every lookup here)
            record = loads(dumps(args[0])) if type(args[0]) is dict else None
            if not caller_is(RECORD, frame):
                tamper("a record was sent from outside the probe")
            elif not caller_code(frame).co_filename.startswith(own_dir):
                tamper("a record was sent through the probe by code that is not the probe's")
            elif thread != main and caller_code(frame) is not codes["watchdog"]:
                tamper("a record was sent from another thread")
            elif type(record) is not dict:
                tamper("a record that is not a dictionary was sent")
            elif on_behalf_of_tree(frame):
                tamper("a record was sent on behalf of the tree's code")
            else:
                for kind, fn in zip(("trace", "profile"), args[1:3]):  # (the test thread's own: Report.emit)
                    if fn is not None and not installed_value(fn, installed, root):
                        tamper("a %s function from outside the installed code is set in the tests' thread" % kind)
                cleared.clear()  # (holding no traceback past a record: the tests' objects die as they would)
                if record.get("event") in ("start", "finish"):
                    end_current(record.pop("before", 0.0))
                    state["current"] = record.get("nodeid") if record["event"] == "start" else None
                deliver(record)
        elif event == EXIT:
            reason = seen.exited(frame, frame_code(frame))
            if reason:
                tamper(reason)
        elif event == "exec" and args and type(args[0]) is CODE:
            seen.executed(args[0])
        elif event == FAILED:  # (casecode.failed_part: from anyone, since it can only fail a test)
            seen.failed()
        elif event == TAMPER:
            tamper(args[0] if args and type(args[0]) is str else "a tamper reason that is not a string was raised")
        elif event in (CHANNEL, PIN, ITEMS, COMPILED, REGISTERED, ASSERTER, HELD) and not caller_is(event, frame):
            tamper("%s was raised from outside the probe" % event)
        elif event == COMPILED:
            seen.compiled(args[0])
        elif event == REGISTERED:  # (addTypeEqualityFunc, recompiled: casecode.py; the test's own, in its thread)
            named = len(args) > 2 and type(args[2]) is str  # (a name: vetted takes only TestCase's own defaults)
            if thread != main or (not named and culprit(frame, thread, event)):
                tamper("code of the tree registered an asserter for assertEqual")
            else:
                seen.register(args)
        elif event in (ASSERTER, HELD):  # (casecode.py: an asserter, a context's state, refused where they are used)
            own = thread == main and not culprit(frame, thread)  # (made by the test's own code, in its thread)
            why = seen.unregistered(args) if event == ASSERTER else seen.held(args, own)
            if why:
                tamper(why)
                raise Refused("bugforge: " + why)
        elif event == CHANNEL:
            if state["pid"] == getpid():
                tamper("the verdict channel was replaced")
            else:
                state.update(fd=args[0], key=bytes.fromhex(args[1]), seq=0, pid=getpid())
                hide()
        elif event == PIN:  # the probe's state once it is whole: once per process, or again before the channel
            if state["pid"] == getpid() and state["pin_pid"] == getpid():
                tamper("the probe's pinned state was replaced")
            else:
                pinned, snap, compare = args
                state.update(pin_pid=getpid(), snap=snap, compare=compare, accepted={"volatile": {}})
                state["watched"] = frozenset(map(id, snap[1][1]))
                state["pinned"] = tuple(
                    (w, ns, k, ns[k]) for w, ns, keys in pinned for k in (keys or list(ns)) if k in ns
                )
                hide()
        elif event == ITEMS:
            if state["items_pid"] == getpid():
                tamper("the collected tests were replaced")
            else:
                items, bindings, defined, tests, shadows = args
                state["items"].update({node: (item, fn, code, type(item)) for node, item, _obj, fn, code in items})
                state.update(  # (the items table is the state's own, frozen: security.md 3d; what comes in, immutable)
                    items_pid=getpid(),
                    bindings=tuple(bindings),
                    shadows=tuple(shadows),
                    defined=tuple(defined) + tuple(seen.collected(tests)),  # (made after the freeze: immutable)
                )
        elif event in MARSHAL or (event == "compile" and plain(args, 1)):
            why = made_code(event, args, frame)
            if why:
                tamper("code of the tree %s" % why)
                raise Refused("bugforge: code of the tree may not name code as the grader's or the tests' here")
        elif event == "import":  # (handoff.py hands over only a native extension's load: its file)
            if not native_is_the_images(args[1], installed + (own_dir,), root):
                tamper("loaded native code that is not the image's own (%s)" % args[1])
                raise Refused("bugforge: native code the image does not hold may not be loaded")
        elif event == "os.exec" and getpid() == state["pid"]:
            tamper("the test process tried to run another program in its place")
            raise Refused("the test process may not exec")
        elif event == "object.__setattr__" and plain(args, 1) and args[1] in SWAPS and id(args[0]) in state["watched"]:
            tamper("the %s of %s was swapped" % (args[1], getattr(args[0], "__qualname__", "a watched function")))
        elif event == ATTR and plain(args, 1) and type(args[0]) is TRACEBACK and settled(args[0]):
            tb, n = args[0], 0  # (its reads until the next record: no handoff; so its successors', which
            while type(tb) is TRACEBACK and n < CHAIN and settled(tb):  # a walk of the traceback reads next)
                cleared[id(tb)] = tb
                tb, n = tb.tb_next, n + 1
        elif event == ATTR and plain(args, 1) and args[1] != "f_code" and culprit(frame, thread):
            if reaches_monitor(getattr(args[0], args[1], None)):  # (a traceback the monitor thread made)
                tamper("code of the tree took a frame of the grader's monitor thread (%s)" % args[1])
                raise Refused("the monitor thread's frames are not to be read")
        elif event == ATTR and plain(args, 1) and args[1] == "f_code" and type(args[0]) is FRAME:
            # (its constants lead to the monitor: handoff.py; a tracer of installed code, coverage, reads it)
            if args[0].f_code is hook_code and culprit(frame, thread):
                tamper("code of the tree read the code of the grader's audit hook from its frame")
                raise Refused("the audit hook's frames are not to be read")
        else:
            reason = _judge(event, args, frame)
            if reason and (direct(frame) if event in DIRECT else culprit(frame, thread, event)):
                tamper("code of the tree %s (%s)" % (reason, event))
                if event in WATCHED and event not in DIRECT:  # (walking objects, frames, native code: in a
                    raise Refused("code of the tree may not do that here (%s)" % event)  # fork too, no record)

    def plain(args, i):  # (an exact str: no method of the tree's objects runs inside the hook)
        return len(args) > i and type(args[i]) is str

    def _judge(event, args, frame):  # noqa: C901 (one branch per event judged by what it does)
        if event in WATCHED:
            return WATCHED[event]
        if event == "object.__setattr__" and plain(args, 1) and args[1] in SWAPS:
            return "swapped a function's %s" % args[1]
        if event == "object.__setattr__" and plain(args, 1) and args[1] == "__class__" and len(args) > 2:
            new = args[2]
            if any(c is unittest.TestCase for c in MRO(type(args[0]))):  # (a check reads its class at the end only)
                return "changed the class of a test case"
            if issubclass(type(new), type) and not plain_keys(CLASS_DICT(new)):
                return "gave an object a class whose namespace holds a key that is not a string"
            if issubclass(type(new), type) and "__getattribute__" in CLASS_DICT(new):
                return "gave an object a class that answers every attribute lookup"
        if event in ("os.listdir", "os.scandir", "open") and args:
            path = args[0].decode("utf-8", "replace") if type(args[0]) is bytes else args[0]
            if type(path) is str and PROC_FD.match(path):
                return "listed a process's descriptors"
        if event == "socket.__new__" and state["fd"] is not None and args and issubclass(type(args[0]), _socket.socket):
            try:
                same = _socket.socket.fileno(args[0]) == state["fd"]  # (the C method: never an override)
            except OSError:
                same = False
            return "wrapped the verdict channel in a socket" if same else None
        return None

    always = {*OWN_EVENTS, "os.exec", "socket.__new__", *WATCHED, *MARSHAL}
    wanted = {
        "always": frozenset(always),
        "pseudo": names.PSEUDO,
        "setattr": frozenset(SWAPS) | {"__class__"},
        "root": root,
        "cleared": cleared,
    }
    hook, hook_code, serving = handoff.start(inline, judge, wanted, own_walk)
    trusted, hook_globals = (own_dir,) + tuple(installed), hook.__globals__  # (by file: never a name a string can take)
    handoff.nondumpable()
    frozen = FROZEN | handoff.program_code()  # (frozen modules' code and the `-c` program
    # that started the process: trusted by identity, as installed files by path)
    culprit, direct, on_behalf_of_tree = origin.judges(
        root, own_dir, installed, seen, main, frozen, own_walk, codes.get("entry", ())
    )
    tree_did = lambda frame: on_behalf_of_tree(frame) or direct(frame)  # noqa: E731
    made_code = names.judge(root, own_dir, installed, codes, tree_did, own_walk)
    sys.addaudithook(hook)
