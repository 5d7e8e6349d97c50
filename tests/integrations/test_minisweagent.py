"""mini-swe-agent (PyPI, pinned, unmodified, in its own virtual environment made by
scripts/setup-minisweagent.sh) on bugforge's exported rows: its batch runner `mini-extra swebench` loads
the export folder with `datasets.load_dataset`, starts each row's `image_name` with Docker, and its
built-in scripted model class (`deterministic`, configured from a file) applies a patch and submits.
Its preds.json, unchanged, is then scored by `bugforge eval` and by the official SWE-bench harness."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bugforge.records import TaskInstance, from_dict, read_jsonl
from bugforge.sandbox.harness import run_harness

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def mini_extra() -> Path:
    """The `mini-extra` command of mini-swe-agent's own environment (made on first use, ~1 min)."""
    r = subprocess.run(["bash", str(ROOT / "scripts" / "setup-minisweagent.sh")], capture_output=True, text=True)
    assert r.returncode == 0, f"scripts/setup-minisweagent.sh failed: {r.stderr[-2000:]}"
    return Path(r.stdout.strip().splitlines()[-1]) / "bin" / "mini-extra"


def load(folder: Path, cache: Path) -> list[dict]:
    import datasets

    return list(datasets.load_dataset(str(folder), split="test", cache_dir=str(cache)))


def test_rows_written_before_image_name_are_upgraded_and_load(tmp_path, instances):
    """An export folder whose rows predate image_name (and which holds other JSONL files): export's
    upgrade fills image_name/docker_image in from image, its card makes `load_dataset(folder)` read
    the rows alone; a row read as a TaskInstance gets them too."""
    from bugforge.factory.rows_file import upgrade, write_card

    old = [{k: v for k, v in r.items() if k not in ("image_name", "docker_image")} for r in instances]
    assert all(from_dict(TaskInstance, r).image_name == r["image"] for r in old)
    out = tmp_path / "instances.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in old))
    (tmp_path / "validations.jsonl").write_text('{"candidate": "x", "status": "valid"}\n')
    upgrade(out)
    write_card(out)
    rows = read_jsonl(out)
    assert [r["instance_id"] for r in rows] == [r["instance_id"] for r in old]
    assert all(r["image_name"] == r["docker_image"] == r["image"] for r in rows)
    assert all({k: v for k, v in r.items() if k not in ("image_name", "docker_image")} == o for r, o in zip(rows, old))
    loaded = load(tmp_path, tmp_path / "hf")
    assert [r["instance_id"] for r in loaded] == [r["instance_id"] for r in rows]
    assert [r["image_name"] for r in loaded] == [r["image"] for r in rows]
    # a README.md bugforge did not write is left alone
    (tmp_path / "README.md").write_text("# mine\n")
    write_card(out)
    assert (tmp_path / "README.md").read_text() == "# mine\n"


def test_export_folder_loads_with_datasets(calc_runs, tmp_path):
    folder = calc_runs / "calc"
    rows = read_jsonl(folder / "instances.jsonl")
    assert len(list(folder.glob("*.jsonl"))) > 1  # candidates, validations beside the rows
    assert all(r["image_name"] == r["docker_image"] == r["image"] for r in rows)
    loaded = load(folder, tmp_path / "hf")
    assert [(r["instance_id"], r["image_name"], r["patch"]) for r in loaded] == [
        (r["instance_id"], r["image_name"], r["patch"]) for r in rows
    ]


def scripted(name: str, command: str) -> dict:
    """A config for mini-swe-agent's built-in scripted model (`deterministic`): run `command` in
    /testbed (it leaves the change's diff in patch.txt), then submit patch.txt as its instructions say.
    A scripted policy that knows the change: plumbing only. (Written as JSON, which YAML reads.)"""
    say = lambda thought, cmd: {"role": "assistant", "content": thought, "extra": {"actions": [{"command": cmd}]}}  # noqa: E731
    return {
        "model": {
            "model_class": "deterministic",
            "model_name": name,
            "outputs": [
                say("THOUGHT: make the scripted change.", command + "\ngit diff > patch.txt"),
                say("THOUGHT: submit.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"),
            ],
        }
    }


def test_minisweagent_gold_and_wrong_agree_with_harness(calc_runs, mini_extra, cli, tmp_path):
    folder = calc_runs / "calc"
    a, b = read_jsonl(folder / "instances.jsonl")[:2]
    (tmp_path / "bugforge.yaml").write_text(json.dumps({"environment": {"run_args": ["--rm", "--network", "none"]}}))
    gold = scripted("scripted-gold-patch", f"git apply <<'BUGFORGE_PATCH'\n{a['patch']}BUGFORGE_PATCH")
    wrong = scripted("scripted-wrong-change", f"echo '# a wrong change' >> {b['files'][0]}")
    out = tmp_path / "msa"
    env = {
        **os.environ,
        "MSWEA_GLOBAL_CONFIG_DIR": str(tmp_path / "mswea"),
        "HF_DATASETS_CACHE": str(tmp_path / "hf"),
        "HF_HUB_OFFLINE": "1",
    }
    for row, config in ((a, gold), (b, wrong)):
        (tmp_path / "scripted.yaml").write_text(json.dumps(config))
        r = subprocess.run(
            [str(mini_extra), "swebench", "--subset", str(folder), "--split", "test", "-o", str(out)]
            + ["-c", "swebench.yaml", "-c", str(tmp_path / "bugforge.yaml"), "-c", str(tmp_path / "scripted.yaml")]
            + ["--filter", f"^{row['instance_id']}$"],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        traj = json.loads((out / row["instance_id"] / f"{row['instance_id']}.traj.json").read_text())
        assert traj["info"]["exit_status"] == "Submitted", r.stdout[-3000:]
    preds_file = out / "preds.json"
    preds = json.loads(preds_file.read_text())
    assert sorted(preds) == sorted([a["instance_id"], b["instance_id"]])  # keyed by instance id
    assert preds[a["instance_id"]]["model_patch"].strip() and preds[b["instance_id"]]["model_patch"].strip()

    r = cli(
        "eval",
        "--dataset",
        str(folder / "instances.jsonl"),
        "--predictions",
        str(preds_file),
        "--run-id",
        "msa",
        "--report-dir",
        str(tmp_path / "ours"),
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    ours = json.loads(next((tmp_path / "ours").glob("*.msa.json")).read_text())

    theirs = run_harness(folder / "instances.jsonl", preds_file, cwd=tmp_path, run_id="hmsa", wall=600)
    assert theirs["resolved_ids"] == [a["instance_id"]] and theirs["unresolved_ids"] == [b["instance_id"]]
    for key in ("resolved_ids", "unresolved_ids", "empty_patch_ids", "error_ids", "submitted_ids"):
        assert ours[key] == theirs[key], (key, ours[key], theirs[key])
