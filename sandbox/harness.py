"""SWE-bench's official harness, the external referee: the one place bugforge runs
`python -m swebench.harness.run_evaluation` and reads its report (tests, benches and the red team call it).

`run_harness(rows, preds, ...)` -> the harness's summary report, as the harness wrote it (a dict with
`resolved_ids`, `unresolved_ids`, `empty_patch_ids`, `error_ids`, `submitted_ids`, counts ...).
`harness_verdicts(rows, {id: patch}, ...)` -> {id: "RESOLVED" | "suspicious" | "not resolved"}, where
`suspicious` means the row's eval_script reported tampering (bugforge-tamper:) and the harness did not
resolve it. The harness runs as a subprocess of this interpreter; it needs the `swebench` package and
the rows' images in the local engine (it pulls nothing it finds there)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bugforge.errors import BugforgeError

TAMPER_MARK = "bugforge-tamper:"  # what an exported eval_script prints when it finds tampering


class HarnessError(RuntimeError):
    """The harness exited non-zero or wrote no report; the message ends with its stderr's tail."""


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def run_harness(
    rows: list[dict] | str | Path,
    preds: dict[str, str] | list[dict] | str | Path,
    *,
    cwd: str | Path | None = None,
    run_id: str = "bugforge",
    model: str = "bugforge",
    workers: int = 2,
    timeout: int | None = None,
    wall: float = 3600,
) -> dict:
    """Run SWE-bench's harness on `rows` (task rows, or a dataset file it reads as it is) and `preds`
    ({instance id: patch}, named `model`; a list of prediction dicts; or a predictions file in any form
    the harness reads) and return its summary report.

    `cwd`: where the harness runs and leaves its report and its logs (logs/run_evaluation/RUN_ID/MODEL/
    ID/test_output.txt, see `log_path`); None: a temporary directory, removed afterwards. `timeout`:
    the harness's seconds per instance (None: its default); `wall`: seconds for the whole run.
    Raises HarnessError when the harness fails, BugforgeError when swebench is not installed."""
    if importlib.util.find_spec("swebench") is None:
        raise BugforgeError("SWE-bench's harness is not installed", "pip install swebench")
    if cwd is None:
        with tempfile.TemporaryDirectory() as tmp:
            return run_harness(
                rows, preds, cwd=tmp, run_id=run_id, model=model, workers=workers, timeout=timeout, wall=wall
            )
    cwd = Path(cwd).resolve()
    cwd.mkdir(parents=True, exist_ok=True)
    data = Path(rows).resolve() if isinstance(rows, (str, Path)) else _jsonl(cwd / f"{run_id}.rows.jsonl", rows)
    if isinstance(preds, dict):
        preds = [{"instance_id": i, "model_name_or_path": model, "model_patch": p} for i, p in preds.items()]
    pred = Path(preds).resolve() if isinstance(preds, (str, Path)) else _jsonl(cwd / f"{run_id}.preds.jsonl", preds)
    cmd = [sys.executable, "-m", "swebench.harness.run_evaluation", "-d", str(data), "-p", str(pred)]
    cmd += ["--run_id", run_id, "--max_workers", str(workers)]
    cmd += ["--timeout", str(timeout)] if timeout is not None else []
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=wall)
    if r.returncode:
        raise HarnessError(f"the SWE-bench harness failed (exit {r.returncode}): {r.stderr[-2000:]}")
    reports = sorted(cwd.glob(f"*.{run_id}.json"), key=lambda p: p.stat().st_mtime)
    if not reports:
        raise HarnessError(f"the SWE-bench harness wrote no report *.{run_id}.json in {cwd}: {r.stderr[-2000:]}")
    return json.loads(reports[-1].read_text())


def log_path(cwd: str | Path, run_id: str, model: str, instance_id: str) -> Path:
    """Where the harness run in `cwd` left one instance's test output."""
    model = model.replace("/", "__")  # as the harness names the folder
    return Path(cwd) / "logs" / "run_evaluation" / run_id / model / instance_id / "test_output.txt"


def harness_verdict(report: dict, instance_id: str, test_output: str = "") -> str:
    """RESOLVED when the report resolves the instance; else `suspicious` when its test output carries
    the eval_script's tamper mark; else `not resolved` (errors included)."""
    if instance_id in report.get("resolved_ids", []):
        return "RESOLVED"
    return "suspicious" if TAMPER_MARK in test_output else "not resolved"


def harness_verdicts(
    rows: list[dict],
    preds: dict[str, str],
    *,
    timeout: int = 120,
    workers: int = 2,
    run_id: str = "redteam",
    model: str = "redteam",
    keep: str | Path | None = None,
) -> dict[str, str]:
    """Grade `preds` ({instance id: patch}) with the harness; a harness_verdict per id. `keep`: a
    directory for the harness's report and logs (else a temporary one)."""
    with tempfile.TemporaryDirectory() as scratch:
        cwd = Path(keep).resolve() if keep else Path(scratch)
        report = run_harness(rows, preds, cwd=cwd, run_id=run_id, model=model, workers=workers, timeout=timeout)
        out = {}
        for iid in preds:
            log = log_path(cwd, run_id, model, iid)
            out[iid] = harness_verdict(report, iid, log.read_text(errors="replace") if log.exists() else "")
        return out
