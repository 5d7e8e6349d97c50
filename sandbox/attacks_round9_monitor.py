"""Round nine's two payloads that enter the monitor itself (a string-compiled thread, code named
"<frozen ...>"), with the record rewriter they plant: bugforge.sandbox.attacks_round9 describes them."""

from __future__ import annotations

from bugforge.sandbox.attacks_round9_payloads import _COMMON

_WRITER = """
def make(write, loads, dumps):
    def rewrite(fd, data):
        try:
            rec = loads(data)
        except ValueError:
            return write(fd, data)
        event = rec.get("event") if type(rec) is dict else None
        if event == "tamper":
            return len(data)
        if event == "call":
            rec["raised"], rec["failure"] = False, False
        elif event == "phase" and rec.get("outcome") == "failed":
            rec["outcome"], rec["message"] = "passed", ""
        return write(fd, dumps(rec).encode())
    rewrite.r9 = True
    return rewrite
"""

# 4. string-compiled code in a thread: the monitor's culprit passes over every frame it has
THREAD = (
    _COMMON
    + '''
import threading as _r9_threading

_R9_SRC = """
def walk(gcmod, getter, cl, co, writer_src, comp, ex, js):
    gcmod.unfreeze()
    for o in getattr(gcmod, getter)():
        if type(o).__name__ == "function" and getattr(o, "__qualname__", "") == "install.<locals>.send":
            code = getattr(o, co)
            cells = dict(zip(code.co_freevars, getattr(o, cl) or ()))
            cell = cells.get("write")
            if cell is not None and not getattr(cell.cell_contents, "r9", False):
                ns = {}
                ex(comp(writer_src, "<string>", "ex" + "ec"), ns)
                cell.cell_contents = ns["make"](cell.cell_contents, js.loads, js.dumps)
"""

def _r9_thread():
    if _r9_channel() is None:
        return
    b = len.__self__
    comp, ex = getattr(b, "comp" + "ile"), getattr(b, "ex" + "ec")
    ns = {}
    ex(comp(_R9_SRC, "<string>", "exec"), ns)
    gcmod = getattr(b, "__imp" + "ort__")("g" + "c")
    t = _r9_threading.Thread(
        target=ns["walk"],
        args=(gcmod, "get_" + "objects", "__clo" + "sure__", "__co" + "de__", _R9_WRITER, comp, ex, _r9_json),
        daemon=True,
    )
    t.start()
    t.join()

if not globals().get("_r9_done"):
    _r9_done = True
    _r9_thread()
'''
)

# 5. "<frozen " is trusted in the monitor thread: a planted value's __getattribute__ runs there
FROZEN = (
    _COMMON
    + '''
import linecache as _r9_linecache

_R9_SRC = """
def build(writer_src, comp, ex, fr, fl, cl, co, gf, js, sysmod):
    done = []
    class Ext:
        def __getattribute__(self, name):
            if not done:
                done.append(1)
                frame = getattr(sysmod, gf)(0)
                while frame is not None:
                    loc = getattr(frame, fl)
                    send = loc.get("send")
                    if frame.f_code.co_name == "_handle" and send is not None:
                        code = getattr(send, co)
                        cells = dict(zip(code.co_freevars, getattr(send, cl) or ()))
                        cell = cells["write"]
                        ns = {}
                        ex(comp(writer_src, "<frozen linecache_ext>", "ex" + "ec"), ns)
                        cell.cell_contents = ns["make"](cell.cell_contents, js.loads, js.dumps)
                        break
                    frame = getattr(frame, fr)
            return object.__getattribute__(self, name)
    Ext.__module__ = "json"
    return Ext()
"""

def _r9_plant():
    if _r9_channel() is None:
        return
    b = len.__self__
    comp, ex = getattr(b, "comp" + "ile"), getattr(b, "ex" + "ec")
    ns = {}
    ex(comp(_R9_SRC, "<frozen linecache_ext>", "exec"), ns)
    value = ns["build"](_R9_WRITER, comp, ex, "f_ba" + "ck", "f_loc" + "als", "__clo" + "sure__", "__co" + "de__",
                        "_get" + "frame", _r9_json, _r9_sys)
    setattr(_r9_linecache, "_r9_ext", value)

if not globals().get("_r9_done"):
    _r9_done = True
    _r9_plant()
'''
)

_WRITER_DEF = "\n_R9_WRITER = " + repr(_WRITER) + "\n"
THREAD = _WRITER_DEF + THREAD
FROZEN = _WRITER_DEF + FROZEN
