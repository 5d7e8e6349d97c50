"""pip's package index (PEP 691 JSON simple API) for `pypi:NAME==VERSION` sources: a release's sdist
fetched from it, whether it lists only wheels of a release, and when a release was published."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tarfile
import urllib.parse
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import httpx

from bugforge.errors import BugforgeError

SDIST_EXTS = (".tar.gz", ".zip", ".tgz", ".tar.bz2")
PLACEHOLDER_MTIMES = {1580601600}
"""Member mtimes reproducible-build backends write instead of the build time: hatchling's default
SOURCE_DATE_EPOCH (2020-02-02). Times before 1990 (poetry-core 2's 1970, zip's 1980) are placeholders too."""
PLACEHOLDER_BEFORE = datetime(1990, 1, 1, tzinfo=timezone.utc).timestamp()


def release_time(name: str, version: str, archive: Path) -> datetime | None:
    """When NAME==VERSION was published (UTC): the index's upload time of its sdist (PEP 700
    `upload-time`, the time pip's --uploaded-prior-to compares against), else, when the index gives none
    (an index without upload times, no network to it), the newest build time inside its sdist `archive`
    (`archive_time`, close to but before publication); None when neither is known."""
    return upload_time(name, version) or archive_time(archive)


def upload_time(name: str, version: str) -> datetime | None:
    """The PEP 700 `upload-time` the index gives the sdist of NAME==VERSION; None when it gives none or
    cannot be reached."""
    try:
        _, files = _listing(name, timeout=30)
        for f in files:
            if _is_sdist_of(f.get("filename", ""), name, version) and f.get("upload-time"):
                return datetime.fromisoformat(f["upload-time"].replace("Z", "+00:00")).astimezone(timezone.utc)
    except (httpx.HTTPError, ValueError, TypeError, AttributeError):
        return None
    return None


def archive_time(archive: Path) -> datetime | None:
    """The newest modification time of the members of an sdist `archive` (.tar.*, or .zip read as UTC):
    the time it was built. Placeholder times of reproducible builds (PLACEHOLDER_MTIMES, before 1990) and
    times in the future are left out; None when no member has another, or the archive cannot be read."""
    try:
        if archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as z:
                stamps = [datetime(*i.date_time, tzinfo=timezone.utc).timestamp() for i in z.infolist()]
        else:
            with tarfile.open(archive) as tar:
                stamps = [float(m.mtime) for m in tar.getmembers()]
    except (OSError, tarfile.TarError, zipfile.BadZipFile, ValueError):
        return None
    now = datetime.now(timezone.utc).timestamp()
    real = [t for t in stamps if PLACEHOLDER_BEFORE <= t <= now and int(t) not in PLACEHOLDER_MTIMES]
    return datetime.fromtimestamp(max(real), timezone.utc) if real else None


def sdist_from_index(name: str, version: str, into: Path) -> Path | None:
    """The sdist of NAME==VERSION downloaded from pip's index (PEP 691 JSON), its sha256 checked; None if
    the index lists none; a BugforgeError when it lists only wheels of that release (`wheels_only`). For
    projects whose metadata no current build backend can prepare, and those whose requires-python excludes
    the host's Python (the environment picks its own)."""
    try:
        url, listed = _listing(name, timeout=60)
        for f in listed:
            fname = f["filename"]
            if not _is_sdist_of(fname, name, version):
                continue
            data = httpx.get(urllib.parse.urljoin(url, f["url"]), follow_redirects=True, timeout=300)
            data.raise_for_status()
            want = f.get("hashes", {}).get("sha256")
            if want and hashlib.sha256(data.content).hexdigest() != want:
                return None
            (into / fname).write_bytes(data.content)
            return into / fname
    except (httpx.HTTPError, ValueError):
        return None
    if wheels_only([f.get("filename", "") for f in listed], name, version):
        raise BugforgeError(
            f"{name}=={version} publishes wheels only, no sdist: not a pure-Python project with an sdist",
            "bugforge builds from an sdist or a repository: pass the project's repository at this release's tag",
        )
    return None


def wheels_only(filenames: list[str], name: str, version: str) -> bool:
    """Whether a package index lists wheels of NAME==VERSION and no sdist of it (names and versions
    compared normalised): such a release (a compiled project, e.g. triton) has no source to build from."""
    want = _norm(f"{name}-{version}")
    wheels = [f for f in filenames if f.endswith(".whl") and _norm("-".join(f.split("-")[:2])) == want]
    return bool(wheels) and not any(_is_sdist_of(f, name, version) for f in filenames)


def _is_sdist_of(filename: str, name: str, version: str) -> bool:
    ext = next((e for e in SDIST_EXTS if filename.endswith(e)), None)
    return ext is not None and _norm(filename[: -len(ext)]) == _norm(f"{name}-{version}")


def _norm(text: str) -> str:
    return re.sub(r"[-_.]+", "_", text).lower()


def _listing(name: str, timeout: float) -> tuple[str, list[dict]]:
    """The index's (final URL, files) for project `name`; raises httpx.HTTPError, or ValueError for a
    response that is not PEP 691 JSON."""
    norm = re.sub(r"[-_.]+", "-", name).lower()
    accept = {"Accept": "application/vnd.pypi.simple.v1+json"}
    r = httpx.get(f"{_index_url().rstrip('/')}/{norm}/", headers=accept, follow_redirects=True, timeout=timeout)
    r.raise_for_status()
    return str(r.url), r.json().get("files", [])


def _index_url() -> str:
    """pip's index: PIP_INDEX_URL, else pip's configured global.index-url, else PyPI."""
    index = os.environ.get("PIP_INDEX_URL")
    if index:
        return index
    r = subprocess.run(["python3", "-m", "pip", "config", "get", "global.index-url"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "https://pypi.org/simple"
