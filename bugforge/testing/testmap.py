"""TestMap: the baseline's maps (coverage per test and wide fixture, import-time lines, test order,
file accesses, method lookups) and the rules that say which tests can see a change; None from a rule
means the map cannot decide. The rules and their limits: docs/test-selection.md.

Stored as gzip'd JSON: the contexts once, then per file and line the indices of the contexts that ran it.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

from bugforge.incontainer.source import (
    gap_body,
    literal_default_changes,
    moved_methods,
    naming_statements,
    removed_bases,
    removed_methods,
    statement_span,
)

FIXTURE = "fixture:"
# names whose mere presence changes how pytest, the import system or packaging behave
UNDECIDABLE_NAMES = {
    "conftest.py",
    "__init__.py",
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "setup.py",
    "sitecustomize.py",
    "usercustomize.py",
    "__main__.py",
    "__pycache__",
}
UNDECIDABLE_SUFFIXES = (".pth", ".dist-info", ".egg-info", ".egg-link", ".pyc")
MODULE_SUFFIXES = (".py", ".pyw", ".so", ".pyd")


@dataclass
class TestMap:
    __test__ = False  # not a pytest test class
    contexts: list[str] = field(default_factory=list)
    """Test node ids, and `fixture:NAME` for lines run while setting up a module/session fixture."""
    files: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    """file -> line -> indices into `contexts`."""
    import_lines: dict[str, set[int]] = field(default_factory=dict)
    """file -> lines that ran outside any test (imports, collection, module/class bodies)."""
    fixture_users: dict[str, list[str]] = field(default_factory=dict)
    """fixture name -> the tests that use it."""
    seen: dict[str, list[int]] | None = None
    """"open:PATH" | "stat:PATH" | "list:DIR" | "import:MODULE" -> indices into `contexts` of what
    opened, checked, listed or looked up that (-1: something outside any test). None: a map made before
    bugforge recorded file accesses (then no file-level change can be decided)."""
    order: list[str] | None = None
    """Test node ids in the order the coverage run ran them."""
    lookups: dict[str, list[int]] | None = None
    """"FILE:CLASS.NAME" -> indices into `contexts` of the tests that looked that method up (on its class,
    an instance or a subclass; -1: outside any test), for every method the lookup run watched (see
    docs/probe.md). None: a map made without a lookup run (then no removed method is decided)."""
    unwatched: list[str] = field(default_factory=list)
    """Tests the lookup run did not see as the baseline did (another outcome, or not run): every
    removed method selects them."""
    plain_classes: list[str] = field(default_factory=list)
    """"FILE:CLASS" of the classes the lookup run saw built plainly (metaclass `type` or ABCMeta, no
    base defining __init_subclass__): nothing ran at their creation that read their bases."""

    @classmethod
    def from_coverage(cls, raw: dict) -> TestMap:
        """From the probe's map {"files": {path: {line: [contexts]}}, "import_lines": ..., "fixtures": ...}."""
        seen_raw = raw.get("seen")
        ctxs = sorted(
            {c for lines in raw.get("files", {}).values() for cs in lines.values() for c in cs}
            | {c for cs in (seen_raw or {}).values() for c in cs if c}
        )
        index = {c: i for i, c in enumerate(ctxs)}
        index[""] = -1
        files = {
            path: {int(n): sorted(index[c] for c in cs) for n, cs in lines.items()}
            for path, lines in raw.get("files", {}).items()
        }
        wide = {c[len(FIXTURE) :] for c in ctxs if c.startswith(FIXTURE)}
        users = {name: sorted(set(ts)) for name, ts in raw.get("fixtures", {}).items() if name in wide}
        seen = None if seen_raw is None else {k: sorted(index[c] for c in cs) for k, cs in seen_raw.items()}
        return cls(
            ctxs, files, {f: set(ls) for f, ls in raw.get("import_lines", {}).items()}, users, seen, raw.get("order")
        )

    def add_lookups(self, raw: dict | None, unwatched: list[str]) -> None:
        """Take the lookup run's map {"seen": {"attr:KEY": [contexts]}, "fixtures": {name: [tests]}}: a
        lookup made while a wide fixture was set up belongs to every test that uses that fixture."""
        if raw is None:
            return
        index = {c: i for i, c in enumerate(self.contexts)}
        index[""] = -1
        users = raw.get("fixtures", {})

        def indices(ctxs):
            tests = {t for c in ctxs for t in (users.get(c[len(FIXTURE) :], []) if c.startswith(FIXTURE) else [c])}
            for t in sorted(t for t in tests if t not in index):
                index[t] = len(self.contexts)
                self.contexts.append(t)
            return sorted(index[t] for t in tests)

        self.lookups = {
            k[len("attr:") :]: indices(cs) for k, cs in raw.get("seen", {}).items() if k.startswith("attr:")
        }
        self.unwatched = sorted(unwatched)
        self.plain_classes = sorted(k[len("class:") :] for k in raw.get("seen", {}) if k.startswith("class:"))

    def _tests_of(self, indices, out: set[str]) -> None:
        for i in indices:
            c = self.contexts[i]
            if c.startswith(FIXTURE):
                out.update(self.fixture_users.get(c[len(FIXTURE) :], ()))
            else:
                out.add(c)

    def tests_touching(self, path: str, lines) -> set[str]:
        """Tests that executed at least one of `lines` of `path` (directly or through a wide fixture)."""
        by_line = self.files.get(path, {})
        out: set[str] = set()
        for n in lines:
            self._tests_of(by_line.get(n, ()), out)
        return out

    def tests_noticing(self, path: str) -> set[str] | None:
        """Tests that could notice `path` being added, deleted or replaced as a whole (and every later
        test); None when the map cannot decide (docs/test-selection.md, "Whole files")."""
        name = path.rsplit("/", 1)[-1]
        if self.seen is None or name in UNDECIDABLE_NAMES or name.endswith(UNDECIDABLE_SUFFIXES) or '"' in path:
            return None  # (a quoted path: git wrote a name this map would not match)
        parent = path.rsplit("/", 1)[0] if "/" in path else "."
        keys = [f"open:{path}", f"stat:{path}", f"list:{parent}"]
        stem = name.split(".", 1)[0]
        if name.endswith(MODULE_SUFFIXES) or "." not in name:  # a module, or a directory a package could be
            keys += [
                k for k in self.seen if k.startswith("import:") and (k == f"import:{stem}" or k.endswith("." + stem))
            ]
        return self._noticed(keys)

    def _noticed(self, keys: list[str]) -> set[str] | None:
        """The tests recorded under `keys`, and every test that ran after the first of them."""
        out: set[str] = set()
        for key in keys:
            indices = self.seen.get(key, ())
            if -1 in indices:
                return None
            self._tests_of(indices, out)
        if not out:
            return out
        if not self.order:
            return None
        first = min((i for i, t in enumerate(self.order) if t in out), default=0)
        return out | set(self.order[first:])

    def tests_seeing(
        self,
        path: str,
        lines,
        source: str | None = None,
        new_source: str | None = None,
        root: Path | None = None,
        removals: bool = True,
    ) -> set[str] | None:
        """Tests that can see a change of `lines` (old-side numbers) of `path`; None when the map cannot
        decide. `source` / `new_source`: the file before / after the change (lines no test ran, literal
        defaults, reordered or removed methods, removed bases need them); `root`: the baseline checkout
        (removed bases); `removals=False` leaves the removed-method and removed-base rules out (warm
        grading). The rules, in order, and their limits: docs/test-selection.md, "Changed lines"."""
        covered = self.files.get(path, {})
        imported = self.import_lines.get(path, set())
        lines, spans, moved = set(lines), [], []
        if source is not None and new_source is not None and lines & imported:  # (a signature runs at import)
            lines, spans, moved, decided = self._source_rules(path, lines, source, new_source, root, removals)
            if decided is not _UNDECIDED:
                return decided
        if (not lines and not spans and not moved) or any(n in imported for n in lines):
            return None
        for n in lines:
            span = (n, n) if n in covered else _span_of(n, source, new_source)
            if span is None:
                return None
            spans.append(span)
        out: set[str] = set()
        for (first, last), same_code in [(s, False) for s in spans] + [(s, True) for s in moved]:
            if not same_code and any(first <= m <= last for m in imported):
                return None
            for m, ctxs in covered.items():
                if first <= m <= last:
                    self._tests_of(ctxs, out)
        return self._and_later(out)

    def _source_rules(self, path, lines, source, new_source, root, removals):
        """The rules that read the file before and after a change touching import-time lines:
        (lines left, spans of changed literal defaults, bodies of moved methods, the answer when a
        removed method or base decides it, else _UNDECIDED)."""
        spans = []
        for change in literal_default_changes(source, new_source):
            header = set(range(change.header[0], change.header[1] + 1))
            if lines & header:
                lines -= header
                spans.append(change.body)
        moved = []
        moves = moved_methods(source, new_source)
        if moves:  # the diff's other lines are blank, or statements that only shifted
            moved = [m.body for m in moves if any(m.span[0] <= n <= m.span[1] for n in lines)]
            lines = set()
        removed = removed_methods(source, new_source) if removals else []
        if removed:  # the diff's other lines are blank lines or comments
            return lines, spans, moved, self._looking_up(path, removed)
        bases = removed_bases(source, new_source) if removals else []
        if bases:
            return lines, spans, moved, self._naming(root, path, [b.name for b in bases])
        return lines, spans, moved, _UNDECIDED

    def _and_later(self, out: set[str] | None) -> set[str] | None:
        """`out` and every test that ran after the first of them, in the coverage run's order
        (docs/test-selection.md, rule 8)."""
        if not out or not self.order:
            return out
        first = min((i for i, t in enumerate(self.order) if t in out), default=len(self.order))
        return out | set(self.order[first + 1 :])

    def _looking_up(self, path: str, removed) -> set[str] | None:
        """The tests that looked up any of the `removed` methods of `path`, the unwatched tests and every
        later test; None when one was not watched or was looked up outside any test (rule 6)."""
        out: set[str] = set()
        for r in removed:
            indices = (self.lookups or {}).get(f"{path}:{r.key}")
            if indices is None or -1 in indices:
                return None
            self._tests_of(indices, out)
        return self._and_later(out | set(self.unwatched))

    def _naming(self, root: Path | None, path: str, names: list[str]) -> set[str] | None:
        """The tests that ran a statement naming one of the classes `names` of `path`, and every later
        test; None when a statement at import time names one, a class was not built plainly, or
        without the checkout `root` (rule 7)."""
        if root is None or any(f"{path}:{n}" not in self.plain_classes for n in names):
            return None
        out: set[str] = set()
        for f in sorted(set(self.files) | set(self.import_lines)):
            try:
                source = (Path(root) / f).read_text(encoding="utf-8") if f.endswith(".py") else ""
            except (OSError, UnicodeDecodeError):
                return None
            refs = naming_statements(source, set(names)) if any(n in source for n in names) else []
            if refs is None:
                return None
            covered, imported = self.files.get(f, {}), self.import_lines.get(f, set())
            for first, last, at_import in refs:
                if at_import or any(first <= m <= last for m in imported):
                    return None
                for m in range(first, last + 1):
                    self._tests_of(covered.get(m, ()), out)
        return self._and_later(out)

    def covered_lines(self, path: str) -> set[int]:
        """Lines of `path` that some test executed (during a test, not at import)."""
        return set(self.files.get(path, {}))

    def size(self) -> tuple[int, int]:
        """(files, covered lines)."""
        return len(self.files), sum(len(v) for v in self.files.values())

    def save(self, path: Path) -> None:
        data = {
            "contexts": self.contexts,
            "files": {f: {str(n): cs for n, cs in lines.items()} for f, lines in self.files.items()},
            "import_lines": {f: sorted(ls) for f, ls in self.import_lines.items()},
            "fixture_users": self.fixture_users,
            "seen": self.seen,
            "order": self.order,
            "lookups": self.lookups,
            "unwatched": self.unwatched,
            "plain_classes": self.plain_classes,
        }
        tmp = Path(str(path) + ".tmp")
        with gzip.open(tmp, "wt") as f:
            json.dump(data, f, separators=(",", ":"))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> TestMap:
        with gzip.open(path, "rt") as f:
            d = json.load(f)
        return cls(
            d["contexts"],
            {f: {int(n): cs for n, cs in lines.items()} for f, lines in d["files"].items()},
            {f: set(ls) for f, ls in d.get("import_lines", {}).items()},
            d.get("fixture_users", {}),
            d.get("seen"),
            d.get("order"),
            d.get("lookups"),
            d.get("unwatched", []),
            d.get("plain_classes", []),
        )


_UNDECIDED = object()  # tests_seeing's source rules did not decide: the line rules go on


def _span_of(n: int, source: str | None, new_source: str | None) -> tuple[int, int] | None:
    """The lines a change of line `n`, which no test ran, stands for: its statement, or (a line in a gap
    between statements) the body the gap belongs to; None when neither is known."""
    span = statement_span(source, n) if source is not None else None
    if span is None and new_source is not None:
        span = gap_body(source, new_source, n)
    return span
