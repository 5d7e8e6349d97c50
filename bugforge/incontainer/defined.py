"""What a test file defines: each collected test must run the function its file's `def` makes, and
the names the file imports from installed code must hold what those imports bound.

The test files are the instance's own (the sweep restores them before the run), so their syntax is
trusted; the namespace their code fills is not: code of the tree that a test module imports can write
to it (a module `__getattr__`, a plugin's collection hook, a thread) before pytest collects from it.
`problems(items, installed, root)` runs when collection is finished and says, per test file:

- a test whose `def` carries no decorator but pytest's marks (marks return the function itself) was
  collected as a function whose code is not that `def` (file, name, first line) or whose globals are
  not its module's: "the function collected is not the one its file defines";
- a name the file binds by `import`/`from ... import` of an installed module (and binds nowhere else)
  holds a value whose code comes from the tree.

A test wrapped by any other decorator is the decorator's business (docs/security.md, known limits).
`bindings(items, installed, root)` gives the (where, namespace, name, value) the monitor then holds
at each test's end. Python 3.9, standard library only."""

import ast
import os
import sys
import types

from .integrity import installed_value

_MARKS = (("pytest", "mark"), ("mark",))


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return tuple(reversed(parts))


def _is_mark(decorator):
    name = _dotted(decorator.func if isinstance(decorator, ast.Call) else decorator)
    return any(name[: len(m)] == m and len(name) > len(m) for m in _MARKS)


def _walk(body, path, defs, seen):
    """Index the defs of a body (into if/try/with blocks, not into functions): (class path, name) ->
    (plain, first line), None where a name is defined more than once."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            key = (path, node.name)
            plain = isinstance(node, ast.FunctionDef) and all(_is_mark(d) for d in node.decorator_list)
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            defs[key] = None if key in seen else (plain, first)
            seen.add(key)
        elif isinstance(node, ast.ClassDef):
            _walk(node.body, path + (node.name,), defs, seen)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            blocks = [getattr(node, b, None) or [] for b in ("body", "orelse", "finalbody")]
            for block in blocks + [h.body for h in getattr(node, "handlers", None) or []]:
                _walk(block, path, defs, seen)


def _imports(tree):
    """Top-level names bound by an import (module, attribute or None) and bound nowhere else."""
    bound, counts = {}, {}
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            for a in node.names:
                name = a.asname or a.name.partition(".")[0]
                bound[name] = (a.name if a.asname else name, None)
                names.append(name)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                if a.name != "*":
                    bound[a.asname or a.name] = (node.module, a.name)
                    names.append(a.asname or a.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.append(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.extend(node.names)
        for n in names:
            counts[n] = counts.get(n, 0) + 1
    return {n: where for n, where in bound.items() if counts.get(n) == 1}


class _File:
    def __init__(self, path):
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
        self.defs, self.imports = {}, _imports(tree)
        _walk(tree.body, (), self.defs, set())


def _parse(path, cache):
    if path not in cache:
        try:
            cache[path] = _File(path)
        except (OSError, SyntaxError, ValueError):
            cache[path] = None
    return cache[path]


def _where(item):
    """(the test module, its file, the class path, the def's name), or None for items of no file."""
    module = getattr(item, "module", None)
    path = getattr(module, "__file__", None)
    if module is None or not path or not path.endswith(".py"):
        return None
    classes = tuple(n.name for n in item.listchain() if type(n).__name__ in ("Class", "UnitTestCase"))
    name = getattr(item, "originalname", None) or item.name.partition("[")[0]
    return module, os.path.realpath(path), classes, name


def _is_def(item, module, path, name, first):
    """Whether the item's function is the one made by the plain `def NAME` at line FIRST of PATH."""
    obj = getattr(item, "obj", None)
    fn = getattr(obj, "__func__", obj)
    if not isinstance(fn, types.FunctionType):
        return False
    code = fn.__code__
    return (
        os.path.realpath(code.co_filename) == path
        and (code.co_name, code.co_firstlineno) == (name, first)
        and fn.__globals__ is vars(module)
    )


def _installed_module(module, installed, root):
    path = getattr(module, "__file__", None)
    if not path:
        return getattr(module, "__name__", None) in sys.builtin_module_names
    return (os.path.realpath(path) + "/").startswith(installed) and not os.path.abspath(path).startswith(root)


def _imports_changed(module, parsed, installed, root):
    """(reasons, bindings) for the names the file binds by importing installed modules."""
    ns, out, bindings = vars(module), [], []
    for name, (source, attr) in sorted(parsed.imports.items()):
        origin = sys.modules.get(source)
        if name not in ns or origin is None or not _installed_module(origin, installed, root):
            continue
        value = ns[name]
        wrong = value is not origin if attr is None else not installed_value(value, installed, root)
        if wrong:
            out.append("%s.%s does not hold what the file imports from %s" % (module.__name__, name, source))
        bindings.append((module.__name__, ns, name, value))
    return out, bindings


def problems_and_bindings(items, installed, root):
    """(reasons, bindings) once collection is finished; bindings: (where, namespace, name, value),
    for the monitor to hold at each test's end."""
    cache, modules, out = {}, {}, []
    for item in items:
        where = _where(item)
        parsed = _parse(where[1], cache) if where else None
        if parsed is None:
            continue
        module, path, classes, name = where
        modules[id(module)] = (module, parsed)
        entry = parsed.defs.get((classes, name))
        if entry is not None and entry[0] and not _is_def(item, module, path, name, entry[1]):
            out.append("%s: the function collected is not the one its file defines" % item.nodeid)
    bindings = []
    for module, parsed in modules.values():
        reasons, held = _imports_changed(module, parsed, installed, root)
        out += reasons
        bindings += held
    return out, tuple(bindings)


def tests(items):
    """(node id, its module's file, its def's key (file, classes, name), the collected function) for
    the monitor's witness (witness.py)."""
    out = []
    for item in items:
        where = _where(item)
        if where is None:
            continue
        module, path, classes, name = where
        obj = getattr(item, "obj", None)
        out.append((item.nodeid, module.__file__, (path, classes, name), getattr(obj, "__func__", obj)))
    return tuple(out)
