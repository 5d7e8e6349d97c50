"""Stage 1 of the factory: repository -> environment image -> trusted baseline -> per-test coverage map.

`build_environment` is the entry point; it writes, under `out/NAME/`: env.json (the EnvRecord the
next stages read), recipe.json (editable), testmap.json.gz, build.log and the snapshot repo/."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from bugforge.engine import LABEL, client, require_disk
from bugforge.errors import BugforgeError
from bugforge.factory import fallbacks
from bugforge.factory.acquire import acquire, slug
from bugforge.factory.project_files import repository_url
from bugforge.factory.recipe import detect
from bugforge.factory.release import release_ref
from bugforge.factory.repair import UNTRACKED_TO_EXCLUDE, repair
from bugforge.images import ensure_base_image, image_exists
from bugforge.records import (
    EnvRecord,
    Recipe,
    RepairStep,
    TestLimits,
    TestOutcome,
    TestRun,
    from_dict,
    load_env,
    to_dict,
    write_json,
)
from bugforge.testing.testmap import TestMap
from bugforge.testing.testrun import run_tests, tools_digest

Log = Callable[[str], None]
ENV_DOCKERFILE_VERSION = "1"


@dataclass
class EnvironmentConfig:
    """Options of `build_environment` (and of `bugforge factory env`, which takes its defaults from here)."""

    runs: int = 3
    """Baseline runs of the whole suite; two or more, so that flaky tests show."""
    timeout: float = 900
    """Seconds one baseline run may take."""
    test_limit: float = 120
    """CPU-seconds (or three times as many wall-seconds) one test may take at baseline; a test past it
    (a hung socket test, say) is deselected, recorded as a repair step, and the run repeated."""
    hung_tests: int = 3
    """Tests deselected that way before the run counts as a timeout."""


def load_recipe(path: str | Path) -> Recipe:
    try:
        return from_dict(Recipe, json.loads(Path(path).read_text()))
    except FileNotFoundError:
        raise BugforgeError(f"recipe file {path} does not exist", "pass the recipe.json written by a previous run")
    except (json.JSONDecodeError, ValueError, TypeError) as e:
        raise BugforgeError(f"recipe file {path} is not a valid recipe: {e}", "fix the JSON, or drop --recipe")


def env_dockerfile(base_image: str, recipe: Recipe) -> str:
    lines = [f"# bugforge environment (format {ENV_DOCKERFILE_VERSION})", f"FROM {base_image}", "COPY testbed /testbed"]
    lines += fallbacks.dockerfile_lines(recipe)  # period-correct tooling: resolve as of recipe.as_of
    for cmd in recipe.install:
        lines.append(f"RUN cd /testbed && {cmd}")
    lines.append(UNTRACKED_TO_EXCLUDE)  # files the install made must not show up in an agent's diff
    return "\n".join(lines) + "\n"


def build_environment(
    source: str,
    *,
    commit: str | None = None,
    recipe_path: str | None = None,
    out: Path = Path("runs"),
    runs: int = EnvironmentConfig.runs,
    timeout: float = EnvironmentConfig.timeout,
    test_limit: float = EnvironmentConfig.test_limit,
    force: bool = False,
    log: Log = print,
) -> tuple[EnvRecord, bool]:
    """Build (or reuse) the environment of `source`. Returns (record, reused). A `pypi:` source whose sdist
    ships too little of its test suite to build (most test files uncollectable, or none) is built from the
    repository its PKG-INFO names, at the release's tag, or, without one, at its default branch as of the
    release's upload (`release.release_ref`); the log says which."""
    try:
        return _build(source, commit, recipe_path, out, runs, timeout, test_limit, force, log)
    except BugforgeError as e:
        incomplete = "cannot be collected after repair" in e.what or e.what.startswith("no tests found")
        url = repository_url(_staging(out, source, commit) / "repo") if source.startswith("pypi:") else None
        if incomplete and source.startswith("pypi:") and not url:
            e.fix = "its sdist ships no runnable test suite and names no repository: pass the repository that holds its tests"
        if not (incomplete and url):
            raise
        name, version = source[len("pypi:") :].split("==", 1)
        found = release_ref(url, name, version)
        if found is None:
            e.fix = f"{e.fix} (no tag of release {version} in {url}, and no commit before its upload)"
            raise
        ref, how = found
        log(f"acquire: the sdist's tests cannot run ({e.what[:120]}); building {url} {how} instead")
        rec, reused = _build(url, ref, recipe_path, out, runs, timeout, test_limit, force, log)
        return rec, reused


def _staging(out: Path, source: str, commit: str | None) -> Path:
    """Where a build acquires its source (kept after a failure, replaced by the next build)."""
    return Path(out) / ".staging" / hashlib.sha256(f"{source}@{commit}".encode()).hexdigest()[:12]


def _build(
    source: str,
    commit: str | None,
    recipe_path: str | None,
    out: Path,
    runs: int,
    timeout: float,
    test_limit: float,
    force: bool,
    log: Log,
) -> tuple[EnvRecord, bool]:
    _check_args(source, out, runs)
    recipe_override = load_recipe(recipe_path) if recipe_path else None
    staging = _staging(out, source, commit)
    shutil.rmtree(staging, ignore_errors=True)
    log(f"acquire: {source}{' @ ' + commit if commit else ''}")
    got = acquire(source, commit, staging / "repo")
    env_dir = Path(out) / slug(got.name)
    recipe = recipe_override or detect(staging / "repo")
    base_commit = _head(staging / "repo")
    base = ensure_base_image(recipe.python, log=log)
    probe = tools_digest()
    key = hashlib.sha256(
        json.dumps([base_commit, to_dict(recipe), base.tag, ENV_DOCKERFILE_VERSION, runs, probe]).encode()
    ).hexdigest()
    env_json = env_dir / "env.json"
    old = None if force else _reusable(env_json, key)
    if old is not None:
        shutil.rmtree(staging, ignore_errors=True)
        return old, True
    # Replace the snapshot only now: a failure above leaves the previous environment untouched.
    env_dir.mkdir(parents=True, exist_ok=True)
    write_json(env_dir / "recipe.json", recipe)
    tag = f"bugforge/env.{slug(got.name)}:{base_commit[:10]}-{key[:10]}"
    date = fallbacks.commit_date(got.history_dir, got.source_commit) or got.date  # a release's, without history

    def image(tag: str, recipe: Recipe) -> Recipe:
        require_disk(3.0, "an environment image")
        log(f"build: {tag} ({len(recipe.install)} install steps; log: {env_dir / 'build.log'})")
        return fallbacks.build(
            tag,
            recipe,
            fixed=recipe_override is not None,
            dockerfile=lambda r: env_dockerfile(ensure_base_image(r.python, log=log).tag, r),
            context={"testbed": staging / "repo"},
            labels={"bugforge.source": source[:200], "bugforge.commit": got.source_commit},
            log_file=env_dir / "build.log",
            redetect=lambda **kw: detect(staging / "repo", **kw),
            date=date,
            what=f"the environment of {got.name}",
            log=log,
        )

    recipe = image(tag, recipe)
    for n in got.notes:
        log(f"acquire: {n}")
    recipe.notes += got.notes  # after the key: what acquiring found (submodules), not a recipe choice
    built, root = copy.deepcopy(recipe), tag  # before repair: what a period-correct rebuild starts from
    try:
        tag = repair(tag, recipe, staging / "repo", timeout=timeout, log_dir=env_dir, log=log)
        tests, suite_seconds, testmap = baseline(
            tag, recipe, runs=runs, timeout=timeout, test_limit=test_limit, log=log
        )
    except fallbacks.TooFewPassing as low:
        if not date or built.as_of or recipe_override is not None:
            raise
        log(f"baseline: {low.what}; resolving as of the source's date ({date[:10]}) instead")
        recipe = fallbacks.period(built, lambda **kw: detect(staging / "repo", **kw), date, low.what)
        recipe.notes += got.notes
        tag = f"{root}-p{date[:10].replace('-', '')}"
        recipe = image(tag, recipe)
        tag = repair(tag, recipe, staging / "repo", timeout=timeout, log_dir=env_dir, log=log)
        tests, suite_seconds, testmap = baseline(
            tag, recipe, runs=runs, timeout=timeout, test_limit=test_limit, log=log
        )
    fallbacks.record_resolution(tag, recipe)
    write_json(env_dir / "recipe.json", recipe)  # repairs, exclusions, a Hypothesis seed, neutralised addopts
    testmap_path = env_dir / "testmap.json.gz"
    testmap.save(testmap_path)
    repo_dir = env_dir / "repo"
    shutil.rmtree(repo_dir, ignore_errors=True)
    (staging / "repo").rename(repo_dir)
    shutil.rmtree(staging, ignore_errors=True)
    record = EnvRecord(
        name=slug(got.name),
        source=source,
        source_commit=got.source_commit,
        base_commit=base_commit,
        repo_dir=str(repo_dir.resolve()),
        image=tag,
        base_image=base.tag,
        recipe=recipe,
        tests=tests,
        suite_seconds=round(suite_seconds, 3),
        runs=runs,
        testmap=str(testmap_path.resolve()),
        key=key,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        history_dir=got.history_dir,
    )
    write_json(env_json, record)
    return record, False


def _check_args(source: str, out: Path, runs: int) -> None:
    """Refuse --runs below 2, and an environment directory that would be, or hold, a local source."""
    if runs < 2:
        raise BugforgeError(
            f"--runs {runs} cannot detect flaky tests", f"use --runs 2 or more (default {EnvironmentConfig.runs})"
        )
    local = Path(source).expanduser().resolve()
    if local.is_dir():  # the environment's directory must not be, or hold, the source (it replaces repo/)
        env_dir = (Path(out) / slug(local.name)).resolve()
        if env_dir == local or env_dir in local.parents:
            raise BugforgeError(
                f"the environment's directory {env_dir} would hold the source {local}",
                "pass --out a directory outside the source repository",
            )


def _reusable(env_json: Path, key: str) -> EnvRecord | None:
    """The environment recorded in `env_json`, when it was built with this key and its image and test map
    are still there."""
    if not env_json.exists():
        return None
    try:
        old = load_env(env_json)
    except (ValueError, KeyError, TypeError):
        return None
    return old if old.key == key and image_exists(old.image) and Path(old.testmap).exists() else None


def _head(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def baseline(
    image: str,
    recipe: Recipe,
    *,
    runs: int = EnvironmentConfig.runs,
    timeout: float = EnvironmentConfig.timeout,
    test_limit: float = EnvironmentConfig.test_limit,
    log: Log = print,
) -> tuple[dict[str, TestOutcome], float, TestMap]:
    """Run the suite `runs` times (the first with per-test coverage); flag tests whose outcome differs.
    Then once more watching method lookups (docs/environments.md, "Lookup map"). The runs after the first
    run only the tests that passed in it (a test failing at baseline is never a label, and tests that hang
    without a network would cost their timeout in every run); the suite's time counts the others' first
    durations."""
    seed_hypothesis(image, recipe, log)
    results: list[TestRun] = []
    raw_cov = None
    rerun: list[str] | None = None  # the tests the runs after the first run (None: all of them)
    for i in range(runs):
        t0 = time.monotonic()
        run, cov = _run(image, recipe, timeout, test_limit, log, coverage=(i == 0), selection=rerun)
        if i == 0 and not run.outcomes and _plugin_missing(run) and "addopts=" not in recipe.pytest_args:
            # A plugin the configuration needs could not be installed: neutralise addopts, say so.
            log("baseline: pytest rejected the configured addopts (missing plugin); retrying with -o addopts=")
            recipe.pytest_args += ["-o", "addopts="]
            recipe.notes.append("pytest: addopts neutralised (-o addopts=): a plugin it needs could not be installed")
            run, cov = _run(image, recipe, timeout, test_limit, log, coverage=True)
        log(
            f"baseline: run {i + 1}/{runs}{' (with coverage)' if i == 0 else ''}: {len(run.outcomes)} tests, "
            f"{sum(o == 'passed' for o in run.outcomes.values())} passed, {time.monotonic() - t0:.1f} s"
        )
        _check_run(run, timeout)
        if i == 0:
            fallbacks.check_share(run)  # usable or an error (TooFewPassing): fallbacks.PASS_SHARE
            raw_cov = cov
            passed = sorted(t for t, o in run.outcomes.items() if o == "passed")
            rerun = passed if passed and len(passed) < len(run.outcomes) else None
        results.append(run)
    first, later = results[0], results[1:]
    ran_later = set(first.outcomes) if rerun is None else set(rerun)
    tests = {}
    for t in sorted(set().union(*(r.outcomes for r in results))):
        seen = [first.outcomes.get(t, "missing")] + [r.outcomes.get(t, "missing") for r in later if t in ran_later]
        times = [r.durations[t] for r in results if t in r.durations]
        tests[t] = TestOutcome(
            outcome=seen[0], duration=round(statistics.mean(times or [0.0]), 4), flaky=len(set(seen)) > 1
        )
    left_out = sum(first.durations.get(t, 0.0) for t in first.outcomes if t not in ran_later)
    testmap = TestMap.from_coverage(raw_cov or {})
    # one more run, watching which tests look up which methods (a removed method selects those tests)
    t0 = time.monotonic()
    look, raw_lookups = _run(image, recipe, timeout, test_limit, log, lookups=True, selection=rerun)
    unwatched = [t for t, o in tests.items() if t in ran_later and look.outcomes.get(t) != o.outcome]
    log(
        f"baseline: lookup run: {len(look.outcomes)} tests, {len(unwatched)} with another outcome, "
        f"{time.monotonic() - t0:.1f} s"
    )
    testmap.add_lookups(None if look.timed_out or not look.outcomes else raw_lookups, unwatched)
    return tests, statistics.median(r.wall for r in later) + left_out, testmap


def _run(image: str, recipe: Recipe, timeout: float, test_limit: float, log: Log, **kw) -> tuple[TestRun, dict | None]:
    """One baseline run of the suite. A test past `test_limit` CPU-seconds is deselected (a repair step in
    the recipe: it is never a label) and the run repeated, up to EnvironmentConfig.hung_tests times."""
    limit = TestLimits(default=test_limit)
    while True:
        run, raw = run_tests(
            image, recipe.pytest_args, timeout=timeout, test_files=recipe.test_files, test_limit=limit, **kw
        )
        hung = sum(s.action.startswith("pytest --deselect") for s in recipe.repairs)
        if not (run.timed_out and run.limit and run.running) or hung >= EnvironmentConfig.hung_tests:
            return run, raw
        log(f"baseline: {run.running} ran past {run.limit:g} CPU-seconds or {3 * run.limit:g} s; deselecting it")
        recipe.pytest_args += ["--deselect", run.running]
        recipe.repairs.append(
            RepairStep(
                problem=f"{run.running}: ran past {run.limit:g} CPU-seconds or {3 * run.limit:g} wall-seconds",
                action=f"pytest --deselect {run.running} (a hung or very slow test is never a label)",
                result="fixed",
            )
        )


def _plugin_missing(run: TestRun) -> bool:
    return any(
        s in run.log_tail for s in ("unrecognized arguments", "Error importing plugin", "No module named 'pytest_")
    )


def seed_hypothesis(image: str, recipe: Recipe, log: Log = print) -> None:
    """Where the image has Hypothesis, add `--hypothesis-seed=0` to recipe.pytest_args, which every run
    takes (baseline, validation, warm grading, the eval_script): docs/environments.md, "Baseline"."""
    if any(a.startswith("--hypothesis-seed") for a in recipe.pytest_args):
        return
    probe = "import importlib.util as u; print(u.find_spec('hypothesis') is not None)"
    out = client().containers.run(
        image, ["python", "-c", probe], network_mode="none", remove=True, labels={LABEL: "testrun"}
    )
    if out.strip() == b"True":
        recipe.pytest_args += ["--hypothesis-seed=0"]
        recipe.notes.append("pytest: Hypothesis seeded (--hypothesis-seed=0): every run tries the same examples")
        log("baseline: Hypothesis is installed; seeding it (--hypothesis-seed=0) so every run tries the same examples")


def _check_run(run: TestRun, timeout: float) -> None:
    if run.timed_out:
        where = f" (still running: {run.running})" if run.running else ""
        raise BugforgeError(
            f"the test suite did not finish within {timeout:.0f} s{where}",
            "raise --timeout, or add '--deselect <test id>' to pytest_args in recipe.json and pass --recipe",
        )
    if not run.outcomes:
        if run.collect_errors:
            where, msg = next(iter(run.collect_errors.items()))
            raise BugforgeError(
                f"no test ran: collecting {where} failed: {msg.strip().splitlines()[-1][:300] if msg.strip() else ''}",
                "fix the recipe's install steps (recipe.json, then --recipe)",
            )
        tail = " | ".join(run.log_tail.strip().splitlines()[-3:])
        raise BugforgeError(
            f"no tests found (pytest exit code {run.exit_code}: {tail[-300:]})",
            "point at a repository with a pytest or unittest suite, or set test_files in recipe.json",
        )
