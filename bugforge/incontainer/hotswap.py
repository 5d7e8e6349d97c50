"""Hot swap for the preloaded test server: a change confined to function bodies (or a literal default
of a plain function, or methods that changed places in their class) goes into the live functions of
the modules the server imported, instead of a re-import. LiveCode.plan compiles each changed file and
its source as imported and says what to swap, or None when the change is of another kind; LiveCode.swap
(in a run's child) swaps it. docs/test-server.md. Python 3.9, standard library only."""

import gc
import os
import sys
import types

from .source import literal_default_changes, moved_methods

CO_OPTIMIZED = 0x1  # a function body (not a module or class body)


class LiveCode:
    """The project's modules as the preload imported them, and every live function of them."""

    def __init__(self):
        self.sources = {}  # real path -> (file name as imported, source as imported)
        self.functions = {}  # (file name, name, first line) of a code object -> the live functions running it

    def index(self, cwd):
        """Find the project's modules and every live function of them (decorated, registered and
        closure copies too), once: a child swaps code without walking the whole heap (which also copies
        every page of it)."""
        root = os.path.realpath(cwd) + os.sep
        for m in list(sys.modules.values()):
            f = getattr(m, "__file__", None) or ""
            if f.endswith(".py") and os.path.realpath(f).startswith(root):
                with open(f, encoding="utf-8") as fh:
                    self.sources[os.path.realpath(f)] = (f, fh.read())
        files = {f for f, _ in self.sources.values()}
        gc.collect()  # (the project's functions, made after the server's freeze: in sight, the grader's not)
        for obj in gc.get_objects():
            if type(obj) is types.FunctionType and obj.__code__.co_filename in files:
                c = obj.__code__
                self.functions.setdefault((c.co_filename, c.co_name, c.co_firstlineno), []).append(obj)
        gc.freeze()

    def plan(self, paths, cwd):
        """{(file, name, first line, bytecode) of a live function's code: its new code, ("defaults", file,
        name, first line): its DefaultChange} for the changed files `paths`, or None."""
        plan = {}
        for rel in paths:
            real = os.path.realpath(os.path.join(cwd, rel))
            if real not in self.sources:
                continue  # not imported by this server: the run imports it fresh
            fname, old_src = self.sources[real]
            found = _file_plan(real, fname, old_src)
            if found is None:
                return None
            pairs, changes = found
            for ch in changes:
                plan[("defaults", fname, ch.name, ch.first_line)] = ch
            for o, n in pairs:
                key = (fname, o.co_name, o.co_firstlineno, o.co_code)
                if plan.get(key, n) is not n:
                    return None  # two functions the live objects cannot tell apart
                plan[key] = n
        return plan

    def swap(self, plan):
        """Swap the planned code and defaults into the live functions; False when a function's defaults
        are not the ones its source gave it (something set them at import: importing the new source
        would not just change the literal)."""
        for key, change in plan.items():
            if key[0] == "defaults" and not all(_set_defaults(fn, change) for fn in self.functions.get(key[1:], ())):
                return False
        for key, new in plan.items():
            for fn in self.functions.get(key[:3], ()) if key[0] != "defaults" else ():
                if fn.__code__.co_code == key[3]:
                    fn.__code__ = new
        return True


def _file_plan(real, fname, old_src):
    """([(old code, new code)], [DefaultChange]) for the file at `real` (imported from `old_src`), or None
    where its new source cannot be swapped in."""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not os.path.isfile(real):
                return None
            new_src = f.read(10**7)
        old = compile(old_src, fname, "exec", dont_inherit=True)
        new = compile(new_src, fname, "exec", dont_inherit=True)
    except Exception:  # noqa: BLE001 (unreadable or not compilable, for whatever reason: the run imports it fresh)
        return None
    pairs = []
    if _pair(old, new, pairs):
        return pairs, []
    # a signature whose literal default changed, or methods that changed places: the module compiles the
    # same but for that value, or that order
    try:
        text = new_src.decode("utf-8")
        changes = literal_default_changes(old_src, text)
        moved = not changes and moved_methods(old_src, text)
    except Exception:  # noqa: BLE001 (a source too deep to walk, or not UTF-8: the run imports it fresh)
        return None
    pairs = []
    if not (changes or moved) or not _pair(old, new, pairs, loose=True):
        return None
    return pairs, changes


def changes_defaults(plan):
    """Whether a plan sets literal defaults (a swap that can find the live value is not the old one)."""
    return any(key[0] == "defaults" for key in plan or ())


def _shape(c):
    return (
        c.co_code,
        c.co_names,
        c.co_varnames,
        c.co_freevars,
        c.co_cellvars,
        c.co_flags,
        c.co_argcount,
        c.co_kwonlyargcount,
        c.co_posonlyargcount,
        c.co_name,
        getattr(c, "co_exceptiontable", b""),
    )


def _consts(c):
    return [x for x in c.co_consts if not isinstance(x, types.CodeType)], [
        x for x in c.co_consts if isinstance(x, types.CodeType)
    ]


def _same_values(xs, ys):
    return len(xs) == len(ys) and all(type(x) is type(y) and repr(x) == repr(y) for x, y in zip(xs, ys))


def _pair(a, b, pairs, loose=False):
    """Walk two compilations of a file. Module and class bodies must compile the same; a function may
    change (then it and every function nested in it are paired, so closures made at import change too).
    False when the change is not of that kind. With `loose` the caller has checked the syntax trees:
    outside function bodies only literal defaults differ, or methods changed places in their classes;
    either changes how a body compiles (its constants' numbering, its order), so module and class bodies
    need only hold code objects of the same names, which are paired by name."""
    va, ca = _consts(a)
    vb, cb = _consts(b)
    func = a.co_flags & CO_OPTIMIZED and b.co_flags & CO_OPTIMIZED
    if func:
        if a.co_name != b.co_name or a.co_freevars != b.co_freevars:
            return False
        if a != b:  # code objects compare line numbers too: a function that only moved is swapped as well
            pairs.append((a, b))
    elif loose:
        if a.co_name != b.co_name:
            return False
        ca, cb = sorted(ca, key=lambda c: c.co_name), sorted(cb, key=lambda c: c.co_name)  # (stable: a
        # name repeats only for what cannot move, lambdas and comprehensions, which keep their order)
    elif _shape(a) != _shape(b) or not _same_values(va, vb):
        return False
    return len(ca) == len(cb) and all(_pair(x, y, pairs, loose) for x, y in zip(ca, cb))


def _set_defaults(fn, change):
    defaults, kwdefaults = list(fn.__defaults__ or ()), dict(fn.__kwdefaults__ or {})
    for i, (old, new) in change.defaults.items():
        if i >= len(defaults) or not _same_values([defaults[i]], [old]):
            return False
        defaults[i] = new
    for name, (old, new) in change.kwdefaults.items():
        if name not in kwdefaults or not _same_values([kwdefaults[name]], [old]):
            return False
        kwdefaults[name] = new
    fn.__defaults__ = tuple(defaults) if defaults else None
    fn.__kwdefaults__ = kwdefaults or None
    return True
