"""Which tests can see a change, from the coverage and lookup maps (docs/test-selection.md)."""

from __future__ import annotations

from pathlib import Path

from bugforge.testing.patches import new_text
from bugforge.testing.testmap import TestMap


def selection_for(
    changed: dict[str, set[int]],
    testmap: TestMap,
    passing: set[str],
    whole: dict[str, str] | None = None,
    root: Path | None = None,
    diff: str | None = None,
    removals: bool = True,
) -> list[str] | None:
    """The tests of `passing` that can see a change of `changed` ({file: old-side lines}) and of `whole`
    ({file or new directory: added | deleted | other}): None = the map cannot decide, run them all.
    `root`: the baseline checkout, whose sources decide changed lines that never ran; `diff`: the change
    against that checkout, which decides a signature whose literal defaults changed (TestMap.tests_seeing);
    `removals`: whether removed methods and bases may be decided (by lookups and by names)."""
    chosen: set[str] = set()
    whole = dict(whole or {})
    for path, lines in changed.items():
        if not path.endswith(".py"):
            whole[path] = "other"
            continue
        old = _source(root, path)
        new = new_text(old, diff, path) if old is not None and diff else None
        seeing = testmap.tests_seeing(path, lines, old, new, root, removals)
        if seeing is None:
            return None
        chosen |= seeing
    for path in whole:
        noticing = testmap.tests_noticing(path)
        if noticing is None:
            return None
        chosen |= noticing
    return sorted(chosen & passing)


def _source(root: Path | None, path: str) -> str | None:
    try:
        return (Path(root) / path).read_text(encoding="utf-8") if root else None
    except (OSError, UnicodeDecodeError):
        return None
