"""The repair loop of `bugforge factory env` (docs/environments.md, "Repair"): after the first build,
collect the suite (no tests run) and fix what stops collection, a few rounds at most, each install as a
new image layer on the previous image; then leave out the test files that still cannot be collected.

Contract of `repair(image, recipe, repo)`: returns the image to use; `recipe` gains the install commands
that were kept (`install`), the pytest arguments (`pytest_args`: `-p no:NAME`, `--ignore=FILE`), one
`RepairStep` per step tried (`repairs`) and one `ExcludedFile` per file left out (`excluded`). It raises
BugforgeError, one line, when more than a quarter of the test files stay uncollectable."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import re
import shlex
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import docker.errors
import requests
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from bugforge.engine import LABEL, client
from bugforge.errors import BugforgeError
from bugforge.factory.project_files import declared, repository_url
from bugforge.images import build_image, image_exists
from bugforge.records import ExcludedFile, Recipe, RepairStep
from bugforge.testing.tools import dir_archive, file_archive

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
COLLECT_DIR = "/tmp/bugforge-collect"
# A pytest plugin (Python 3.9+, standard library only) that writes the collected node ids and the
# collection errors; pytest's own console text is read only for what happens before plugins load.
COLLECTOR = f"""
import json
items, errors = [], {{}}
def pytest_collectreport(report):
    if report.failed:
        errors[report.nodeid] = str(report.longrepr)[-4000:]
def pytest_collection_finish(session):
    items.extend(i.nodeid for i in session.items)
def pytest_unconfigure(config):
    with open({COLLECT_DIR + "/collected.json"!r}, "w") as f:
        json.dump({{"items": items, "errors": errors}}, f)
"""
_MISSING = re.compile(r"No module named '([A-Za-z_][\w.]*)'")
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


@dataclass
class Collection:
    """What `pytest --collect-only --continue-on-collection-errors` found in an image."""

    items: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    """node id (a file or directory) -> the collection error's text."""
    log: str = ""
    """The console's last lines (startup failures happen before any plugin can report)."""
    timed_out: bool = False

    def files(self) -> set[str]:
        return {i.split("::")[0] for i in self.items}


def collect(image: str, recipe: Recipe, timeout: float) -> Collection:
    """Collect the suite of `image` as every run would (recipe.pytest_args, test_files), with no network."""
    args = ["--collect-only", "-q", "--continue-on-collection-errors", *recipe.pytest_args, *recipe.test_files]
    script = (
        f"cd /testbed && PYTHONPATH={COLLECT_DIR}${{PYTHONPATH:+:$PYTHONPATH}} PYTHONDONTWRITEBYTECODE=1 "
        f"python -m pytest -p bugforge_collect {' '.join(shlex.quote(a) for a in args)}"
    )
    c = client().containers.create(
        image, ["bash", "-c", script], network_mode="none", labels={LABEL: "testrun"}, working_dir="/testbed"
    )
    try:
        c.put_archive("/tmp", dir_archive(COLLECT_DIR.rsplit("/", 1)[1]))
        c.put_archive(COLLECT_DIR, file_archive("bugforge_collect.py", COLLECTOR.encode()))
        c.start()
        col = Collection()
        try:
            c.wait(timeout=timeout)
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            col.timed_out = True
            c.kill()
        col.log = c.logs(tail=60).decode(errors="replace")
        try:
            stream, _ = c.get_archive(COLLECT_DIR + "/collected.json")
            with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                data = json.loads(tar.extractfile(tar.getmembers()[0]).read())
            col.items, col.errors = data["items"], data["errors"]
        except (docker.errors.NotFound, tarfile.TarError, ValueError, KeyError, IndexError, TypeError, AttributeError):
            pass  # no (whole) collected.json: pytest stopped before its session (a plugin or conftest failed to load)
        return col
    finally:
        c.remove(force=True)


def last_line(text: str) -> str:
    """The error's own line: the last non-empty line, without pytest's `E   ` prefix."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return re.sub(r"^E\s+", "", lines[-1])[:300] if lines else "unknown error"


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
        cmds = [s.action for s in steps if s.install]
        new, failed = image, {}
        if cmds:
            log(f"repair: round {rnd}: {'; '.join(cmds)}")
            new, failed = _install_layer(image, root, cmds, log, log_dir / f"repair-{rnd}.log")
        kept = [c for c in cmds if c not in failed]
        recipe.install += kept
        recipe.pytest_args += [a for s in steps if not s.install for a in s.action.split()]
        recipe.notes += [s.note for s in steps if s.note]
        image = new
        col = collect(image, recipe, timeout)
        for s in steps:
            result = (
                f"failed: {failed[s.action][:200]}" if s.action in failed else "not fixed" if s.check(col) else "fixed"
            )
            recipe.repairs.append(RepairStep(s.problem, f"{s.action} ({s.why})", result))
            log(f"repair: {s.problem} -> {s.action} ({s.why}): {result}")
    try:
        exclude(col, recipe)
    except BugforgeError as e:
        if url := repository_url(repo):  # an sdist that ships its tests incomplete: the repository has them
            e.fix += f", or build from the project's repository ({url}) at this release's tag"
        raise
    return image


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
