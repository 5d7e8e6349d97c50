"""TestMap: which tests execute which source lines, from coverage.py dynamic contexts (one context
per test). Validation asks it which tests can see a change; everything else is left out of the run.

Stored as gzip'd JSON: the test ids once, then per file and line the indices of the tests that ran it.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class TestMap:
    tests: list[str] = field(default_factory=list)
    files: dict[str, dict[int, list[int]]] = field(default_factory=dict)

    @classmethod
    def from_coverage(cls, raw: dict) -> "TestMap":
        """From the probe's map {"files": {path: {line: [node ids]}}}."""
        ids = sorted({t for lines in raw.get("files", {}).values() for ts in lines.values() for t in ts})
        index = {t: i for i, t in enumerate(ids)}
        files = {path: {int(n): sorted(index[t] for t in ts) for n, ts in lines.items()}
                 for path, lines in raw.get("files", {}).items()}
        return cls(ids, files)

    def tests_touching(self, path: str, lines: set[int] | list[int]) -> set[str]:
        """Tests that executed at least one of `lines` of `path`."""
        by_line = self.files.get(path, {})
        return {self.tests[i] for n in lines for i in by_line.get(n, ())}

    def covered_lines(self, path: str) -> set[int]:
        """Lines of `path` that some test executed (during a test, not at import)."""
        return set(self.files.get(path, {}))

    def size(self) -> tuple[int, int]:
        """(files, covered lines)."""
        return len(self.files), sum(len(v) for v in self.files.values())

    def save(self, path: Path) -> None:
        data = {"tests": self.tests,
                "files": {f: {str(n): ts for n, ts in lines.items()} for f, lines in self.files.items()}}
        tmp = Path(str(path) + ".tmp")
        with gzip.open(tmp, "wt") as f:
            json.dump(data, f, separators=(",", ":"))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> "TestMap":
        with gzip.open(path, "rt") as f:
            data = json.load(f)
        return cls(data["tests"], {f: {int(n): ts for n, ts in lines.items()} for f, lines in data["files"].items()})
