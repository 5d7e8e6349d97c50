"""Export: the official SWE-bench harness agrees with our exported instances (gold resolves, empty and
no-op patches do not). Real containers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from bugforge.factory.generate import generate
from bugforge.records import read_jsonl


def test_swebench_harness_agrees_with_our_export(calc_env, tmp_path):
    from bugforge.factory.export import export, remove_images

    envdir = tmp_path / "env"  # a copy: the package's calc_env stays as built
    shutil.copytree(Path(calc_env.testmap).parent, envdir)
    generate(
        envdir,
        max_candidates=8,
        workers=2,
        log=lambda m: None,
        strategies=["op_change", "remove_assign", "change_return", "op_change_const"],
    )
    out = export(envdir, tmp_path / "inst.jsonl", limit=4)
    rows = read_jsonl(out)
    assert len(rows) == 4
    try:
        empty = tmp_path / "empty.jsonl"
        noop = tmp_path / "noop.jsonl"
        note = "diff --git a/NOTES.txt b/NOTES.txt\nnew file mode 100644\n--- /dev/null\n+++ b/NOTES.txt\n@@ -0,0 +1 @@\n+hello\n"
        empty.write_text(
            "".join(
                json.dumps({"instance_id": r["instance_id"], "model_name_or_path": "empty", "model_patch": ""}) + "\n"
                for r in rows
            )
        )
        noop.write_text(
            "".join(
                json.dumps({"instance_id": r["instance_id"], "model_name_or_path": "noop", "model_patch": note}) + "\n"
                for r in rows
            )
        )
        results = {}
        for name, preds in (("gold", "gold"), ("empty", str(empty)), ("noop", str(noop))):
            r = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "swebench.harness.run_evaluation",
                    "-d",
                    str(out),
                    "-p",
                    preds,
                    "--run_id",
                    f"t{name}",
                    "--max_workers",
                    "2",
                ],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert r.returncode == 0, r.stderr[-2000:]
            results[name] = json.loads((tmp_path / f"{name}.t{name}.json").read_text())
        ids = sorted(r["instance_id"] for r in rows)
        assert results["gold"]["resolved_ids"] == ids
        assert results["empty"]["resolved_ids"] == [] and results["empty"]["empty_patch_ids"] == ids
        assert results["noop"]["resolved_ids"] == [] and results["noop"]["unresolved_ids"] == ids
    finally:
        remove_images(rows)
