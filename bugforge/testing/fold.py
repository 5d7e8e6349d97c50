"""Folding a bug into a tree's single commit: how `factory export` turns an environment's /testbed into an
instance's (factory/export.py, in a container), and how the process backend makes a session's or a
grading's copy of the same tree (sandbox/process.py, in bubblewrap). One script, so the commit and the
git objects are the instance image's in both (the process backend checks the row's `base_commit`).

It sits here, below factory and sandbox (layers: docs/architecture.md), because both use it."""

from __future__ import annotations

import shlex

FIXED_DATE = "2000-01-01T00:00:00+0000"
"""The dates of every commit bugforge makes (factory.acquire's environment commit, the instance's)."""


def fold_script(diff: str, tmp: str = "/tmp") -> str:
    """Shell lines (for `set -e`, run at the tree's root): apply the patch file `diff` and delete it, amend
    the result into the tree's single commit with FIXED_DATE (author and committer from git's
    configuration: the image's), delete every object only the old commit reached, and fail unless the
    tree is then clean. Scratch files go to the folder `tmp`; nothing is printed."""
    d, old, new = shlex.quote(diff), shlex.quote(f"{tmp}/.bugforge-old.txt"), shlex.quote(f"{tmp}/.bugforge-new.txt")
    return f"""old=$(git rev-parse HEAD)
git apply {d}
rm -f {d}
git add -A
GIT_AUTHOR_DATE='{FIXED_DATE}' GIT_COMMITTER_DATE='{FIXED_DATE}' git commit -q --amend --no-edit --allow-empty
new=$(git rev-parse HEAD)
git rev-list --objects "$old" | cut -d' ' -f1 | sort > {old}
git rev-list --objects "$new" | cut -d' ' -f1 | sort > {new}
for o in $(comm -23 {old} {new}); do rm -f ".git/objects/${{o:0:2}}/${{o:2}}"; done
rm -rf .git/logs .git/ORIG_HEAD {old} {new}
test -z "$(git status --porcelain)"
"""
