"""Exported rows -> Harbor tasks (PyPI `harbor`, the format of its release HARBOR_VERSION): one task
directory per instance, named by its instance id:

    task.toml              metadata, timeouts, resources; a collect hook that saves the agent's changes
                           to /testbed as a patch (/logs/artifacts/model.patch)
    instruction.md         the problem statement
    environment/Dockerfile FROM the instance image (the agent's container)
    tests/                 the verifier's own container (Harbor's "separate" mode): FROM the instance image
                           with the tests baked in at /tests, no network. tests/test.sh applies the patch
                           to a fresh /testbed, runs tests/eval.sh (the row's eval_script) and writes
                           /logs/verifier/reward.txt: 1 when every FAIL_TO_PASS and PASS_TO_PASS test
                           succeeded and nothing was tampered with (tests/reward.py), else 0
    solution/solve.sh      applies solution/gold.patch in /testbed as SWE-bench's harness applies a patch

So, as under SWE-bench's harness, only a patch crosses from the agent to the grader.
Writing is idempotent and resumable: a file already holding the right bytes and mode is left alone.
docs/harbor.md has the commands."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from bugforge.errors import BugforgeError
from bugforge.factory.export import ExportConfig, export
from bugforge.records import TaskInstance, from_dict, read_jsonl

HARBOR_VERSION = "0.26.0"  # the release whose task format this writes (scripts/setup-harbor.sh pins it)
AGENT_TIMEOUT = 1800.0
VERIFIER_TIMEOUT = 600.0
CPUS = 1
MEMORY_MB = 4096

PATCH = "/logs/artifacts/model.patch"
# run in the agent's container when its run ends: everything it changed in /testbed, as one patch
COLLECT = f"cd /testbed && git -c safe.directory=/testbed add -A && git -c safe.directory=/testbed diff --cached --binary {{commit}} > {PATCH}"

TEST_SH = f"""#!/bin/bash
# Harbor's verifier for {{iid}}, in a fresh container of the instance image: the agent's patch applied
# the way SWE-bench's harness applies one, then the row's eval_script (eval.sh: the grading sweep,
# pytest with bugforge's probe, the summary between SWE-bench's markers), then the reward (reward.py).
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /logs/verifier
{{{{
  cd /testbed
  if [ -s {PATCH} ] && ! git apply --verbose {PATCH} && ! patch --batch --fuzz=5 -p1 -i {PATCH}; then
    echo 'bugforge: the patch does not apply'
  else
    bash "$here/eval.sh"
  fi
}}}} > /logs/verifier/eval.log 2>&1
cat /logs/verifier/eval.log
reward=$(python -I -S "$here/reward.py" /logs/verifier/eval.log "$here/labels.json" /logs/verifier/report.json) || reward=0
[ "$reward" = 1 ] || reward=0
echo "$reward" > /logs/verifier/reward.txt
echo "bugforge reward: $reward"
"""

SOLVE_SH = """#!/bin/bash
# The gold fix of {iid}, applied in /testbed the way SWE-bench's harness applies a patch.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd /testbed
git apply --verbose "$here/gold.patch" || patch --batch --fuzz=5 -p1 -i "$here/gold.patch"
"""


@dataclass
class HarborTasks:
    """What `write_tasks` did: the task directories (in row order) and how many files it (re)wrote."""

    out: Path
    tasks: list[Path] = field(default_factory=list)
    written: int = 0
    unchanged: int = 0


def task_name(instance_id: str) -> str:
    """The task's directory name (and the name part of its `org/name`): the instance id, with any
    character Harbor's names do not allow replaced by '-'."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", instance_id)
    return name if name[:1].isalnum() else "0" + name


def _toml(value) -> str:
    """A TOML value (strings as basic strings: JSON's escapes are TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def _table(name: str, items: dict) -> str:
    return f"[{name}]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in items.items())


def _labels(row: TaskInstance, key: str) -> list[str]:
    value = getattr(row, key)
    try:
        tests = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError:
        raise ValueError(f"{key} is not JSON")
    if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
        raise ValueError(f"{key} is not a list of test ids")
    return tests


def task_toml(row: TaskInstance, f2p: list[str], p2p: list[str]) -> str:
    name = task_name(row.instance_id)
    short = row.repo.split("/")[-1]
    task = {
        "name": f"bugforge/{name}",
        "description": f"Fix a bug in {short} ({row.strategy or 'bug'}): {len(f2p)} failing test(s) must pass",
        "keywords": ["bugforge", "swe", "python", *([row.strategy] if row.strategy else [])],
    }
    metadata = {
        "instance_id": row.instance_id,
        "repo": row.repo,
        "base_commit": row.base_commit,
        "image": row.image,
        "strategy": row.strategy,
        "difficulty": row.difficulty or "unknown",
        "category": "debugging",
        "tags": ["bugforge", "python"],
        "fail_to_pass": len(f2p),
        "pass_to_pass": len(p2p),
        "source": "bugforge",
    }
    verifier = {"timeout_sec": VERIFIER_TIMEOUT, "environment_mode": "separate"}
    environment = {"build_timeout_sec": 600.0, "cpus": CPUS, "memory_mb": MEMORY_MB, "workdir": "/testbed"}
    return "\n".join(
        [
            'schema_version = "1.4"\n',
            _table("task", task),
            _table("metadata", metadata),
            _table("verifier", verifier),
            _table("[verifier.collect]", {"command": COLLECT.format(commit=row.base_commit), "timeout_sec": 120.0}),
            _table("agent", {"timeout_sec": AGENT_TIMEOUT}),
            _table("environment", environment),
        ]
    )


def task_files(row: dict) -> dict[str, tuple[str, int]]:
    """The files of one row's task: {relative path: (text, mode)}. Raises ValueError on a bad row."""
    try:
        inst = from_dict(TaskInstance, row)
    except TypeError as e:  # a required field is missing
        raise ValueError(str(e).split("() ", 1)[-1])
    for key in ("instance_id", "image", "problem_statement", "patch", "eval_script"):
        if not isinstance(getattr(inst, key), str) or not getattr(inst, key).strip():
            raise ValueError(f"'{key}' is empty")
    f2p, p2p = _labels(inst, "FAIL_TO_PASS"), _labels(inst, "PASS_TO_PASS")
    iid = inst.instance_id
    labels = {"instance_id": iid, "FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p}
    reward = resources.files("bugforge.factory").joinpath("templates/harbor_reward.py").read_text()
    return {
        "task.toml": (task_toml(inst, f2p, p2p), 0o644),
        "instruction.md": (inst.problem_statement.rstrip("\n") + "\n", 0o644),
        "environment/Dockerfile": (f"FROM {inst.image}\nWORKDIR /testbed\n", 0o644),
        "tests/Dockerfile": (f"FROM {inst.image}\nCOPY . /tests/\nWORKDIR /testbed\n", 0o644),
        "tests/docker-compose.yaml": ("services:\n  main:\n    network_mode: none\n", 0o644),
        "tests/test.sh": (TEST_SH.format(iid=iid), 0o755),
        "tests/eval.sh": (inst.eval_script, 0o755),
        "tests/reward.py": (reward, 0o644),
        "tests/labels.json": (json.dumps(labels, indent=1) + "\n", 0o644),
        "solution/solve.sh": (SOLVE_SH.format(iid=iid), 0o755),
        "solution/gold.patch": (inst.patch, 0o644),
    }


def _write(path: Path, text: str, mode: int) -> bool:
    """Write `text` with `mode` unless the file already holds both; True when it wrote."""
    data = text.encode()
    if path.is_file() and path.read_bytes() == data:
        if path.stat().st_mode & 0o777 != mode:
            path.chmod(mode)
            return True
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.chmod(mode)
    tmp.replace(path)
    return True


def write_tasks(
    rows_path: str | Path,
    out: str | Path,
    *,
    limit: int | None = None,
    progress: Callable[[str, int, int], None] = lambda *a: None,
) -> HarborTasks:
    """Write a Harbor task directory under `out` for each row of `rows_path` (the first `limit`)."""
    rows_path, out = Path(rows_path), Path(out)
    if not rows_path.is_file():
        raise BugforgeError(f"no exported rows at {rows_path}", "run `bugforge factory export ENV` first")
    if out.exists() and not out.is_dir():
        raise BugforgeError(f"{out} is a file, not a directory", "give --out a directory for the Harbor tasks")
    rows = read_jsonl(rows_path)
    if not rows:
        raise BugforgeError(f"{rows_path} holds no rows", "run `bugforge factory export ENV` first")
    rows = rows[:limit] if limit else rows
    files = []
    for n, row in enumerate(rows, 1):
        try:
            files.append((task_name(row["instance_id"]), task_files(row)))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            what = f"missing {e}" if isinstance(e, KeyError) else str(e)
            raise BugforgeError(
                f"row {n} of {rows_path} is not a task instance: {what}",
                "re-export it with `bugforge factory export ENV`",
            )
    names = [name for name, _ in files]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise BugforgeError(f"two rows of {rows_path} make the task {dup}", "remove the duplicate row")
    done = HarborTasks(out)
    progress("harbor tasks", 0, len(files))
    for i, (name, task) in enumerate(files, 1):
        for rel, (text, mode) in task.items():
            if _write(out / name / rel, text, mode):
                done.written += 1
            else:
                done.unchanged += 1
        done.tasks.append(out / name)
        progress("harbor tasks", i, len(files))
    return done


def export_harbor(
    env_path: str | Path,
    out: str | Path | None = None,
    *,
    limit: int | None = None,
    seed: int = 0,
    method: str = ExportConfig.method,
    progress: Callable[[str, int, int], None] = lambda *a: None,
    statement_lm: Callable[[str, str], str] | None = None,
) -> HarborTasks:
    """The normal export (rows and instance images made by `method`, resumable), then a Harbor task per
    row, written under `out` (default: the environment's harbor/ folder)."""
    rows = export(env_path, limit=limit, seed=seed, method=method, progress=progress, statement_lm=statement_lm)
    return write_tasks(rows, Path(out) if out else rows.parent / "harbor", limit=limit, progress=progress)
