"""Instance images without a container each: the image's layers are written here and many images are
loaded with one `docker load` (docs/bugs.md, Export). Every image gets the same /testbed as
factory.export.FOLD leaves in a committed container: the same files, owners and modes, the same single
commit id, the objects of the fixed state gone, the same baseline manifest and tools.

Two layers go over the environment image: a shared one, made once per export from one container (the
FOLD's steps that are the same for every bug: .git/logs gone, /testbed owned by the agent user, the
tools, the baseline manifest; /testbed opaque, so it is whole), and a thin one per instance (the files
the bug changes, the index, the ref, the new loose objects, whiteouts for the objects only the fixed
state reached), computed with git on the host over a copy of the image's .git. A bug this cannot
reproduce exactly (a file added, deleted or changing mode, a link, a ref that is not loose, a patch
`git apply --cached` refuses, eol/filter attributes) gets `None` from `Base.layer`: the caller commits
a container for it instead."""

from __future__ import annotations

import copy
import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bugforge.engine import LABEL, client
from bugforge.errors import BugforgeError
from bugforge.factory.acquire import FIXED_DATE
from bugforge.factory.imagetar import docker_load, sha256_file, whiteout
from bugforge.testing import tamper
from bugforge.testing.testrun import PROBE_DIR, tools_archive

TB = "testbed"
# The FOLD's steps every bug shares, run once in a container of the environment; then what the layers need.
PREPARE = f"""set -e
cd /testbed
rm -rf .git/logs .git/ORIG_HEAD
if id -u agent >/dev/null 2>&1; then chown -R agent /testbed; id -u agent; else echo 0; fi
{tamper.capture(tamper.IMAGE_MANIFEST)}
GIT_COMMITTER_DATE='{FIXED_DATE}' git var GIT_COMMITTER_IDENT
git symbolic-ref -q HEAD || echo detached
stat -c '%n %a %u %g %Y' /etc /opt
"""
# attributes that make a work-tree file differ from its blob: such repositories take the committed path
CONVERTING = re.compile(rb"\b(filter|eol|crlf|text|ident|working-tree-encoding)\b")


@dataclass
class Thin:
    """One instance's layer: its commit, its image tag and the layer tar."""

    tag: str
    commit: str
    data: bytes
    diff_id: str = field(init=False)

    def __post_init__(self) -> None:
        self.diff_id = "sha256:" + hashlib.sha256(self.data).hexdigest()


class Base:
    """The shared layer of one environment image and what the thin layers are computed from. Use as a
    context manager (it holds a temporary folder)."""

    def __init__(self, image: str) -> None:
        self.image = image
        self._tmp = tempfile.TemporaryDirectory(prefix="bugforge-layers-")
        self.dir = Path(self._tmp.name)
        # each bug's index and objects: in memory where there is a tmpfs (small files, made and deleted)
        shm = Path("/dev/shm")
        self._scratch = tempfile.TemporaryDirectory(
            prefix="bugforge-layers-", dir=shm if os.access(shm, os.W_OK) else None
        )
        self.scratch = Path(self._scratch.name)
        self.shared = self.dir / "shared.tar"
        attrs = client().images.get(image).attrs
        self.config, self.diff_ids = attrs, list(attrs["RootFS"]["Layers"])
        self.members: dict[str, tarfile.TarInfo] = {}
        self._make_shared()
        self.shared_diff = "sha256:" + sha256_file(self.shared)
        self.loaded = False  # whether a load carried the shared layer
        self.git = self.dir / "git"
        self._extract_git()
        raw = self._git("cat-file", "commit", "HEAD")
        self.head = self._git("rev-parse", "HEAD").decode().strip()
        head, _, self.message = raw.partition(b"\n\n")
        self.header = head.split(b"\n")
        self.root = self.header[0].split()[1].decode()
        self.counts = Counter({self.head: 1, self.root: 1})
        self.paths: dict[str, tuple[str, str]] = {}  # path -> (mode, id) in the image's commit
        for entry in self._git("ls-tree", "-r", "-t", "-z", "HEAD").split(b"\0"):
            if entry:
                meta, path = entry.split(b"\t", 1)
                mode, _, oid = meta.decode().split()
                self.paths[path.decode("utf-8", "surrogateescape")] = (mode, oid)
                if mode != "160000":
                    self.counts[oid] += 1
        attributes = [m for m in self.members if m.rsplit("/", 1)[-1] == ".gitattributes"]
        self.converting = any(CONVERTING.search(self._file(m)) for m in attributes)

    def __enter__(self) -> Base:
        return self

    def __exit__(self, *exc) -> None:
        self._tmp.cleanup()
        self._scratch.cleanup()

    def _make_shared(self) -> None:
        c = client().containers.create(
            self.image,
            ["bash", "-c", "sleep infinity"],
            network_mode="none",
            labels={LABEL: "export"},
            stop_signal="SIGKILL",
        )
        try:
            c.put_archive(PROBE_DIR.rsplit("/", 1)[0], tools_archive())
            c.start()
            code, out = c.exec_run(["bash", "-c", PREPARE], user="root")
            if code != 0:
                raise BugforgeError(
                    f"could not prepare {self.image} for export: {out.decode(errors='replace')[-300:]}",
                    "rebuild the environment (`bugforge factory env ... --force`), or export with --method commit",
                )
            lines = out.decode().strip().splitlines()
            self.uid, self.ident, ref = int(lines[0]), lines[1], lines[2]
            self.ref = f"{TB}/.git/{ref}" if ref != "detached" else ""
            dirs = {}
            for line in lines[3:5]:
                name, mode, uid, gid, mtime = line.split()
                dirs[name.strip("/")] = tarfile.TarInfo(name.strip("/"))
                d = dirs[name.strip("/")]
                d.type, d.mode, d.uid, d.gid, d.mtime = tarfile.DIRTYPE, int(mode, 8), int(uid), int(gid), int(mtime)
            with tarfile.open(self.shared, "w", format=tarfile.PAX_FORMAT) as out_tar:
                out_tar.addfile(dirs["etc"])
                self._copy(c, os.path.dirname(tamper.IMAGE_MANIFEST), "etc", out_tar)
                out_tar.addfile(dirs["opt"])
                self._copy(c, PROBE_DIR, "opt", out_tar)
                self._copy(c, "/" + TB, "", out_tar, opaque=True)
        finally:
            c.remove(force=True)

    def _copy(self, c, path: str, under: str, out_tar: tarfile.TarFile, opaque: bool = False) -> None:
        """`path` of the container into `out_tar` under `under`; /testbed's headers are kept."""
        stream, _ = c.get_archive(path)
        src = self.dir / "part.tar"
        with open(src, "wb") as f:
            for chunk in stream:
                f.write(chunk)
        with tarfile.open(src) as tar:
            for m in tar:
                m.name = f"{under}/{m.name}" if under else m.name
                out_tar.addfile(m, tar.extractfile(m) if m.isreg() else None)
                if not under:
                    self.members[m.name] = copy.copy(m)
                if opaque and m.name == TB:
                    out_tar.addfile(whiteout(f"{TB}/.wh..wh..opq"))
        src.unlink()

    def _extract_git(self) -> None:
        prefix = f"{TB}/.git/"
        with tarfile.open(self.shared) as tar:
            for m in tar:
                if m.name.startswith(prefix) and m.isreg():
                    dest = self.git / m.name[len(prefix) :]
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(tar.extractfile(m).read())
                elif m.name.startswith(prefix) and m.isdir():
                    (self.git / m.name[len(prefix) :]).mkdir(parents=True, exist_ok=True)
        self.index = (self.git / "index").read_bytes() if (self.git / "index").exists() else b""

    def _file(self, name: str) -> bytes:
        with tarfile.open(self.shared) as tar:
            return tar.extractfile(name).read()

    def _git(self, *args: str, env: dict | None = None, stdin: bytes | None = None) -> bytes:
        r = subprocess.run(
            ["git", "-c", "safe.directory=*", *args],
            input=stdin,
            capture_output=True,
            env={
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_DIR": str(self.git),
                "GIT_CONFIG_GLOBAL": "/dev/null",
                "GIT_CONFIG_NOSYSTEM": "1",
                "LC_ALL": "C",
                **(env or {}),
            },
        )
        if r.returncode:
            raise subprocess.CalledProcessError(r.returncode, args, r.stdout, r.stderr)
        return r.stdout

    def layer(self, patch: str, tag: str) -> Thin | None:
        """The thin layer of the bug `patch`, or None where only a committed container gets it exactly."""
        if self.converting or self.ref not in self.members or not self.members[self.ref].isreg():
            return None
        work = Path(tempfile.mkdtemp(dir=self.scratch))
        objects = work / "objects"
        (work / "index").write_bytes(self.index)
        objects.mkdir()
        env = {
            "GIT_INDEX_FILE": str(work / "index"),
            "GIT_OBJECT_DIRECTORY": str(objects),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(self.git / "objects"),
        }
        paths = self._apply(patch, env)
        if paths is None:
            return None
        tree = self._git("write-tree", env=env).decode().strip()
        commit = self._commit(objects, tree)
        changes = self._changes(objects, tree, paths)
        if changes is None:
            return None
        counts = Counter(self.counts)
        for old, new in [*changes.values(), (self.head, commit)]:
            counts[old] -= 1
            counts[new] += 1
        now = int(time.time())
        entries: dict[str, tuple[tarfile.TarInfo, bytes | None]] = {}
        for path in paths:
            name = f"{TB}/{path}"
            entries[name] = self._member(name, self._object(objects, changes[path][1]), now)
        entries.update(self._object_entries(objects, counts, now))
        entries[f"{TB}/.git/index"] = self._member(f"{TB}/.git/index", (work / "index").read_bytes(), now)
        entries[self.ref] = self._member(self.ref, commit.encode() + b"\n", now)
        entries[f"{TB}/.git/COMMIT_EDITMSG"] = self._member(f"{TB}/.git/COMMIT_EDITMSG", self.message, now)
        self._add_parents(entries, now)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name in sorted(entries):
                info, data = entries[name]
                tar.addfile(info, io.BytesIO(data) if data is not None else None)
        shutil.rmtree(work)
        return Thin(tag, commit, buf.getvalue())

    def _apply(self, patch: str, env: dict[str, str]) -> list[str] | None:
        """Apply `patch` to the scratch index; the paths it changes, or None when it does not apply or
        does more than change regular files' text (a summary line: a new, deleted or renamed file; binary)."""
        try:
            stat = self._git(
                "apply", "--cached", "--apply", "--numstat", "--summary", "-z", "-", env=env, stdin=patch.encode()
            )
        except subprocess.CalledProcessError:
            return None
        stats = stat.split(b"\0")
        if stats[-1].strip() or any(x.startswith(b"-") for x in stats[:-1]):  # a summary line; a binary file
            return None
        return [x.split(b"\t", 2)[2].decode("utf-8", "surrogateescape") for x in stats[:-1]]

    def _commit(self, objects: Path, tree: str) -> str:
        """The amended commit of `tree` (the image's commit's parents, author and message; our committer)."""
        header = [b"tree " + tree.encode()]
        for line in self.header[1:]:
            if line.startswith((b"parent ", b"author ", b"encoding ")):
                header.append(line)
        at = next(i for i, h in enumerate(header) if h.startswith(b"author ")) + 1
        header.insert(at, b"committer " + self.ident.encode())
        return _write_object(objects, b"commit", b"\n".join(header) + b"\n\n" + self.message)

    def _changes(self, objects: Path, tree: str, paths: list[str]) -> dict[str, tuple[str, str]] | None:
        """path -> (old id, new id) of each changed file and its folders ("" the root); None when a file's
        mode changed or it is a link or a submodule."""
        changes = {"": (self.root, tree)}
        for path in paths:
            new = self._walk(objects, tree, path)
            if path not in self.paths or new is None or new[0] != self.paths[path][0] or new[0] in ("120000", "160000"):
                return None
            changes[path] = (self.paths[path][1], new[1])
            parts = path.split("/")
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                changes[d] = (self.paths[d][1], self._walk(objects, tree, d)[1])
        return changes

    def _object_entries(
        self, objects: Path, counts: Counter, now: int
    ) -> dict[str, tuple[tarfile.TarInfo, bytes | None]]:
        """The new git objects, and whiteouts of the image's loose objects nothing reaches any more."""
        entries: dict[str, tuple[tarfile.TarInfo, bytes | None]] = {}
        for obj in sorted(objects.glob("??/*")):
            name = f"{TB}/.git/objects/{obj.parent.name}/{obj.name}"
            info = tarfile.TarInfo(name)
            info.mode, info.uid, info.gid, info.mtime, data = 0o444, self.uid, 0, now, obj.read_bytes()
            info.size = len(data)
            entries[name] = (info, data)
        for oid, n in counts.items():
            if n <= 0 and f"{TB}/.git/objects/{oid[:2]}/{oid[2:]}" in self.members:
                gone = f"{TB}/.git/objects/{oid[:2]}/.wh.{oid[2:]}"
                entries[gone] = (whiteout(gone), None)
        return entries

    def _add_parents(self, entries: dict[str, tuple[tarfile.TarInfo, bytes | None]], now: int) -> None:
        """Every folder above an entry, as the image has it (a new one: root's, 755)."""
        for name in list(entries):
            parts = name.split("/")
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                if d not in entries:
                    info = copy.copy(self.members[d]) if d in self.members else tarfile.TarInfo(d)
                    if d not in self.members:
                        info.type, info.mode, info.uid, info.gid, info.mtime = tarfile.DIRTYPE, 0o755, self.uid, 0, now
                    entries[d] = (info, None)

    def _walk(self, objects: Path, tree: str, path: str) -> tuple[str, str] | None:
        """(mode, id) of `path` in `tree`."""
        mode, oid = "040000", tree
        for part in path.split("/"):
            entries = _tree_entries(self._object(objects, oid))
            if part.encode("utf-8", "surrogateescape") not in entries:
                return None
            mode, oid = entries[part.encode("utf-8", "surrogateescape")]
        return mode, oid

    def _object(self, objects: Path, oid: str) -> bytes:
        """The content of object `oid` (a new one in `objects`, else the image's)."""
        for d in (objects, self.git / "objects"):
            p = d / oid[:2] / oid[2:]
            if p.exists():
                return zlib.decompress(p.read_bytes()).split(b"\0", 1)[1]
        return self._git("cat-file", "--batch", stdin=oid.encode() + b"\n").split(b"\n", 1)[1][:-1]  # packed

    def _member(self, name: str, data: bytes, mtime: int) -> tuple[tarfile.TarInfo, bytes]:
        info = copy.copy(self.members[name]) if name in self.members else tarfile.TarInfo(name)
        if name not in self.members:
            info.mode, info.uid, info.gid = 0o644, self.uid, 0
        info.size, info.mtime, info.pax_headers = len(data), mtime, {}
        return info, data

    def load(self, thins: list[Thin], with_shared: bool) -> None:
        """Load `thins` as images (their tags) with one `docker load`; the shared layer goes in the tar
        only when `with_shared` (the engine skips a layer it has without reading it)."""
        top = [(self.shared_diff, self.shared if with_shared else None, f"shared layer over {self.image}")]
        docker_load(
            self.config,
            self.diff_ids,
            top,
            [(t.tag, t.diff_id, t.data, f"bug folded into commit {t.commit}") for t in thins],
            self.dir / "load.tar",
        )


def _tree_entries(data: bytes) -> dict[bytes, tuple[str, str]]:
    out, i = {}, 0
    while i < len(data):
        sp = data.index(b" ", i)
        nul = data.index(b"\0", sp)
        out[data[sp + 1 : nul]] = (data[i:sp].decode().zfill(6), data[nul + 1 : nul + 21].hex())
        i = nul + 21
    return out


def _write_object(objects: Path, kind: bytes, body: bytes) -> str:
    """Write a loose object as git does (zlib, core.loosecompression's default level 1); its id."""
    data = kind + b" %d\0" % len(body) + body
    oid = hashlib.sha1(data).hexdigest()
    (objects / oid[:2]).mkdir(exist_ok=True)
    (objects / oid[:2] / oid[2:]).write_bytes(zlib.compress(data, 1))
    return oid
