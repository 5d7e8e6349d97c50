"""Unified diffs that `git apply` and `patch -p1` accept, made from file contents in memory."""
from __future__ import annotations

import difflib
import hashlib


def file_diff(path: str, old: str, new: str, context: int = 3) -> str:
    """A git-style diff of one file."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    body = []
    for line in difflib.unified_diff(a, b, f"a/{path}", f"b/{path}", n=context):
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        body.append(line)
    if not body:
        return ""
    return f"diff --git a/{path} b/{path}\n" + "".join(body)


def changed_lines(old: str, new: str) -> set[int]:
    """Lines of `old` (1-based) that the change replaces or deletes; for a pure insertion, the lines
    around it (so coverage can tell who runs that spot)."""
    sm = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    out: set[int] = set()
    for tag, i1, i2, _, _ in sm.get_opcodes():
        if tag in ("replace", "delete"):
            out.update(range(i1 + 1, i2 + 1))
        elif tag == "insert":
            out.update(n for n in (i1, i1 + 1) if n >= 1)
    return out


def patch_id(patch: str) -> str:
    return hashlib.sha256(patch.encode()).hexdigest()[:12]


def files_of(patch: str) -> list[str]:
    return sorted({line[len("diff --git a/"):].split(" b/")[0] for line in patch.splitlines()
                   if line.startswith("diff --git a/")})
