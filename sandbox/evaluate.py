"""Score predictions SWE-bench-style with bugforge's grader (the same code the factory and the trainer
use): per-instance logs and report.json under logs/run_evaluation/RUN/MODEL/ID/, and a run report
MODEL.RUN.json with SWE-bench's field names, plus an HTML summary (resolve rate by strategy and repo).
Instances that already have a report.json for this run are not run again (resumable)."""

from __future__ import annotations

import html
import json
import os
import threading
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from bugforge.errors import BugforgeError
from bugforge.records import EnvRecord, Prediction, load_env
from bugforge.sandbox.envgrader import EnvGrader, warm_gradable
from bugforge.sandbox.grader import GradeResult, grade_patch
from bugforge.testing.testmap import TestMap
from bugforge.testing.tools import tools_digest


def check_name(kind: str, value: str, fix: str = "") -> str:
    """`value`, if it is a name (one path component: not empty, `.` or `..`, no slash, backslash or
    control character, at most 200 characters), else a BugforgeError naming `kind`. Run ids, model names
    and instance ids become folders under logs/run_evaluation: a name keeps them there."""
    if (
        not value
        or value in (".", "..")
        or len(value) > 200
        or any(c in "/\\" or ord(c) < 32 or ord(c) == 127 for c in value)
    ):
        raise BugforgeError(
            f"{kind} {value!r} is not a name (it becomes a folder of the run's logs)",
            fix or "use letters, digits, `.`, `_` or `-`, with no slash, and not `.` or `..`",
        )
    return value


def model_folder(model_name_or_path: str) -> str:
    """The folder of a model's logs and the first part of its report's name: SWE-bench's rule (`/` -> `__`,
    so `org/model` is one folder), then checked as a name."""
    return check_name("model name", model_name_or_path.replace("/", "__"), "fix model_name_or_path in the predictions")


def find_environments(rows: list[dict], *dirs: Path) -> list[tuple[EnvRecord, TestMap | None]]:
    """The environment records (and coverage maps) of bugforge instances in `rows`, looked for in each
    of `dirs` and their subdirectories one level down (a dataset's own directory, `runs/`)."""
    wanted = {r.get("env_image") for r in rows} - {None}
    found: dict[str, tuple[EnvRecord, TestMap | None]] = {}
    for d in dirs:
        for f in [Path(d) / "env.json", *Path(d).glob("*/env.json")] if Path(d).is_dir() else []:
            try:
                env = load_env(f)
            except (OSError, ValueError, KeyError, TypeError, AttributeError):  # not an env.json of ours
                continue
            if env.image in wanted and env.image not in found:
                tm = f.parent / "testmap.json.gz"
                found[env.image] = (env, TestMap.load(tm) if tm.exists() else None)
    return list(found.values())


def evaluate(
    rows: list[dict],
    predictions: list[Prediction] | list[dict],
    *,
    run_id: str,
    workers: int = 2,
    log_dir: Path = Path("logs/run_evaluation"),
    report_dir: Path = Path("."),
    progress: Callable[[str, int, int], None] = lambda *a: None,
    envs: list[tuple[EnvRecord, TestMap | None]] = (),
    ray: str | None = None,
    fresh: Callable[[dict, str], GradeResult] | None = None,
) -> tuple[dict, Path]:
    """Grade every prediction. Instances of an environment in `envs` are graded warm (sandbox.envgrader:
    per environment, warm containers up to the smaller of `workers` and the machine's cores, see
    GraderPool); the rest, and all with no `envs`, each in a fresh container of the instance image
    (sandbox.grader). `predictions` are records (sandbox.predictions reads a file into them) or dicts
    with the same keys. `ray`: a Ray cluster's address, to grade on `workers` actors (RemoteGrader) over
    its nodes; this process writes the logs and reports either way. `fresh(row, patch)`: how a prediction
    with no warm grader is graded (default grade_patch; the process backend's ProcessRuntime.grade grades
    with no engine, sandbox/processgrade.py)."""
    by_id = {r["instance_id"]: r for r in rows}
    preds = {p.instance_id: p for p in map(as_prediction, predictions)}
    model = _check(by_id, preds, run_id)
    run = _Run(by_id, preds, Path(log_dir) / run_id / model, envs, workers, fresh or grade_patch)
    reports, todo = run.recorded()
    progress("grading", 0, len(todo))
    done = 0
    if ray is not None:
        from bugforge.cluster import fan_out

        items = [(i, (by_id[i], preds[i].model_patch)) for i in todo]
        results = (
            run.write(i, g) for i, g in fan_out(ray, partial(RemoteGrader, envs), grade_one, items, workers=workers)
        )
    else:
        pool = ThreadPoolExecutor(max_workers=max(1, workers))
        results = (f.result() for f in as_completed([pool.submit(run.one, i) for i in todo]))
    try:
        for iid, rep in results:
            with run.lock:
                if "error" not in rep:
                    reports[iid] = rep
                done += 1
            progress("grading", done, len(todo))
    finally:
        results.close()  # (on Ray: the actors go)
        if ray is None:
            pool.shutdown()
        run.close()
    report = run_report(rows, preds, reports)
    Path(report_dir).mkdir(parents=True, exist_ok=True)
    out = Path(report_dir) / f"{model}.{run_id}.json"
    out.write_text(json.dumps(report, indent=4))
    (Path(report_dir) / f"{model}.{run_id}.html").write_text(html_summary(report, rows, model, run_id))
    return report, out


def _check(by_id: dict[str, dict], preds: dict[str, Prediction], run_id: str) -> str:
    """Refuse predictions of unknown instances, none at all, and ids that are not names; the model's folder."""
    unknown = sorted(set(preds) - set(by_id))
    if unknown:
        raise BugforgeError(
            f"{len(unknown)} prediction(s) name instances not in the dataset, e.g. {unknown[0]}",
            "evaluate against the dataset the predictions were made for",
        )
    if not preds:
        raise BugforgeError("the predictions file is empty", "run `bugforge run-agent` first")
    check_name("run id", run_id, "pass --run-id a name such as `run1`")
    model = model_folder(next(iter(preds.values())).model_name_or_path)
    for iid in preds:
        check_name("instance id", iid, "evaluate against a dataset whose instance ids are names")
    return model


class _Run:
    """One evaluation: grades each prediction (warm where an environment is known, else with `fresh`) and
    writes its SWE-bench-style logs under `base`."""

    def __init__(self, by_id, preds, base: Path, envs, workers: int, fresh: Callable[[dict, str], GradeResult]):
        self.by_id, self.preds, self.base, self.workers, self.fresh = by_id, preds, base, workers, fresh
        self.env_of = {e.image: (e, tm) for e, tm in envs}
        self.pools: dict[str, GraderPool] = {}
        self.lock = threading.Lock()

    def recorded(self) -> tuple[dict[str, dict], list[str]]:
        """(reports a previous run of this run id wrote, the instances still to grade: those with a patch)."""
        reports, todo = {}, []
        for iid, p in self.preds.items():
            f = self.base / iid / "report.json"
            if f.exists():
                reports[iid] = json.loads(f.read_text())[iid]
            elif p.model_patch.strip():
                todo.append(iid)
        return reports, todo

    def pool_for(self, row: dict) -> GraderPool | None:
        env, tm = self.env_of.get(row.get("env_image"), (None, None))
        if env is None or not warm_gradable(row, env):
            return None
        with self.lock:
            if env.image not in self.pools:
                self.pools[env.image] = GraderPool(lambda: EnvGrader(env, tm), min(max(1, self.workers), cpus()))
            return self.pools[env.image]

    def one(self, iid: str):
        row, patch = self.by_id[iid], self.preds[iid].model_patch
        try:
            pool = self.pool_for(row)
            if pool is None:
                g = self.fresh(row, patch)
            else:
                with pool.lend() as warm:
                    g = warm.grade(row, patch)
        except Exception as e:  # noqa: BLE001 - a worker: e.g. a missing image is this instance's error (as in SWE-bench's harness); the run goes on
            return iid, {"error": f"{type(e).__name__}: {e}"}
        return self.write(iid, g)

    def write(self, iid: str, g: GradeResult | str):
        if isinstance(g, str):
            return iid, {"error": g}
        if g.status in ("PATCH_FAILED", "TIMEOUT", "ERROR"):  # the harness writes no report for these: errors
            return iid, {"error": g.status, "log": g.log[-500:]}
        rep = {
            "patch_is_None": False,
            "patch_exists": True,
            "patch_successfully_applied": g.patch_applied,
            "resolved": g.resolved,
            "status": g.status,
            "seconds": round(g.seconds, 2),
        }
        if g.tamper:
            rep["tamper"] = g.tamper
        if g.patch_applied:
            rep["tests_status"] = {"FAIL_TO_PASS": g.FAIL_TO_PASS, "PASS_TO_PASS": g.PASS_TO_PASS}
        d = self.base / iid
        d.mkdir(parents=True, exist_ok=True)
        (d / "patch.diff").write_text(self.preds[iid].model_patch)
        (d / "test_output.txt").write_text(json.dumps(g.outcomes, indent=1) + "\n" + g.log)
        (d / "report.json").write_text(json.dumps({iid: rep}, indent=4))
        return iid, rep

    def close(self) -> None:
        for p in self.pools.values():
            p.close()


class RemoteGrader:
    """What a Ray actor of `evaluate` holds: a warm grader per environment in `envs`, started at its
    first instance; instances of other environments are graded in a fresh container."""

    def __init__(self, envs: list[tuple[EnvRecord, TestMap | None]]):
        self.env_of = {e.image: (e, tm) for e, tm in envs}
        self.warm: dict[str, EnvGrader] = {}

    def grade(self, row: dict, patch: str) -> GradeResult:
        env, tm = self.env_of.get(row.get("env_image"), (None, None))
        if env is None or not warm_gradable(row, env):
            return grade_patch(row, patch)
        if env.image not in self.warm:
            self.warm[env.image] = EnvGrader(env, tm)
        return self.warm[env.image].grade(row, patch)

    def close(self) -> None:
        for g in self.warm.values():
            g.close()


def grade_one(grader: RemoteGrader, item: tuple[dict, str]) -> GradeResult | str:
    """A grade, or the error that stopped it (as `evaluate` records it)."""
    try:
        return grader.grade(*item)
    except Exception as e:  # noqa: BLE001 - a worker: the error is this instance's record (as SWE-bench's harness); the run goes on
        return f"{type(e).__name__}: {e}"


def as_prediction(p: Prediction | dict) -> Prediction:
    if isinstance(p, Prediction):
        return p
    return Prediction(p["instance_id"], p.get("model_patch") or "", p.get("model_name_or_path") or "model")


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class GraderPool:
    """The warm graders of one environment, started as needed up to `size`, each lent to one thread at
    a time. A warm container's runs keep a core busy, so more of them than cores only adds start-ups
    (each starts a container and collects the suite): `evaluate` sizes the pool to the smaller of the
    workers and the machine's cores; the other workers wait for a grader or grade fresh instances."""

    def __init__(self, make: Callable[[], EnvGrader], size: int):
        self.make, self.size = make, size
        self.free: list[EnvGrader] = []
        self.started = 0
        self.cv = threading.Condition()
        self.all: list[EnvGrader] = []

    @contextmanager
    def lend(self):
        with self.cv:
            while not self.free and self.started >= self.size:
                self.cv.wait()
            grader = self.free.pop() if self.free else None
            if grader is None:
                self.started += 1
        if grader is None:
            try:
                grader = self.make()
            except BaseException:
                with self.cv:
                    self.started -= 1
                    self.cv.notify()
                raise
            with self.cv:
                self.all.append(grader)
        try:
            yield grader
        finally:
            with self.cv:
                self.free.append(grader)
                self.cv.notify()

    def close(self) -> None:
        for grader in self.all:
            grader.close()


def run_report(rows: list[dict], preds: dict[str, Prediction], reports: dict[str, dict]) -> dict:
    ids = sorted(r["instance_id"] for r in rows)
    empty = sorted(i for i, p in preds.items() if not p.model_patch.strip())
    completed = sorted(i for i in reports)
    resolved = sorted(i for i in completed if reports[i]["resolved"])
    errors = sorted(i for i in preds if i not in reports and i not in empty)
    return {
        "total_instances": len(ids),
        "submitted_instances": len(preds),
        "completed_instances": len(completed),
        "resolved_instances": len(resolved),
        "unresolved_instances": len(completed) - len(resolved),
        "empty_patch_instances": len(empty),
        "error_instances": len(errors),
        "completed_ids": completed,
        "incomplete_ids": sorted(set(ids) - set(preds)),
        "empty_patch_ids": empty,
        "submitted_ids": sorted(preds),
        "resolved_ids": resolved,
        "unresolved_ids": sorted(set(completed) - set(resolved)),
        "error_ids": errors,
        "schema_version": 2,
    }


def breakdown(report: dict, rows: list[dict], key: str) -> dict[str, tuple[int, int]]:
    resolved = set(report["resolved_ids"])
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        if r["instance_id"] in report["submitted_ids"]:
            out[r.get(key) or "-"][1] += 1
            out[r.get(key) or "-"][0] += r["instance_id"] in resolved
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


def html_summary(report: dict, rows: list[dict], model: str, run_id: str) -> str:
    def table(title, data):
        cells = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{a}/{n}</td><td>{a / n:.0%}</td>"
            f"<td><div style='background:#4a7;height:10px;width:{200 * a / n:.0f}px'></div></td></tr>"
            for k, (a, n) in data.items()
            if n
        )
        head = f"<tr><th>{title.split()[-1]}</th><th>resolved</th><th>rate</th><th></th></tr>"
        return f"<h2>{title}</h2><table>{head}{cells}</table>"

    n = report["submitted_instances"]
    return (
        f"<html><head><meta charset='utf-8'><title>bugforge eval {html.escape(run_id)}</title></head><body>"
        f"<h1>{html.escape(model)} — run {html.escape(run_id)}</h1>"
        f"<p>resolved {report['resolved_instances']} of {n} submitted "
        f"({report['resolved_instances'] / n:.1%}); empty patches {report['empty_patch_instances']}; "
        f"errors {report['error_instances']}</p>"
        + table("resolve rate by strategy", breakdown(report, rows, "strategy"))
        + table("resolve rate by repo", breakdown(report, rows, "repo"))
        + "</body></html>"
    )


def stale_tools(rows: list[dict]) -> str:
    """One warning line when some rows were exported with other in-container grading tools than the
    installed ones (their images and eval_scripts grade by those under the official harness), else ""."""
    now = tools_digest()
    old = [r for r in rows if r.get("tools") and r["tools"] != now]
    if not old:
        return ""
    return (
        f"warning: {len(old)} of {len(rows)} instances were exported with other grading tools than the installed "
        f"bugforge's ({old[0]['instance_id']}: {str(old[0].get('tools') or 'unrecorded')[:12]}, installed {now[:12]}); "
        "bugforge eval grades them with the installed rules, the official harness with theirs: "
        "`bugforge factory export` again remakes them"
    )
