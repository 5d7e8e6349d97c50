"""TestMap: which tests execute which source lines, from coverage.py dynamic contexts (one context per
test, one per fixture wider than a test). Validation asks it which tests can see a change, and whether
coverage can decide at all (a line that runs at import time can affect every test).

Stored as gzip'd JSON: the contexts once, then per file and line the indices of the contexts that ran it.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

FIXTURE = "fixture:"


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

    @classmethod
    def from_coverage(cls, raw: dict) -> "TestMap":
        """From the probe's map {"files": {path: {line: [contexts]}}, "import_lines": ..., "fixtures": ...}."""
        ctxs = sorted({c for lines in raw.get("files", {}).values() for cs in lines.values() for c in cs})
        index = {c: i for i, c in enumerate(ctxs)}
        files = {path: {int(n): sorted(index[c] for c in cs) for n, cs in lines.items()}
                 for path, lines in raw.get("files", {}).items()}
        wide = {c[len(FIXTURE):] for c in ctxs if c.startswith(FIXTURE)}
        users = {name: sorted(set(ts)) for name, ts in raw.get("fixtures", {}).items() if name in wide}
        return cls(ctxs, files, {f: set(ls) for f, ls in raw.get("import_lines", {}).items()}, users)

    def tests_touching(self, path: str, lines) -> set[str]:
        """Tests that executed at least one of `lines` of `path` (directly or through a wide fixture)."""
        by_line = self.files.get(path, {})
        out: set[str] = set()
        for n in lines:
            for i in by_line.get(n, ()):
                c = self.contexts[i]
                if c.startswith(FIXTURE):
                    out.update(self.fixture_users.get(c[len(FIXTURE):], ()))
                else:
                    out.add(c)
        return out

    def decides(self, path: str, lines) -> bool:
        """True when coverage alone can say which tests see a change of `lines`: every line ran inside
        some test and none ran at import time."""
        covered = self.files.get(path, {})
        imported = self.import_lines.get(path, set())
        return bool(lines) and all(n in covered and n not in imported for n in lines)

    def covered_lines(self, path: str) -> set[int]:
        """Lines of `path` that some test executed (during a test, not at import)."""
        return set(self.files.get(path, {}))

    def size(self) -> tuple[int, int]:
        """(files, covered lines)."""
        return len(self.files), sum(len(v) for v in self.files.values())

    def save(self, path: Path) -> None:
        data = {"contexts": self.contexts,
                "files": {f: {str(n): cs for n, cs in lines.items()} for f, lines in self.files.items()},
                "import_lines": {f: sorted(ls) for f, ls in self.import_lines.items()},
                "fixture_users": self.fixture_users}
        tmp = Path(str(path) + ".tmp")
        with gzip.open(tmp, "wt") as f:
            json.dump(data, f, separators=(",", ":"))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> "TestMap":
        with gzip.open(path, "rt") as f:
            d = json.load(f)
        return cls(d["contexts"], {f: {int(n): cs for n, cs in lines.items()} for f, lines in d["files"].items()},
                   {f: set(ls) for f, ls in d.get("import_lines", {}).items()}, d.get("fixture_users", {}))
