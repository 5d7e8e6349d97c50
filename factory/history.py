"""History reverts: commits in the source's history that changed both source and tests are fixes
(or features) with tests. Reverting the source part at the environment's commit, while keeping the
tests, gives a bug whose tests already exist — SWE-smith's PR mirroring, without needing a code host."""

from __future__ import annotations

import subprocess

from bugforge.factory.generate import Scratch, is_test_file
from bugforge.records import Candidate, EnvRecord
from bugforge.testing.patches import files_of, patch_id


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True).stdout


def history_candidates(env: EnvRecord, limit: int = 30, scan: int = 500) -> list[Candidate]:
    if not env.history_dir:
        return []
    repo = env.history_dir
    test_files = {t.split("::")[0] for t in env.tests}
    commits = _git(repo, "rev-list", "--no-merges", f"--max-count={scan}", env.source_commit).split()
    scratch = Scratch(env.repo_dir)
    out: list[Candidate] = []
    try:
        for sha in commits:
            if len(out) >= limit:
                break
            changed = _git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", sha).split()
            src = [p for p in changed if p.endswith(".py") and not is_test_file(p, test_files)]
            if not src or not any(is_test_file(p, test_files) for p in changed):
                continue
            try:
                reverse = _git(repo, "diff", sha, f"{sha}^", "--", *src)  # the source part, undone
            except subprocess.CalledProcessError:
                continue  # a root commit
            if not reverse.strip():
                continue
            patch = scratch.combine([reverse])  # does it apply at the environment's commit? (normalised)
            if not patch:
                continue
            subject = _git(repo, "log", "-1", "--format=%s", sha).strip()
            out.append(
                Candidate(
                    patch_id(patch),
                    "history",
                    patch,
                    files_of(patch),
                    _old_lines(patch),
                    "",
                    [],
                    [],
                    {"reverted_commit": sha, "subject": subject},
                )
            )
    finally:
        scratch.close()
    return out


def _old_lines(patch: str) -> dict[str, list[int]]:
    """Old-side lines each hunk touches (removed lines, or the spot of an insertion)."""
    out: dict[str, set[int]] = {}
    path, line = None, 0
    for row in patch.splitlines():
        if row.startswith("--- "):
            continue
        if row.startswith("+++ "):
            path = row[6:] if row.startswith("+++ b/") else None
            if path:
                out.setdefault(path, set())
        elif row.startswith("@@") and path:
            line = int(row.split()[1].split(",")[0][1:])
        elif path and row.startswith("-"):
            out[path].add(line)
            line += 1
        elif path and row.startswith("+"):
            out[path].update({max(1, line - 1), line})
        elif path and row.startswith(" "):
            line += 1
    return {p: sorted(ls) for p, ls in out.items()}
