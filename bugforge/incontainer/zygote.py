"""bugforge's test server, run as root inside a warm container (copied to /opt/bugforge/bugforge_zygote.py).
It imports pytest once, then serves requests on stdin (one JSON object a line) and answers each with one
JSON line on stdout. A request runs these steps in order, each optional:

    files    {path: text}  written fresh (never through a link a test run left behind)
    before   shell, e.g. restoring the tree           setup    shell, e.g. `git apply`; non-zero stops here
    capture  shell whose stdout comes back            args     pytest arguments: fork a child that runs
    after    shell, e.g. restoring the tree again              pytest with the probe plugin, with a timeout

A fork costs milliseconds; a fresh interpreter with pytest costs hundreds. What the server holds is
frozen out of the garbage collector (gc.freeze): a child's collections scan only its own objects.

`{"preload": [pytest args]}` makes this server a preloaded one: it collects the suite once, in-process,
so the project and its test modules are imported before any child forks (collection and imports are
most of a small suite's time). Where BUGFORGE_PYCACHE names a bytecode cache (the workbench's is
root's, outside the tree), that collection also writes it (then waits for the clock to pass the newest
stamp in the tree, see _settle), and every later run of either server reads
the compiled and assertion-rewritten modules whose sources are unchanged; runs do not write it (and a
run that does, a test calling compileall as root, makes the server drop the whole cache). Such a server only takes runs with `"hot": [changed .py files]`: it
compiles each changed file and its source as imported, and accepts the change only if everything outside
function bodies compiles to the same code (same module and class level, decorators, defaults) and no
function changes its free variables; the child then swaps the changed functions' code objects into the
live functions (found through the garbage collector, so decorated and registered copies change too)
before pytest runs. One change outside function bodies is accepted too: a literal default value of an
undecorated function or a static or class method (bugforge_source.literal_default_changes, from
factory/source.py); the child sets it in the live function's __defaults__ or __kwdefaults__, after
checking that the live value is the old literal (else nothing runs and the answer is `not_swappable`).
That is what importing the changed file would give, provided no changed line ran at import or
collection time, which the caller checks with the coverage map. And methods may change places in their
class (bugforge_source.moved_methods; their bodies may have run at import: the same code ran): the child
swaps in their code, which differs only in line numbers; the live class keeps its old `__dict__` order.
Otherwise the answer is
`not_swappable` (nothing ran; the tree stays as set up) and the caller asks a plain server.

The preloaded server also holds its pytest session: where the preload's pytest run would start running
tests, the server answers and serves every later request from there (_Hold), and a child runs the
selected items of that one collection with pytest's own run loop and the session's finish (_run_held):
no configuration, no plugin registration, no collection per run. A run whose arguments are not the
preload's (before its test files) runs pytest itself.

`{"guard": NAME, "after": restore}` (once, before any run: the tree is restored, then the guarded places
are recorded as they are) lets runs with `"user": NAME` go: the child runs unprivileged and the server
guards the container for the next request: after the run it kills
every process of that user, and checks every place the user can write (the repository's contents, the
temporary directories, the home directory) by change time, which a process cannot forge. Files the run
created are deleted; a changed file that git does not restore makes the answer say `tainted`, and the
caller replaces the container. The repository directory itself and its .git stay root's, so the run
cannot swap the git metadata that root's restore commands read.
Runs under the image's Python (3.9+): no bugforge imports, no newer syntax.

Response: {"setup_rc": 0, "setup_log": "...", "captured": "...", "exit": 1, "timed_out": false,
           "report": "...", "log": "...", "tainted": []}
"""

import gc
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import types

import _pytest.config  # noqa: F401
import pytest  # noqa: F401  (the point: imported once, inherited by every child)

from .source import literal_default_changes, moved_methods

if os.environ.get("BUGFORGE_PYCACHE"):  # set only now: pytest and the standard library keep their own caches
    sys.pycache_prefix = os.environ["BUGFORGE_PYCACHE"]
PYC = []  # [the bytecode cache as runs must find it: {path: (size, mtime)}], once a run has looked
GUARDS = {}  # user -> what the guarded places held when the user was first seen
HELD = {}  # the preloaded server: {"session": its pytest session, collected; "args": that run's arguments}
PRELOADED = {}  # real path -> (file name as imported, source as imported) of the project's modules
FUNCTIONS = {}  # (file name, name, first line) of a code object of those modules -> the live functions running it
CO_OPTIMIZED = 0x1  # a function body (not a module or class body)
PROBE = __package__ + ".probe"  # the probe plugin, as the runs load it
NOT_SWAPPABLE = 98  # a child's exit status: the live functions were not as the preloaded source made them


def _tail(path, n=3000):
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _write_fresh(path, text):
    """Write as root without following a link or reusing a file someone else left there."""
    if os.path.lexists(path):
        os.remove(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _sh(cmd, cwd, capture=False):
    r = subprocess.run(
        ["bash", "-c", cmd],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if not capture else subprocess.DEVNULL,
    )
    return r.returncode, r.stdout.decode("utf-8", "replace")


def _walk(roots, skip):
    for root in roots:
        if not os.path.isdir(root) or os.path.islink(root):
            continue
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if os.path.join(d, x) not in skip]
            for name in dirs + files:
                yield os.path.join(d, name)


def _guard_init(user, cwd, out_dir):
    pw = pwd.getpwnam(user)
    # the repository's contents become the user's; the directory itself and .git stay root's
    for name in os.listdir(cwd):
        if name != ".git":
            subprocess.call(["chown", "-R", "-h", "%d:%d" % (pw.pw_uid, pw.pw_gid), os.path.join(cwd, name)])
    roots = [cwd, "/tmp", "/var/tmp", "/dev/shm", pw.pw_dir]
    skip = {os.path.join(cwd, ".git"), out_dir}
    _, tracked = _sh("git ls-files -z", cwd, capture=True)
    g = {
        "uid": pw.pw_uid,
        "gid": pw.pw_gid,
        "home": pw.pw_dir,
        "roots": roots,
        "skip": skip,
        "known": set(_walk(roots, skip)),
        "tracked": {os.path.join(cwd, p) for p in tracked.split("\0") if p},
    }
    GUARDS[user] = g
    return g


def _kill_user(uid):
    """kill(-1) from a process of that user reaches every process of the user, forks included."""
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


def _guard_check(g, since_ns):
    """Delete what the run created in the guarded places; name what it changed that stays changed."""
    now = set(_walk(g["roots"], g["skip"]))
    tainted = sorted(p for p in g["known"] - now if p not in g["tracked"])  # deleted, and git will not bring back
    for path in sorted(now, reverse=True):  # children before their parents
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_ctime_ns < since_ns or path in g["tracked"]:
            continue
        is_dir = stat.S_ISDIR(st.st_mode)  # lstat: a link to a directory is not one
        if path not in g["known"]:
            if is_dir:
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.remove(path)
        elif not is_dir:
            tainted.append(path)
    for root in g["roots"]:
        if not os.path.isdir(root) or os.path.islink(root):
            tainted.append(root)
    return tainted


def _files(root, skip=()):
    """{path: lstat} of the files (not directories) under root."""
    out = {}
    for path in _walk([root], set(skip)):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            out[path] = st
    return out


def _pyc_state():
    return {path: (st.st_size, st.st_mtime_ns) for path, st in _files(sys.pycache_prefix).items()}


def _pyc_check():
    """Runs only read the bytecode cache; a run that wrote it anyway (a test calling compileall as root)
    could leave bytecode of a changed source behind, so the whole cache goes, before the next run of
    either server (the runs of one workbench come one at a time)."""
    if _pyc_state() != PYC[0]:
        shutil.rmtree(sys.pycache_prefix, ignore_errors=True)
        PYC[0] = {}


def _settle(cwd):
    """A cached entry is valid while its source keeps its size and its mtime in whole seconds. A source
    in the tree changed in the current second (or stamped in the future) could be changed again, to
    the same size, within its second and still match: wait for the clock to pass it (a second at most),
    or drop the cache when a stamp lies further ahead."""
    newest = max((st.st_mtime for st in _files(cwd, [os.path.join(cwd, ".git")]).values()), default=0)
    wait = int(newest) + 1.01 - time.time()
    if wait > 2:
        shutil.rmtree(sys.pycache_prefix, ignore_errors=True)
    elif wait > 0:
        time.sleep(wait)


def _preload(req, cwd):
    """Collect the suite in this process, so children fork with the project imported; then, where
    pytest would run the tests, hold the session and serve the next requests from there (_Hold)."""
    log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    saved = os.dup(1), os.dup(2)
    old_env, old_path = dict(os.environ), list(sys.path)

    def restore():  # this server's own output, environment and imports, as they were
        sys.dont_write_bytecode = True
        if sys.pycache_prefix:
            _settle(cwd)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.environ.clear()
        os.environ.update(old_env)
        sys.path[:] = old_path
        _index(cwd)

    def hold(session):
        restore()
        HELD.update(session=session, args=list(req["preload"]))
        _answer({"preloaded": len(PRELOADED), "held": True, "exit": 0, "log": _tail(req["log"])})
        serve(sys.stdin)  # the next requests, from inside this pytest run
        os._exit(0)

    os.dup2(log, 1)
    os.dup2(log, 2)
    try:
        os.environ.update(req.get("env", {}))
        # with a bytecode cache outside the tree (BUGFORGE_PYCACHE, root's), this one collection
        # leaves compiled modules and assertion-rewritten test modules for every later run to read
        sys.dont_write_bytecode = not sys.pycache_prefix
        sys.path[:0] = [p for p in req.get("env", {}).get("PYTHONPATH", "").split(":") if p]
        code = int(pytest.main(list(req["preload"]), plugins=[_Hold(hold)]))
    finally:
        if not HELD:
            restore()
    # pytest stopped before it would run tests (an error in the arguments or the configuration): children
    # run pytest themselves, on the project this collection imported
    return {"preloaded": len(PRELOADED), "exit": code, "log": _tail(req["log"])}


def _index(cwd):
    """The project's modules as imported, and every live function of them (decorated, registered and
    closure copies too), found once: a child swaps code without walking the whole heap (which also
    copies every page of it)."""
    root = os.path.realpath(cwd) + os.sep
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None) or ""
        if f.endswith(".py") and os.path.realpath(f).startswith(root):
            with open(f, encoding="utf-8") as fh:
                PRELOADED[os.path.realpath(f)] = (f, fh.read())
    files = {f for f, _ in PRELOADED.values()}
    gc.unfreeze()
    gc.collect()
    for obj in gc.get_objects():
        if type(obj) is types.FunctionType and obj.__code__.co_filename in files:
            c = obj.__code__
            FUNCTIONS.setdefault((c.co_filename, c.co_name, c.co_firstlineno), []).append(obj)
    gc.freeze()


class _Hold:
    """The preloaded server's pytest plugin. Where the preload's pytest run would start running tests,
    the server holds the session, collected, and serves requests from there: a child then runs its
    tests on the session's items (_run_held), with no configuration or collection of its own."""

    def __init__(self, hold):
        self.hold = hold

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        if HELD:
            return None  # a child running its tests: pytest's own loop does that
        capman = session.config.pluginmanager.getplugin("capturemanager")
        if capman is not None:
            capman.suspend_global_capture(in_=True)
        self.hold(session)


def _run_held(req, log_fd):
    """In a child: run the tests the request selects on the held session's items, as the rest of a pytest
    run would (pytest's run loop, then the session's finish), and return pytest's exit status."""
    probe = sys.modules[PROBE]  # loaded by the preload (-p PROBE)
    session = HELD["session"]
    config = session.config
    if probe.watching():  # (started at the session's start, which was the preload's)
        threading.Thread(target=probe._watchdog, name="bugforge-watchdog", daemon=True).start()
    items = list(session.items)
    probe.pytest_collection_modifyitems(session, config, items)  # BUGFORGE_SELECT: exactly those
    session.items, session.testscollected, session.testsfailed = items, len(items), 0
    capman = config.pluginmanager.getplugin("capturemanager")
    capturing = getattr(capman, "_global_capturing", None)
    for cap in (getattr(capturing, "out", None), getattr(capturing, "err", None)):
        if isinstance(getattr(cap, "targetfd_save", None), int):
            os.dup2(log_fd, cap.targetfd_save)  # what capturing restores between tests: this run's log
    status = 0
    try:
        config.hook.pytest_runtestloop(session=session)
        status = 1 if session.testsfailed else 0 if items else 5
    except BaseException:  # an interrupt (-x, a test raising KeyboardInterrupt or pytest.exit)
        status = 2
    config.hook.pytest_sessionfinish(session=session, exitstatus=status)
    config._ensure_unconfigure()
    return status


def _freeze():
    """Move what this server holds out of the collector's sight. A child's collections then scan only
    the objects the child made, instead of the whole inherited heap (which also copies every page of it:
    the collector writes to the objects it scans), which was a third of a short run's time."""
    gc.collect()
    gc.freeze()


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


def _plan_swap(paths, cwd):
    """{(file, name, first line, bytecode) of a live function's code: its new code, ("defaults", file,
    name, first line): its DefaultChange}, or None."""
    plan = {}
    for rel in paths:
        real = os.path.realpath(os.path.join(cwd, rel))
        if real not in PRELOADED:
            continue  # not imported by this server: the run imports it fresh
        fname, old_src = PRELOADED[real]
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f:
                if not os.path.isfile(real):
                    return None
                new_src = f.read(10**7)
            old = compile(old_src, fname, "exec", dont_inherit=True)
            new = compile(new_src, fname, "exec", dont_inherit=True)
        except Exception:
            return None
        pairs = []
        if not _pair(old, new, pairs):
            # a signature whose literal default changed, or methods that changed places: the module
            # compiles the same but for that value, or that order
            try:
                text = new_src.decode("utf-8")
                changes = literal_default_changes(old_src, text)
                moved = not changes and moved_methods(old_src, text)
            except Exception:  # (a source too deep to walk, or not UTF-8)
                return None
            pairs = []
            if not (changes or moved) or not _pair(old, new, pairs, loose=True):
                return None
            for ch in changes:
                plan[("defaults", fname, ch.name, ch.first_line)] = ch
        for o, n in pairs:
            key = (fname, o.co_name, o.co_firstlineno, o.co_code)
            if plan.get(key, n) is not n:
                return None  # two functions the live objects cannot tell apart
            plan[key] = n
    return plan


def _swap(plan):
    """Swap the planned code and defaults into the live functions; False when a function's defaults are
    not the ones its source gave it (something set them at import: importing the new source would not
    just change the literal)."""
    for key, change in plan.items():
        if key[0] == "defaults" and not all(_set_defaults(fn, change) for fn in FUNCTIONS.get(key[1:], ())):
            return False
    for key, new in plan.items():
        for fn in FUNCTIONS.get(key[:3], ()) if key[0] != "defaults" else ():
            if fn.__code__.co_code == key[3]:
                fn.__code__ = new
    return True


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


def _run_child(req, cwd, log, guard, plan=None):
    pid = os.fork()
    if pid == 0:  # child: a fresh process group, output to the log, run pytest, never return
        try:
            os.setsid()
            os.chdir(cwd)
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)  # the server's request stream is not the run's to read
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            if guard:
                os.setgroups([])
                os.setgid(guard["gid"])
                os.setuid(guard["uid"])
                os.environ.update(HOME=guard["home"], USER=req["user"], LOGNAME=req["user"])
            os.environ.update(req.get("env", {}))
            sys.dont_write_bytecode = True
            sys.path[:0] = [p for p in req.get("env", {}).get("PYTHONPATH", "").split(":") if p]
            if plan and not _swap(plan):
                os._exit(NOT_SWAPPABLE)
            probe = sys.modules.get(PROBE)
            if probe is not None:  # loaded by the preload, without a report: this run's report and limit
                path = os.environ.get("BUGFORGE_REPORT")
                probe._out = open(path, "a", buffering=1) if path else None
                probe._load_limits()
            held = HELD and probe is not None and req["args"][: len(HELD["args"])] == HELD["args"]
            code = _run_held(req, fd) if held else pytest.main(req["args"])
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(int(code))
        except BaseException:
            os._exit(99)
    deadline = time.monotonic() + float(req.get("timeout", 60))
    timed_out, status = False, 0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.002)
    try:  # anything the run left behind in its process group
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
    return code, timed_out


def serve_one(req):
    cwd = req.get("cwd", "/testbed")
    if req.get("preload"):
        return _preload(req, cwd)
    if req.get("guard"):  # before any run: the tree as every restore leaves it
        if req.get("after"):
            _sh(req["after"], cwd)
        _guard_init(req["guard"], cwd, req["out"])
        return {"guarded": req["guard"]}
    for path, text in req.get("files", {}).items():
        _write_fresh(path, text)
    if req.get("before"):
        _sh(req["before"], cwd)
    out = {"setup_rc": 0}
    if req.get("setup"):
        rc, log = _sh(req["setup"], cwd)
        if rc != 0:
            return {"setup_rc": rc, "setup_log": log[-3000:]}
    if req.get("capture"):
        out["captured"] = _sh(req["capture"], cwd, capture=True)[1]
    if req.get("args") is not None:
        plan = _plan_swap(req["hot"], cwd) if "hot" in req else None
        if PRELOADED and plan is None:  # this server's imports would be stale for this change
            return dict(out, not_swappable=True)
        report = req["report"]
        log = report + ".log"
        for p in (report, log):
            if os.path.lexists(p):
                os.remove(p)
        user = req.get("user")
        if user and user not in GUARDS:  # a snapshot taken now would hold this request's set-up tree
            raise RuntimeError("a run as %s needs a guard request first, while the tree is clean" % user)
        guard = GUARDS.get(user)
        if guard:
            for p in (report, log):  # the run writes these two and nothing else of ours
                _write_fresh(p, "")
                os.chown(p, guard["uid"], guard["gid"])
        if sys.pycache_prefix and not PYC:  # the cache as the preload left it (this server's first run)
            PYC.append(_pyc_state())
        marker = os.path.join(os.path.dirname(report), ".since")
        _write_fresh(marker, "")
        since = os.lstat(marker).st_ctime_ns
        code, timed_out = _run_child(req, cwd, log, guard, plan)
        if code == NOT_SWAPPABLE and any(key[0] == "defaults" for key in plan or ()):
            return dict(out, not_swappable=True)  # (the child stopped before pytest: nothing ran)
        if guard:
            _kill_user(guard["uid"])
        if sys.pycache_prefix:
            _pyc_check()
        out.update({"exit": code, "timed_out": timed_out, "report": _tail(report, 10**8), "log": _tail(log)})
        if req.get("after"):
            _sh(req["after"], cwd)
        if guard:
            out["tainted"] = _guard_check(guard, since)
        return out
    if req.get("after"):
        _sh(req["after"], cwd)
    return out


def _answer(resp):
    sys.stdout.write(json.dumps(resp) + "\n")
    sys.stdout.flush()


def serve(stream):
    for line in stream:
        if not line.strip():
            continue
        try:
            resp = serve_one(json.loads(line))
        except Exception as e:  # answer, never die
            resp = {"error": "%s: %s" % (type(e).__name__, e)}
        _answer(resp)


def main():
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _freeze()
    _answer({"ready": True})
    serve(sys.stdin)


if __name__ == "__main__":
    main()
