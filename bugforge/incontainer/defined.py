"""What a test file defines: each collected test must run the function its file's `def` makes, and
the names the file imports from installed code must hold what those imports bound.

The test files are the instance's own (the sweep restores them before the run), so their syntax is
trusted; the namespace their code fills is not: code of the tree that a test module imports can write
to it (a module `__getattr__`, a plugin's collection hook, a thread) before pytest collects from it.
`collected(items, installed, root)` runs when collection is finished and says, per test file:

- a test whose `def` carries no decorator but pytest's marks (marks return the function itself) was
  collected as a function whose code is not that `def` (file, name, first line) or whose globals are
  not its module's: "the function collected is not the one its file defines";
- a name the file binds by `import`/`from ... import` of an installed module (and binds nowhere else)
  holds a value whose code comes from the tree.

- a class the file defines holds a function, class or descriptor its body does not bind, or has bases
  other than the ones the file names (checked again at the finish: `classes_changed`).

A test wrapped by any other decorator is the decorator's business (docs/security.md, known limits).
`collected` also gives the (where, namespace, name, value) the monitor then holds at each test's end,
and each test's module file, def and collected function for the witness (witness.py). Python 3.9,
standard library only."""

import ast
import builtins
import os
import sys
import types

from .installed import BUILTIN_NAMES, CLASS_DICT, installed_value, plain_keys
from .witness import blocks

_MARKS = (("pytest", "mark"), ("mark",))
_BUILTINS = BUILTIN_NAMES - {"__doc__", "__name__", "__spec__", "__loader__", "__package__"}  # (a module's own)
# what a class can answer an instance's lookups with: a test's class may not gain one (round 13)
LOOKUP_HOOKS = ("__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__eq__", "__bool__")
_NONE = object()


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


def _walk(body, path, defs, seen, wrapped=False):
    """Index the defs of a body (into if/try/with blocks, not into functions): (class path, name) ->
    (plain, first line), None where a name is defined more than once. `wrapped`: in a class with a
    decorator that may wrap its methods (`mock.patch` on a class): none of them is plain."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            key = (path, node.name)
            plain = not wrapped and isinstance(node, ast.FunctionDef) and all(_is_mark(d) for d in node.decorator_list)
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            defs[key] = None if key in seen else (plain, first)
            seen.add(key)
        elif isinstance(node, ast.ClassDef):
            decorated = wrapped or not all(_is_mark(d) for d in node.decorator_list)
            _walk(node.body, path + (node.name,), defs, seen, decorated)
        else:
            for block in blocks(node):
                _walk(block, path, defs, seen, wrapped)


def _module_names(tree):
    """The names a module's own code binds at module level (not inside its functions and classes), or
    None where it star-imports (then any name)."""
    names, stack = set(), list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name == "*" for a in node.names):
                return None
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif not isinstance(node, ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))
    return frozenset(names)


def _imports(tree):
    """Top-level names bound by an import (module, attribute or None) and bound nowhere else."""
    bound, counts = {}, {}
    for node in ast.walk(tree):
        for name, where in _binds(node):
            if where is not None:
                bound[name] = where
            counts[name] = counts.get(name, 0) + 1
    return {n: where for n, where in bound.items() if counts.get(n) == 1}


def _binds(node):
    """[(name, (module, attribute or None) for an import's binding, else None)] of what `node` binds."""
    if isinstance(node, ast.Import):
        return [((a.asname or a.name.partition(".")[0]), (a.name if a.asname else a.name.partition(".")[0], None))
                for a in node.names]  # fmt: skip
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [(a.asname or a.name, (node.module, a.name)) for a in node.names if a.name != "*"]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(node.name, None)]
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return [(node.id, None)]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return [(n, None) for n in node.names]
    return []


def _class_names(node):
    """The names a class body binds (its defs, assignments, imports; not inside its functions)."""
    names, stack = set(), list(node.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
            continue
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in n.names)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        if not isinstance(n, ast.Lambda):
            stack.extend(ast.iter_child_nodes(n))
    return names


def _resolve(dotted, ns):
    value = ns.get(dotted[0], getattr(builtins, dotted[0], _NONE))
    for part in dotted[1:]:
        value = getattr(value, part, _NONE)
    return value


def _classes_changed(module, parsed):
    """Why a class the test file defines is not as its body made it: an attribute its body does not
    bind (unittest's assertions given to the test's own class), or bases other than the ones it names."""
    out, ns = [], vars(module)
    for name, (names, bases) in sorted(parsed.classes.items()):
        cls = ns.get(name)
        if not isinstance(cls, type) or cls.__module__ != module.__name__:
            continue
        added = [  # (behaviour: functions, classes, descriptors; unittest and pytest keep data on the class)
            k
            for k, v in vars(cls).items()
            if k not in names
            and (k in LOOKUP_HOOKS or not (k[:2] == "__" == k[-2:]))
            and (callable(v) or hasattr(type(v), "__get__"))
        ]
        if added:
            out.append("%s.%s was given %s, which its file does not define" % (module.__name__, name, ", ".join(added)))
        if not all(bases):  # a base that is no dotted name (`Generic[T]`, a call) cannot be read plainly
            continue
        named = tuple(_resolve(b, ns) for b in bases) or (object,)
        if len(named) != len(cls.__bases__) or any(a is not b for a, b in zip(named, cls.__bases__)):
            out.append("%s.%s has bases other than the ones its file names" % (module.__name__, name))
    return out


class _File:
    def __init__(self, path):
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
        self.defs, self.imports = {}, _imports(tree)
        _walk(tree.body, (), self.defs, set())
        self.bound = _module_names(tree)  # (None: a star import, which may bind any name)
        self.classes = {  # module-level classes with no decorator but marks: (names their body binds, bases)
            n.name: (_class_names(n), [_dotted(b) for b in n.bases])
            for n in tree.body
            if isinstance(n, ast.ClassDef) and all(_is_mark(d) for d in n.decorator_list)
        }


def _parse(path, cache):
    if path not in cache:
        try:
            cache[path] = _File(path)
        except (OSError, SyntaxError, ValueError):
            cache[path] = None
    return cache[path]


def node_parts(nodeid):
    """(classes, name) a test's node id names: `FILE::Class::...::name[params]` -> ((Class, ...), name)
    (what the test is, whatever its item holds: the grader keys its checks by these, round 20)."""
    parts = [p for p in nodeid.split("::")[1:] if p != "()"]  # (old pytest's instance level)
    return tuple(parts[:-1]), (parts[-1] if parts else "").partition("[")[0]


def _where(item, module, root):
    """((the module defining the test, its file, the class path, the def's name), the class the node id
    names) by the item's node id, or None for items of no .py file. A method the test's class (looked up in its module's namespace)
    inherits from a class of another file of the tree (a mixin in tests/__init__.py) is that file's."""
    path = vars(module).get("__file__")  # (the module's own, never a property of its class: round 20)
    if type(path) is not str or not path.endswith(".py"):
        return None
    classes, name = node_parts(item.nodeid)
    cls = _class_at(vars(module), classes)
    return (_inherited(cls, name, root) or (module, os.path.realpath(path), classes, name)), cls


def _class_at(ns, classes):
    """The class a node id's class path names in a module's namespace (None if it names none)."""
    cls = None
    for part in classes:
        cls = (ns if cls is None else CLASS_DICT(cls)).get(part)
        if not isinstance(cls, type):
            return None
    return cls


def _misnamed(item):
    """Why an item is not what pytest makes of a test file's def ("" when it is): pytest names a test's
    item by the def's name (plus its parameters) and gives it the node id of its parent plus that name;
    round 20 put stand-ins and a sibling's second item under a failing test's node id."""
    nodeid, name = item.nodeid, item.name
    if type(nodeid) is not str or type(name) is not str:
        return "an item's node id or name is not a string"
    if type(item.module) is not types.ModuleType:
        return "%s: its module is not a plain module" % nodeid
    if nodeid.rpartition("::")[2] != name or getattr(item, "originalname", None) not in (None, name.partition("[")[0]):
        return "%s: its item is not named as its node id says" % nodeid
    return ""


def _inherited(cls, name, root):
    if not isinstance(cls, type) or name in vars(cls):
        return None
    klass = next((k for k in cls.__mro__[1:] if name in vars(k)), None)
    module = sys.modules.get(getattr(klass, "__module__", None) or "")
    path = getattr(module, "__file__", None) or ""
    if not path.endswith(".py") or not os.path.realpath(path).startswith(root) or "<" in klass.__qualname__:
        return None
    return module, os.path.realpath(path), tuple(klass.__qualname__.split(".")), name


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


def collected(items, installed, root):
    """Once collection is finished: (reasons, bindings, tests, modules, shadows). bindings: (where,
    namespace, name, value), held by the monitor at each test's end; tests: (node id, its module's
    file, its def's key (file, classes, name), the collected function), for the witness; modules:
    (module, its parsed file), for `classes_changed` at the finish (with the test's class: the
    witness checks its instance's class at the test's end); shadows: (module name, its
    namespace, the builtins' names its file does not bind), which the namespace may never hold (a
    global of such a name hides the builtin from the test's code: `len`, `isinstance`, `hasattr`)."""
    cache, modules, out, tests = {}, {}, [], []
    for item in items:
        if getattr(item, "module", None) is None:
            continue
        wrong = _misnamed(item)
        if wrong:
            out.append(wrong)
            continue
        where = _where(item, item.module, root)
        if where is None:
            continue
        (module, path, classes, name), cls = where
        obj = getattr(item, "obj", None)
        own = vars(item.module)["__file__"]  # (its module ran the code the grader compiled)
        tests.append((item.nodeid, own, (path, classes, name), getattr(obj, "__func__", obj), cls))
        parsed = _parse(path, cache)
        if parsed is None:
            continue
        modules[id(module)] = (module, parsed)
        entry = parsed.defs.get((classes, name))
        if entry is not None and entry[0] and not _is_def(item, module, path, name, entry[1]):
            out.append("%s: the function collected is not the one its file defines" % item.nodeid)
    bindings, shadows = [], []
    for module, parsed in modules.values():
        reasons, held = _imports_changed(module, parsed, installed, root)
        out += reasons + _classes_changed(module, parsed)
        bindings += held
        if parsed.bound is not None:
            shadows.append((module.__name__, vars(module), _BUILTINS - parsed.bound))
    return out, tuple(bindings), tuple(tests), list(modules.values()), tuple(shadows)


def classes_changed(modules):
    """At the session's finish: the test files' classes (modules: what `collected` gave), checked again."""
    return [reason for module, parsed in modules for reason in _classes_changed(module, parsed)]


def item_problems(nodeid, entry):
    """At a test's end (the monitor's check): why its pytest item did not run the function it collected
    (entry: (the item, the function, its code state, the item's class) at collection; None: not held)."""
    if entry is None:
        return []
    item, fn, code, kind = entry
    if type(item) is not kind:
        return ["%s's item was given another class" % nodeid]
    # (a unittest case's is a new bound method per run, its function counts; its teardown clears it)
    if not plain_keys(vars(item)):
        return ["%s's item holds a key that is not a string" % nodeid]
    now = vars(item).get("_obj")
    if now is None:
        now = fn
    if (now.__func__ if type(now) is types.MethodType else now) is not fn or any(
        a is not b for a, b in zip((fn.__code__, fn.__defaults__, fn.__kwdefaults__), code)
    ):
        return ["%s did not run the test function it collected" % nodeid]
    hidden = [
        k if type(k) is str else "a key that is not a string"
        for k in vars(item)
        if type(k) is not str or any(callable(CLASS_DICT(c).get(k)) for c in kind.__mro__)
    ]
    if hidden:  # (runtest; a unittest case's result methods, addFailure, addSubTest: the item is its result)
        return ["%s's %s was replaced on the item" % (nodeid, ", ".join(sorted(hidden)))]
    return []
