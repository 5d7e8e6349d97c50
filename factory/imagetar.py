"""Docker images written as files: the docker-save archive that `docker load` reads (manifest.json, one
config per image, one layer.tar per layer), for instance images whose layers factory.layers computes.
Contract of `docker_load`: every image gets the base image's layers (named, not sent: the engine has
them), then the `top` layers (sent only when their file is given), then its own layer; one `docker load`
for all of them; a refusal is one BugforgeError."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from datetime import datetime, timezone
from pathlib import Path

from bugforge.engine import LABEL, client
from bugforge.errors import BugforgeError


def docker_load(
    base_config: dict,
    base_diff_ids: list[str],
    top: list[tuple[str, Path | None, str]],
    images: list[tuple[str, str, bytes, str]],
    path: Path,
) -> None:
    """`base_config`: the base image's inspected config (Config, Architecture, Os); `top`: (diff id, layer
    file or None, history line) per shared layer; `images`: (tag, diff id, layer tar bytes, history line)."""
    manifest = []
    layer_name = lambda diff_id: f"{diff_id.split(':')[1]}/layer.tar"  # noqa: E731
    with tarfile.open(path, "w") as tar:
        for diff_id, file, _ in top:
            if file is not None:
                tar.add(file, layer_name(diff_id))
        for tag, diff_id, data, why in images:
            container = dict(base_config["Config"])
            # a task image's containers stop at once, as a committed one's do: graders that end theirs with
            # `docker stop` (SWE-bench's harness, 15 s grace) would wait out the grace on a `tail -f` main process
            container.update(WorkingDir="/testbed", Cmd=["bash"], StopSignal="SIGKILL")
            container["Labels"] = {
                **(container.get("Labels") or {}),
                LABEL: "export",
                "bugforge.instance": tag.split(":")[1],
            }
            created = datetime.now(timezone.utc).isoformat()
            config = {
                "architecture": base_config["Architecture"],
                "os": base_config["Os"],
                "created": created,
                "config": container,
                "rootfs": {"type": "layers", "diff_ids": [*base_diff_ids, *(t[0] for t in top), diff_id]},
                "history": [
                    {"created": created, "created_by": f"bugforge export: {h}"} for h in [*(t[2] for t in top), why]
                ],
            }
            data_json = json.dumps(config).encode()
            name = hashlib.sha256(data_json).hexdigest()
            add_bytes(tar, f"{name}.json", data_json)
            add_bytes(tar, layer_name(diff_id), data)
            layers = [layer_name(d) for d in [*base_diff_ids, *(t[0] for t in top), diff_id]]
            manifest.append({"Config": f"{name}.json", "RepoTags": [tag], "Layers": layers})
        add_bytes(tar, "manifest.json", json.dumps(manifest).encode())
    with open(path, "rb") as f:
        said = [m for m in client().api.load_image(f, quiet=True) if "error" in m or "errorDetail" in m]
    path.unlink()
    if said:
        raise BugforgeError(f"docker load refused the instance images: {said[0]}", "export with --method commit")


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))


def whiteout(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mode = 0o644
    return info


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
