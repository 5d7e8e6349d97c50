"""The private copy of an instance's tree that the process backend works in: a session's (sandbox/process.py)
and a grading's (sandbox/processgrade.py). `populate` copies the environment's workspace out of the
rootfs folder into the jail's folder; `fold` puts an instance's bug into it as `factory export` puts it
into the instance image (bugforge.testing.fold, the same script) and checks that the commit is the row's
`base_commit`, so the copy holds the instance image's commit and git objects or is refused."""

from __future__ import annotations

import subprocess

from bugforge.errors import BugforgeError
from bugforge.sandbox.confine import Jail
from bugforge.testing.fold import fold_script

BUG = "bugforge-bug.diff"  # the bug's patch, in the copy's tmp/ until it is folded


def populate(jail: Jail, workdir: str) -> None:
    """The jail's folder: a copy of the tree's `workdir` (owners and modes kept) as testbed/, an empty tmp/
    (anyone may write, as /tmp) and home/. Raises BugforgeError (one line) when the copy fails."""
    jail.home.mkdir(parents=True)
    src = jail.rootfs / workdir.lstrip("/")
    r = subprocess.run(["cp", "-a", str(src), str(jail.home / "testbed")], capture_output=True, text=True)
    if r.returncode != 0:
        raise BugforgeError(f"cannot copy {src}: {r.stderr.strip()[-200:]}", "re-export the rootfs folder")
    (jail.home / "tmp").mkdir()
    (jail.home / "tmp").chmod(0o1777)
    (jail.home / "home").mkdir()


def head(jail: Jail) -> str:
    """The workspace's commit ('HEAD' when git cannot tell)."""
    r = jail.run(["git", "-C", jail.workspace, "rev-parse", "HEAD"])
    return r.stdout.decode().strip() if r.returncode == 0 else "HEAD"


def fold(jail: Jail, instance: dict) -> str:
    """Fold the instance's `bug_patch` into the workspace's commit, run in the jail as its user; returns
    the commit. Raises BugforgeError (one line) when it fails or is not the row's `base_commit`."""
    (jail.home / "tmp" / BUG).write_text(instance.get("bug_patch") or "")
    tmp = str(jail.home / "tmp") if jail.unconfined else "/tmp"
    script = f"set -e\n{fold_script(f'{tmp}/{BUG}', tmp)}git rev-parse HEAD\n"
    r = subprocess.run(
        jail.argv(["bash", "-c", script], chdir=jail.workspace),
        capture_output=True,
        env=jail.environ(),
        cwd=jail.workspace if jail.unconfined else None,
        timeout=300,
    )
    out = r.stdout.decode(errors="replace").split()
    want = instance.get("base_commit")
    if r.returncode != 0 or not out or (want and out[-1] != want):
        got = out[-1] if r.returncode == 0 and out else " ".join(r.stderr.decode(errors="replace").split())[-200:]
        raise BugforgeError(
            f"the rootfs of {instance.get('env_image')} does not reproduce instance "
            f"{instance.get('instance_id')} (expected commit {want}, got {got})",
            "re-export the rootfs from the dataset's own environment image (`bugforge images rootfs`)",
        )
    return out[-1]
