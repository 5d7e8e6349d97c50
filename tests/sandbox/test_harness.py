"""Issue 35: the one module that runs SWE-bench's official harness (sandbox/harness.py). Real harness,
real task images; the rows' eval_script is a plain `pytest -rA` (the harness module is under test here,
not bugforge's exported grading, which tests/factory/test_export.py checks against the harness)."""

from __future__ import annotations

import json

from bugforge.sandbox.harness import harness_verdict, harness_verdicts, log_path, run_harness

PLAIN = (
    "#!/bin/bash\nset -uo pipefail\ncd /testbed\necho '>>>>> Start Test Output'\n"
    "python -m pytest -rA -p no:cacheprovider tests/test_ops.py\necho '>>>>> End Test Output'\n"
)


def test_run_harness_takes_rows_and_patches_or_files_and_returns_its_report(instances, tmp_path):
    a, b = ({**r, "eval_script": PLAIN} for r in instances)
    report = run_harness([a, b], {a["instance_id"]: a["patch"], b["instance_id"]: ""}, cwd=tmp_path, run_id="x")
    assert report["resolved_ids"] == [a["instance_id"]] and report["empty_patch_ids"] == [b["instance_id"]]
    assert log_path(tmp_path, "x", "bugforge", a["instance_id"]).exists()
    # files, in a form mini-swe-agent writes (a JSON object keyed by id), read by the harness as they are
    rows, preds = tmp_path / "rows.jsonl", tmp_path / "preds.json"
    rows.write_text(json.dumps(b) + "\n")
    preds.write_text(
        json.dumps(
            {
                b["instance_id"]: {
                    "instance_id": b["instance_id"],
                    "model_name_or_path": "m/x",
                    "model_patch": b["patch"],
                }
            }
        )
    )
    assert run_harness(rows, preds, cwd=tmp_path / "f", run_id="y")["resolved_ids"] == [b["instance_id"]]
    assert harness_verdicts([a], {a["instance_id"]: b["patch"]}) == {a["instance_id"]: "not resolved"}


def test_harness_verdict_reads_the_tamper_mark():
    report = {"resolved_ids": ["r"]}
    assert harness_verdict(report, "r", "bugforge-tamper: x") == "RESOLVED"
    assert harness_verdict(report, "t", "... bugforge-tamper: conftest.py ...") == "suspicious"
    assert harness_verdict(report, "n", "") == "not resolved"
