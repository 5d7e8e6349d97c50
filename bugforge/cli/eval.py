"""`bugforge eval`: score predictions SWE-bench-style (warm grading where the environment record is
found, else a fresh container per prediction; `--backend process`: a fresh copy of the tree in bubblewrap,
no engine)."""

from __future__ import annotations

import sys
from pathlib import Path

from bugforge.cli.common import (
    Bars,
    console,
    dataset_file,
    default_of,
    load_dataset,
    load_instances,
    use_engine,
)
from bugforge.errors import BugforgeError
from bugforge.sandbox.evaluate import evaluate


def configure(ev) -> None:
    ev.add_argument(
        "--dataset", required=True, help="task instances JSONL, or the export folder holding instances.jsonl"
    )
    ev.add_argument(
        "--predictions",
        required=True,
        help="JSONL, a JSON list, a JSON object keyed by instance id (mini-swe-agent's and SWE-agent's "
        "preds.json), or `gold` (each row's own fix)",
    )
    ev.add_argument("--run-id", default="bugforge", help="a name: logs go to logs/run_evaluation/RUN_ID/MODEL/")
    ev.add_argument("--workers", type=int, default=default_of(evaluate, "workers"))
    ev.add_argument("--report-dir", default=".")
    ev.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=default_of(evaluate, "ray"),
        help="grade on a Ray cluster (`auto`: the running one)",
    )
    ev.add_argument(
        "--isolation",
        choices=("warm", "fresh"),
        default="warm",
        help="warm: bugforge instances whose environment record is found (beside the dataset or "
        "under runs/) share a guarded warm container per worker and run only the tests that "
        "can see the change; fresh: a fresh container of the instance image per prediction",
    )
    ev.add_argument(
        "--backend",
        choices=("docker", "podman", "process"),
        default="docker",
        help="podman: containers on rootless Podman (its Docker-compatible API; docs/sandbox.md); process: no engine; each prediction graded in a fresh copy of its instance's tree from --rootfs, in "
        "bubblewrap (needs root; docs/sandbox.md)",
    )
    ev.add_argument("--rootfs", metavar="DIR", help="with --backend process: the folder `bugforge images rootfs` made")
    ev.set_defaults(func=cmd_eval)


def cmd_eval(a) -> int:
    from bugforge.sandbox.evaluate import check_name, model_folder
    from bugforge.sandbox.predictions import read_predictions

    # bad input fails before any work and before anything is written: the run id, the predictions file
    # (and its model names: they become folders), the dataset (the file, or the export folder holding it)
    check_name("--run-id", a.run_id, "pass a name such as `run1`")
    preds = None if a.predictions == "gold" else read_predictions(a.predictions)
    for p in preds or []:
        model_folder(p.model_name_or_path)
    use_engine(a)
    box = process_runtime(a) if a.backend == "process" else None
    try:
        report, out, rows = _evaluate(a, preds, box)
    finally:
        if box is not None:
            box.shutdown()
    print_eval_report(report, rows, out)
    return 0


def _evaluate(a, preds, box):
    """evaluate() over --dataset (its images checked unless `box`, a process runtime, grades)."""
    from bugforge.sandbox.evaluate import find_environments, stale_tools
    from bugforge.sandbox.predictions import read_predictions

    fresh = box.grade if box is not None else None
    rows = list(load_instances([a.dataset]).values()) if fresh else load_dataset(a.dataset)
    warning = stale_tools(rows)
    if warning:
        print(warning, file=sys.stderr)
    preds = preds or read_predictions("gold", rows)
    warm = a.isolation == "warm" and fresh is None
    envs = find_environments(rows, dataset_file(a.dataset).parent, Path("runs")) if warm else []
    from bugforge.images import image_exists

    envs = [e for e in envs if image_exists(e[0].image)]  # an environment image not here: graded fresh
    with Bars() as bars:
        report, out = evaluate(
            rows,
            preds,
            run_id=a.run_id,
            workers=a.workers,
            report_dir=Path(a.report_dir),
            progress=bars,
            envs=envs,
            ray=a.ray,
            fresh=fresh,
        )
    return report, out, rows


def process_runtime(a):
    """`--backend process`: a ProcessRuntime over --rootfs, or a one-line error before any work where it
    cannot grade (not root, unconfined, no bubblewrap; sandbox/processgrade.py)."""
    from bugforge import sandbox

    if a.ray:
        raise BugforgeError("--backend process grades on this machine", "leave out --ray")
    rt = sandbox.connect(backend="process", rootfs=a.rootfs)
    rt.grader.check()
    return rt


def print_eval_report(report: dict, rows: list[dict], out) -> None:
    from rich.table import Table

    from bugforge.sandbox.evaluate import breakdown

    t = Table(title=f"evaluation: {report['resolved_instances']}/{report['submitted_instances']} resolved")
    for col in ("strategy", "resolved", "submitted", "rate"):
        t.add_column(col)
    for k, (r, n) in breakdown(report, rows, "strategy").items():
        if n:
            t.add_row(k, str(r), str(n), f"{r / n:.0%}")
    console.print(t)
    console.print(
        f"empty patches {report['empty_patch_instances']}, errors {report['error_instances']}; "
        f"report -> {out} (and {Path(out).with_suffix('.html')})",
        markup=False,
    )
