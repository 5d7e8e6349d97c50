"""The witness: every test function of the test files tells the monitor, from its own frame, how it
ended. The grader compiles the test modules itself (through pytest's assertion rewriting), and before
pytest rewrites a module's asserts, `instrument` wraps the body of each test function:

    __bugforge_exit__ = 1
    __bugforge_audit__ = __import__("sys").audit   # bound on entry: no lookup between the end and the event
    try:
        <the body>
    except:                      # bare: no name the tree could rebind
        __bugforge_exit__ = 2
        raise
    finally:
        __bugforge_audit__("bugforge.exit")

The monitor reads `__bugforge_exit__` from the frame that raised the event, and accepts the event only
from a code object this module compiled (`COMPILED`, raised by `_rewrite_test` below with the module's
code). A test reported passed whose own function did not return exactly once, normally, is tampering
(monitor.py), however pytest's machinery was bent to report it; where the test's function is wrapped by
a decorator (collected as the wrapper: a property test's many examples), one normal return suffices. The test files are the commit's (the
sweep restores them); what runs in the test module's frame is the grader's compilation of them.
Python 3.9, standard library only."""

import ast
import fnmatch
import os
import sys
import types
import unittest

from .caseclass import as_collected, class_state, registry_vouched
from .guard import given, plain_path
from .installed import C3, CLASS_DICT, MRO
from .sweep import TEST_DIRS

EXIT, COMPILED, TAMPER = "bugforge.exit", "bugforge.compiled", "bugforge.tamper"
STATE, AUDIT, METHOD = "__bugforge_exit__", "__bugforge_audit__", "__bugforge_method__"
_RETURNED, _RAISED = 1, 2


def _is_test(name, patterns):
    return any(name.startswith(p) or fnmatch.fnmatch(name, p) for p in patterns)


def _has_yield(fn):
    """Whether a function body yields (a generator: left alone), not counting nested scopes."""
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return False


# TestCase's methods (assertions, fail, subTest ...): a test's `self.NAME` is looked up on its class, so
# that attributes given to the test's instance at run time cannot stand in for them
CASE_METHODS = frozenset(
    n for n in dir(unittest.TestCase) if not n.startswith("_") and callable(getattr(unittest.TestCase, n))
)
# what TestCase's methods look up on the instance: its methods (public and private) and failureException
SHADOWABLE = frozenset(n for n in dir(unittest.TestCase) if callable(getattr(unittest.TestCase, n)))


def class_lookup(cls, name, _mro=MRO, _dict=CLASS_DICT):
    """What `name` names on `cls`, as its MRO's namespaces hold it now, read plainly: never through
    CPython's type attribute cache, which a namespace written through its real dict leaves stale (round
    17), so a lookup finds what the checks of the class read. class_lookup itself where none holds it."""
    for c in _mro(cls):
        d = _dict(c)
        if name in d:
            return d[name]
    return class_lookup


# what the inserted code calls, as constants of the compiled code (`constants`): no name is looked up,
# so nothing the tree binds in a test module's globals or in builtins can stand in for them
CONSTANTS = {"\0bugforge." + f.__name__: f for f in (type, getattr, class_lookup, sys.audit)}
# (a value found on the class is bound as Python binds it: through its type's __get__, never its own: round 15)
METHOD_BIND = (
    METHOD + " = lambda o, n, _t=%r, _g=%r, _l=%r: (lambda v: _g(o, n) if v is _l else (lambda get: v if get is _l "
    "else get(v, o, _t(o)))(_l(_t(v), '__get__')))(_l(_t(o), n))"
) % ("\0bugforge.type", "\0bugforge.getattr", "\0bugforge.class_lookup")


def constants(code, names=CONSTANTS):
    """The compiled code with the inserted code's stand-in strings replaced by what they name (`names`;
    in nested code and in tuples: a lambda's defaults are one tuple constant)."""
    return code.replace(co_consts=tuple(_constant(c, names) for c in code.co_consts))


def _constant(c, names):
    kind = type(c)
    if kind is types.CodeType:
        return constants(c, names)
    if kind is tuple:
        return tuple(_constant(x, names) for x in c)
    return names.get(c, c) if kind is str else c


class _ClassMethods(ast.NodeTransformer):
    """`self.NAME` (NAME a TestCase method) read in a test function -> `METHOD(self, "NAME")`."""

    def visit_Attribute(self, node):
        self.generic_visit(node)
        value = node.value
        if isinstance(value, ast.Name) and value.id == "self" and node.attr in CASE_METHODS:
            if isinstance(node.ctx, ast.Load):
                call = ast.Call(ast.Name(METHOD, ast.Load()), [value, ast.Constant(node.attr)], [])
                return ast.copy_location(call, node)
        return node


def _wrap(fn):
    body = fn.body
    doc = body[:1] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else []
    rest = body[len(doc) :] or [ast.Pass()]

    def state(value):
        return ast.Assign(targets=[ast.Name(id=STATE, ctx=ast.Store())], value=ast.Constant(value=value))

    bind = ast.Assign(targets=[ast.Name(id=AUDIT, ctx=ast.Store())], value=ast.Constant("\0bugforge.audit"))
    method = ast.parse(METHOD_BIND).body[0]  # (self.assertX: the class's, never an instance attribute)
    _ClassMethods().visit(fn)
    report = ast.Expr(value=ast.Call(func=ast.Name(id=AUDIT, ctx=ast.Load()), args=[ast.Constant(EXIT)], keywords=[]))
    handler = ast.ExceptHandler(type=None, name=None, body=[state(_RAISED), ast.Raise(exc=None, cause=None)])
    guarded = ast.Try(body=rest, handlers=[handler], orelse=[], finalbody=[report])
    new = [state(_RETURNED), bind, method, guarded]
    for node in new:
        ast.copy_location(node, rest[0] if rest[0] is not None and hasattr(rest[0], "lineno") else fn)
    fn.body = doc + new


def blocks(node):
    """The statement blocks inside an if / try / with / for / while (where defs can be), else none."""
    if not isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
        return []
    bodies = [getattr(node, b, None) or [] for b in ("body", "orelse", "finalbody")]
    return bodies + [h.body for h in getattr(node, "handlers", None) or []]


def instrument(tree, patterns=("test",)):
    """Wrap every test function's body (module level, in classes, in if/try blocks) in place."""

    def walk(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if _is_test(node.name, patterns) and not _has_yield(node):
                    _wrap(node)
            elif isinstance(node, ast.ClassDef):
                walk(node.body)
            else:
                for block in blocks(node):
                    walk(block)

    walk(tree.body)
    ast.fix_missing_locations(tree)
    return tree


def functions(module_code):
    """[((file, enclosing code names, name), code)] of the instrumented functions in a module's code."""
    out = []
    path = os.path.realpath(module_code.co_filename)

    def walk(code, outer):
        for const in code.co_consts:
            if hasattr(const, "co_consts"):
                if STATE in const.co_varnames:
                    out.append(((path, outer, const.co_name), const))
                else:
                    walk(const, outer + (const.co_name,))

    walk(module_code, ())
    return out


def in_tests(path, root=os.environ.get("BUGFORGE_ROOT", "/testbed").rstrip("/") + "/"):
    """Whether a file of the tree lies in a test directory (a directory of it named as TEST_DIRS)."""
    path = os.path.realpath(str(path))
    return path.startswith(root) and not TEST_DIRS.isdisjoint(path[len(root) :].split("/")[:-1])


def install(rewrite, installed=(), _audit=sys.audit):
    """Make pytest's assertion rewriting (the module `rewrite`) compile every test module with the
    witness: instrument before the asserts are rewritten, tell the monitor what was compiled, and load
    a cached compilation (which would lack the witness, or be the test user's) only of a module under
    `installed` (directories only root writes: a plugin's modules, which pytest rewrites too). Before
    the integrity snapshot: these are then the genuine functions."""
    rewrite_asserts, rewrite_test, read_pyc = rewrite.rewrite_asserts, rewrite._rewrite_test, rewrite._read_pyc
    hook, write, witnessed = rewrite.AssertionRewritingHook, rewrite._write_pyc, set()
    should, bailout = hook._should_rewrite, hook._early_rewrite_bailout

    def instrumented_rewrite_asserts(mod, source, module_path=None, config=None):
        patterns = ["test"]
        if config is not None:
            patterns += [p for p in config.getini("python_functions") or () if p]
        instrument(mod, tuple(patterns))
        return rewrite_asserts(mod, source, module_path, config)

    def witnessed_rewrite_test(fn, config):
        fn = plain_path(fn, _audit, TAMPER)
        if not given(fn):
            _audit(TAMPER, "a test module's file is not the one the grader gave (the test user's): %s" % fn)
        stat, co = rewrite_test(fn, config)
        co = constants(co)
        witnessed.add(id(co))
        _audit(COMPILED, co)
        return stat, co

    def write_pyc(state, co, source_stat, pyc):  # (the witness's constants cannot be marshalled; never read)
        return False if id(co) in witnessed else write(state, co, source_stat, pyc)

    def should_rewrite(self, name, fn, state):  # (a test directory's modules too: mixins of inherited tests)
        return should(self, name, fn, state) or in_tests(fn)

    def early_bailout(self, name, state):
        return not TEST_DIRS.intersection(name.split(".")) and bailout(self, name, state)

    def installed_pyc(source, pyc, trace=lambda _: None):
        if all((os.path.realpath(str(p)) + "/").startswith(installed) for p in (source, pyc)):
            return read_pyc(source, pyc, trace)
        return None

    rewrite.rewrite_asserts = instrumented_rewrite_asserts
    rewrite._rewrite_test = witnessed_rewrite_test
    rewrite._read_pyc = installed_pyc
    rewrite._write_pyc = write_pyc
    hook._should_rewrite, hook._early_rewrite_bailout = should_rewrite, early_bailout
    return witnessed_rewrite_test.__code__


def _given_by_bases(cls, mro):
    """Whether a class's MRO (as collected: every check reads it) is the one its bases give (round 18's
    metaclass put a class of no-op assertions into it)."""
    given = C3(cls)
    return len(given) == len(mro) and all(a is b for a, b in zip(given, mro))


class Witness:
    """The monitor's record of what the grader compiled and how each test's own function ended; held
    in the monitor's closure only (monitor.py feeds it the events)."""

    def __init__(self):
        self.codes = {}  # id -> an instrumented function's code (kept alive)
        self.keys = {}  # (file, enclosing names, name) -> code
        self.modules = {}  # id -> a module code the grader compiled
        self.test_code = set()  # ids of every code object in those (kept alive by them)
        self.ran = {}  # a file -> the module code exec'd last for it
        self.expect = {}  # node id -> the code of the test's own function
        self.strict = set()  # node ids collected as their own function (not a decorator's wrapper)
        self.exits = {}  # node id -> how its function's calls ended ((_RETURNED | _RAISED, ...))
        self.passed = set()  # node ids whose call phase pytest reported passed
        self.failing = set()  # node ids a part of which raised a failure something caught (casecode.failed_part)
        self.told = set()  # node ids a failed phase of which was reported (the collector folds them failed)
        self.classes = {}  # node id -> (its collected class, class_state then)
        self.verified = {}  # id of a class -> (the class, class_flat when class_state last matched)
        self.registered = {}  # (id of a case, id of a type) -> (case, type, asserter) the test's code registered
        self.contexts = {}  # id of unittest's context or outcome -> (it, its state as unittest made it)
        self.current = None

    def compiled(self, module_code):
        self.modules[id(module_code)] = module_code
        stack = [module_code]  # (every code the grader compiled from the test files: the tests' own code)
        while stack:
            code = stack.pop()
            self.test_code.add(id(code))
            stack.extend(c for c in code.co_consts if type(c) is types.CodeType)
        for key, code in functions(module_code):
            self.codes[id(code)] = code
            self.keys[key] = None if key in self.keys else code  # (a name defined twice: no expectation)

    def executed(self, code):
        if getattr(code, "co_name", None) == "<module>":
            self.ran[code.co_filename] = code

    def exited(self, frame, code):
        """A test function's exit event, raised from `frame` (running `code`): why it cannot count ("" when
        it can)."""
        if id(code) not in self.codes:
            return "a test's end was reported by code the grader did not compile"
        local = frame.f_locals
        if any(type(k) is not str for k in local):  # (a lookup among such keys would run their code)
            return "a test function's frame holds a local that is not named by a string"
        case = local.get("self")
        if issubclass(type(case), unittest.TestCase):  # (TestCase's own methods look these up on the instance)
            own = vars(case)
            if type(own) is not dict:  # (a dict subclass's iteration would hide what it holds: round 14)
                return "a test case instance's namespace is not a plain dict"
            if any(type(k) is not str for k in own) or not SHADOWABLE.isdisjoint(own):
                return "a test case instance was given its own %s" % ", ".join(sorted(SHADOWABLE.intersection(own)))
            if not registry_vouched(case, own.get("_type_equality_funcs"), self.vouched):
                return "a test case's type-equality registry is not its own, of its classes' methods only"
        kind = self.classes.get(self.current)
        if kind is not None and case is not None and not as_collected(case, *kind, self.verified):
            return "a test ran on an instance of another class, or its class's bases or methods changed"
        if self.current is not None and code is self.expect.get(self.current):
            self.exits[self.current] = self.exits.get(self.current, ()) + (
                local.get(STATE),
            )  # (no list: security.md 3d)
        return ""

    def collected(self, tests):
        """tests: (node id, its module's file, its def's key, the collected function). Why a test module
        ran code the grader did not compile."""
        out, states = [], {}  # (a class's state once: its tests share it)
        for nodeid, module_file, key, fn, cls in tests:
            known = states.get(id(cls))
            if known is None or known[0] is not cls:
                known = states[id(cls)] = (cls, class_state(cls) if issubclass(type(cls), type) else None)
                if known[1] is not None and not _given_by_bases(cls, known[1][0]):  # (once a class)
                    out.append("a test class's MRO is not the one its bases give (its metaclass's mro())")
            state = known[1]  # (issubclass of its type: no __class__ property runs)
            if state is not None:
                self.classes[nodeid] = (cls, state)
            code = fn.__code__ if type(fn) is types.FunctionType else None  # (no code of the tree runs here)
            named = self.keys.get(key) if type(key) is tuple else None  # (the def the node id names: round 20)
            self.expect[nodeid] = named if named is not None else code if id(code) in self.codes else None
            if self.expect[nodeid] is code and code is not None:
                self.strict.add(nodeid)
            if type(module_file) is not str:
                out.append("a test module's file is not a string")
                continue
            ran = self.ran.get(module_file)
            if module_file and (ran is None or id(ran) not in self.modules):
                out.append("the test module %s ran code the grader did not compile" % module_file)
        return sorted(set(out))

    def record(self, record):
        kind, nodeid = record.get("event"), record.get("nodeid")
        if kind == "start":
            self.current = nodeid
        elif kind == "phase" and record.get("when") == "call" and record.get("outcome") not in ("failed", "skipped"):
            self.passed.add(nodeid)  # (any other word could be folded as a pass: it must be earned)
        elif kind == "phase" and record.get("outcome") == "failed":
            self.failing.discard(nodeid)  # (its failure reached the collector: the test is folded failed)
            self.told.add(nodeid)

    def register(self, args):
        """addTypeEqualityFunc(case, type, asserter), called by the test's own code (casecode.py)."""
        if len(args) == 3:
            self.registered[(id(args[0]), id(args[1]))] = args

    def vouched(self, case, kind, asserter):
        entry = self.registered.get((id(case), id(kind)))
        return entry is not None and entry[0] is case and entry[1] is kind and entry[2] is asserter

    def unregistered(self, args):
        """Why assertEqual may not use what a case's registry holds for a type (casecode.vetted's
        (case, type, entry, plain dict or not)): "" when it may."""
        if len(args) != 4 or args[3] is not True:
            return "a test case's type-equality registry is not a plain dict"
        if not self.vouched(*args[:3]):
            return "assertEqual was given an asserter the test's own code did not register"
        return ""

    def held(self, args, by_test):
        """The state of one of unittest's objects (an assertion context, a test's outcome; casecode.py:
        (object, state, made)): kept when made by the test's own code (`by_test`), once; when it is used,
        why it is not the state it was made with ("" when it is), by identity."""
        if len(args) != 3 or type(args[1]) is not tuple:
            return "unittest's object state was reported malformed"
        obj, state, made = args
        then = self.contexts.get(id(obj))
        if made is True and not by_test:
            return "unittest's %s was made by the project's code" % type(obj).__name__
        if made is True:
            self.contexts[id(obj)] = (obj, state)  # (held: its id is not reused while it is)
            return "" if then is None else "unittest's %s was made again" % type(obj).__name__
        if then is None or then[0] is not obj or len(then[1]) != len(state):
            return "unittest's %s was used where this test did not make it" % type(obj).__name__
        same = all(a is b for a, b in zip(then[1], state))
        return "" if same else "unittest's %s was changed after it was made" % type(obj).__name__

    def failed(self):
        if self.current is not None and self.current not in self.told:
            self.failing.add(self.current)

    def problems(self, nodeid):
        """At a test's end: a pass its own function did not earn."""
        self.current = None
        self.registered.clear()  # (registrations and contexts are a case's, made in its test)
        self.contexts.clear()
        if nodeid in self.passed and nodeid in self.failing:
            return ["%s was reported passed, but a part of it (a subtest) failed unreported" % nodeid]
        if nodeid not in self.passed or self.expect.get(nodeid) is None:
            return []
        exits = self.exits.get(nodeid, ())
        if (exits == (_RETURNED,)) if nodeid in self.strict else (_RETURNED in exits):
            return []
        how = ", ".join({_RETURNED: "returned", _RAISED: "raised"}.get(e, "?") for e in exits) or "never ran"
        return ["%s was reported passed, but its own function did not return once, normally (%s)" % (nodeid, how)]
