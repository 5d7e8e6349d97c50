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


def changes_of_diff(diff: str) -> tuple[dict[str, set[int]], dict[str, str]]:
    """What a git diff changes: ({file: old-side lines} for files it edits, as `changed_lines` counts
    them; {file: "added" | "deleted" | "other"} for files it adds, deletes, or renames, copies, changes
    the mode of or changes as binary (the old and the new name of a rename are both "other")."""
    lines: dict[str, set[int]] = {}
    whole: dict[str, str] = {}
    path, old, prev_minus, kind, names = None, 0, False, None, []
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            path, kind = None, None
            names = line[len("diff --git "):].split(" b/", 1)
            names = [names[0][2:] if names[0].startswith("a/") else names[0], *names[1:]]
        elif line.startswith("new file mode"):
            kind = whole[names[-1]] = "added"  # (an empty new file has no ---/+++ lines)
        elif line.startswith("deleted file mode"):
            kind = whole[names[0]] = "deleted"
        elif line.startswith(("rename from", "copy from", "old mode", "Binary files", "GIT binary patch")):
            kind = "other"
            for name in names:
                whole[name] = "other"
        elif line.startswith("--- "):
            continue
        elif line.startswith("+++ "):
            side = line[len("+++ "):]
            if kind == "deleted" or side == "/dev/null":
                whole[names[0]] = "deleted"
            elif kind is None:
                path = side[2:] if side.startswith("b/") else side
                lines.setdefault(path, set())
            else:
                whole[side[2:] if side.startswith("b/") else side] = kind
        elif line.startswith("@@") and path is not None:
            old = int(line.split()[1].lstrip("-").split(",")[0])
            prev_minus = False
        elif path is None or not line:
            continue
        elif line[0] == " ":
            old, prev_minus = old + 1, False
        elif line[0] == "-":
            lines[path].add(old)
            old, prev_minus = old + 1, True
        elif line[0] == "+" and not prev_minus:
            lines[path].update(n for n in (old - 1, old) if n >= 1)
    for name in whole:
        lines.pop(name, None)
    return lines, whole
