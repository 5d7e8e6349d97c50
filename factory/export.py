"""Stage 3 of the factory: validated bugs -> task instances (SWE-bench 5.x rows) + one image each.

An instance image is a thin layer over the environment image: the bug applied and folded into
/testbed's single commit, and the objects of the fixed state deleted, so nothing in the image (git
history, reflog, dangling objects) shows the fix. The eval_script restores every test file from the
instance's own commit, removes planted conftest/sitecustomize files, then runs `pytest -rA` between
SWE-bench's markers, so `python -m swebench.harness.run_evaluation` scores our rows as they are."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import docker.errors

from bugforge.engine import LABEL, client
from bugforge.errors import BugforgeError
from bugforge.factory import statement
from bugforge.factory.generate import Scratch, load_validated
from bugforge.factory.layers import Base, Thin
from bugforge.factory.rows_file import drop_stale, upgrade, write_card
from bugforge.images import image_exists
from bugforge.records import (
    Candidate,
    EnvRecord,
    TaskInstance,
    Validation,
    append_jsonl,
    load_env,
    read_jsonl,
)
from bugforge.testing import tamper
from bugforge.testing.fold import fold_script
from bugforge.testing.testrun import (
    OUT,
    PACKAGE,
    PROBE_DIR,
    TEST_USER,
    file_archive,
    pytest_command,
    tools_archive,
    tools_digest,
)

# Folds the bug into the single commit (bugforge.testing.fold, the process backend's too), gives the tree to
# the test user and records the baseline the sweep compares with; prints the commit
FOLD = f"""set -e
cd /testbed
{fold_script("/tmp/bugforge-bug.diff")}if id -u agent >/dev/null 2>&1; then chown -R agent /testbed; fi
{tamper.capture(tamper.IMAGE_MANIFEST)}
git rev-parse HEAD
"""


def test_files_of(val: Validation, repo_dir: str, tracked: list[str] | None = None) -> list[str]:
    """The files of `val`'s tests and the test configuration files `repo_dir` tracks (`tracked`: its
    `git ls-files`, when known)."""
    import subprocess

    files = {t.split("::")[0] for t in (*val.FAIL_TO_PASS, *val.PASS_TO_PASS)}
    if tracked is None:
        tracked = subprocess.run(
            ["git", "-C", repo_dir, "ls-files"], capture_output=True, text=True, check=True
        ).stdout.split()
    config = {p for p in tracked if p.rsplit("/", 1)[-1] in tamper.CONFIG_NAMES}
    return sorted(files | (config & set(tracked)))


def eval_script(commit: str, selection: list[str], pytest_args: list[str], gold: dict[str, str] | None = None) -> str:
    """The script SWE-bench's harness runs after applying a model patch: the graders' sweep
    (bugforge.testing.tamper) against the baseline the image carries, the graders' pytest command on
    `selection` with the probe (unprivileged, its verdict collected by root), its console kept out of
    the log, then the probe's report between the harness's markers in the form its pytest log parser
    reads (PASSED only for a test that passed, or had the outcome `gold` records for the gold patch;
    every test of `selection` FAILED when the run was tampered with or recorded none for it). Everything
    the in-container tools print is escaped after a fixed prefix or is a status line with a plain node
    id (incontainer/lines.py), so no printed name or reason poses as a marker or a result."""
    gold_lines = [
        f"cat > {OUT}/gold.txt <<'BUGFORGE_GOLD'",
        *(f"{t}\t{o}" for t, o in (gold or {}).items()),
        "BUGFORGE_GOLD",
    ]
    return "\n".join(
        [
            "#!/bin/bash",
            "set +x -uo pipefail",  # (the harness turns tracing on: its stderr would interleave with the results)
            "cd /testbed",
            f"{tamper.check(commit, selection, tamper.IMAGE_MANIFEST)} || {{ echo 'bugforge: not graded'; exit 1; }}",
            "export PYTHONDONTWRITEBYTECODE=1 PYTHONNOUSERSITE=1",
            f"rm -rf {OUT} && mkdir -m 755 {OUT} && cat > {OUT}/select.txt <<'BUGFORGE_SELECTION'",
            *selection,
            "BUGFORGE_SELECTION",
            *(gold_lines if gold else []),
            f"({pytest_command(pytest_args, selection, False, user=TEST_USER)}) > {OUT}/pytest.log 2>&1",
            "echo '>>>>> Start Test Output'",
            f"python -I -S {PROBE_DIR}/{PACKAGE}/summary.py {OUT}/report.jsonl {OUT}/select.txt"
            + (f" {OUT}/gold.txt" if gold else ""),
            "echo '>>>>> End Test Output'",
            "",
        ]
    )


def build_instance_image(env: EnvRecord, cand: Candidate, tag: str) -> str:
    """Commit a container in which the bug was folded into /testbed; returns the instance's commit."""
    c = client().containers.create(
        env.image,
        ["bash", "-c", "sleep infinity"],
        network_mode="none",
        labels={LABEL: "export"},
        stop_signal="SIGKILL",  # committed into the image: see imagetar.docker_load
    )
    try:
        c.put_archive("/tmp", file_archive("bugforge-bug.diff", cand.patch.encode()))
        c.put_archive(PROBE_DIR.rsplit("/", 1)[0], tools_archive())  # the sweep, the probe, the summary
        c.start()
        code, out = c.exec_run(["bash", "-c", FOLD], user="root")
        if code != 0:
            raise BugforgeError(
                f"could not fold bug {cand.id} into {env.image}: {out.decode(errors='replace')[-300:]}",
                "rerun `bugforge factory generate` (the candidate no longer applies)",
            )
        commit = out.decode().strip().splitlines()[-1]
        c.commit(
            repository=tag.split(":")[0],
            tag=tag.split(":")[1],
            changes=["LABEL bugforge.instance=" + tag.split(":")[1], "WORKDIR /testbed", 'CMD ["bash"]'],
        )
        return commit
    finally:
        c.remove(force=True)


def difficulty(cand: Candidate) -> str:
    n = sum(1 for line in cand.patch.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---")))
    return "easy" if n <= 2 and len(cand.files) == 1 else "medium" if n <= 10 and len(cand.files) <= 2 else "hard"


@dataclass
class ExportConfig:
    """Options of `export` (and of `bugforge factory export`, which takes its defaults from here)."""

    limit: int | None = None
    """Export at most this many valid bugs (in the order they were proposed); None: all."""
    seed: int = 0
    """Seeds the wording of the problem statements."""
    method: str = "layers"
    """layers: write each instance's layer and load a batch of images at once (factory.layers);
    commit: a container per instance, committed (the older, slower path; same trees and commit ids)."""
    batch: int = 16
    """Images per `docker load` (layers); the rows of a batch are written once its images are loaded."""
    statement_model: str | None = None
    """A model that rewrites each problem statement (any OpenAI-compatible endpoint; statement.Polisher);
    None: the template statements. Its output is scrubbed of the patch's lines."""
    statement_base_url: str | None = None
    """The statement model's endpoint (default: $OPENAI_BASE_URL)."""
    statement_max_tokens: int = 600
    """Longest statement the model may write, in tokens."""


def export(
    env_path: str | Path,
    out: str | Path | None = None,
    *,
    limit: int | None = ExportConfig.limit,
    seed: int = ExportConfig.seed,
    method: str = ExportConfig.method,
    batch: int = ExportConfig.batch,
    progress: Callable[[str, int, int], None] = lambda *a: None,
    statement_lm: Callable[[str, str], str] | None = None,
) -> Path:
    """Build an image for every valid bug not yet exported and append its row to `out`; rows already
    there gain the fields added since they were written (`upgrade`), and `out`'s folder gets a dataset
    card naming `out` as its data (`write_card`), so `datasets.load_dataset(folder, split=SPLIT)` and
    the tools built on it (mini-swe-agent, SWE-agent) load the rows alone. `method` "layers" loads
    `batch` images at a time (factory.layers) and appends their rows once they are loaded; "commit"
    commits a container per bug. Both give the same /testbed and commit id (docs/bugs.md, Export)."""
    env_path = Path(env_path)
    env_dir = env_path if env_path.is_dir() else env_path.parent
    if not (env_dir / "env.json").exists():
        raise BugforgeError(f"no environment record in {env_dir}", "run `bugforge factory env REPO` first")
    env = load_env(env_dir / "env.json")
    out = Path(out) if out else env_dir / "instances.jsonl"
    valid = load_validated(env_dir)
    if not valid:
        raise BugforgeError(f"no validated bugs in {env_dir}", "run `bugforge factory generate` first")
    upgrade(out)
    drop_stale(out, env.image, tools_digest())  # (made again below, with this environment and these tools)
    write_card(out)
    todo = valid[:limit] if limit else valid
    if method not in METHODS:
        raise BugforgeError(f"unknown export method {method!r}", f"use one of: {', '.join(METHODS)}")
    progress("export", 0, len(todo))
    with Scratch(env.repo_dir) as scratch, ExitStack() as stack:  # one clone for every gold patch
        job = _Export(env, out, method, batch, stack)
        tracked = subprocess.run(["git", "-C", env.repo_dir, "ls-files"], capture_output=True, text=True, check=True)
        tracked = tracked.stdout.split()
        for i, (cand, val) in enumerate(todo, 1):
            iid = f"{env.name}.{cand.strategy}.{cand.id[:8]}"
            # The environment's key is in the tag: the same bug in a rebuilt environment (a new commit, recipe
            # or toolset) is another image, so an earlier export's rows keep theirs.
            tag = f"bugforge/task.{env.name}:{cand.strategy}-{cand.id[:10]}-{env.key[:8]}"
            if iid in job.rows:
                if not image_exists(job.rows[iid]["image"]):
                    job.build(cand, job.rows[iid]["image"])  # deterministic: the row stays right
            else:
                commit = job.build(cand, tag)
                job.written.append(instance_row(env, cand, val, iid, tag, commit, scratch, seed, statement_lm, tracked))
            if len(job.thins) >= batch or not job.thins:
                job.flush()
            progress("export", i, len(todo))
        job.flush()
        job.settle()
        progress("export", len(todo), len(todo))
    return out


class _Export:
    """One export's images and rows: with "layers", thin layers are gathered and loaded `batch` at a time
    (in a thread, while the next batch is made), and a batch's rows are appended once its images are loaded."""

    def __init__(self, env: EnvRecord, out: Path, method: str, batch: int, stack: ExitStack):
        self.env, self.out, self.method, self.batch, self.stack = env, out, method, batch, stack
        self.rows = {r["instance_id"]: r for r in read_jsonl(out)}
        self.base: Base | None = None
        self.thins: list[Thin] = []
        self.written: list[TaskInstance] = []  # rows waiting for their batch's images
        self.loading: list = []  # the batch being loaded and its rows
        self.loader = stack.enter_context(ThreadPoolExecutor(1))

    def settle(self) -> None:
        """Wait for the batch being loaded, then append its rows."""
        if self.loading:
            future, batch_rows = self.loading.pop()
            future.result()
            for row in batch_rows:
                append_jsonl(self.out, row)
                self.rows[row.instance_id] = row.__dict__

    def flush(self) -> None:
        """Start loading the gathered layers (with their rows); the previous batch settles first."""
        self.settle()
        base = self.base
        if self.thins:  # the shared layer goes with the first batch; the engine has it for the next ones
            future = self.loader.submit(base.load, list(self.thins), with_shared=not base.loaded)
            self.loading.append((future, list(self.written)))
            base.loaded = True
        else:
            self.loading.append((self.loader.submit(lambda: None), list(self.written)))
        self.thins.clear(), self.written.clear()

    def build(self, cand: Candidate, tag: str) -> str:
        """The instance image of `cand` as `tag` (a thin layer gathered for the next load, else a committed
        container); its commit."""
        if self.method == "layers":
            if self.base is None:
                self.base = self.stack.enter_context(Base(self.env.image))
                self.stack.callback(lambda: [f.exception() for f, _ in self.loading])  # a load in flight ends first
            thin = self.base.layer(cand.patch, tag)
            if thin:
                self.thins.append(thin)
                return thin.commit
        return build_instance_image(self.env, cand, tag)


METHODS = ("layers", "commit")


def instance_row(
    env: EnvRecord,
    cand: Candidate,
    val: Validation,
    iid: str,
    tag: str,
    commit: str,
    scratch: Scratch,
    seed: int,
    statement_lm: Callable[[str, str], str] | None,
    tracked: list[str] | None = None,
) -> TaskInstance:
    """The row of one exported bug whose image `tag` holds `commit`."""
    problem = statement.write(cand, val, seed)
    if statement_lm:  # (text, patch) -> the rewritten text, scrubbed of the patch (statement.Polisher)
        problem = statement_lm(problem, cand.patch)
    return TaskInstance(
        instance_id=iid,
        repo=f"bugforge/{env.name}",
        base_commit=commit,
        patch=scratch.combine([cand.patch], reverse=True),
        test_patch="",
        problem_statement=problem,
        FAIL_TO_PASS=json.dumps(val.FAIL_TO_PASS),
        PASS_TO_PASS=json.dumps(val.PASS_TO_PASS),
        version="1.0",
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        image=tag,
        eval_script=eval_script(commit, [*val.FAIL_TO_PASS, *val.PASS_TO_PASS], env.recipe.pytest_args),
        log_parser="parse_log_pytest",
        eval_type="pass_and_fail",
        environment_setup_commit=env.base_commit,
        strategy=cand.strategy,
        bug_patch=cand.patch,
        files=cand.files,
        function=cand.function,
        difficulty=difficulty(cand),
        env_image=env.image,
        test_files=test_files_of(val, env.repo_dir, tracked),
        pytest_args=env.recipe.pytest_args,
        tools=tools_digest(),
    )


def remove_images(rows: list[dict]) -> None:
    for r in rows:
        try:
            client().images.remove(r["image"], force=True)
        except docker.errors.APIError:
            pass


# What must be the same in an image however it was made: each line a name and a digest (or a value).
FINGERPRINT = f"""cd /testbed
d() {{ sha256sum | cut -c1-16; }}
echo "head $(git rev-parse HEAD)"
echo "index $(git ls-files -s | d)"
echo "status $(git status --porcelain --untracked-files=all | d)"
echo "objects $(git cat-file --batch-all-objects --batch-check | sort | d)"
echo "loose $(find .git/objects -printf '%P %U %G %m %y\\n' | sort | d)"
echo "packs $(git count-objects -v | grep -E '^(count|in-pack|packs):' | tr '\\n' ' ')"
TREES="/testbed /opt/bugforge /etc/bugforge"
echo "owners $(find $TREES -path /testbed/.git/objects -prune -o -printf '%p %U %G %m %y %l\\n' | sort | d)"
echo "files $(find $TREES -path /testbed/.git/objects -prune -o -path /testbed/.git/index -prune -o -type f -print0 \\
  | sort -z | xargs -0 sha256sum | d)"
echo "manifest $(d < {tamper.IMAGE_MANIFEST})"
"""


def fingerprint(image: str, fixed: tuple[str, ...] = ()) -> dict[str, str]:
    """FINGERPRINT of `image`'s /testbed (and of the tools and baseline it carries), in a throwaway
    container: name -> digest; `fixed` objects (ids) that must be gone: how many are still there."""
    check = "".join(f"git cat-file -e {o} 2>/dev/null && n=$((n+1)); " for o in fixed)
    script = f'{FINGERPRINT}n=0; {check}echo "fixed_left $n"\n'
    out = client().containers.run(
        image, ["bash", "-c", script], remove=True, network_mode="none", user="root", labels={LABEL: "export"}
    )
    return dict(line.split(" ", 1) for line in out.decode().strip().splitlines())
