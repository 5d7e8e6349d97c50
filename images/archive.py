"""A dataset's images as one docker-save archive, for a machine whose engine cannot reach where they were made (a
Podman node: docs/sandbox.md#podman-rootless): `save` writes every image a dataset needs (instance and environment images), from the
selected engine (bugforge.engine.client); `load` puts an archive into the selected engine through its API (into
the rootless user's store when the engine is that user's Podman service, whoever runs it)."""

from __future__ import annotations

import os
from pathlib import Path

import docker.errors

from bugforge.engine import client, error_line
from bugforge.errors import BugforgeError
from bugforge.images.build import image_exists
from bugforge.images.registry import dataset_images, load_rows


def images_of(dataset: str | Path) -> list[str]:
    """Every image the dataset's rows need (instance and environment images: registry.dataset_images), once."""
    return [name for name, _ in dataset_images(load_rows(dataset))]


def save(dataset: str | Path, out: str | Path) -> list[str]:
    """Write every image of `dataset` (images_of) into the archive `out` (written to OUT.partial, then renamed: a
    failed save leaves no archive); returns their names. A missing image is a BugforgeError before any write."""
    names, api, out = images_of(dataset), client().api, Path(out)
    missing = [n for n in names if not image_exists(n)]
    if missing:
        raise BugforgeError(f"image {missing[0]} is not here", "run `bugforge factory export` first")
    partial = out.with_name(out.name + ".partial")
    try:
        res = api._get(api._url("/images/get"), params={"names": names}, stream=True)
        api._raise_for_status(res)
        with open(partial, "wb") as f:
            for chunk in res.iter_content(1 << 20):
                f.write(chunk)
        os.replace(partial, out)
    except (docker.errors.DockerException, OSError) as e:
        partial.unlink(missing_ok=True)
        raise BugforgeError(f"cannot save the images of {dataset}: {error_line(e)}") from None
    return names


def load(archive: str | Path) -> list[str]:
    """Load the docker-save archive into the selected engine; returns the names it reports loaded."""
    try:
        with open(archive, "rb") as f:
            said = client().api.load_image(f) or []
            lines = [m.get("stream", "") for m in said if isinstance(m, dict)]
    except (docker.errors.DockerException, OSError) as e:
        raise BugforgeError(
            f"cannot load {archive}: {error_line(e)}", "pass an archive `bugforge images save` wrote"
        ) from None
    said = [x.split(":", 1)[1] for line in lines for x in line.splitlines() if x.startswith("Loaded image")]
    return [n.strip() for x in said for n in x.split(",") if n.strip()]  # podman: one line, names by commas
