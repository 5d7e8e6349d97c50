"""Acquire a repository from a git URL, a local path (git or not) or `pypi:NAME==VER`, and turn it into
a *snapshot*: a fresh git repository with one deterministic commit holding the tree. The snapshot is
what goes to /testbed in the image; it has no history an agent could mine for the fix."""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.parse
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import git

from bugforge.errors import BugforgeError
from bugforge.factory.fallbacks import period_date
from bugforge.factory.package_index import release_time, sdist_from_index
from bugforge.paths import cache_home
from bugforge.testing.fold import FIXED_DATE

SKIP_DIRS = {
    ".git",
    "__pycache__",
    ".pytest_cache",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    "build",
    "dist",
    ".mypy_cache",
    ".ruff_cache",
    ".eggs",
    ".hypothesis",
}
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bugforge",
    "GIT_AUTHOR_EMAIL": "bugforge@localhost",
    "GIT_COMMITTER_NAME": "bugforge",
    "GIT_COMMITTER_EMAIL": "bugforge@localhost",
    "GIT_AUTHOR_DATE": FIXED_DATE,
    "GIT_COMMITTER_DATE": FIXED_DATE,
}


@dataclass
class Acquired:
    name: str
    source: str
    source_commit: str
    history_dir: str | None
    """A clone with the source's history (for history-revert bugs); None when there is none."""
    notes: list[str] = field(default_factory=list)
    """What acquiring did beyond copying the tree: submodules initialised, or why one could not be."""
    date: str | None = None
    """A pypi: release's period date (`fallbacks.period_date` of `package_index.release_time`: when it was
    published); None for other sources (their history gives the commit's), when unknown, or when recent."""


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-.") or "repo"


def acquire(source: str, commit: str | None, dest: Path) -> Acquired:
    """Put the tree of `source` at `commit` into `dest` as a snapshot repository."""
    if source.startswith("pypi:"):
        return _from_pypi(source, dest)
    path = Path(source).expanduser()
    if path.exists():
        if not path.is_dir():
            raise BugforgeError(f"{source} is a file, not a repository", "pass a directory, git URL or pypi:NAME==VER")
        if (path / ".git").exists():
            return _from_git(str(path.resolve()), commit, dest, name=path.resolve().name)
        if _is_bare_repo(path):  # `git clone --mirror` / `--bare`: NAME.git
            return _from_git(str(path.resolve()), commit, dest, name=path.absolute().name.removesuffix(".git"))
        if commit:
            raise BugforgeError(
                f"--commit {commit} given but {source} is not a git repository",
                "drop --commit, or point at a git repository",
            )
        _copy_tree(path, dest)
        c = snapshot(dest, f"snapshot of {path.resolve().name}")
        return Acquired(path.resolve().name, source, c, None)
    if re.match(r"^(https?|git|ssh|file)://|^[\w.-]+@[\w.-]+:", source):
        name = re.sub(r"\.git$", "", source.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1])
        return _from_git(source, commit, dest, name=name)
    raise BugforgeError(
        f"{source!r} is not an existing path, a git URL or pypi:NAME==VERSION",
        "check the spelling of the repository argument",
    )


def _is_bare_repo(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()


def git_reason(stderr: str, returncode: int) -> str:
    """git's own reason for failing, on one line: its `fatal:`/`error:` lines (and ssh's), else its last
    line. (GitPython's GitCommandError wraps stderr in quotes and indentation: its last line is `'`.)"""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    said = [ln for ln in lines if ln.startswith(("fatal:", "error:", "ssh:", "remote:"))]
    return "; ".join(said or lines[-1:])[:400] or f"git exited with {returncode}"


def clone_path(url: str) -> Path:
    """Where the cache keeps its clone of `url` (named by the repository's name and a hash of the URL)."""
    name = re.sub(r"\.git$", "", url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1])
    return cache_home() / "clones" / f"{slug(name)}-{hashlib.sha256(url.encode()).hexdigest()[:8]}"


def clone_or_fetch(url: str, mirror: Path) -> None:
    """Clone `url` into the cache at `mirror` (no checkout), or fetch into the clone already there. git
    never prompts (a wrong https URL asks for a password); a failure is one BugforgeError with git's
    reason, and leaves no half-made clone behind."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    run = lambda *a: subprocess.run(["git", *a], capture_output=True, text=True, env=env, timeout=600)  # noqa: E731
    try:
        if mirror.exists():
            r = run("-C", str(mirror), "fetch", "--all", "--tags", "--quiet")  # a local source moves on too
            what = "fetch"
        else:
            mirror.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=mirror.parent))
            try:
                r = run("clone", "--quiet", "--no-checkout", "--", url, str(tmp / "r"))
                if r.returncode == 0:
                    (tmp / "r").rename(mirror)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            what = "clone"
    except subprocess.TimeoutExpired:
        raise BugforgeError(
            f"cannot clone {url}: git took over 10 minutes", "check that the host is reachable"
        ) from None
    if r.returncode != 0:
        raise BugforgeError(
            f"cannot {what} {url}: {git_reason(r.stderr, r.returncode)}", "check the URL and that the host is reachable"
        )


def _from_git(url: str, commit: str | None, dest: Path, name: str) -> Acquired:
    mirror = clone_path(url)
    clone_or_fetch(url, mirror)
    repo = git.Repo(mirror)
    ref = commit or "HEAD"
    if commit is None and Path(url).exists():  # a local repository: its HEAD now (a branch, or detached)
        try:
            repo.git.fetch("--quiet", url, "HEAD")
            ref = "FETCH_HEAD"
        except git.GitCommandError:
            pass
    elif commit is None:
        ref = "origin/HEAD" if "origin/HEAD" in [r.name for r in repo.refs] else "HEAD"
    sha = ""
    # a branch name means the source's branch as last fetched (origin/NAME), not the clone's stale copy
    for name_ in ([f"origin/{commit}"] if commit else []) + [ref]:
        try:
            sha = repo.git.rev_parse("--verify", "--quiet", f"{name_}^{{commit}}")
            break
        except git.GitCommandError:
            continue
    if not sha:
        raise BugforgeError(f"commit {ref!r} does not exist in {url}", "pass an existing commit, branch or tag")
    _extract(mirror, sha, dest, url)
    notes = _submodules(mirror, sha, dest, url)
    snapshot(dest, f"snapshot of {name} at {sha}")
    return Acquired(name, url, sha, str(mirror), notes)


def _extract(mirror: Path, sha: str, dest: Path, url: str) -> None:
    """Write the tree of commit `sha` of the clone `mirror` into `dest` (a fresh path). When git cannot
    write the tree out (a blob missing from the clone: a partial or damaged repository), one BugforgeError
    with git's reason, and `dest` is not created."""
    r = subprocess.run(["git", "-C", str(mirror), "archive", sha], capture_output=True)
    if r.returncode != 0:
        reason = git_reason(r.stderr.decode(errors="replace"), r.returncode)
        raise BugforgeError(
            f"cannot read the tree of commit {sha[:12]} of {url} (git archive: {reason})",
            f"the repository, or bugforge's clone of it at {mirror}, lacks objects of that commit: "
            "fetch them into the repository, or delete the clone so that it is made again",
        )
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile() as f:
        f.write(r.stdout)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(dest, filter="tar") if hasattr(tarfile, "data_filter") else tar.extractall(dest)


def _submodules(mirror: Path, sha: str, dest: Path, url: str, depth: int = 0) -> list[str]:
    """Put each submodule of commit `sha` (.gitmodules, and the commit its gitlink records) into
    dest/PATH, recursively (3 levels). A submodule that cannot be fetched (no network to its host, a
    commit its remote no longer has) is left empty; the returned notes say which and why."""
    git_ = lambda *a: subprocess.run(["git", "-C", str(mirror), *a], capture_output=True, text=True)  # noqa: E731
    listed = git_("config", "--blob", f"{sha}:.gitmodules", "--get-regexp", r"^submodule\..*\.(path|url)$")
    if listed.returncode != 0 or depth > 3:
        return []
    subs: dict[str, dict[str, str]] = {}
    for line in listed.stdout.splitlines():
        key, _, value = line.partition(" ")
        sub, _, attr = key[len("submodule.") :].rpartition(".")
        subs.setdefault(sub, {})[attr] = value.strip()
    notes = []
    for sub in subs.values():
        path, sub_url = sub.get("path"), sub.get("url", "")
        link = git_("ls-tree", sha, "--", path or "").stdout.split() if path else []
        if len(link) < 3 or link[1] != "commit":
            continue
        if sub_url.startswith(("./", "../")):  # relative to the superproject's URL, as git resolves it
            base = url.rstrip("/")
            sub_url = (
                urllib.parse.urljoin(base + "/", sub_url) if "://" in base else posixpath.normpath(f"{base}/{sub_url}")
            )
        try:
            sub_mirror = _fetch_mirror(sub_url, link[2])
            _extract(sub_mirror, link[2], dest / path, sub_url)
        except (BugforgeError, subprocess.SubprocessError) as e:
            why = e.what if isinstance(e, BugforgeError) else str(e)
            notes.append(f"submodule {path}: not fetched from {sub_url} ({why[:200]}); its files are missing")
            continue
        notes.append(f"submodule {path}: initialised from {sub_url} at {link[2][:10]}")
        notes += _submodules(sub_mirror, link[2], dest / path, sub_url, depth + 1)
    return notes


def _fetch_mirror(url: str, sha: str) -> Path:
    """A cached clone of `url` that has commit `sha` (fetched when it does not yet: clone_or_fetch)."""
    mirror = clone_path(url)
    has = lambda: (
        subprocess.run(  # noqa: E731
            ["git", "-C", str(mirror), "cat-file", "-e", f"{sha}^{{commit}}"], capture_output=True
        ).returncode
        == 0
    )
    if not (mirror.exists() and has()):
        clone_or_fetch(url, mirror)
    if not has():
        raise BugforgeError(f"commit {sha[:10]} is not in {url}")
    return mirror


def _from_pypi(source: str, dest: Path) -> Acquired:
    """The sdist of NAME==VERSION as a snapshot tagged VERSION, with its release's period date."""
    spec = source[len("pypi:") :]
    if not re.match(r"^[A-Za-z0-9._-]+==[A-Za-z0-9.+!_-]+$", spec):
        raise BugforgeError(f"{source!r} is not of the form pypi:NAME==VERSION", "e.g. pypi:attrs==23.2.0")
    name, version = spec.split("==")
    with tempfile.TemporaryDirectory() as tmp:
        # pip prepares the sdist's metadata before it keeps the file: in an isolated build environment
        # (the host rarely has the project's build backend, or `wheel` for setup.py projects), and with
        # only the project itself restricted to its sdist, so the build backend may come as a wheel.
        r = subprocess.run(
            ["python3", "-m", "pip", "download", "--no-deps", "--no-binary", name, "-q", "-d", tmp, spec],
            capture_output=True,
            text=True,
        )
        files = [p for p in Path(tmp).iterdir() if p.suffix in (".gz", ".zip", ".tgz", ".bz2")]
        if r.returncode != 0:  # its build backend failed, or it requires another Python than the host's
            files = [f for f in [sdist_from_index(name, version, Path(tmp))] if f]
        if not files:
            lines = [ln.strip() for ln in r.stderr.strip().splitlines() if ln.strip()]
            errors = [ln for ln in lines if ln.lower().startswith("error") and "metadata-generation-failed" not in ln]
            last = (errors or lines or ["no sdist found"])[-1]
            raise BugforgeError(
                f"cannot download the sdist of {spec}: {last}", "check the name and version on the package index"
            )
        extract = Path(tmp) / "x"
        archive = files[0]
        if archive.suffix == ".zip":
            zipfile.ZipFile(archive).extractall(extract)
        else:
            with tarfile.open(archive) as tar:
                tar.extractall(extract, filter="tar") if hasattr(tarfile, "data_filter") else tar.extractall(extract)
        roots = list(extract.iterdir())
        top = roots[0] if len(roots) == 1 and roots[0].is_dir() else extract
        _copy_tree(top, dest)
        date = period_date(release_time(name, version, archive))
    c = snapshot(dest, f"snapshot of {spec} (sdist)")
    # Version-from-git build plugins (setuptools_scm, hatch-vcs) read the snapshot's git, not PKG-INFO:
    # without a tag the project installs as 0.1.dev1, and the first dependency that requires it (a test
    # tool, a plugin) replaces the tree under test with the release from the package index.
    _git(dest, "tag", version)
    return Acquired(slug(name), source, c, None, date=date)


def _copy_tree(src: Path, dest: Path) -> None:
    inside = {dest.resolve(), *dest.resolve().parents}  # where the copy goes (an --out inside the source)

    def ignore(d, names):
        return [
            n for n in names if n in SKIP_DIRS or n.endswith((".pyc", ".egg-info")) or (Path(d) / n).resolve() in inside
        ]

    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=ignore, symlinks=True)


def snapshot(repo_dir: Path, message: str) -> str:
    """Make `repo_dir` a git repository with exactly one commit of its tree (fixed author and date,
    so the same tree always gives the same commit id). Objects stay loose, so a later layer can
    remove single objects (see factory.export)."""
    shutil.rmtree(repo_dir / ".git", ignore_errors=True)
    run = lambda *a: _git(repo_dir, *a)  # noqa: E731
    run("init", "-q", "-b", "main")
    run("config", "gc.auto", "0")
    run("add", "-A", "-f", ".")
    run("commit", "-q", "--allow-empty", "--no-verify", "-m", message)
    return run("rev-parse", "HEAD")


def _git(repo_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo_dir), *args], env={**os.environ, **GIT_ENV}, check=True, capture_output=True, text=True
    ).stdout.strip()
