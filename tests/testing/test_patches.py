"""bugforge.testing.patches reads git's diffs as git writes them: lines end at "\\n" only. Each diff
here is real `git diff` output of a real repository; a changed line holds a character that
`str.splitlines` breaks at (U+001C, a form feed, "\\r", U+2028, U+0085)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bugforge.testing.patches import changes_of_diff, file_diff, files_of, git_lines, new_text

TEN = "".join(f"line{n} = {n}\n" for n in range(1, 11))


def _with(text: str, n: int, line: str) -> str:
    """`text` with its line `n` (1-based) replaced by `line`."""
    lines = git_lines(text, keepends=True)
    return "".join(lines[: n - 1] + [line] + lines[n:])


def _git(root: Path, *args: str) -> str:
    r = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    return r.stdout.decode()


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode())


def _diff(root: Path, before: dict[str, str], after: dict[str, str]) -> tuple[str, set[str]]:
    """(git's diff of `before` -> `after`, git's own list of the paths it changes)."""
    root.mkdir()
    _git(root, "init", "-q")
    _write(root, before)
    _git(root, "add", "-A")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "before")
    _write(root, after)
    _git(root, "add", "-A")
    diff = _git(root, "diff", "--cached", "--no-color", "--no-renames", "HEAD")
    names = _git(root, "diff", "--cached", "--no-renames", "--name-only", "-z", "HEAD")
    return diff, set(names.split("\0")) - {""}


def test_git_lines_splits_at_newline_only():
    odd = "a\x1cb\x0cc\rd\x0be\x85f\u2028g\u2029h\x1d\x1e"
    assert git_lines(f"{odd}\nx\r\n") == [odd, "x\r"]
    assert git_lines(f"{odd}\nx", keepends=True) == [f"{odd}\n", "x"]
    assert git_lines("") == git_lines("", keepends=True) == []
    assert git_lines("\n\n") == ["", ""] and git_lines("\n\n", keepends=True) == ["\n", "\n"]
    plain = "one\n\ntwo\nthree"
    assert git_lines(plain) == plain.splitlines() and git_lines(plain, True) == plain.splitlines(True)


def test_a_fake_hunk_header_after_u001c_is_content(tmp_path):
    # the red team's notes file: git's one line, where splitlines read a hunk header that swallowed
    # the next file's header and counted its hunk for the notes file
    before = {"pkg/m.py": TEN}
    after = {"pkg/0_NOTES": "notes\x1c@@ -1,3 +1,3 @@\n", "pkg/m.py": _with(TEN, 7, "line7 = 70\n")}
    diff, names = _diff(tmp_path / "r", before, after)
    changed, whole = changes_of_diff(diff)
    assert changed == {"pkg/m.py": {7}} and whole == {"pkg/0_NOTES": "added"}
    assert set(changed) | set(whole) == names
    assert files_of(diff) == sorted(names)
    assert new_text(TEN, diff, "pkg/m.py") == after["pkg/m.py"]


def test_form_feeds_and_carriage_returns_inside_changed_lines(tmp_path):
    old = _with(TEN, 4, "line4 = 4  # \x0b\x1d\x1e kept\n")  # odd characters in a context line too
    new = _with(_with(old, 2, "line2 = 2\x0c# \r x\n"), 9, "line9 = 90\n")
    other = _with(TEN, 3, "line3 = 30\n")
    diff, names = _diff(tmp_path / "r", {"a.py": old, "b.py": TEN}, {"a.py": new, "b.py": other})
    changed, whole = changes_of_diff(diff)
    assert changed == {"a.py": {2, 9}, "b.py": {3}} and whole == {}
    assert set(changed) == names == set(files_of(diff))
    assert new_text(old, diff, "a.py") == new and new_text(TEN, diff, "b.py") == other


def test_line_and_paragraph_separators_inside_changed_lines(tmp_path):
    new = _with(_with(TEN, 1, "line1 = '\u2028-a\x85-b\u2029'\n"), 10, "line10 = 100\n")
    diff, names = _diff(tmp_path / "r", {"u.py": TEN, "v.py": TEN}, {"u.py": new, "v.py": _with(TEN, 5, "x\n")})
    changed, whole = changes_of_diff(diff)
    assert changed == {"u.py": {1, 10}, "v.py": {5}} and whole == {} and set(changed) == names


def test_file_diff_of_odd_lines_applies_with_git(tmp_path):
    old = _with(TEN, 3, "line3 = 3\x0c\x1c\n")
    new = _with(_with(old, 5, "line5 = '\u2028'\r\n"), 8, "line8 = 80\n")
    root = tmp_path / "r"
    _diff(root, {"m.py": old}, {"m.py": old})
    (root / "fix.diff").write_bytes(file_diff("m.py", old, new).encode())
    _git(root, "apply", "fix.diff")
    assert (root / "m.py").read_bytes() == new.encode()
