"""The repair loop of `bugforge factory env` (docs/environments.md, "Repair"): after the first build,
collect the suite (no tests run) and fix what stops collection, a few rounds at most, each install as a
new image layer on the previous image; then leave out the test files that still cannot be collected.

A step is kept only if it does not make collection worse: when, after a round, fewer tests are collected,
a file that collected before fails to, or the whole collection fails (factory/collection.py, `worse`), the
round is undone (its previous image is used again; a round of several steps is retried one step at a
time), each undone step is recorded as `reverted: <why>`, and the files that asked for it are left out
as if no install had fixed them (gevent's `monkey.patch_all()` at import broke a whole suite, issue 38).

Contract of `repair(image, recipe, repo)`: returns the image to use; `recipe` gains the install commands
that were kept (`install`), the pytest arguments (`pytest_args`: `-p no:NAME`, `--ignore=FILE`), one
`RepairStep` per step tried (`repairs`) and one `ExcludedFile` per file left out (`excluded`). It raises
BugforgeError, one line, when more than a quarter of the test files stay uncollectable."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from bugforge.errors import BugforgeError
from bugforge.factory.collection import Collection, collect, last_line, worse
from bugforge.factory.project_files import declared, repository_url
from bugforge.images import build_image, image_exists
from bugforge.records import ExcludedFile, Recipe, RepairStep

Log = Callable[[str], None]
MAX_ROUNDS = 4
EXCLUDE_LIMIT = 0.25  # more than this share of the test files excluded: an error, not an environment
PYTEST_LADDER = ["pytest<9", "pytest<8"]  # releases that still load plugins written for older hook specs
COVERAGE_PLUGINS = ["pytest_cov", "pytest_cover", "pytest_coverage"]  # module = plugin name; -p no:NAME
PYTEST_FOR_PYTHON = "pip install 'pytest>=7.4,<9'"  # the oldest line that runs on Python 3.9-3.12
IMPORT_MAP = Path(__file__).parent / "data" / "import_map.json"
# Files the install created (egg-info, build outputs) must not show up in an agent's diff.
UNTRACKED_TO_EXCLUDE = (
    "RUN cd /testbed && git ls-files -o --exclude-standard | sed 's|^|/|' >> .git/info/exclude"
    " && git status --porcelain | head -n 20"
)
_MISSING = re.compile(r"No module named '([A-Za-z_][\w.]*)'")
_RELATIVE = "attempted relative import with no known parent package"
_PLUGIN_NAME = re.compile(r"Plugin '([^']+)' for hook|Error importing plugin \"([^\"]+)\"")
_ADDOPTS_FAILURE = ("unrecognized arguments", "Error importing plugin", "No module named 'pytest_")
_PLUGIN_FAILURE = (
    "PluginValidationError",
    "Error importing plugin",
    "PytestRemovedIn9Warning",
    "while loading plugin",
    "INTERNALERROR>",  # a plugin reaching into pytest internals that the installed release removed
)
# A warning a plugin issues while pytest configures itself, made an error by the project's filterwarnings.
_CONFIG_WARNING = re.compile(r"INTERNALERROR> (pytest\.Pytest\w*Warning): ")


def missing_modules(col: Collection) -> dict[str, str]:
    """module -> where it was missing (a test file, or `startup` for a conftest or plugin)."""
    found: dict[str, str] = {}
    for where, text in sorted(col.errors.items()):
        for m in _MISSING.findall(text):
            found.setdefault(m, where)
    if not col.items and not col.errors:
        for m in _MISSING.findall(col.log):
            found.setdefault(m, "startup")
    return found


def plugin_failure(col: Collection) -> tuple[str, str | None] | None:
    """(the failure's line, the plugin's name or None) when a pytest plugin stopped pytest from starting."""
    if col.items or col.errors or not any(s in col.log for s in _PLUGIN_FAILURE) or _MISSING.search(col.log):
        return None  # a plugin that is not installed, or misses a module, is a missing module, not a version
    m = _PLUGIN_NAME.search(col.log)
    name = (m.group(1) or m.group(2)) if m else None
    lines = col.log.splitlines()
    line = next((ln.strip() for s in _PLUGIN_FAILURE for ln in lines if s in ln), "")  # the most telling first
    return line[:300], name


def pytest_crash(col: Collection) -> str | None:
    """The failure's line when pytest itself crashed before collecting (a traceback through `_pytest/`
    ending in an error that is neither a plugin's nor a missing module): a pytest too old for the image's
    Python, as a project's pinned test requirements often install."""
    if col.items or col.errors or plugin_failure(col) or _MISSING.search(col.log) or "/_pytest/" not in col.log:
        return None
    line = last_line(col.log)
    return line if re.match(r"^[\w.]*(Error|Exception)\b", line) else None


@functools.lru_cache(maxsize=1)
def import_map() -> dict[str, str]:
    """Import name -> requirement, for names that differ from their distribution's (factory/data/import_map.json)."""
    return json.loads(IMPORT_MAP.read_text())["map"]


def _local(repo: Path, top: str) -> bool:
    return any(p for p in [*repo.rglob(f"{top}.py"), *repo.rglob(top)] if ".git" not in p.parts)


def provider(repo: Path, module: str) -> tuple[str, str] | None:
    """(requirement, why) that should provide `module`; None where no install can (the standard
    library, the project's own modules). Order: a requirement the project declares for it, the import
    map, then the import name itself."""
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top.startswith(("_", "bugforge")) or _local(repo, top):
        return None
    prefixes = [".".join(module.split(".")[:i]) for i in range(module.count(".") + 1, 0, -1)]
    hit = next((p for p in prefixes if p in import_map()), None)
    mapped = import_map()[hit] if hit else None
    wanted = {canonicalize_name(p) for p in prefixes}
    if mapped:
        wanted.add(canonicalize_name(Requirement(mapped).name))
    for where, req in declared(repo):
        if canonicalize_name(req.name) in wanted:
            extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
            spec = f" @ {req.url}" if req.url else str(req.specifier)
            return f"{req.name}{extras}{spec}", f"the project's {where}"
    if mapped:
        return mapped, f"import name {hit} -> {mapped}"
    return top, "the import name"


@dataclass
class _Step:
    problem: str
    action: str
    why: str
    install: bool
    check: Callable[[Collection], bool]
    """True when the problem is still there in a later collection."""
    note: str = ""
    """Added to the recipe's notes when the step is taken."""


def plan(col: Collection, recipe: Recipe, repo: Path, tried: set[str]) -> list[_Step]:
    """The steps for what `col` shows, skipping actions already `tried`."""
    steps: list[_Step] = []
    for module, where in missing_modules(col).items():
        got = provider(repo, module)
        if got is None:
            continue
        cmd = f"pip install {shlex.quote(got[0])}"
        if cmd not in tried and cmd not in [s.action for s in steps]:
            steps.append(
                _Step(
                    f"{where}: ModuleNotFoundError: No module named {module!r}",
                    cmd,
                    got[1],
                    True,
                    lambda c, m=module: m in missing_modules(c),
                )
            )
    crash = pytest_crash(col)
    if crash and PYTEST_FOR_PYTHON not in tried and PYTEST_FOR_PYTHON not in recipe.install:
        still = lambda c: pytest_crash(c) is not None  # noqa: E731
        steps.append(_Step(f"startup: {crash}", PYTEST_FOR_PYTHON, "a pytest release for this Python", True, still))
    warned = _CONFIG_WARNING.search(col.log) if not (col.items or col.errors) else None
    if warned and f"-W ignore::{warned.group(1)}" not in tried:
        steps.append(
            _Step(
                f"startup: {warned.group(1)} at configure time, an error under the project's filterwarnings",
                f"-W ignore::{warned.group(1)}",
                "a plugin's configuration warning is not a test failure",
                False,
                lambda c, w=warned.group(1): f"INTERNALERROR> {w}: " in c.log,
            )
        )
        return steps
    failure = plugin_failure(col)
    stopped = not col.items and not col.errors and any(s in col.log for s in _ADDOPTS_FAILURE)
    if failure:
        steps += _plugin_steps(col, failure, recipe, tried)
    elif stopped and not steps and "addopts=" not in " ".join(recipe.pytest_args) and "-o addopts=" not in tried:
        steps.append(
            _Step(
                f"startup: {last_line(col.log)}",
                "-o addopts=",
                "a plugin the configured addopts need could not be installed",
                False,
                lambda c: not c.items and not c.errors,
                "pytest: addopts neutralised (-o addopts=): a plugin it needs could not be installed",
            )
        )
    return steps


def _plugin_steps(col: Collection, failure: tuple[str, str | None], recipe: Recipe, tried: set[str]) -> list[_Step]:
    """For a plugin that fails at startup: turn a coverage plugin off (bugforge measures coverage itself);
    else the next pytest release on the ladder; else run without the plugin."""
    line, name = failure
    still = lambda c: plugin_failure(c) is not None  # noqa: E731
    coverage = next((n for n in COVERAGE_PLUGINS if f"/{n}/" in col.log or f"/{n}.py" in col.log), None)
    if coverage and f"-p no:{coverage}" not in tried:
        why = "bugforge measures coverage itself: a project's coverage plugin is never needed"
        return [_Step(f"startup: {line}", f"-p no:{coverage}", why, False, still)]
    rungs = [f"pip install {shlex.quote(v)}" for v in PYTEST_LADDER]
    rung = next((r for r in rungs if r not in tried and r not in recipe.install), None)
    if rung:
        return [_Step(f"startup: {line}", rung, "a pytest release the plugin supports", True, still)]
    if name and "/" not in name and f"-p no:{name}" not in tried:
        return [_Step(f"startup: {line}", f"-p no:{name}", "run without the plugin", False, still)]
    return []


def layer(parent: str, cmds: list[str], tag: str, log: Log, log_file: Path) -> str:
    """`parent` plus one RUN step per command, as `tag` (reused when it exists)."""
    if not image_exists(tag):
        dockerfile = f"FROM {parent}\n" + "".join(f"RUN cd /testbed && {c}\n" for c in cmds) + UNTRACKED_TO_EXCLUDE
        build_image(
            {"Dockerfile": (dockerfile + "\n").encode()},
            tag,
            log=lambda line: log("repair: " + line),
            log_file=log_file,
            what="a repair layer",
        )
    return tag


def _tag(root: str, parent: str, cmds: list[str]) -> str:
    """A repair layer's tag: the environment's tag, then a digest of (parent, commands): deterministic."""
    return f"{root}-r{hashlib.sha256(json.dumps([parent, cmds]).encode()).hexdigest()[:8]}"


def repair(image: str, recipe: Recipe, repo: Path, *, timeout: float, log_dir: Path, log: Log = print) -> str:
    """Collect, fix, re-collect (MAX_ROUNDS at most), then exclude what still cannot be collected."""
    tried = {r.action.split(" (")[0] for r in recipe.repairs}
    root = image
    col = collect(image, recipe, timeout)
    for rnd in range(1, MAX_ROUNDS + 1):
        steps = plan(col, recipe, repo, tried)
        if not steps or col.timed_out:
            break
        tried |= {s.action for s in steps}
        image, col = _round(str(rnd), steps, image, col, recipe, root=root, timeout=timeout, log_dir=log_dir, log=log)
    try:
        exclude(col, recipe)
    except BugforgeError as e:
        if lost := not_packages(col, repo):  # an sdist that ships a test package's test files alone
            e.what += (
                f"; {', '.join(lost)} has no __init__.py: its test files import their package's modules"
                " relatively (`from .x import`), and the source does not ship that package"
            )
        if url := repository_url(repo):  # an sdist that ships its tests incomplete: the repository has them
            e.fix += f", or build from the project's repository ({url}) at this release's tag"
        raise
    return image


def _round(
    name: str,
    steps: list[_Step],
    image: str,
    col: Collection,
    recipe: Recipe,
    *,
    root: str,
    timeout: float,
    log_dir: Path,
    log: Log,
) -> tuple[str, Collection]:
    """Take `steps` on `image` (whose collection is `col`) and collect again: the image and collection to
    go on from. The steps are kept only when the collection is no worse; else they are undone (`image`,
    `col` again; each step recorded as reverted), and when there were several, tried again one at a time,
    so that the one that breaks collection costs the others nothing."""
    cmds = [s.action for s in steps if s.install]
    new, failed = image, {}
    if cmds:
        log(f"repair: round {name}: {'; '.join(cmds)}")
        new, failed = _install_layer(image, root, cmds, log, log_dir / f"repair-{name}.log")
    args = [a for s in steps if not s.install for a in s.action.split()]
    after = collect(new, replace(recipe, pytest_args=recipe.pytest_args + args), timeout)
    why = worse(col, after)
    if why and len(steps) > 1:
        log(f"repair: round {name} made collection worse ({why}): its steps one at a time")
        for i, s in enumerate(steps, 1):
            image, col = _round(
                f"{name}.{i}", [s], image, col, recipe, root=root, timeout=timeout, log_dir=log_dir, log=log
            )
        return image, col
    for s in steps:
        if s.action in failed:
            result = f"failed: {failed[s.action][:200]}"
        else:
            result = f"reverted: {why}" if why else "not fixed" if s.check(after) else "fixed"
        recipe.repairs.append(RepairStep(s.problem, f"{s.action} ({s.why})", result))
        log(f"repair: {s.problem} -> {s.action} ({s.why}): {result}")
    if why:
        return image, col
    recipe.install += [c for c in cmds if c not in failed]
    recipe.pytest_args += args
    recipe.notes += [s.note for s in steps if s.note]
    return new, after


def _install_layer(image: str, root: str, cmds: list[str], log: Log, log_file: Path) -> tuple[str, dict[str, str]]:
    """`image` plus a layer of the install commands `cmds`; when that build fails, one layer per command,
    each on what worked so far. (the new image, {command: why it failed})."""
    failed: dict[str, str] = {}
    try:
        return layer(image, cmds, _tag(root, image, cmds), log, log_file), failed
    except BugforgeError as e:
        if len(cmds) == 1:
            return image, {cmds[0]: e.what}
    new = image
    for c in cmds:
        try:
            new = layer(new, [c], _tag(root, new, [c]), log, log_file)
        except BugforgeError as e1:
            failed[c] = e1.what
    return new, failed


def not_packages(col: Collection, repo: Path) -> list[str]:
    """The directories of test files that fail to collect with a relative import while the directory
    is no package (no `__init__.py`): the source shipped the test files without their package."""
    dirs = {Path(n.split("::")[0]).parent.as_posix() for n, text in col.errors.items() if _RELATIVE in text}
    return sorted(d for d in dirs if not (repo / d / "__init__.py").exists())


def exclude(col: Collection, recipe: Recipe) -> None:
    """Leave out (`--ignore`) each file or directory that cannot be collected; an error when they are
    more than EXCLUDE_LIMIT of the test files. Nothing to do when pytest collected nothing at all and
    reported no error (the baseline says why)."""
    why: dict[str, str] = {}  # a class or other node inside a file that fails to collect fails its file's run
    for node, text in sorted(col.errors.items()):
        if node:
            why.setdefault(node.split("::")[0], text)
    bad = sorted(why)
    if not bad:
        return
    total = len(col.files() | set(bad))
    if len(bad) > EXCLUDE_LIMIT * total:
        raise BugforgeError(
            f"{len(bad)} of {total} test files cannot be collected after repair (more than a quarter); "
            f"first: {bad[0]}: {last_line(why[bad[0]])}",
            "add what they need to the recipe's install steps (recipe.json, then --recipe)",
        )
    for p in bad:
        recipe.pytest_args.append(f"--ignore={p}")
        recipe.excluded.append(ExcludedFile(p, last_line(why[p])))
        recipe.test_files = [f for f in recipe.test_files if f != p]
    recipe.notes.append(
        f"pytest: {len(bad)} of {total} test files excluded (--ignore): they cannot be collected after repair"
    )
