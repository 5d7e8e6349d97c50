"""factory/release.py: where a release's source is in its repository (real git): its tag, or, in a
repository that does not tag its releases, the default branch as of the release's upload."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timezone

from bugforge.factory.release import commit_as_of, release_tag


def _commit(repo, date: str, files: dict, write_tree):
    write_tree(repo, files)
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", date], check=True, env=env)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def test_the_release_is_its_tag_else_the_default_branch_as_of_its_upload(git_repo, write_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("BUGFORGE_HOME", str(tmp_path / "home"))
    src = git_repo(tmp_path / "proj", {"m.py": "x = 0\n"})
    first = _commit(src, "2024-01-10T12:00:00Z", {"m.py": "x = 1\n"}, write_tree)
    second = _commit(src, "2024-03-10T12:00:00Z", {"m.py": "x = 2\n"}, write_tree)
    subprocess.run(["git", "-C", str(src), "tag", "v2.0"], check=True)
    url = str(src)
    assert release_tag(url, "2.0") == "v2.0" and release_tag(url, "1.0") is None
    assert commit_as_of(url, datetime(2024, 2, 1, tzinfo=timezone.utc)) == first  # released between the two
    assert commit_as_of(url, datetime(2025, 1, 1, tzinfo=timezone.utc)) == second
    assert commit_as_of(url, datetime(2000, 1, 1, tzinfo=timezone.utc)) is None  # before the repository
    assert commit_as_of(str(tmp_path / "nowhere"), datetime(2025, 1, 1, tzinfo=timezone.utc)) is None
