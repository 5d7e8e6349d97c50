"""Lazy, read-only access to JSONL files of any size: a byte-offset index of the complete lines,
built once per file and kept in memory keyed by path (re-checked by size, mtime and inode on each use;
a file that only grew is indexed from where the last pass stopped, one replaced or rewritten from the
start), with a small summary of every row
(`summarize`) kept beside each offset so that listing, filtering and counting never re-read the file.
Bad lines are recorded, not raised: `errors` holds (line number, message) for every line that is not
a JSON object, and `torn` the line number of a last line with no newline (a writer still at work or
killed), which is left out of the rows."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Summarize = Callable[[dict], Any]
HEAD = 256
UNREADABLE = (OSError, ValueError, TypeError, KeyError, AttributeError)
"""What reading a record raises when its file is missing, or it is not JSON or not the record's shape
(json, records.from_dict, load_env, a summarize function); anything else is a bug, not a bad file."""


@dataclass
class Row:
    line: int
    """1-based line number in the file."""
    offset: int
    length: int
    summary: Any


@dataclass
class JsonlIndex:
    path: Path
    summarize: Summarize | None = None
    rows: list[Row] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)
    torn: int | None = None
    """Line number of an incomplete last line (no newline yet), if any."""
    end: int = 0
    """Byte offset after the last complete line indexed."""
    lines: int = 0
    size: int = -1
    mtime: float = -1.0
    ino: int = -1
    head: bytes = b""
    """The file's first bytes when last indexed (a rewrite in place changes them)."""
    version: int = 0
    """Bumped whenever the index changes (derived caches key on it)."""

    def refresh(self) -> None:
        """Bring the index up to date with the file: nothing when size and mtime are unchanged, the new
        lines when the file only grew, everything when it shrank, was replaced (another inode: an atomic
        rewrite) or its first bytes changed."""
        try:
            st = os.stat(self.path)
        except OSError as e:
            raise FileNotFoundError(f"{self.path}: {e.strerror}") from None
        if st.st_size == self.size and st.st_mtime == self.mtime and st.st_ino == self.ino:
            return
        with open(self.path, "rb") as f:
            head = f.read(HEAD)
            if st.st_ino != self.ino or st.st_size < self.end or head[: len(self.head)] != self.head:
                self.rows, self.errors, self.end, self.lines = [], [], 0, 0  # replaced or rewritten: start again
            self.ino, self.head, self.torn = st.st_ino, head, None
            f.seek(self.end)
            offset = self.end
            for raw in f:
                if not raw.endswith(b"\n"):
                    if raw.strip():
                        self.torn = self.lines + 1
                    break
                self.lines += 1
                length = len(raw)
                text = raw.strip()
                if text:
                    self._add(self.lines, offset, length, text)
                offset += length
                self.end = offset
        self.size, self.mtime = st.st_size, st.st_mtime
        self.version += 1

    def _add(self, line: int, offset: int, length: int, text: bytes) -> None:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            self.errors.append((line, f"not valid JSON: {e}"))
            return
        if not isinstance(data, dict):
            self.errors.append((line, f"a JSON {type(data).__name__}, not an object"))
            return
        try:
            summary = self.summarize(data) if self.summarize else None
        except UNREADABLE as e:  # a row without the fields this kind of file needs
            self.errors.append((line, f"{type(e).__name__}: {e}"))
            return
        self.rows.append(Row(line, offset, length, summary))

    def read(self, row: Row) -> dict:
        """The full record of `row`, read from its offset (one seek, one line)."""
        with open(self.path, "rb") as f:
            f.seek(row.offset)
            return json.loads(f.read(row.length))

    def problems(self) -> list[str]:
        """Readable lines for the page: each bad line, and a torn last line."""
        out = [f"{self.path.name} line {n}: {msg}" for n, msg in self.errors[:20]]
        if len(self.errors) > 20:
            out.append(f"... and {len(self.errors) - 20} more bad lines")
        if self.torn:
            out.append(
                f"{self.path.name} line {self.torn}: incomplete (no newline at the end: a writer may still be at work)"
            )
        return out


_CACHE: dict[tuple[str, str], JsonlIndex] = {}
_LOCK = threading.Lock()


def index(path: Path, summarize: Summarize | None = None, kind: str = "") -> JsonlIndex:
    """The up-to-date index of `path`, shared by all requests (`kind` names the summary function, so one
    file read two ways has two indexes)."""
    key = (str(Path(path).resolve()), kind)
    with _LOCK:
        idx = _CACHE.get(key)
        if idx is None:
            idx = _CACHE[key] = JsonlIndex(Path(path), summarize)
        idx.refresh()
        return idx


def first_record(path: Path, limit: int = 1 << 20) -> dict | None:
    """The first JSON object in the first `limit` bytes of `path` (for telling kinds of file apart)."""
    try:
        with open(path, "rb") as f:
            for raw in f:
                if f.tell() > limit and not raw.endswith(b"\n"):
                    return None
                try:
                    data = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    continue
                return data if isinstance(data, dict) else None
    except OSError:
        return None
    return None
