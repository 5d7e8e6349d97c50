"""The install ladder of `bugforge factory env` (docs/environments.md, "Fallbacks"): every way an
environment can fail to install or to run has a next rung, and an environment that still passes too few
of its tests is an error, not an environment.

- the environment image (`build`): a requirement that builds only from source and finds no compiler ->
  a C compiler and Python's headers first; the project's own build failing for any reason (a backend
  that reaches the network, build requirements missing from the index) -> its tree on sys.path with the
  requirements it declares; an install that the newest releases break -> period-correct tooling;
- the baseline (`check_share`): fewer than PASS_SHARE of the tests that ran pass -> `TooFewPassing`, one
  line naming the dominant failure (grouped by exception and location); the caller tries period-correct
  tooling (`period`) before giving up.

Period-correct tooling: every `pip install` resolves as of the source's date (`period_date`: its
commit's committer date, or a pypi: release's publication date) with pip's `--uploaded-prior-to`, set by
environment, and uv's `--exclude-newer` for pytest itself, on the newest Python the base images offer
that was released by then."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from bugforge.engine import LABEL, client
from bugforge.errors import BugforgeError
from bugforge.images import build_image, image_exists
from bugforge.records import Recipe, TestRun, from_dict, to_dict

Log = Callable[[str], None]
PASS_SHARE = 0.5
"""An environment whose first baseline run passes fewer than this share of the tests that ran (passed,
failed or errored; skips left out) is not built. Why half: docs/environments.md, "Usable or an error"."""
RECENT_DAYS = 30
RECIPE_LABEL = "bugforge.recipe"
"""Image label: the recipe the image was built from, when a fallback changed the detected one."""
UNBUILT = "bugforge.unbuilt"
"""Image label: the project's tree on sys.path, not built (detect(build=False))."""
BUILD_DEPS_FAILED = "Installing build dependencies: finished with status 'error'"
COMPILER = (
    "apt-get update -q && apt-get install -y -q --no-install-recommends gcc g++ libc6-dev"
    ' $(python -c \'import os, sysconfig; print("" if os.path.exists(os.path.join(sysconfig.get_paths()'
    '["include"], "Python.h")) else "python3-dev")\') && rm -rf /var/lib/apt/lists/*'
)
_NO_COMPILER = re.compile(
    r"unable to execute '[^']*(gcc|cc|g\+\+|clang)'|command '[^']*(gcc|cc|g\+\+|clang)' failed"
    r"|\b(gcc|cc|g\+\+|x86_64-linux-gnu-gcc): (command )?not found|error: no acceptable C compiler"
    r"|C compiler cannot create executables|Python\.h: No such file"
)
PERIOD_TOOLS = "pip install -q -U pip uv"
"""The newest pip (--uploaded-prior-to) and uv (--exclude-newer) resolve the period image's installs."""
PERIOD_PYTEST = (
    "uv pip install -q --reinstall-package pytest 'pytest>=7'"
    " || uv pip install -q --exclude-newer 2100-01-01 --reinstall-package pytest 'pytest>=7,<7.1'"
)
"""pytest as of the date, at least 7.0 (the oldest line bugforge's probe supports)."""


class TooFewPassing(BugforgeError):
    """The baseline passes fewer than PASS_SHARE of its tests."""


def dockerfile_lines(recipe: Recipe) -> list[str]:
    """What the environment's Dockerfile runs before the install steps (period tools, pytest of the date)."""
    if not recipe.as_of:
        return []
    return [
        f"RUN {PERIOD_TOOLS}",
        f"ENV PIP_UPLOADED_PRIOR_TO={recipe.as_of} UV_EXCLUDE_NEWER={recipe.as_of}",
        f"RUN {PERIOD_PYTEST}",
    ]


def commit_date(history_dir: str | None, commit: str) -> str | None:
    """The committer date of `commit` in the source's history as a period date (`period_date`); None
    without history."""
    if not history_dir:
        return None
    r = subprocess.run(["git", "-C", history_dir, "show", "-s", "--format=%ct", commit], capture_output=True, text=True)
    if r.returncode or not r.stdout.strip().isdigit():
        return None
    return period_date(datetime.fromtimestamp(int(r.stdout.strip()), timezone.utc))


def period_date(when: datetime | None) -> str | None:
    """`when` (timezone-aware) as the date period-correct tooling resolves as of: UTC, ISO 8601 with Z;
    None when unknown, or for a time of the last RECENT_DAYS (resolving as of then would change nothing)."""
    if when is None or (datetime.now(timezone.utc) - when).days < RECENT_DAYS:
        return None  # the newest releases are the period's
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def compiler_needed(log_text: str) -> bool:
    return bool(_NO_COMPILER.search(log_text))


def failed_step(error: str, recipe: Recipe) -> str | None:
    """The install command a build error names (its `Step N/M : RUN cd /testbed && CMD`)."""
    return next((c for c in recipe.install if f"RUN cd /testbed && {c}'" in error), None)


def project_step(cmd: str | None) -> bool:
    """Whether `cmd` builds the project itself (detect's first step)."""
    return bool(cmd) and cmd.startswith(("pip install -e ", "pip install -e '")) and "|| pip install" in cmd


def build(
    tag: str,
    recipe: Recipe,
    *,
    fixed: bool,
    dockerfile: Callable[[Recipe], str],
    context: dict,
    labels: dict,
    log_file: Path,
    redetect: Callable[..., Recipe],
    date: str | None,
    what: str,
    log: Log,
) -> Recipe:
    """Build `tag` (unless it exists) from `recipe`, climbing the ladder on failure unless the recipe is
    `fixed` (--recipe): a compiler, then the tree on sys.path (the project's own step failed), then period-
    correct tooling (`date` known). Returns the recipe the image holds (its label when a rung changed it)."""
    if image_exists(tag):
        log(f"build: reusing {tag}")
        held = client().images.get(tag).labels.get(RECIPE_LABEL)
        return from_dict(Recipe, json.loads(held)) if held and not fixed else recipe
    first, tried = recipe, []
    while True:
        extra = {RECIPE_LABEL: json.dumps(to_dict(recipe))} if recipe is not first else {}
        if "unbuilt" in tried:
            extra[UNBUILT] = "1"
        try:
            build_image(
                {**context, "Dockerfile": dockerfile(recipe).encode()},
                tag,
                labels=labels | extra,
                log=lambda line: log("build: " + line),
                log_file=log_file,
                what=what,
            )
            return recipe
        except BugforgeError as e:
            if fixed:
                raise
            text = log_file.read_text(errors="replace")
            step = failed_step(e.what, recipe)
            nxt, why = _next_rung(recipe, text, step, tried, redetect, date)
            if nxt is None:
                raise
            tried.append(why)
            log(f"build: {why}; retrying")
            recipe = nxt


def _next_rung(
    recipe: Recipe, text: str, step: str | None, tried: list[str], redetect: Callable[..., Recipe], date: str | None
) -> tuple[Recipe | None, str]:
    if compiler_needed(text) and COMPILER not in recipe.install:
        why = "a requirement builds only from source and the image has no C compiler: installing one first"
        recipe = copy.deepcopy(recipe)  # a new recipe: the image's label records it
        recipe.install.insert(0, COMPILER)
        recipe.notes.append(f"install: {COMPILER.split(' $(')[0]} (a requirement builds only from source)")
        return recipe, why
    if (BUILD_DEPS_FAILED in text or project_step(step)) and "unbuilt" not in tried:
        r = redetect(build=False, as_of=recipe.as_of or None)
        if COMPILER in recipe.install:
            r.install.insert(0, COMPILER)
        r.notes.append(f"install: the project's own build failed ({step or 'build requirements'}); not built")
        tried.append("unbuilt")
        return r, "the project's build failed; its tree goes on sys.path with the requirements it declares"
    if date and not recipe.as_of:
        return period(recipe, redetect, date, f"the install step {step!r} failed with the newest releases"), (
            f"installing with the newest releases failed; resolving as of {date[:10]}"
        )
    return None, ""


def period(recipe: Recipe, redetect: Callable[..., Recipe], date: str, why: str) -> Recipe:
    """The recipe again, resolved as of `date` (and its Python chosen by that date): period-correct tooling."""
    r = redetect(build=not any("not built" in n for n in recipe.notes), as_of=date)
    if COMPILER in recipe.install:
        r.install.insert(0, COMPILER)
    r.notes.append(f"install: resolved as of {date} (the source's commit or release date): {why}")
    return r


def record_resolution(image: str, recipe: Recipe) -> None:
    """Record what a period-correct image installed (`pip freeze`) in recipe.resolved."""
    if not recipe.as_of:
        return
    out = client().containers.run(
        image, ["pip", "list", "--format=freeze"], network_mode="none", remove=True, labels={LABEL: "testrun"}
    )
    recipe.resolved = [ln for ln in out.decode(errors="replace").splitlines() if "==" in ln]


def check_share(run: TestRun) -> None:
    """Raise TooFewPassing, naming the dominant failure, when too few of the tests that ran passed."""
    ran = [t for t, o in run.outcomes.items() if o in ("passed", "failed", "error")]
    passed = sum(run.outcomes[t] == "passed" for t in ran)
    if not ran or passed >= PASS_SHARE * len(ran):
        return
    failing = [failure_group(run.messages.get(t, "")) for t in ran if run.outcomes[t] != "passed"]
    (key, n), *_ = Counter(k for k, _ in failing).most_common(1)
    what = f"{key} ({next(line for k, line in failing if k == key)})"
    raise TooFewPassing(
        f"the baseline passes {passed} of {len(ran)} tests ({passed / len(ran):.0%}, under the"
        f" {PASS_SHARE:.0%} an environment needs); dominant failure ({n} tests): {what}",
        "fix the recipe's install steps (recipe.json, then --recipe), e.g. pin the pytest the project was written for",
    )


def failure_group(message: str) -> tuple[str, str]:
    """(`EXCEPTION at LOCATION`, the first line) of a probe message (`path:line: Exception: text`)."""
    m = re.match(r"^(?P<loc>[^:\n]*:\d+): (?P<rest>.*)", message.strip(), re.S)
    if not m:
        line = message.strip().splitlines()[-1][:200] if message.strip() else "no message"
        return line, line
    line = m["rest"].splitlines()[0][:160] if m["rest"].strip() else ""
    exc = re.match(r"^([\w.]*(Error|Exception|Exit|Interrupt|Warning))\b", line)
    return (
        f"{exc.group(1) if exc else 'AssertionError' if line.startswith('assert') else 'failure'} at {m['loc']}",
        line,
    )
