"""Fixtures shared by the sandbox backends' tests (test_backends.py, test_podman_backend.py,
test_process_backend.py): the calc example's root file system for the `process` backend and its images in
rootless Podman's store for the `podman` one, each made once per session. Real engines, no mocks."""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

import pytest

from bugforge import engine
from bugforge.errors import BugforgeError
from bugforge.images.registry import dataset_path

PODMAN_USER = os.environ.get("BUGFORGE_PODMAN_USER", "bfpodman")


def _has_user(name: str) -> bool:
    try:
        return bool(pwd.getpwnam(name))
    except KeyError:
        return False


@pytest.fixture(scope="session")
def rootfs(cli, calc_runs, tmp_path_factory) -> Path:
    """The calc environment's tree, exported by the real command line (`bugforge images rootfs`). Skips, in
    one line, where bubblewrap is not installed (nothing here would use the tree)."""
    if not shutil.which("bwrap"):
        pytest.skip("needs bubblewrap (Debian's bubblewrap)")
    out = tmp_path_factory.mktemp("rootfs")
    r = cli("images", "rootfs", str(calc_runs / "calc"), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "1 exported, 0 already there" in r.stdout
    return out


@pytest.fixture(scope="session")
def podman_dataset(request, tmp_path_factory):
    """The calc dataset's JSONL, its images in rootless Podman's store (saved from Docker, loaded through Podman's
    API, the rootless user's service started if needed; removed from that store at the end, so test sessions leave
    nothing behind there). BUGFORGE_TEST_PODMAN_DATASET=DIR instead names a dataset whose images that Podman
    already holds. As root, BUGFORGE_PODMAN_USER names the rootless user (set for the session). Skips, with the
    reason in one line, where no Podman can be reached or started."""
    from bugforge.images.archive import images_of, load, save

    mp = pytest.MonkeyPatch()
    if os.geteuid() == 0 and not os.environ.get("BUGFORGE_PODMAN_SOCKET"):
        if not _has_user(PODMAN_USER):
            pytest.skip(f"no rootless Podman user {PODMAN_USER} (run scripts/setup-podman.sh as root)")
        mp.setenv("BUGFORGE_PODMAN_USER", PODMAN_USER)
    try:
        with engine.using("podman"):
            pass  # reached, or its service started
    except BugforgeError as e:
        mp.undo()
        pytest.skip(f"no rootless Podman here ({e.line()}; run scripts/setup-podman.sh as root)")
    if os.environ.get("BUGFORGE_TEST_PODMAN_DATASET"):
        yield dataset_path(os.environ["BUGFORGE_TEST_PODMAN_DATASET"])
        mp.undo()
        return
    archive = tmp_path_factory.mktemp("podman") / "calc.tar"
    with engine.using("docker"):
        path = dataset_path(request.getfixturevalue("calc_runs") / "calc")
        save(path, archive)
    with engine.using("podman"):
        loaded = load(archive)  # into the rootless user's store
    archive.unlink()
    try:
        assert {n.removeprefix("localhost/") for n in loaded} == set(images_of(path)), loaded
        yield path
    finally:
        with engine.using("podman") as podman:
            for name in loaded:
                podman.images.remove(name, force=True)
        mp.undo()


@pytest.fixture(scope="module")
def podman(podman_dataset):
    """This module's engine is Podman (the rootless user's service); the previous engine again afterwards."""
    with engine.using("podman") as client:
        yield client
