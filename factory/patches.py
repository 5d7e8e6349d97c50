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


def changed_lines_of_diff(diff: str) -> dict[str, set[int]] | None:
    """Old-side lines each file of a git diff changes, as `changed_lines` counts them; None when a
    file is added, deleted, renamed, binary or changes mode (coverage cannot say who sees that)."""
    out: dict[str, set[int]] = {}
    path, old, prev_minus = None, 0, False
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            path = None
        elif line.startswith(("new file mode", "deleted file mode", "rename from", "copy from", "old mode",
                              "Binary files", "GIT binary patch")):
            return None
        elif line.startswith("--- "):
            continue
        elif line.startswith("+++ "):
            path = line[len("+++ b/"):] if line.startswith("+++ b/") else None
            if path is None:
                return None
            out.setdefault(path, set())
        elif line.startswith("@@") and path is not None:
            old = int(line.split()[1].lstrip("-").split(",")[0])
            prev_minus = False
        elif path is None or not line:
            continue
        elif line[0] == " ":
            old, prev_minus = old + 1, False
        elif line[0] == "-":
            out[path].add(old)
            old, prev_minus = old + 1, True
        elif line[0] == "+" and not prev_minus:
            out[path].update(n for n in (old - 1, old) if n >= 1)
    return out
