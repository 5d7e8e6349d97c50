"""Grading in the process backend: sandbox/grader.py's `grade_patch`, the Docker fresh grader's own call,
with its fresh container replaced by a fresh private copy of the instance's tree (`ProcessGrader.run_tests`,
run_tests's signature). Nothing of grading is repeated here: the same setup script (the patch applied
with SWE-bench's fallbacks, the sweep and the audit), the same pytest command through launch.py (the
tests as the test user, the root-owned collector on an inherited socket pair, every test-user process
killed before the verdict is read), the same report parser and verdict rules. docs/security.md.

The copy: the environment's /testbed from the rootfs folder with the instance's bug folded in
(sandbox/trees.py: the instance image's commit, checked) and given to the test user, as `factory export`
leaves the instance image's /testbed; its own /tmp, root's HOME and the test user's
HOME (a copy of the image's), the in-container tools read-only at PROBE_DIR, the rest of the tree
read-only as /. The script runs in bubblewrap as this machine's root, with no user namespace and only
confine.GRADING_CAPS (what launch.py needs to give the tree to the test user, become it and kill it),
in its own pid, IPC, UTS and network namespaces (so kill(-1) as the test user reaches only the run's
processes), under the Docker grader's limits (4g, 2048 processes).

Refused in one line (NotGraded): when this process is not root (bubblewrap without root maps one user,
so the tests would run as the collector's own user and could reach the verdict; the channel is not
weakened for that); for unconfined runtimes (no private /testbed or /tmp, no pid namespace: the test
user's kill(-1) would reach this machine's processes, its files the host's); when the tree has no test
user; when bubblewrap cannot keep the capabilities."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from bugforge.errors import BugforgeError
from bugforge.records import TestRun
from bugforge.sandbox.confine import Jail, kill_tree, passwd_user, remove_folder
from bugforge.sandbox.grader import GradeResult, grade_patch
from bugforge.sandbox.trees import fold, populate
from bugforge.testing.tools import OUT, TEST_USER, parse_report, pytest_command, run_script

LIMITS = {"as": 4 << 30, "nproc": 2048, "core": 0}  # run_tests's container: mem_limit 4g, pids_limit 2048
WORKDIR = "/testbed"


class NotGraded(BugforgeError):
    """The process backend cannot grade here (module docstring: when and why); one line."""


def give(path: Path, uid: int, gid: int) -> None:
    """chown -R (links themselves, never their targets) `path` to uid:gid."""
    subprocess.run(["chown", "-R", "-h", f"{uid}:{gid}", str(path)], check=True, capture_output=True)


def mapped(n: int, table: str) -> bool:
    """Whether id `n` exists in this process's user namespace (/proc/self/uid_map or gid_map)."""
    try:
        rows = [line.split() for line in open(f"/proc/self/{table}").read().splitlines()]
    except OSError:
        return True  # no user namespaces in this kernel: every id exists
    return any(int(first) <= n < int(first) + int(count) for first, _, count in rows)


class ProcessGrader:
    """Grades patches against the instances of a rootfs folder (bugforge.images.rootfs). `images`: its
    manifest's images; `folder()`: where grading folders go (made on first use, with the tools in
    `tools/bugforge`); `bwrap`: the bubblewrap program; `unconfined`: the runtime's mode (refused)."""

    def __init__(
        self,
        rootfs: Path,
        images: dict,
        folder: Callable[[], Path],
        *,
        bwrap: str = "bwrap",
        unconfined: bool = False,
    ):
        self.rootfs, self.images, self.folder = Path(rootfs), images, folder
        self.bwrap, self.unconfined = bwrap, unconfined
        self._probed = False

    def grade(self, instance: dict, patch: str, *, timeout: float = 600) -> GradeResult:
        """grade_patch(instance, patch) with the tests run here (module docstring); raises NotGraded."""
        self.check()
        return grade_patch(instance, patch, timeout=timeout, runner=partial(self.run_tests, instance))

    def check(self) -> None:
        """Raise NotGraded (one line) where grading cannot keep its guarantees: unconfined, not root, no
        bubblewrap. (Whether bubblewrap keeps the capabilities is tried at the first grading: _probe.)"""
        if self.unconfined:
            raise NotGraded(
                "unconfined process sessions cannot be graded: the tests would share this machine's /tmp, "
                "processes and files, with no second user to keep them from the verdict",
                "grade in bubblewrap (a runtime without unconfined=True) or where a Docker engine is (`bugforge eval`)",
            )
        if os.geteuid() != 0:
            raise NotGraded(
                "the process backend grades only as root: the tests must run as a second user (agent) that cannot "
                "reach the verdict's collector, and bubblewrap without root maps a single user",
                "grade as root on this machine, or where a Docker engine is (`bugforge eval`)",
            )
        if shutil.which(self.bwrap) is None:
            raise NotGraded(f"bubblewrap ({self.bwrap}) is not installed here", "install Debian's `bubblewrap`")

    def run_tests(
        self,
        instance: dict,
        image: str,
        pytest_args: list[str],
        *,
        selection: list[str] | None = None,
        timeout: float = 900,
        setup: str = "",
        files: dict[str, bytes] | None = None,
        user: str | None = None,
    ) -> tuple[TestRun, None]:
        """bugforge.testing.testrun.run_tests for `instance` (whose image is `image`), in a fresh copy of
        its tree here instead of a fresh container: the same script, the same report."""
        rootfs, marker = self._tree(instance)
        uid, gid, user_home = self._test_user(rootfs, instance, user or TEST_USER)
        jail = self._jail(rootfs, marker, self.folder() / f"grade-{secrets.token_hex(6)}", user_home)
        try:
            populate(jail, WORKDIR)
            self._home_copy(rootfs / user_home.lstrip("/"), jail.home / "tests-home", uid, gid)
            self._probe(jail)
            fold(jail, instance)
            give(jail.home / "testbed", uid, gid)  # as factory export leaves the instance image's /testbed
            out = jail.home / "tmp" / OUT.removeprefix("/tmp/")
            out.mkdir(mode=0o755)
            if selection is not None:
                (out / "select.txt").write_text("\n".join(selection))
            for name, data in (files or {}).items():
                (out / name).write_bytes(data)
            cmd = pytest_command(pytest_args, selection, False, None, WORKDIR, None, False, user)
            run = self._run(jail, run_script(setup, cmd), timeout)
            report = out / "report.jsonl"
            parse_report(report.read_bytes() if report.is_file() else b"", run)
            return run, None
        finally:
            remove_folder(jail.home)

    def _tree(self, instance: dict) -> tuple[Path, dict]:
        """(the environment's tree, its manifest entry) for an instance."""
        env = instance.get("env_image", "")
        if env not in self.images:
            raise BugforgeError(
                f"environment image {env!r} has no root file system in {self.rootfs}",
                f"export it where Docker is: `bugforge images rootfs DATASET --out {self.rootfs}`",
            )
        return self.rootfs / self.images[env]["dir"], self.images[env]

    @staticmethod
    def _test_user(rootfs: Path, instance: dict, user: str) -> tuple[int, int, str]:
        """(uid, gid, HOME) of the unprivileged user the tests run as, from the tree's /etc/passwd."""
        uid, gid, name, user_home = passwd_user(rootfs, user)
        if name != user or uid == 0:
            raise NotGraded(
                f"the tree of {instance.get('env_image')} has no unprivileged user {user!r} to run the tests as",
                "export it from an image bugforge built (images/base.Dockerfile makes the user)",
            )
        if not (mapped(uid, "uid_map") and mapped(gid, "gid_map")):
            raise NotGraded(
                f"this process's user namespace has no uid/gid {uid}/{gid} for the test user {user!r}",
                "grade as the machine's real root, or where a Docker engine is (`bugforge eval`)",
            )
        return uid, gid, user_home

    def _jail(self, rootfs: Path, marker: dict, home: Path, user_home: str) -> Jail:
        """A root jail over the tree; the test user's HOME is the folder's tests-home/."""
        variables = dict(kv.split("=", 1) for kv in marker.get("env", []) if "=" in kv)
        return Jail(
            rootfs, home, self.folder() / "tools" / "bugforge", variables, user_home="/root", workdir=WORKDIR,
            limits=dict(LIMITS), bwrap=self.bwrap, root=True, binds=[(str(home / "tests-home"), user_home)],
        )  # fmt: skip

    @staticmethod
    def _home_copy(src: Path, dest: Path, uid: int, gid: int) -> None:
        """The test user's HOME for one run: a copy of the image's (or an empty folder), the user's."""
        if src.is_dir():
            subprocess.run(["cp", "-a", str(src), str(dest)], check=True, capture_output=True)
        else:
            dest.mkdir(mode=0o755)
        os.chown(dest, uid, gid)

    def _probe(self, jail: Jail) -> None:
        """Refuse (NotGraded) when bubblewrap cannot start a root jail with the capabilities; checked once."""
        if self._probed:
            return
        r = jail.run(["true"], timeout=60)
        if r.returncode != 0:
            lines = r.stderr.decode(errors="replace").strip().splitlines()
            raise NotGraded(
                f"bubblewrap cannot keep the capabilities grading needs here ({lines[-1] if lines else r.returncode})",
                "grade where a Docker engine is (`bugforge eval`)",
            )
        self._probed = True

    @staticmethod
    def _run(jail: Jail, script: str, timeout: float) -> TestRun:
        """Run `script` in the jail as root; its exit status, whether it timed out (then every process of
        it is killed), the wall time and the last 40 lines of its output, as run_tests reports them."""
        run = TestRun()
        log = jail.home / "log"  # (not in the jail)
        start = time.monotonic()
        with open(log, "wb") as f:
            proc = subprocess.Popen(
                jail.argv(["bash", "-c", script]), stdout=f, stderr=subprocess.STDOUT,
                env=jail.environ(), start_new_session=True,
            )  # fmt: skip
            try:
                run.exit_code = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                run.timed_out = True
                kill_tree(proc.pid)
                proc.wait()
        run.wall = time.monotonic() - start
        run.log_tail = "\n".join(log.read_bytes().decode(errors="replace").splitlines()[-40:]) + "\n"
        return run
