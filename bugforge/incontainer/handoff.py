"""The monitor's own thread: where every audit event of the test process is judged (docs/security.md, 3d).

The audit hook the interpreter calls (`hook`, made by `start`) holds nothing of the monitor: its code
reaches the monitor thread's channel through *constants* of its code object, which no frame exposes
without an audited read of `f_code` (the monitor refuses that read of this hook's frames), so a frame
of it, seen by a signal handler (which receives the interrupted frame with no audited call) or walked to
by `f_back`, shows only the event and its arguments. For any thread but the monitor's, the hook blocks
the main thread's signals, hands the event over and waits; the monitor thread finds the raising frame
on that thread's stack (under the hook's frame) and judges it there. Python runs signal handlers only in
the main thread, so none ever runs among the monitor's frames; another thread reaches them only through
`sys._current_frames` or `gc` (audited, and tampering). A signal that another thread takes while the
main thread's are blocked still has its Python handler run in the main thread, at the hook's next
bytecode: an event that handler raises while its thread is inside its own handoff is refused (a nested
handoff would wait on the gate its own thread holds). In the monitor thread itself the hook calls
`inline`: an event raised there comes from the monitor's own checks, or from code of the tree that a
check ran (a method of an object it read), which the monitor refuses (monitor.py).

A forked child (the test server's runs) starts its own monitor thread (`os.register_at_fork`); until it
has, and while the interpreter is finalizing, the hook passes events by. Python 3.9, standard library."""

import _signal
import _thread
import os
import sys
import types
import warnings

# the channel, read by the hook through its code's constants: [monitor thread, its pid, gate, wake, done,
# event handed over, result, main thread, threads inside their handoff now]
MON, PID, GATE, WAKE, DONE, BOX, RESULT, MAIN, INSIDE = range(9)

# the hook; each @NAME@ is a constant of its code (see `_hook`). An event the monitor does not judge
# (most of them: attribute reads, imports of Python modules, opens) returns at once, judged by exact types only.
_TEMPLATE = """
def hook(event, args):
    if @ident@() == @ch@[0]:
        return @inline@(event, args)
    if event not in @always@:
        if event == "exec":
            if not (args and type(args[0]) is @code@ and args[0].co_name == "<module>"):
                return None
            if not (type(args[0].co_filename) is str and args[0].co_filename.startswith(@root@)):
                return None
        elif event == "compile":  # (any name that may be a file's: names.py)
            if not (len(args) > 1 and type(args[1]) is str) or args[1].startswith(@pseudo@):
                return None
        elif event == "import":  # (a native extension's load names its file; other imports name none)
            if not (len(args) > 1 and type(args[1]) is str):
                return None
        elif event == "object.__setattr__":
            if not (len(args) > 1 and type(args[1]) is str and args[1] in @setattr@):
                return None
        elif event == "object.__getattr__":
            if not (len(args) > 1 and type(args[1]) is str and args[1] in @frames@):
                return None
            if type(args[0]) is @frame@ and args[1] == "f_code" and args[0].f_globals is not @globals@:
                return None
            if @cleared@.get(@id@(args[0])) is args[0]:
                return None
        elif event in @paths@:
            if not (args and type(args[0]) in @proc@ and args[0].startswith(@proc@[type(args[0])])):
                return None
        else:
            return None
    if @pid@() != @ch@[1] or @finalizing@():
        return None
    me = @ident@()
    if me in @ch@[8]:
        raise @refused@("bugforge: an event raised inside the grader's own handoff (a signal handler)")
    mask = me == @ch@[7]
    if mask:
        mask = @sigmask@(@block@, @all@)
    @ch@[8][me] = True
    @ch@[2].acquire()
    try:
        @ch@[5] = (event, args, me)
        @ch@[3].release()
        @ch@[4].acquire()
        result = @ch@[6]
        @ch@[6] = None
    finally:
        @ch@[2].release()
        @ch@[8].pop(me, None)
        if mask is not False:
            @sigmask@(@setmask@, mask)
    if result is not None:
        raise result
"""


def nondumpable():
    """Make the process non-dumpable (prctl, through ctypes, before any code of the tree): its memory
    (/proc/self/mem, where the run's key is) is then root's to read, not the test user's, in a fork
    too. Where ctypes or prctl is missing the key stays readable there (docs/security.md)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (ImportError, OSError, AttributeError):
        pass


def program_code():
    """The id of the code of the `python -c` program at the bottom of this thread's stack (start.py's, the
    test server's), while no code of the tree has run: a frame of it, named "<string>" like any code
    compiled from a string, is the grader's by the identity of its code."""
    frame = sys._getframe()
    while frame.f_back is not None:
        frame = frame.f_back
    return frozenset((id(frame.f_code),)) if frame.f_code.co_filename == "<string>" else frozenset()


def _hook(consts):
    """The hook function: each @NAME@ of the template becomes the constant consts[NAME] (a float literal
    stands in for it at compilation: the compiler folds no call or subscript of one); its globals are
    consts["globals"], a dict of its own."""
    names = sorted(consts)
    source = _TEMPLATE
    for i, name in enumerate(names):
        source = source.replace("@%s@" % name, "%de-300" % (i + 1))
    stand_in = {float("%de-300" % (i + 1)): consts[name] for i, name in enumerate(names)}
    scope = {}
    with warnings.catch_warnings():  # (calling and subscripting a float literal)
        warnings.simplefilter("ignore")
        exec(compile(source, "<bugforge hook>", "exec"), scope)
    code = scope["hook"].__code__
    code = code.replace(co_consts=tuple(stand_in.get(c, c) if type(c) is float else c for c in code.co_consts))
    return types.FunctionType(code, consts["globals"])  # (its own globals: serve finds its frames)


def start(inline, judge, wanted, quietly):
    """Start the monitor thread; (the audit hook, its code): the caller adds the hook. inline(event,
    args): an event raised in the monitor thread; judge(event, args, frame, ident): an event thread
    `ident` raised, `frame` the frame that raised it (None: not found); judge must not raise, and what
    it returns, when a str, is raised in that thread as a PermissionError (a refusal). wanted: which
    events judge sees ({"always": event names, "pseudo": the prefix of compile's file names that name no file,
    "setattr": attribute names of object.__setattr__, "root": the tree, whose module code's exec it
    sees, "cleared": {id: object} whose frame reads judge has cleared, emptied by judge when it will}; plus
    reads of frames, their code, ..., but not of a frame's f_code unless the frame is the hook's own (only
    those the monitor refuses), and opening or listing a path under /proc). quietly(fn): fn, its
    audited steps (reading other threads' frames) not judged by `inline` (the search for the raising
    frame reads only frames and dicts of ints)."""
    ch = [None, None, None, None, None, None, None, None, {}]  # (no pid yet: events pass by until launched)
    hook = _hook(
        dict(
            wanted, ident=_thread.get_ident, ch=ch, inline=inline, pid=os.getpid, finalizing=sys.is_finalizing,
            sigmask=_signal.pthread_sigmask, block=_signal.SIG_BLOCK, setmask=_signal.SIG_SETMASK,
            all=frozenset(_signal.valid_signals()), code=types.CodeType, paths=("open", "os.listdir", "os.scandir"),
            frames=frozenset(("f_code", "tb_frame", "gi_frame", "cr_frame", "ag_frame")),
            proc={str: "/proc/", bytes: b"/proc/"}, frame=types.FrameType, id=id, refused=PermissionError,
            globals={"__builtins__": __builtins__},
        )
    )  # fmt: skip
    frames, code, mine = sys._current_frames, hook.__code__, hook.__globals__  # (f_globals: no audit event)
    serving = globals()  # (serve's frames: the bottom of the monitor thread's stack)

    @quietly
    def raising(ident):
        """The frame that raised the event thread `ident` handed over: the caller of its hook's frame."""
        frame = frames().get(ident)
        while frame is not None and frame.f_globals is not mine:
            frame = frame.f_back
        return frame.f_back if frame is not None else None

    def serve():
        wake, done = ch[WAKE], ch[DONE]
        while True:
            wake.acquire()
            event, args, ident = ch[BOX]
            frame = raising(ident)
            refusal = judge(event, args, frame, ident)
            # (a new exception: one from here would carry this thread's frames to the tree's code)
            ch[RESULT] = PermissionError("bugforge: " + refusal) if type(refusal) is str else None
            del event, args, frame  # (while their thread holds them: nothing of the tree is freed here)
            done.release()

    def launch():
        ch[PID] = None  # (a forked child: events pass by until its own monitor thread runs)
        ch[GATE], ch[WAKE], ch[DONE] = _thread.allocate_lock(), _thread.allocate_lock(), _thread.allocate_lock()
        ch[WAKE].acquire()
        ch[DONE].acquire()
        ch[MAIN], ch[RESULT], ch[INSIDE] = _thread.get_ident(), None, {}
        try:
            ch[MON] = _thread.start_new_thread(serve, ())
        except BaseException:  # noqa: BLE001 (no monitor, no process: a fork left unwatched would run on)
            os._exit(70)
        ch[PID] = os.getpid()

    launch()
    os.register_at_fork(after_in_child=launch)
    return hook, code, serving
