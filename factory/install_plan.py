"""The recipe's install steps beyond the project's test-named extras (factory/recipe.py makes those):
Poetry/PDM/uv/Hatch test groups, what the project's CI, tox and nox runs install, and the extras,
groups and requirements files that provide a module the tests import and nothing else installs.
Every step is tolerant (`|| true`, or one requirement at a time when the whole set fails): a missing
module then shows at collection, where the repair loop sees it. Each step's note names its source."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from bugforge.factory.declarations import (
    HATCH_TEST_ENVS,
    TEST_NAMES,
    Declared,
    file_requirements,
    req_names,
    requirement_files,
)
from bugforge.factory.project_runs import Install
from bugforge.factory.pytest_deps import runner_copy
from bugforge.factory.test_scope import dists_for
from bugforge.records import Recipe


def tolerant(reqs: list[str]) -> str:
    """Install reqs together; if that fails, each on its own; never fails the build."""
    q = " ".join(shlex.quote(x) for x in reqs)
    if len(reqs) == 1:
        return f"pip install {q} || true"
    return f'pip install {q} || for r in {q}; do pip install "$r" || true; done'


@dataclass
class Plan:
    """Accumulates what is installed (canonical names) and the steps still to emit."""

    repo: Path
    extras: dict[str, Declared]
    groups: list[Declared]
    project: str | None = None
    """The project's distribution name: a group naming it (`pkg[x]`) stands for its extras."""
    build: bool = True
    """False: the project is not built (detect(build=False)); its extras install as their requirements."""
    covered: set[str] = field(default_factory=lambda: {"pytest"})
    extra_pick: dict[str, str] = field(default_factory=dict)
    """extra -> why (beyond the main install step's)."""
    group_steps: list[tuple[list[str], str]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    """requirements files already installed (by earlier steps or here)."""
    file_steps: list[tuple[str, str]] = field(default_factory=list)
    done_groups: set[str] = field(default_factory=set)

    def pick_extra(self, name: str, why: str) -> None:
        d = self.extras.get(name)
        if d is not None and name not in self.extra_pick:
            self.extra_pick[name] = why
            self.covered |= req_names(d.requirements)

    def without_self(self, reqs, source: str) -> list[str]:
        """reqs without those naming the project itself (Hatch `feature:x`, `pkg[x]`, `-e` paths), whose
        extras are picked instead: installing `pkg[x]` from the index would replace the tree under test."""
        me = canonicalize_name(self.project) if self.project else None
        out = []
        for q in reqs:
            if q.startswith("feature:"):
                self.pick_extra(q.split(":", 1)[1], f"named by {source}")
                continue
            if q.startswith("-e"):
                continue
            try:
                parsed = Requirement(q)
            except InvalidRequirement:
                continue
            if me and canonicalize_name(parsed.name) == me:
                for e in sorted(parsed.extras):
                    self.pick_extra(e, f"named by {source}")
            else:
                out.append(q)
        return out

    def pick_group(self, d: Declared, why: str) -> None:
        if d.source in self.done_groups:
            return
        self.done_groups.add(d.source)
        reqs = self.without_self(d.requirements, d.source)
        if reqs:
            self.group_steps.append((reqs, f"{d.source} ({why})"))
            self.covered |= req_names(reqs)

    def pick_file(self, f: str, why: str) -> None:
        if f not in self.files:
            self.files.append(f)
            self.file_steps.append((f, why))
            reqs, selfx = file_requirements(self.repo, f)
            self.covered |= req_names(reqs)
            for e in selfx:
                self.pick_extra(e, f"named by {f}")

    def test_groups(self) -> None:
        """Test-named groups of Poetry, PDM, uv and Hatch (PEP 735's first test group is the recipe's)."""
        for d in self.groups:
            if "[dependency-groups]" in d.source or "(optional)" in d.source:
                continue
            hatch = d.source.startswith(("hatch.toml", "pyproject.toml [tool.hatch"))
            if d.name in TEST_NAMES or (hatch and d.name in HATCH_TEST_ENVS):
                self.pick_group(d, "a test or dev group")

    def project_install(self, inst: Install) -> None:
        """What one CI step, tox environment or nox session installs."""
        for e in sorted(inst.extras - {""}):
            if e == "*":
                for name in sorted(self.extras):
                    self.pick_extra(name, f"all extras, as {inst.source} installs them")
            else:
                self.pick_extra(e, f"installed by {inst.source}")
        for g in sorted(inst.groups):
            for d in self.groups:
                default = g == "+default" and (
                    d.source.startswith(("pyproject.toml [tool.pdm", "pyproject.toml [tool.uv"))
                    or (d.source.startswith("pyproject.toml [tool.poetry.") and "(optional)" not in d.source)
                    or (d.name == "dev" and "[dependency-groups]" in d.source)
                )
                if default or g == "*" or canonicalize_name(g) == canonicalize_name(d.name):
                    self.pick_group(d, f"installed by {inst.source}")
        for f in inst.files:
            self.pick_file(f, f"installed by {inst.source}")
        reqs = [q for q in self.without_self(inst.reqs, inst.source) if not req_names([q]) & _TOOLS]
        if reqs:
            self.group_steps.append((reqs, f"{inst.source}'s install command"))
            self.covered |= req_names(reqs)

    def for_imports(self, modules: list[str]) -> list[str]:
        """Pick the smallest extra, group or requirements file providing each module nothing provides yet;
        returns the modules left unprovided."""
        left = []
        skip = {canonicalize_name(self.project)} if self.project else set()
        for m in modules:
            want = dists_for(m)
            if want & (self.covered | skip):
                continue
            options = self._providers(want)
            if not options:
                left.append(m)
                continue
            *_, kind, d = min(options, key=lambda o: o[:3])
            self._pick(kind, d, f"the tests import {m}")
        return left

    def _pick(self, kind: str, d, why: str) -> None:
        if kind == "extra":
            self.pick_extra(d.name, why)
        elif kind == "group":
            self.pick_group(d, why)
        else:
            self.pick_file(d, why)

    def _providers(self, want: set[str]) -> list[tuple]:
        """(preference, size, name, kind, declaration) of each extra, group and requirements file that
        provides one of the distributions `want`."""
        options = []
        for d in self.extras.values():
            if want & req_names(d.requirements):
                options.append((0, len(d.requirements), d.name, "extra", d))
        for d in self.groups:
            if want & req_names(d.requirements):
                options.append((1, len(d.requirements), d.source, "group", d))
        for f in requirement_files(self.repo):
            reqs = file_requirements(self.repo, f)[0]
            if want & req_names(reqs):
                options.append((2, len(reqs), f, "file", f))
        return options

    def emit(self, r: Recipe, installable: bool, main_extras: list[str]) -> None:
        extra = [e for e in sorted(self.extra_pick) if e not in main_extras]
        if extra and installable and not self.build:
            reqs = [q for e in extra for q in self.without_self(self.extras[e].requirements, e)]
            if reqs:
                r.install.append(tolerant(reqs))
                r.notes.append(f"install: the requirements of the project's extras {', '.join(extra)}")
        elif extra and installable:
            t = shlex.quote(f".[{','.join(extra)}]")
            r.install.append(f"pip install -e {t} || pip install {t} || true")
            why = "; ".join(f"{e}: {self.extra_pick[e]}" for e in extra)
            r.notes.append(f"install: the project's extras {', '.join(extra)} ({why})")
        for f, why in self.file_steps:
            r.install.append(f"pip install -r {shlex.quote(f)} || true")
            r.notes.append(f"install: {f} ({why})")
        seen = set()
        for reqs, why in self.group_steps:
            key = tuple(reqs)
            if key not in seen:
                seen.add(key)
                r.install.append(tolerant(reqs))
                r.notes.append(f"install: {why}")
        if installable:  # a project pytest itself depends on: the runner's own copy (factory/pytest_deps.py)
            runner_copy(r, self.project)


# what CI installs to drive its runs, not what the tests need
_TOOLS = {canonicalize_name(n) for n in ("tox", "nox", "pip", "uv", "setuptools", "wheel", "build", "twine", "codecov")}
