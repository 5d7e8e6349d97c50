"""What a change to a Python source can touch, read from its syntax tree: the statement around a line,
the function body that lines inserted below it extend, signatures whose only change is a literal
default value, methods whose only change is their place in the class, methods removed, bases removed,
and the statements that name a class. Used by the test map on the host and by the test server inside
containers (the package bugforge_incontainer): standard library only, and Python 3.9 syntax. The tree
helpers are in syntax.py."""

import ast
import re
from collections import namedtuple

from .syntax import (
    blanked,
    changed_literals,
    code_lines,
    docstring_only,
    first_line,
    functions,
    header_end,
    is_all,
    is_docstring,
    nested,
    parse,
    reads,
    signature,
    span_in,
)

PLAIN_DECORATORS = {"staticmethod", "classmethod"}  # decorators that leave a function's defaults alone

DefaultChange = namedtuple("DefaultChange", "name first_line header body defaults kwdefaults")
DefaultChange.__doc__ = """A function whose signature changes only in literal default values. first_line:
its code's first line (the first decorator's, if any); header, body: (first, last) line of its signature
and of its body, in the old source; defaults: {index into __defaults__: (old, new)}; kwdefaults: {name:
(old, new)}."""
Move = namedtuple("Move", "name span body")
Move.__doc__ = """A method that only changed its place in its class body: span, body: (first, last) line of
the whole definition (decorators included) and of its body, in the old source."""
PLAIN_METHOD_DECORATORS = PLAIN_DECORATORS | {"property", "abstractmethod"}  # no side effect, no order
Removal = namedtuple("Removal", "name key span")
BaseRemoval = namedtuple("BaseRemoval", "name span")
BaseRemoval.__doc__ = """A module-level class that lost one or more of its bases: span, (first, last) line of
its class statement's header in the old source."""
Removal.__doc__ = """A method removed from its class: key, the probe's name for it (CLASS_QUALNAME.ATTRIBUTE,
private names mangled); span: (first, last) line of the whole definition in the old source."""


def statement_span(source, line):
    """(first, last) line of the innermost statement containing `line` inside a function body (the
    body itself for a line between its statements); None at module or class level, in the signature or
    decorators of a function defined at those levels, in a docstring, or when `source` does not parse."""
    tree = parse(source)
    return None if tree is None else span_in(tree.body, line, None)


def python_lines(source):
    """The source's lines as Python numbers them (ends at \\r\\n, \\r or \\n; str.splitlines also breaks
    at form feeds, U+001C, U+2028...)."""
    lines = re.split(r"\r\n|\r|\n", source)
    return lines[:-1] if lines[-1] == "" else lines


def gap_body(source, new_source, line):
    """(first, last) line of the body of the module- or class-level function that the code just above
    `line` belongs to, when `line` is blank or only a comment outside every statement and the change
    (`source` -> `new_source`) is confined to function bodies (and literal defaults); the line after
    the last one counts as blank. Lines inserted next to such a line extend that function's body, at
    whatever depth: nothing outside function bodies changed, so they cannot sit at module or class
    level. A run reaches them only by running that body. None otherwise."""
    lines = python_lines(source) + [""]  # (lines inserted at the end of the file come before "line" len + 1)
    if not 1 <= line <= len(lines) or lines[line - 1].strip()[:1] not in ("", "#"):
        return None
    above = next((n for n in range(line - 1, 0, -1) if lines[n - 1].strip()[:1] not in ("", "#")), None)
    tree = parse(source)
    if above is None or tree is None or parse(new_source) is None or blanked(source) != blanked(new_source):
        return None
    for f in functions(tree.body):
        if first_line(f) <= line <= f.end_lineno:
            return None  # (inside a function: a docstring's blank line, say)
        if first_line(f) <= above <= f.end_lineno and above > header_end(f) and not docstring_only(f):
            return f.body[0].lineno, f.end_lineno
    return None


def literal_default_changes(source, new_source):
    """[DefaultChange] for each function at module or class level whose signature the change alters only
    in literal default values (numbers, strings, bytes, booleans, None, tuples of these), when nothing
    else outside function bodies changes. Such a function, undecorated (or a static or class method),
    holds its defaults in a tuple that only a call reads: a test sees the new value only by running the
    body (or by introspection, as with any change to a function's code). Empty when a source does not
    parse, or anything else outside function bodies changes."""
    old, new = parse(source), parse(new_source)
    if old is None or new is None or blanked(source) != blanked(new_source):
        return []
    out = []
    for fo, fn in zip(functions(old.body), functions(new.body)):
        if not all(isinstance(d, ast.Name) and d.id in PLAIN_DECORATORS for d in fo.decorator_list):
            continue
        defaults = changed_literals(fo.args.defaults, fn.args.defaults, range(len(fo.args.defaults)))
        kwdefaults = changed_literals(fo.args.kw_defaults, fn.args.kw_defaults, [a.arg for a in fo.args.kwonlyargs])
        if defaults or kwdefaults:
            out.append(
                DefaultChange(
                    fo.name,
                    first_line(fo),
                    (fo.lineno, header_end(fo)),
                    (fo.body[0].lineno, fo.end_lineno),
                    defaults,
                    kwdefaults,
                )
            )
    return out


def moved_methods(source, new_source):
    """[Move] for every method (a function directly in a class body) of the old source, when the change
    only reorders methods in class bodies: every other statement, and each method's own text, stays
    as it was. Such a class builds the same methods from the same code, in another order: its
    `__dict__` iterates in the new order, and the moved code carries new line numbers; nothing else
    differs. A class body qualifies for reordering only when its methods' names are unique, bound by
    nothing else in the body and read by none of its class-level expressions; when those expressions
    (decorators, defaults, annotations) read no name the body binds; and when every decorator is
    one of PLAIN_METHOD_DECORATORS (a decorator could record the order it ran in). Empty when a source
    does not parse or the change is anything else (then the caller decides as for any other change)."""
    if code_lines(source) != code_lines(new_source):  # (cheap: a reordering keeps every line of code)
        return []
    old, new = parse(source), parse(new_source)
    if (
        old is None
        or new is None
        or ast.dump(old) == ast.dump(new)
        or ast.dump(_reordered(source)) != ast.dump(_reordered(new_source))
    ):
        return []
    return [
        Move(f.name, (first_line(f), f.end_lineno), (f.body[0].lineno, f.end_lineno))
        for node in ast.walk(old)
        if isinstance(node, ast.ClassDef)
        for f in node.body
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]  # (every method: the
    # caller takes those the diff touches; one the diff does not touch only shifted, as code below any
    # edit does)


def removed_methods(source, new_source):
    """[Removal] for every method the change removes, when it only removes methods (functions directly
    in a class body) and changes nothing else (blank lines and comments aside; a `pass` where a class
    body would be empty). Such a change is seen only by code that looks the name up on the class, an
    instance or a subclass: the lookup map (lookups.py) decides it. A method qualifies only when it is a plain, static or class method
    or a property (no other decorator: one could keep it elsewhere), its name is not a dunder name
    (Python finds those its own ways), nothing else in the class body binds or reads the name, its
    defaults and annotations call nothing (removing it stops them running), and its class has no
    decorator and no metaclass argument (either could read the class body). Empty otherwise."""
    old, new = parse(source), parse(new_source)
    if old is None or new is None or len(new_source) >= len(source):
        return []
    gone = _removed_in(old.body, new.body, "")
    if not gone:
        return []
    pruned = ast.parse(source)  # (a fresh tree to change)
    drop = {(f.lineno, f.col_offset) for _, f, _ in gone}
    for node in ast.walk(pruned):
        if isinstance(node, ast.ClassDef):
            node.body = [s for s in node.body if (s.lineno, s.col_offset) not in drop] or [ast.Pass()]
    if ast.dump(pruned) != ast.dump(new):
        return []
    out = []
    for cls, f, qualname in gone:
        others = [s for s in cls.body if (s.lineno, s.col_offset) not in drop]
        methods = [s for s in others if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        at_class_level = [s for s in others if s not in methods] + [
            x for m in methods for x in m.decorator_list + signature(m)
        ]
        bound = {
            n.id for s in others for n in ast.walk(s) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
        }
        bound |= {s.name for s in others if isinstance(s, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}
        if (
            (f.name.startswith("__") and f.name.endswith("__"))
            or cls.decorator_list
            or cls.keywords
            or not all(
                isinstance(d, ast.Name) and d.id in PLAIN_METHOD_DECORATORS - {"abstractmethod"}
                for d in f.decorator_list
            )
            or f.name in bound | reads(at_class_level)
            or any(
                isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Lambda))
                for x in signature(f)
                for n in ast.walk(x)
            )
        ):
            return []
        private = f.name.startswith("__") and cls.name.lstrip("_")
        out.append(
            Removal(
                f.name,
                f"{qualname}.{'_' + cls.name.lstrip('_') + f.name if private else f.name}",
                (first_line(f), f.end_lineno),
            )
        )
    return out


def removed_bases(source, new_source):
    """[BaseRemoval] for every module-level class the change takes bases from, when it changes nothing
    else (blank lines and comments aside) and the class has no decorator (one could read its bases).
    Such a class is the same object in every other way: only code that holds the class or one of its
    instances can see the change, and getting hold of either means running a statement that names it
    (see naming_statements), unless something named it at import time. Empty otherwise."""
    old, new = parse(source), parse(new_source)
    if old is None or new is None or len(old.body) != len(new.body):
        return []
    out = []
    for a, b in zip(old.body, new.body):
        if (
            isinstance(a, ast.ClassDef)
            and isinstance(b, ast.ClassDef)
            and a.name == b.name
            and len(b.bases) < len(a.bases)
            and not a.decorator_list
        ):
            kept = [ast.dump(x) for x in b.bases]
            if [ast.dump(x) for x in a.bases if ast.dump(x) in kept] != kept or [
                ast.dump(x) for x in a.body + a.keywords
            ] != [ast.dump(x) for x in b.body + b.keywords]:
                return []
            out.append(BaseRemoval(a.name, (a.lineno, header_end(a))))
        elif ast.dump(a) != ast.dump(b):
            return []
    return out


def naming_statements(source, names):
    """[(first, last, at_import)] of the statements of `source` that name one of `names`: as a name,
    an attribute, or a word in a string (getattr(module, "Name")); first..last are the lines from the
    statement's start to the reference's end (a compound statement's header, an except clause). Import
    statements (but those that bind it to another name), docstrings and `__all__` do not count: binding
    or listing a class does not use it.
    at_import: the statement sits at module or class level (it runs when the module does). None when
    `source` does not parse."""
    tree = parse(source)
    if tree is None:
        return None
    words = [re.compile(r"\b%s\b" % re.escape(n)) for n in names]
    out = []

    def visit(node, stmt, top):
        if isinstance(node, (ast.stmt, ast.excepthandler)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):  # binding a name uses nothing; another name might
                if any(a.asname and a.name.rsplit(".", 1)[-1] in names for a in node.names):
                    out.append((node.lineno, node.end_lineno, top))
                return
            if is_docstring(node) or is_all(node):
                return
            stmt = node
            top = top and not isinstance(node, ast.excepthandler)
        if (
            (isinstance(node, ast.Name) and node.id in names)
            or (isinstance(node, ast.Attribute) and node.attr in names)
            or (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and any(w.search(node.value) for w in words)
            )
        ):
            out.append(
                (first_line(stmt) if not isinstance(stmt, ast.excepthandler) else stmt.lineno, node.end_lineno, top)
            )
        body = node.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else ()
        for child in ast.iter_child_nodes(node):
            visit(child, stmt, top and child not in body)  # (a function's body runs when it is called)

    for node in tree.body:
        visit(node, node, True)
    return out


def _removed_in(old_body, new_body, prefix):
    """[(class node, method node, class qualname)] for the methods of the classes in `old_body` (and in
    the classes and functions inside them) that their twin in `new_body` (same name, same place among
    namesakes) no longer holds as they were: removed, or changed (the caller's comparison of the whole
    trees tells which)."""
    twins = {}
    for s in nested(new_body):
        if isinstance(s, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            twins.setdefault(s.name, []).append(s)
    out, seen = [], {}
    for s in nested(old_body):
        if not isinstance(s, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        i = seen[s.name] = seen.get(s.name, -1) + 1
        twin = twins.get(s.name, [])[i : i + 1]
        if not twin or type(twin[0]) is not type(s):
            continue
        twin, qualname = twin[0], prefix + s.name
        if isinstance(s, ast.ClassDef):
            kept = {ast.dump(t) for t in twin.body}
            out += [
                (s, m, qualname)
                for m in s.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and ast.dump(m) not in kept
            ]
            out += _removed_in(s.body, twin.body, qualname + ".")
        else:
            out += _removed_in(s.body, twin.body, qualname + ".<locals>.")
    return out


def _reordered(source):
    """The source's tree with the methods of every class body that may be reordered sorted by name."""
    tree = ast.parse(source)  # (a fresh tree to change: parsing is faster than a deep copy)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            at = [i for i, s in enumerate(node.body) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
            methods = [node.body[i] for i in at]
            if _reorderable(node.body, methods):
                for i, m in zip(at, sorted(methods, key=lambda m: m.name)):
                    node.body[i] = m
    return tree


def _reorderable(body, methods):
    names = {m.name for m in methods}
    decorators = [d for m in methods for d in m.decorator_list]
    if len(names) != len(methods) or not all(
        isinstance(d, ast.Name) and d.id in PLAIN_METHOD_DECORATORS for d in decorators
    ):
        return False
    others = [s for s in body if s not in methods]  # (they keep their order among themselves)
    bound = {n.id for s in others for n in ast.walk(s) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {s.name for s in others if isinstance(s, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}
    bound |= {
        (a.asname or a.name).split(".")[0]
        for s in others
        if isinstance(s, (ast.Import, ast.ImportFrom))
        for a in s.names
    }
    read_by_others = reads(others)
    read_by_methods = reads([x for m in methods for x in signature(m)])  # run where the def statement is
    return not (names & (bound | read_by_others | read_by_methods)) and not (read_by_methods & bound)
