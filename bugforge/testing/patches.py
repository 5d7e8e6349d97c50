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


def new_text(old: str, diff: str, path: str) -> str | None:
    """`path` as `diff` leaves it, given its content `old` before (a git diff made against exactly that
    content); None when the diff does not edit `path` line by line or does not fit `old`."""
    lines, out, at, hunks = old.splitlines(keepends=True), [], 0, 0
    inside, left, right, added = False, 0, 0, False
    for line in diff.splitlines(keepends=True):
        if line.startswith("\\"):  # no newline at the end of the side the line before belongs to
            if inside and added:
                out[-1] = out[-1].rstrip("\r\n")
        elif left > 0 or right > 0:  # inside a hunk: content, whatever it starts with
            tag, text = line[:1], line[1:]
            if inside and tag in (" ", "-"):
                if at >= len(lines) or lines[at].rstrip("\r\n") != text.rstrip("\r\n"):
                    return None
                out += [lines[at]] if tag == " " else []
                at += 1
            elif inside and tag == "+":
                out.append(text)
            added = tag == "+"
            left, right = left - (tag in " -"), right - (tag in " +")
        elif line.startswith("diff --git "):
            inside = False
        elif line.startswith("+++ "):
            inside = _side_name(line.rstrip("\n")) == path
        elif line.startswith("@@"):
            spans = line.split("@@")[1].split()
            o, n = spans[0].lstrip("-").split(","), spans[1].lstrip("+").split(",")
            left, right = int(o[1]) if len(o) > 1 else 1, int(n[1]) if len(n) > 1 else 1
            if inside:
                start = int(o[0]) - (left > 0)  # (a hunk that only adds names the line it follows)
                if start < at:
                    return None
                out += lines[at:start]
                at, hunks = start, hunks + 1
    return "".join(out + lines[at:]) if hunks else None


def patch_id(patch: str) -> str:
    return hashlib.sha256(patch.encode()).hexdigest()[:12]


def files_of(patch: str) -> list[str]:
    return sorted(
        {
            line[len("diff --git a/") :].split(" b/")[0]
            for line in patch.splitlines()
            if line.startswith("diff --git a/")
        }
    )


def _header_name(rest: str) -> str:
    """The file of a `diff --git a/X b/X` line (X is the same on both sides without renames)."""
    n = (len(rest) - 5) // 2
    return rest[2 : 2 + n] if rest == f"a/{rest[2 : 2 + n]} b/{rest[2 : 2 + n]}" else rest


def _side_name(line: str) -> str | None:
    """The file of a `--- a/X` or `+++ b/X` line; None for /dev/null. git ends a name holding a
    space with a tab, and quotes unusual names (left quoted: no record will match them)."""
    name = line[4:].rstrip("\t")
    return None if name == "/dev/null" else name[2:] if name[1:2] == "/" else name


def changes_of_diff(diff: str) -> tuple[dict[str, set[int]], dict[str, str]]:
    """What a git diff changes: ({file: old-side lines} for files it edits, as `changed_lines` counts
    them; {file: "added" | "deleted" | "other"} for files it adds, deletes, or renames, copies, changes
    the mode of, changes as binary or as a link (both names of a rename are "other")."""
    lines: dict[str, set[int]] = {}
    whole: dict[str, str] = {}
    name, kind, old, left, right, prev_minus = "", None, 0, 0, 0, False
    for line in diff.splitlines():
        if left > 0 or right > 0:  # inside a hunk: content, whatever it starts with
            tag = line[:1]
            counted = lines.get(name) if kind is None else None  # (whole-file changes count no lines)
            if tag == "\\":
                continue
            if tag == "-":
                if counted is not None:
                    counted.add(old)
                old, left, prev_minus = old + 1, left - 1, True
            elif tag == "+":
                if counted is not None and not prev_minus:
                    counted.update(n for n in (old - 1, old) if n >= 1)
                right -= 1
            else:
                old, left, right, prev_minus = old + 1, left - 1, right - 1, False
        elif line.startswith("diff --git "):
            name, kind = _header_name(line[len("diff --git ") :]), None
        elif line.startswith("new file mode"):
            kind = whole[name] = "other" if line.endswith("120000") else "added"  # (an empty file has no ---/+++)
        elif line.startswith("deleted file mode"):
            kind = whole[name] = "other" if line.endswith("120000") else "deleted"
        elif line.startswith(
            (
                "rename from",
                "rename to",
                "copy from",
                "copy to",
                "old mode",
                "new mode",
                "Binary files",
                "GIT binary patch",
            )
        ) or (line.startswith("index ") and line.endswith(" 120000")):
            kind = whole[name] = "other"
            if line.startswith(("rename ", "copy ")):
                whole[line.split(" ", 2)[2]] = "other"
        elif line.startswith("--- "):
            side = _side_name(line)
            name = side or name
        elif line.startswith("+++ "):
            side = _side_name(line)
            if side is not None and kind is None:
                name = side
                lines.setdefault(name, set())
            elif side is not None:
                name = side
                whole[name] = kind
        elif line.startswith("@@"):
            spans = line.split("@@")[1].split()
            o = spans[0].lstrip("-").split(",")
            n = spans[1].lstrip("+").split(",")
            old, left = int(o[0]), int(o[1]) if len(o) > 1 else 1
            right, prev_minus = int(n[1]) if len(n) > 1 else 1, False
            if kind is None and name not in lines:  # a hunk without its file's headers
                kind = whole[name] = "other"
    for path in whole:
        lines.pop(path, None)
    return lines, whole
