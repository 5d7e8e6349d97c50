"""Export: the official SWE-bench harness agrees with our exported instances (gold resolves, empty and
no-op patches do not). Real containers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bugforge.factory.generate import generate
from bugforge.records import read_jsonl
from bugforge.sandbox.harness import run_harness


def test_swebench_harness_agrees_with_our_export(calc_env, tmp_path):
    """Gold patches resolve, empty ones are empty_patch_ids, a no-op is unresolved: one harness run over
    three copies of the rows (the same images under ids of their own)."""
    import uuid

    from bugforge.factory.export import export, remove_images

    envdir = tmp_path / "env"  # a copy: the package's calc_env stays as built
    shutil.copytree(Path(calc_env.testmap).parent, envdir)
    rec = json.loads((envdir / "env.json").read_text())
    rec["name"] = f"calcharness{uuid.uuid4().hex[:8]}"  # task image tags of this test's own (not another
    (envdir / "env.json").write_text(json.dumps(rec))  # session's calc images, which share content tags)
    generate(
        envdir,
        max_candidates=8,
        workers=2,
        log=lambda m: None,
        strategies=["op_change", "remove_assign", "change_return", "op_change_const"],
    )
    rows = read_jsonl(export(envdir, tmp_path / "inst.jsonl", limit=4))
    made_here = rows
    try:
        assert len(rows) == 4
        note = "diff --git a/NOTES.txt b/NOTES.txt\nnew file mode 100644\n--- /dev/null\n+++ b/NOTES.txt\n@@ -0,0 +1 @@\n+hello\n"
        kinds = {"gold": None, "empty": "", "noop": note}
        copies = [{**r, "instance_id": f"{r['instance_id']}__{k}"} for k in kinds for r in rows]
        preds = [
            {
                "instance_id": f"{r['instance_id']}__{k}",
                "model_name_or_path": "m",
                "model_patch": r["patch"] if p is None else p,
            }
            for k, p in kinds.items()
            for r in rows
        ]
        report = run_harness(copies, preds, cwd=tmp_path, run_id="h", wall=900)
        ids = lambda k: sorted(f"{r['instance_id']}__{k}" for r in rows)  # noqa: E731
        assert report["resolved_ids"] == ids("gold")
        assert report["empty_patch_ids"] == ids("empty")
        assert report["unresolved_ids"] == ids("noop")
    finally:
        remove_images(made_here)


def test_layers_export_makes_the_images_committed_containers_make(calc_env, tmp_path):
    """`method="layers"` (layers written on the host, one `docker load` a batch) gives every instance
    the image `method="commit"` gives it: the same commit id, the same /testbed (files, owners, modes,
    index entries, objects), baseline manifest and tools, no object of the fixed state, the same rows
    but for timestamps; a missing image is rebuilt on resume. The environment is renamed, so the tags
    are this test's own."""
    import uuid

    from bugforge.engine import client
    from bugforge.factory.export import export, fingerprint, remove_images
    from bugforge.factory.layers import Base

    envdir = tmp_path / "env"
    shutil.copytree(Path(calc_env.testmap).parent, envdir)
    rec = json.loads((envdir / "env.json").read_text())
    rec["name"] = f"calclayers{uuid.uuid4().hex[:8]}"
    (envdir / "env.json").write_text(json.dumps(rec))
    generate(envdir, max_candidates=8, workers=2, log=lambda m: None, strategies=["op_change", "remove_assign"])
    old, new = [], []
    try:
        old = read_jsonl(export(envdir, tmp_path / "old.jsonl", limit=3, method="commit"))
        for r in old:  # aside, so that the layers path makes every image itself
            client().images.get(r["image"]).tag(r["image"].split(":")[0], r["image"].split(":")[1] + "-old")
            client().images.remove(r["image"])
            r["image"] += "-old"
        new = read_jsonl(export(envdir, tmp_path / "new.jsonl", limit=3, method="layers", batch=2))
        assert len(old) == len(new) == 3
        env_layers = len(client().images.get(calc_env.image).attrs["RootFS"]["Layers"])
        volatile = {"created_at", "image", "image_name", "docker_image"}
        for a, b in zip(old, new):
            assert a["base_commit"] == b["base_commit"]
            assert {k: v for k, v in a.items() if k not in volatile} == {
                k: v for k, v in b.items() if k not in volatile
            }
            assert len(client().images.get(b["image"]).attrs["RootFS"]["Layers"]) == env_layers + 2  # not committed
            fa, fb = fingerprint(a["image"], (calc_env.base_commit,)), fingerprint(b["image"], (calc_env.base_commit,))
            assert fa == fb and fb["fixed_left"] == "0"
            # both stop at once (SWE-bench's harness ends each container with `docker stop`)
            assert {client().images.get(r["image"]).attrs["Config"]["StopSignal"] for r in (a, b)} == {"SIGKILL"}
        with Base(calc_env.image) as base:  # a bug that adds a file: the committed path makes its image
            added = "diff --git a/NEW.txt b/NEW.txt\nnew file mode 100644\n--- /dev/null\n+++ b/NEW.txt\n@@ -0,0 +1 @@\n+x\n"
            assert base.layer(added, "bugforge/task.x:y") is None
            assert base.layer(new[0]["bug_patch"], "bugforge/task.x:y").commit == new[0]["base_commit"]
        client().images.remove(new[1]["image"])
        again = read_jsonl(export(envdir, tmp_path / "new.jsonl", limit=3, method="layers"))
        assert again == new
        assert fingerprint(new[1]["image"]) == fingerprint(old[1]["image"])
    finally:
        remove_images([*old, *new])
