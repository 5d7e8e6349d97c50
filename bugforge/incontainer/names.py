"""Code's file names, for the monitor (monitor.py; docs/security.md, 3g). The grader trusts code by the file
its code object names: installed code, its own, the tests' (a test file's name). So every way code of the
tree can make a code object under such a name is judged where it is made:
- `compile` under a name that is, or resolves to (`//usr/...`, `../`, a relative name, a link), an
  installed file or a test file of the tree: only the import system, with that file's own source, may
  (and the grader's witness, which compiles the tests);
- `marshal.loads` making code objects that name such files (importlib's own load of a module's cached
  bytecode is passed: it gives its code the source file's name), or loading a module's bytecode with no
  source beside it from the tree (a sourceless `.pyc`, whose names are its maker's);
- `marshal.load` on behalf of the tree's code (its data cannot be seen: refused).
`code.__new__` (code.replace) is judged as making a code object at all (events.WATCHED).
Python 3.9+, standard library only."""

import marshal
import os
import sys
import types

from .events import is_file_source
from .installed import test_module_name
from .witness import COMPILED

PSEUDO = "<"  # a name such as "<string>" or "<attrs generated init>": no file, trusted by no check


def claims(name, installed, root):
    """What a code object's file name would be trusted as: "installed" (an installed file, the grader's own),
    "test" (a test file of the tree), or None. Both the name as written and where it leads count."""
    if type(name) is not str or name.startswith(PSEUDO):
        return None
    real = os.path.realpath(name)
    for path in (name, real):
        if (path + "/").startswith(installed):
            return "installed"
    for path in (os.path.abspath(name), real):
        if path.startswith(root) and test_module_name(path.rpartition("/")[2]):  # (what origin.untrusted trusts)
            return "test"
    return None


def codes_in(value, depth=0):
    """The code objects `value` (what marshal.loads made) holds: in containers, nested in code."""
    if type(value) is types.CodeType:
        return [value, *(c for k in value.co_consts for c in codes_in(k, depth + 1))]
    if type(value) in (tuple, list, set, frozenset) and depth < 64:
        return [c for v in value for c in codes_in(v, depth + 1)]
    if type(value) is dict and depth < 64:
        return [c for kv in value.items() for v in kv for c in codes_in(v, depth + 1)]
    return []


def marshalled(data, installed, root):
    """Why the code objects marshal.loads makes of `data` may not be made (a name they claim), or None."""
    try:
        value = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return None
    for code in codes_in(value):
        what = claims(code.co_filename, installed, root)
        if what:
            return "made code with marshal under the name of %s file (%s)" % (
                "an installed" if what == "installed" else "a test",
                code.co_filename,
            )
    return None


def sourceless(frame, root):
    """Why importlib's `_compile_bytecode`, in `frame`, may not load what it loads, or None: a module's
    bytecode from the tree with no source file (importlib gives code the source's name only when there
    is one)."""
    local = frame.f_locals
    path, source = local.get("bytecode_path"), local.get("source_path")
    if source is None and type(path) is str and os.path.realpath(path).startswith(root):
        return "imported bytecode with no source from the tree (%s)" % path
    return None


def judge(root, own_dir, installed, codes, tree_did, own_walk):
    """`made_code(event, args, frame)` for the monitor: why the code that `compile` or marshal makes at
    `frame` may not be made (code of the tree caused it, or its names lie), or None. codes: the probe's
    ({"rewrite": pytest's _rewrite_test as it came, COMPILED: the witness's wrapper of it}); tree_did(frame):
    whether the tree's code caused what `frame` does (origin.py: on its behalf, or its own source)."""
    trusted = installed + (own_dir,)
    loader = getattr(
        getattr(sys.modules.get("_frozen_importlib_external"), "_compile_bytecode", None), "__code__", None
    )
    rewrite, witness = codes.get("rewrite"), codes.get(COMPILED)

    @own_walk
    def grader_compiles(frame):  # (the grader's own; pytest's rewrite of a test module, called by the witness)
        back = frame.f_back
        return frame.f_code.co_filename.startswith(own_dir) or (
            frame.f_code is rewrite and back is not None and back.f_code is witness
        )

    def made_code(event, args, frame):
        if event == "compile":
            what = claims(args[1], trusted, root)
            if what is None or grader_compiles(frame):
                return None
            if is_file_source(args) and (what == "test" or frame.f_code.co_filename.startswith("<frozen importlib")):
                return None  # (the import system compiles a module from its file; any code may compile a file)
            why = "compiled code under the name of %s file" % ("an installed" if what == "installed" else "a test")
            return why if tree_did(frame) else None
        if frame.f_code is loader:  # (importlib gives the code its source's name, when there is a source)
            return sourceless(frame, root)
        if event == "marshal.loads":
            return marshalled(args[0], trusted, root) if args and type(args[0]) is bytes else None
        if tree_did(frame):  # (marshal.load: its data is not in the event)
            return "loaded marshalled data from a file (what it makes cannot be judged)"
        return None

    return made_code
