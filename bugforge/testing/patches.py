r"""Unified diffs that `git apply` and `patch -p1` accept, made from file contents in memory, and the
walks that read git's diffs. Every line here is a line as git counts it (`git_lines`): git ends a line
at "\n" only, where `str.splitlines` also breaks at "\r", "\x0b", "\x0c", "\x1c"-"\x1e", "\x85",
"\u2028" and "\u2029", which a changed line may hold (a diff read that way desyncs from git's)."""

from __future__ import annotations

import difflib
import hashlib


def git_lines(text: str, keepends: bool = False) -> list[str]:
    r"""`text`'s lines as git counts them: split at "\n" only (each keeping it with `keepends`); a final
    "\n" ends the last line rather than starting an empty one, as with `str.splitlines`. Without
    `keepends` a line keeps a "\r" before its "\n" (git's line holds it)."""
    parts = text.split("\n")
    last = [parts[-1]] if parts[-1] else []
    return [p + "\n" for p in parts[:-1]] + last if keepends else parts[:-1] + last


def file_diff(path: str, old: str, new: str, context: int = 3) -> str:
    """A git-style diff of one file."""
    a, b = git_lines(old, keepends=True), git_lines(new, keepends=True)
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
    sm = difflib.SequenceMatcher(None, git_lines(old), git_lines(new), autojunk=False)
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
    r = _Rewrite(git_lines(old, keepends=True), path)
    try:
        for line in git_lines(diff, keepends=True):
            r.feed(line)
    except _Misfit:
        return None
    return "".join(r.out + r.lines[r.at :]) if r.hunks else None


class _Misfit(Exception):
    """The diff does not fit the text it is applied to."""


def _spans(line: str) -> tuple[list[str], list[str]]:
    """The old and new (start[, count]) of a `@@ -a,b +c,d @@` line."""
    spans = line.split("@@")[1].split()
    return spans[0].lstrip("-").split(","), spans[1].lstrip("+").split(",")


class _Rewrite:
    """new_text's walk over a diff: the lines of `path` written so far (`out`), the old line reached (`at`)."""

    def __init__(self, lines: list[str], path: str):
        self.lines, self.path, self.out, self.at, self.hunks = lines, path, [], 0, 0
        self.inside, self.left, self.right, self.added = False, 0, 0, False

    def feed(self, line: str) -> None:
        if line.startswith("\\"):  # no newline at the end of the side the line before belongs to
            if self.inside and self.added:
                self.out[-1] = self.out[-1].rstrip("\r\n")
        elif self.left > 0 or self.right > 0:  # inside a hunk: content, whatever it starts with
            self.content(line[:1], line[1:])
        elif line.startswith("diff --git "):
            self.inside = False
        elif line.startswith("+++ "):
            self.inside = _side_name(line.rstrip("\n")) == self.path
        elif line.startswith("@@"):
            self.hunk(line)

    def content(self, tag: str, text: str) -> None:
        if self.inside and tag in (" ", "-"):
            at = self.at
            if at >= len(self.lines) or self.lines[at].rstrip("\r\n") != text.rstrip("\r\n"):
                raise _Misfit
            self.out += [self.lines[at]] if tag == " " else []
            self.at += 1
        elif self.inside and tag == "+":
            self.out.append(text)
        self.added = tag == "+"
        self.left, self.right = self.left - (tag in " -"), self.right - (tag in " +")

    def hunk(self, line: str) -> None:
        o, n = _spans(line)
        self.left, self.right = int(o[1]) if len(o) > 1 else 1, int(n[1]) if len(n) > 1 else 1
        if self.inside:
            start = int(o[0]) - (self.left > 0)  # (a hunk that only adds names the line it follows)
            if start < self.at:
                raise _Misfit
            self.out += self.lines[self.at : start]
            self.at, self.hunks = start, self.hunks + 1


def patch_id(patch: str) -> str:
    return hashlib.sha256(patch.encode()).hexdigest()[:12]


def files_of(patch: str) -> list[str]:
    """The files named by `patch`'s `diff --git a/X b/...` lines (as git reads its lines), sorted."""
    return sorted(
        {line[len("diff --git a/") :].split(" b/")[0] for line in git_lines(patch) if line.startswith("diff --git a/")}
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
    r"""What a git diff changes: ({file: old-side lines} for files it edits, as `changed_lines` counts
    them; {file: "added" | "deleted" | "other"} for files it adds, deletes, or renames, copies, changes
    the mode of, changes as binary or as a link (both names of a rename are "other"). Lines are git's
    (`git_lines`), so a changed line holding "\x0c" or "\x1c" cannot start a line of the walk. A name git
    quotes stays quoted, so it matches no path (callers that cross-check names then disagree)."""
    c = _Changes()
    for line in git_lines(diff):
        c.feed(line)
    for path in c.whole:
        c.lines.pop(path, None)
    return c.lines, c.whole


_WHOLE_FILE = (
    "rename from",
    "rename to",
    "copy from",
    "copy to",
    "old mode",
    "new mode",
    "Binary files",
    "GIT binary patch",
)


class _Changes:
    """changes_of_diff's walk: the file being read (`name`; `kind` when the whole file changes), the
    old line reached and the lines left in the current hunk."""

    def __init__(self):
        self.lines: dict[str, set[int]] = {}
        self.whole: dict[str, str] = {}
        self.name, self.kind, self.old, self.left, self.right, self.prev_minus = "", None, 0, 0, 0, False

    def feed(self, line: str) -> None:
        if self.left > 0 or self.right > 0:  # inside a hunk: content, whatever it starts with
            self.content(line[:1])
        elif line.startswith("diff --git "):
            self.name, self.kind = _header_name(line[len("diff --git ") :]), None
        elif line.startswith(("--- ", "+++ ")):
            self.side(line)
        elif line.startswith("@@"):
            self.hunk(line)
        else:
            self.extended_header(line)

    def content(self, tag: str) -> None:
        counted = self.lines.get(self.name) if self.kind is None else None  # (whole-file changes count no lines)
        if tag == "\\":
            return
        if tag == "-":
            if counted is not None:
                counted.add(self.old)
            self.old, self.left, self.prev_minus = self.old + 1, self.left - 1, True
        elif tag == "+":
            if counted is not None and not self.prev_minus:
                counted.update(n for n in (self.old - 1, self.old) if n >= 1)
            self.right -= 1
        else:
            self.old, self.left, self.right, self.prev_minus = self.old + 1, self.left - 1, self.right - 1, False

    def extended_header(self, line: str) -> None:
        """git's lines between `diff --git` and `---`: new/deleted files, renames, modes, binaries, links."""
        if line.startswith("new file mode"):
            self.kind = self.whole[self.name] = (
                "other" if line.endswith("120000") else "added"
            )  # (an empty file has no ---/+++)
        elif line.startswith("deleted file mode"):
            self.kind = self.whole[self.name] = "other" if line.endswith("120000") else "deleted"
        elif line.startswith(_WHOLE_FILE) or (line.startswith("index ") and line.endswith(" 120000")):
            self.kind = self.whole[self.name] = "other"
            if line.startswith(("rename ", "copy ")):
                self.whole[line.split(" ", 2)[2]] = "other"

    def side(self, line: str) -> None:
        side = _side_name(line)
        if line.startswith("--- ") or side is None:
            self.name = side or self.name
        elif self.kind is None:
            self.name = side
            self.lines.setdefault(side, set())
        else:
            self.name = side
            self.whole[side] = self.kind

    def hunk(self, line: str) -> None:
        o, n = _spans(line)
        self.old, self.left = int(o[0]), int(o[1]) if len(o) > 1 else 1
        self.right, self.prev_minus = int(n[1]) if len(n) > 1 else 1, False
        if self.kind is None and self.name not in self.lines:  # a hunk without its file's headers
            self.kind = self.whole[self.name] = "other"
