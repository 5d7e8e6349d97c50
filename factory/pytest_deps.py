"""A project that is one of pytest's own dependencies (iniconfig, pluggy, packaging...): the runner's copy.

Every test process loads pytest with the tree off sys.path (bugforge/incontainer/start.py), so that no
code of the tree runs before the grader's. For such a project the environment's only copy of the
package is the tree itself (an editable install, a `.pth` line, a finder), and pytest could not import.
`runner_copy` adds one install step: the release pytest's own metadata asks for goes, with no
dependencies, into `bugforge-pytest-deps` under site-packages (root's, installed code). The test
process puts that directory first on sys.path while pytest loads, then takes it off and drops what it
loaded from sys.modules (start.py `restore`), so pytest keeps its copy and the tests import the tree's:
a bug in the tree breaks its tests. docs/security.md (1)."""

from __future__ import annotations

import json
import shlex

from packaging.utils import canonicalize_name

from bugforge.incontainer.start import DEPS
from bugforge.records import Recipe

PYTEST_DEPENDENCIES = frozenset(
    canonicalize_name(n)
    for n in (
        # pytest 8 and 9 (exceptiongroup and tomli before Python 3.11), and what the lines back to 7.0
        # required (period-correct tooling installs those) on Linux
        "iniconfig", "packaging", "pluggy", "pygments", "exceptiongroup", "tomli", "attrs", "py",
    )
)  # fmt: skip
"""Distributions some pytest release of 7.0 or later requires itself. The step installs a copy only when
the image's pytest requires the project on the image's Python (what those require in turn is not
covered: typing-extensions under exceptiongroup, before Python 3.11)."""

_SCRIPT = (  # one line: a Dockerfile's RUN step
    "import importlib.metadata as m, os, re, subprocess, sys, sysconfig; "
    "from pip._vendor.packaging.requirements import Requirement as R; "
    'norm = lambda n: re.sub(r"[-_.]+", "-", n).lower(); '
    'rs = [r for r in map(R, m.requires("pytest") or []) if norm(r.name) == NAME'
    ' and (r.marker is None or r.marker.evaluate({"extra": ""}))]; '
    'target = os.path.join(sysconfig.get_paths()["purelib"], DEPS); '
    'pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--upgrade", "--target", target]; '
    "sys.exit(subprocess.call(pip + [rs[0].name + str(rs[0].specifier)]) if rs else 0)"
)


def is_pytest_dependency(dist: str | None) -> bool:
    """Whether distribution `dist` (any spelling) is one pytest may require."""
    return bool(dist) and canonicalize_name(dist) in PYTEST_DEPENDENCIES


def step(dist: str) -> str:
    """The install command: the runner's copy of `dist` at the release pytest's metadata asks for (a
    no-op when the image's pytest does not require it). Run isolated (-I): no code of the tree runs."""
    code = _SCRIPT.replace("NAME", json.dumps(canonicalize_name(dist))).replace("DEPS", json.dumps(DEPS))
    return f"python -I -c {shlex.quote(code)}"


def runner_copy(r: Recipe, dist: str | None) -> None:
    """Add the step to `r` (with its note) when the project `dist` is one of pytest's dependencies."""
    if not is_pytest_dependency(dist):
        return
    r.install.append(step(dist))
    r.notes.append(
        f"install: {dist} is one of pytest's own dependencies: a copy of the release pytest asks for goes"
        f" into site-packages/{DEPS}, which only pytest's loading sees (the tests import the tree's)"
    )
