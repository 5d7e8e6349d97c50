"""Who caused an audit event, for the monitor (monitor.py; docs/security.md, 3): the tree's non-test code,
or code the grader need not distrust (its own, installed code, the tests' own).

- The tests' own code is what the grader compiled from the test files (`Witness.test_code`, by the
  identity of each code object). Where a capability is used, only that counts, never a file named like a
  test: a file name is the tree's to choose (round 18 compiled its object walk under `test_*.py`). Elsewhere
  a frame of a test file's name counts as the tests' too: a library's wrapper of a test function takes
  the test's file name (Hypothesis's `@given`, through `code.replace`).
- A capability (CAPABILITIES: an object walk, an asserter registered for assertEqual) is used by the code
  that asks for it, by name: the innermost Python frame under the call names it (a global's, an
  attribute's or a closure's name, or a constant); where that frame is an installed library's, its
  caller named that function; where it is the grader's own, each frame outward named the one inside it
  up to the grader's entry (by identity: the held session's start, whose heap index walks). A frame that
  does not had the capability used *in* it by a callable the interpreter ran: a finalizer, a weakref or
  garbage-collector callback, a C iterator's consumer, a key's `__eq__` in a lookup (round 18 ran its
  walk from weakref.finalize in the test's own frame; round 19 ran the grader's own heap indexer from a
  module's C `__getattr__` that pytest's collection called, and from a warning's `__str__`). Such a use
  is the tree's.
- While the garbage collector runs in the event's thread (the monitor's own gc callbacks, first and
  last in `gc.callbacks`, say when), or while a gc callback that is not installed code is registered,
  a capability is the tree's too.
Python 3.9+, standard library."""

import _thread
import gc
import types

from .events import LOADS, REGISTERED, TRACING, WALKS
from .installed import test_module_name

CAPABILITIES = {
    "gc.get_objects": "get_objects",
    "gc.get_referrers": "get_referrers",
    "gc.get_referents": "get_referents",
    "sys._current_frames": "_current_frames",
    REGISTERED: "addTypeEqualityFunc",  # (raised by the recompiled method: its caller must name it)
}


def judges(root, own_dir, installed, seen, main, frozen, own_walk, entry):  # noqa: C901 (closures: no namespace)
    """(culprit, direct, on_behalf_of_tree) for the monitor. root: the tree; own_dir: the probe's package;
    installed: directories of installed code; seen: the Witness; main: the main thread's ident; frozen:
    ids of code trusted by identity; own_walk: the monitor's marker for walks of exact types only; entry:
    ids of the grader's own code that may ask for a capability (the test server's)."""
    collection = _collections(installed)

    def untrusted(code):
        """Code of the tree's non-test code, or of a file outside the tree and the installed directories
        (what the grader compiled from the test files is the tests' own, whatever its name)."""
        filename = code.co_filename
        if type(filename) is not str:
            return True
        if not filename.startswith("/") or filename.startswith(installed) or filename.startswith(own_dir):
            return False
        if id(code) in seen.test_code:
            return False
        # (a test file by name: a library's wrapper of a test takes its name; no other code may: names.py)
        return not filename.startswith(root) or not test_module_name(filename.rpartition("/")[2])

    def names(code, name):  # (a global's, an attribute's or a closure's name, or a constant: casecode's lookups)
        return any(type(n) is str and n == name for n in code.co_names + code.co_freevars + code.co_consts)

    def asked(frame, event):
        """Whether the capability was asked for by name: the innermost Python frame under the call (the
        caller of the recompiled method, for a registration) names it; an installed library's function
        that does was called by name; the grader's own code, by name all the way out from its entry
        (`entry`: ids of code, the held session's start, whose heap index walks)."""
        if event == REGISTERED and frame is not None:
            frame = frame.f_back
        name = CAPABILITIES[event]
        if frame is None or not names(frame.f_code, name):
            return False
        filename = frame.f_code.co_filename
        if type(filename) is str and filename.startswith(own_dir):
            while frame is not None and names(frame.f_code, name):
                if id(frame.f_code) in entry:
                    return True
                name, frame = frame.f_code.co_name, frame.f_back
            return False
        if type(filename) is str and filename.startswith(installed) or id(frame.f_code) in frozen:
            return frame.f_back is not None and names(frame.f_back.f_code, frame.f_code.co_name)
        return id(frame.f_code) in seen.test_code  # (the tests' own, by identity: a name is the tree's to choose)

    @own_walk
    def culprit(frame, thread, event=""):
        """Whether the event comes from the tree's non-test code: a capability not asked for where it is
        used, or used during a collection; else the first frame outward from the one that raised it that
        is a file not installed (code compiled from a string is passed over; a file outside the tree and
        the installed directories, one written at run time, counts as the tree's)."""
        if event in CAPABILITIES and (not asked(frame, event) or collection(thread)):
            return True
        if event in LOADS and importing(frame, installed, frozen):
            return False
        strings = False
        while frame is not None:
            code = frame.f_code
            filename = code.co_filename
            if type(filename) is not str or (filename.startswith("/") and not filename.startswith(installed)):
                # (a tracer set by code compiled from a string that the tests' own code called: the tree's)
                return untrusted(code) or (strings and event in TRACING)
            strings = strings or not (filename.startswith("/") or id(code) in frozen)
            frame = frame.f_back
        return (strings or event in WALKS) and (event in TRACING or thread != main)

    @own_walk
    def direct(frame):
        """Whether the event's own source is the tree's non-test code: the first frame outward that is a
        file, installed or not; or code compiled from a string before it (not the frozen modules'): code
        the tree made from a string and the tests' code called is the tree's (round 24)."""
        while frame is not None:
            filename = frame.f_code.co_filename
            if type(filename) is not str or filename.startswith("/"):
                return untrusted(frame.f_code)
            if id(frame.f_code) not in frozen:
                return True
            frame = frame.f_back
        return False

    @own_walk
    def on_behalf_of_tree(frame):
        """Whether any frame from `frame` outward is untrusted code (a record must come from pytest's own
        run loop through the probe, never on behalf of the tree's code)."""
        while frame is not None:
            if untrusted(frame.f_code):
                return True
            frame = frame.f_back
        return False

    return culprit, direct, on_behalf_of_tree


def importing(frame, installed, frozen):
    """Whether the frames from `frame` outward, installed code only, reach an installed module's own
    top-level code (its import) before any other code."""
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if type(filename) is not str or not (filename.startswith(installed) or id(code) in frozen):
            return False
        if code.co_name == "<module>" and filename.startswith(installed):
            return True
        frame = frame.f_back
    return False


def _collections(installed):
    """`collection(thread)`: whether a collection runs in `thread` (the monitor's gc callbacks, first and
    last in the collector's list, say when), or a callback of the collector's is not installed code."""
    collecting, callbacks, get_ident = [None], gc.callbacks, _thread.get_ident  # (the list the collector calls)

    def started(phase, info):
        if phase == "start":
            collecting[0] = get_ident()

    def stopped(phase, info):
        if phase == "stop":
            collecting[0] = None

    callbacks.insert(0, started)
    callbacks.append(stopped)

    def foreign(callback):
        if callback is started or callback is stopped:
            return False
        name = callback.__code__.co_filename if type(callback) is types.FunctionType else None
        return type(name) is not str or not name.startswith(installed)

    def collection(thread):
        """Whether a collection runs in `thread`, or a callback of the collector's is not installed code."""
        mine = [c for c in callbacks if c is started or c is stopped]
        return collecting[0] == thread or len(mine) != 2 or any(map(foreign, list(callbacks)))

    return collection
