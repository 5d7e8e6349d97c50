"""Where in its repository a package release's source is: the release's tag, or, for a repository that
does not tag its releases (or a copy without the tag), the default branch as of the release's upload.
Used when a `pypi:` source's sdist ships too little of its test suite to build."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone

from bugforge.errors import BugforgeError
from bugforge.factory.acquire import clone_or_fetch, clone_path
from bugforge.factory.package_index import upload_time


def release_tag(url: str, version: str) -> str | None:
    """The tag of `version` in the repository at `url` (VERSION, vVERSION, NAME-VERSION ...), or None
    (also when git cannot list the tags, or takes over two minutes)."""
    try:
        r = subprocess.run(["git", "ls-remote", "--tags", url], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None
    tags = {ln.split("refs/tags/", 1)[1].removesuffix("^{}") for ln in r.stdout.splitlines() if "refs/tags/" in ln}
    for t in (version, f"v{version}", f"release-{version}", f"version-{version}"):
        if t in tags:
            return t
    return next((t for t in sorted(tags) if t.endswith(f"-{version}")), None)


def commit_as_of(url: str, when: datetime) -> str | None:
    """The newest commit of the default branch of `url` made at or before `when`, or None (no such
    commit, or the repository cannot be fetched)."""
    mirror = clone_path(url)
    try:
        clone_or_fetch(url, mirror)
    except BugforgeError:
        return None
    stamp = when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    for ref in ("origin/HEAD", "HEAD"):
        r = subprocess.run(
            ["git", "-C", str(mirror), "rev-list", "-1", f"--before={stamp}", ref, "--"],
            capture_output=True,
            text=True,
        )
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip()
    return None


def release_ref(url: str, name: str, version: str) -> tuple[str, str] | None:
    """(ref, how it was found) for NAME==VERSION in the repository at `url`: its tag, else the default
    branch's commit as of the sdist's upload time; None when neither can be found."""
    if tag := release_tag(url, version):
        return tag, f"at tag {tag}"
    when = upload_time(name, version)
    if when is not None and (sha := commit_as_of(url, when)):
        return sha, f"at {sha[:10]}, its default branch as of the upload of {version} ({when:%Y-%m-%d}; no tag)"
    return None
