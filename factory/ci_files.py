"""The commands a project runs its tests with, read on the host without running project code: GitHub
workflow steps (PyYAML + shlex), every tox environment (`tox config`, which expands factors and
substitutions; tox.ini, tox.toml and [tool.tox]), nox sessions (noxfile.py read as a syntax tree) and
Makefile test targets. Each `Command` is one shell command as an argument list, with its source."""

from __future__ import annotations

import ast
import json
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

TEST_TARGETS = ("test", "tests", "check", "unittest", "unit", "pytest")
WRAPPERS = {"sudo", "time", "exec", "command", "xvfb-run"}
RUNNERS = {("poetry", "run"), ("pdm", "run"), ("pipenv", "run"), ("rye", "run")}
CUT = {"&&", "||", ";", "|", "&", "(", ")"}


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    """Normalised: wrappers (`uv run`, `poetry run`, `python -m`, `coverage run -m`) removed."""
    source: str
    """e.g. ".github/workflows/ci.yml job test", "tox env py311", "noxfile.py session tests"."""
    uv: tuple[str, ...] = ()
    """Flags of a `uv run`/`uv sync` wrapper (--extra X, --group G, ...)."""


GHA_EXPR = "\x00gha-expression\x00"


def shell_commands(text: str) -> list[list[str]]:
    """Simple commands of a shell script: continuation lines joined, each line cut at && || ; | &."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        lex = shlex.shlex(line, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        lex.commenters = "#"
        try:
            tokens = list(lex)
        except ValueError:  # unbalanced quotes: not a command we can read
            continue
        cur: list[str] = []
        for t in tokens + [";"]:
            if t in CUT or set(t) <= set("&|;()"):
                if cur:
                    out.append(cur)
                cur = []
            else:
                cur.append(t)
    return out


UV_TAKES = ("--extra", "--group", "--with", "--python", "-p", "--package", "--only-group")


def normalise(argv: list[str]) -> tuple[list[str], list[str]]:
    """(command without wrappers, flags of a `uv run` wrapper)."""
    uv: list[str] = []
    a = list(argv)
    while a:
        while a and ("=" in a[0] and not a[0].startswith("-") and a[0].split("=")[0].isidentifier()):
            a = a[1:]  # VAR=value prefix
        rest = _unwrap(a, uv)
        if rest is None:
            break
        a = rest
    return a, uv


def _unwrap(a: list[str], uv: list[str]) -> list[str] | None:
    """`a` without its first wrapper (a `uv run`'s flags added to `uv`); None when it starts with none."""
    if a and a[0] in WRAPPERS:
        return a[1:]
    if len(a) > 1 and (a[0], a[1]) in RUNNERS:
        return a[2:]
    if len(a) > 1 and a[0] == "uv" and a[1] == "run":
        a = a[2:]
        while a and a[0].startswith("-"):
            n = 2 if a[0] in UV_TAKES else 1
            uv += a[:n]
            a = a[n:]
        return a
    if len(a) > 1 and a[0] == "hatch" and a[1] == "run":
        a = a[2:]
        return [a[0].split(":", 1)[1]] + a[1:] if a and ":" in a[0] and not a[0].startswith("-") else a
    if a and Path(a[0]).name.startswith("python") and "-m" in a[:3]:
        return a[a.index("-m") + 1 :]
    if a and a[0] == "-m":  # `$(PYTHON) -m pytest` with the make variable dropped
        return a[1:]
    if a and a[0] == "coverage" and len(a) > 1 and a[1] == "run" and "-m" in a:
        return a[a.index("-m") + 1 :]
    return None


def workflow_commands(repo: Path) -> list[tuple[str, list[Command]]]:
    """(job label, its commands) for every job of .github/workflows/*.yml, files sorted, jobs in file order."""
    out = []
    wf = repo / ".github" / "workflows"
    files = sorted([*wf.glob("*.yml"), *wf.glob("*.yaml")]) if wf.is_dir() else []
    for f in files:
        try:
            doc = yaml.safe_load(f.read_text(errors="replace"))
        except yaml.YAMLError:
            continue
        jobs = doc.get("jobs") if isinstance(doc, dict) else None
        for job, spec in (jobs or {}).items() if isinstance(jobs, dict) else []:
            label = f"{f.relative_to(repo).as_posix()} job {job}"
            cmds = []
            for step in spec.get("steps", []) if isinstance(spec, dict) else []:
                run = step.get("run") if isinstance(step, dict) else None
                if isinstance(run, str):  # a command with a `${{ ... }}` expression depends on the CI run: skipped
                    for argv in shell_commands(re.sub(r"\$\{\{.*?\}\}", GHA_EXPR, run)):
                        a, uv = normalise(argv)
                        if a and not any(GHA_EXPR in t for t in a):
                            cmds.append(Command(tuple(a), label, tuple(uv)))
            out.append((label, cmds))
    return out


def tox_envs(repo: Path, python: str) -> list[dict] | None:
    """Every tox environment after tox's own expansion: [{name, deps, extras, dependency_groups, commands}],
    in tox's order; None when tox is not importable here or cannot read the configuration. Commands are
    asked only of environments without a Python factor or for `python` / the host's Python (expanding
    `{envpython}` makes tox look for each environment's interpreter)."""
    if not any((repo / f).is_file() for f in ("tox.ini", "tox.toml")) and "[tool.tox]" not in _read(
        repo / "pyproject.toml"
    ):
        return []
    try:
        import tox  # noqa: F401  (only to learn that `python -m tox` will work)
    except ModuleNotFoundError:
        return None
    with tempfile.TemporaryDirectory(prefix="bugforge-tox-") as work:
        base = [sys.executable, "-P", "-m", "tox", "config", "-c", str(repo), "--workdir", work, "--no-provision"]
        base += ["--format", "json", "-x", "tox.requires=", "-x", "tox.min_version=0"]
        # package=skip: building the package makes tox look up every environment's interpreter (seconds
        # each); the configured extras are still reported
        for section in ("testenv", "env_run_base", "tool.tox.env_run_base"):  # tox.ini, tox.toml, pyproject
            base += ["-x", f"{section}.package=skip", "-x", f"{section}.use_develop=false"]
        envs = _tox_json(base + ["-e", "ALL", "-k", "deps", "extras", "dependency_groups"], repo)
        if envs is None:
            return None
        tags = {python.replace(".", ""), "%d%d" % sys.version_info[:2]}
        wanted = [n for n in envs if not n.startswith(".") and (not py_factors(n) or py_factors(n) & tags)]
        cmds = _tox_json(base + ["-e", ",".join(wanted), "-k", "commands"], repo) if wanted else {}
    out = []
    for n, e in envs.items():
        c = (cmds or {}).get(n, {}).get("commands")
        out.append({"name": n, **e, "commands": c if isinstance(c, list) else []})
    return out


def py_factors(env: str) -> set[str]:
    """Python versions an environment name's factors ask for, as digits: py311, py3.11, pypy311, 3.11,
    py314t -> 311 (314)."""
    out = set()
    for f in env.split("-"):
        v = f.removeprefix("pypy").removeprefix("py").removesuffix("t").replace(".", "")
        if v.isdigit() and (f.startswith("py") or "." in f):
            out.add(v)
        elif f in ("pypy", "pypy3"):
            out.add(f)
    return out


def _tox_json(cmd: list[str], repo: Path) -> dict | None:
    try:
        p = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=60)
        envs = json.loads(p.stdout)["env"]
    except (subprocess.TimeoutExpired, json.JSONDecodeError, KeyError, TypeError, OSError):
        return None
    return {n: e for n, e in envs.items() if isinstance(e, dict)} if isinstance(envs, dict) else None


def _read(p: Path) -> str:
    return p.read_text(errors="replace") if p.is_file() else ""


def nox_sessions(repo: Path) -> list[tuple[str, list[Command]]]:
    """(session name, its session.install/run commands) from noxfile.py read as a syntax tree: constant
    strings and `*NAME` of module-level lists of strings; other arguments are dropped."""
    try:
        tree = ast.parse(_read(repo / "noxfile.py"))
    except SyntaxError:
        return []
    consts = _string_lists(tree)
    out = []
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and any(_is_session(d) for d in fn.decorator_list):
            name = _session_name(fn)
            out.append((name, _session_commands(fn, name, consts)))
    return out


def _string_lists(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level names bound to a list or tuple of constant strings."""
    consts: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.Tuple)):
            vals = [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            for t in node.targets:
                if isinstance(t, ast.Name) and len(vals) == len(node.value.elts):
                    consts[t.id] = vals
    return consts


def _session_name(fn: ast.FunctionDef) -> str:
    """A session's name: its decorator's `name=` when given, else the function's."""
    name = fn.name
    for d in fn.decorator_list:
        for kw in d.keywords if isinstance(d, ast.Call) else []:
            if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                name = str(kw.value.value)
    return name


def _session_commands(fn: ast.FunctionDef, name: str, consts: dict[str, list[str]]) -> list[Command]:
    """The session's `session.install(...)` and `session.run(...)` calls, as commands."""
    arg = fn.args.args[0].arg if fn.args.args else "session"
    cmds = []
    for call in ast.walk(fn):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        if not (isinstance(call.func.value, ast.Name) and call.func.value.id == arg):
            continue
        args = _string_args(call, consts)
        if call.func.attr == "install":
            cmds.append(Command(("pip", "install", *args), f"noxfile.py session {name}"))
        elif call.func.attr in ("run", "run_always", "run_install") and args:
            a, uv = normalise(args)
            if a:
                cmds.append(Command(tuple(a), f"noxfile.py session {name}", tuple(uv)))
    return cmds


def _string_args(call: ast.Call, consts: dict[str, list[str]]) -> list[str]:
    """A call's constant string arguments, `*NAME` of a known list expanded; others dropped."""
    args = []
    for a in call.args:
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            args.append(a.value)
        elif isinstance(a, ast.Starred) and isinstance(a.value, ast.Name):
            args += consts.get(a.value.id, [])
    return args


def _is_session(d: ast.expr) -> bool:
    f = d.func if isinstance(d, ast.Call) else d
    return (isinstance(f, ast.Attribute) and f.attr == "session") or (isinstance(f, ast.Name) and f.id == "session")


def makefile_commands(repo: Path) -> list[Command]:
    """Recipe lines of the Makefile's test target (the first of TEST_TARGETS it defines); lines naming make
    variables are kept with the variable dropped."""
    text = next((_read(repo / n) for n in ("GNUmakefile", "makefile", "Makefile") if (repo / n).is_file()), "")
    recipes: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("\t") and current is not None:
            recipes[current].append(line.strip().lstrip("@-+").strip())
        elif line.strip() and not line.startswith((" ", "#")):
            head = line.split(":", 1)[0].strip() if ":" in line and "=" not in line.split(":", 1)[0] else None
            current = None
            for t in (head or "").split():
                recipes.setdefault(t, [])
                current = current or t
    for target in TEST_TARGETS:
        if recipes.get(target):
            cmds = []
            for line in recipes[target]:
                for argv in shell_commands(line):
                    a, uv = normalise([t for t in argv if "$(" not in t and "${" not in t])
                    if a:
                        cmds.append(Command(tuple(a), f"Makefile target {target}", tuple(uv)))
            return cmds
    return []
