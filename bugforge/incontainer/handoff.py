"""The monitor's own thread: where every audit event of the test process is judged (docs/security.md, 3d).

The audit hook the interpreter calls (`hook`, made by `start`) holds nothing of the monitor: its code
reaches the monitor thread's channel through *constants* of its code object, which no frame exposes
without an audited read of `f_code` (the monitor refuses that read of this hook's frames), so a frame
of it, seen by a signal handler (which receives the interrupted frame with no audited call) or walked to
by `f_back`, shows only the event and its arguments. For any thread but the monitor's, the hook blocks
the main thread's signals, hands the event over and waits; the monitor thread finds the raising frame
on that thread's stack (under the hook's frame) and judges it there. Python runs signal handlers only in
the main thread, so none ever runs among the monitor's frames; another thread reaches them only through
`sys._current_frames` or `gc` (audited, and tampering). In the monitor thread itself the hook calls
`inline`: an event raised there comes from the monitor's own checks, or from code of the tree that a
check ran (a method of an object it read), which the monitor refuses (monitor.py).

A forked child (the test server's runs) starts its own monitor thread (`os.register_at_fork`); until it
has, and while the interpreter is finalizing, the hook passes events by. Python 3.9, standard library."""

import _thread
import os
import signal
import sys
import types
import warnings

# the channel, read by the hook through its code's constants: [monitor thread, its pid, gate, wake, done,
# event handed over, result, main thread]
MON, PID, GATE, WAKE, DONE, BOX, RESULT, MAIN = range(8)

_TEMPLATE = """
def hook(event, args):
    if 1e-300() == 2e-300[0]:
        return 3e-300(event, args)
    if 4e-300() != 2e-300[1] or 5e-300():
        return None
    mask = 1e-300() == 2e-300[7]
    if mask:
        mask = 6e-300(7e-300, 9e-300)
    2e-300[2].acquire()
    try:
        2e-300[5] = (event, args, 1e-300())
        2e-300[3].release()
        2e-300[4].acquire()
        result = 2e-300[6]
        2e-300[6] = None
    finally:
        2e-300[2].release()
        if mask is not False:
            6e-300(8e-300, mask)
    if result is not None:
        raise result
"""


def _hook(consts):
    """The hook function, its placeholders replaced by the objects they name (see the module doc)."""
    scope = {}
    with warnings.catch_warnings():  # (calling and subscripting a float literal: the placeholders)
        warnings.simplefilter("ignore")
        exec(compile(_TEMPLATE, "<bugforge hook>", "exec"), scope)
    code = scope["hook"].__code__
    code = code.replace(co_consts=tuple(consts.get(c, c) if type(c) is float else c for c in code.co_consts))
    return types.FunctionType(code, {"__builtins__": __builtins__})


def start(inline, judge):
    """Start the monitor thread; (the audit hook, its code): the caller adds the hook. inline(event,
    args): an event raised in the monitor thread; judge(event, args, frame, ident): an event thread
    `ident` raised, `frame` the frame that raised it (None: not found); judge must not raise, and what
    it returns, when a str, is raised in that thread as a PermissionError (a refusal)."""
    ch = [None, None, None, None, None, None, None, None]  # (no pid yet: events pass by until launched)
    hook = _hook(
        {
            1e-300: _thread.get_ident, 2e-300: ch, 3e-300: inline, 4e-300: os.getpid,
            5e-300: sys.is_finalizing, 6e-300: signal.pthread_sigmask,
            7e-300: signal.SIG_BLOCK, 8e-300: signal.SIG_SETMASK, 9e-300: signal.valid_signals(),
        }
    )  # fmt: skip
    frames, code = sys._current_frames, hook.__code__

    def serve():
        wake, done = ch[WAKE], ch[DONE]
        while True:
            wake.acquire()
            event, args, ident = ch[BOX]
            frame = frames().get(ident)
            while frame is not None and frame.f_code is not code:
                frame = frame.f_back
            refusal = judge(event, args, frame.f_back if frame is not None else None, ident)
            # (a new exception: one from here would carry this thread's frames to the tree's code)
            ch[RESULT] = PermissionError("bugforge: " + refusal) if type(refusal) is str else None
            del event, args, frame  # (while their thread holds them: nothing of the tree is freed here)
            done.release()

    def launch():
        ch[PID] = None  # (a forked child: events pass by until its own monitor thread runs)
        ch[GATE], ch[WAKE], ch[DONE] = _thread.allocate_lock(), _thread.allocate_lock(), _thread.allocate_lock()
        ch[WAKE].acquire()
        ch[DONE].acquire()
        ch[MAIN], ch[RESULT] = _thread.get_ident(), None
        ch[MON] = _thread.start_new_thread(serve, ())
        ch[PID] = os.getpid()

    launch()
    os.register_at_fork(after_in_child=launch)
    return hook, code
