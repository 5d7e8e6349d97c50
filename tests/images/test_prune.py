"""`bugforge images prune`: images no run record refers to go, referenced ones, images in use and the
base image stay. The images are real, made the way factory/export.py makes instance images; the real
prune is limited (--only) to this test's own environment name, so other images on the engine are safe."""

from __future__ import annotations

import json
import uuid

import docker.errors

from bugforge.engine import LABEL


def _instance_image(engine, base: str, tag: str) -> str:
    """A thin image over `base`, committed and labelled as export.build_instance_image does."""
    c = engine.containers.create(base, ["true"], labels={LABEL: "export"})
    try:
        repo, name = tag.split(":")
        c.commit(repository=repo, tag=name, changes=[f"LABEL bugforge.instance={name}", "WORKDIR /testbed"])
    finally:
        c.remove(force=True)
    return tag


def _exists(engine, tag: str) -> bool:
    try:
        engine.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def test_prune_removes_only_unreferenced_images(engine, base_image, tmp_path, cli):
    name = f"prunetest{uuid.uuid4().hex[:8]}"
    keep, drop, busy = (f"bugforge/task.{name}:{k}-0123456789" for k in ("keep", "drop", "busy"))
    made, containers = [], []
    try:
        for tag in (keep, drop, busy):
            made.append(_instance_image(engine, base_image, tag))
        stopped = engine.containers.create(drop, ["true"], labels={LABEL: "test"})
        containers.append(stopped)
        containers.append(
            engine.containers.run(busy, ["sleep", "600"], detach=True, network_mode="none", labels={LABEL: "test"})
        )
        runs = tmp_path / "runs"
        (runs / name).mkdir(parents=True)
        (runs / name / "instances.jsonl").write_text(
            json.dumps(
                {"instance_id": f"{name}.swap.01234567", "image": keep, "env_image": f"bugforge/env.{name}:gone"}
            )
            + "\n"
        )

        def everything_there():
            assert all(_exists(engine, t) for t in (keep, drop, busy, base_image))
            stopped.reload()

        r = cli("images", "prune", "--runs", str(runs), "--runs", str(tmp_path / "nope"), "--only", name)
        assert r.returncode == 1
        assert r.stderr.startswith("error: ") and "nope" in r.stderr and len(r.stderr.strip().splitlines()) == 1
        everything_there()

        r = cli("images", "prune", "--runs", str(runs), "--dry-run")  # every bugforge image: nothing goes
        assert r.returncode == 0, r.stderr
        assert f"would remove image {drop} (" in r.stdout
        assert f"would remove container {stopped.name} ({drop}, created)" in r.stdout
        assert f"skipped image {busy}: in use by container {containers[1].name}" in r.stdout
        assert keep not in r.stdout and "bugforge/base" not in r.stdout and base_image not in r.stdout
        assert "would reclaim at least" in r.stdout
        everything_there()

        r = cli("images", "prune", "--runs", str(runs), "--only", name)
        assert r.returncode == 0, r.stderr
        assert f"removed image {drop} (" in r.stdout and f"removed container {stopped.name} " in r.stdout
        assert f"skipped image {busy}: in use by container" in r.stdout and "reclaimed " in r.stdout
        assert keep not in r.stdout
        assert not _exists(engine, drop)
        assert _exists(engine, keep) and _exists(engine, busy) and _exists(engine, base_image)
        try:
            stopped.reload()
            raise AssertionError("the stopped container was not removed")
        except docker.errors.NotFound:
            pass
    finally:
        for c in containers:
            try:
                c.remove(force=True)
            except docker.errors.NotFound:
                pass
        for tag in made:
            try:
                engine.images.remove(tag, force=True)
            except docker.errors.ImageNotFound:
                pass
