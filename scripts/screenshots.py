"""The README's screenshots of `bugforge view`, taken from a real runs directory (e.g. `make demo`'s runs/):
serves the viewer on 127.0.0.1, opens each main page in Debian's headless Chromium (Playwright, never
`playwright install`) and writes PNGs to docs/img/: datasets, dataset, instance, trajectory, evaluation
comparison (or the evaluation page, with one report), training curves (when a metrics.jsonl exists).

    python scripts/screenshots.py runs --out docs/img
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import uvicorn

from bugforge.view.app import create_app
from bugforge.view.datasets import dataset_index
from bugforge.view.headless import CHROMIUM, CHROMIUM_ARGS
from bugforge.view.jsonl import UNREADABLE
from bugforge.view.runs import load_report, trajectory_index
from bugforge.view.scan import scan


def readable(path: Path) -> bool:
    try:
        load_report(path)
        return True
    except UNREADABLE:
        return False


def longest_trajectory(root: Path, files: list[str]):
    """(file, line, summary) of the trajectory with the most turns (a model's over the scripted oracle's)."""
    best = None
    for rel in files:
        for r in trajectory_index(root / rel).rows:
            rank = (r.summary.turns, "oracle" not in r.summary.model)
            if best is None or rank > (best[2].turns, "oracle" not in best[2].model):
                best = (rel, r.line, r.summary)
    return best


def pages(root: Path) -> dict[str, str]:
    """name -> URL path of each main page, picked from what the runs directory holds."""
    runs = scan(root)
    out = {"datasets": "/"}
    data = max(runs.datasets, key=lambda r: len(dataset_index(root / r).rows), default=None)
    if data:
        out["dataset"] = f"/dataset?path={quote(data)}"
    best = longest_trajectory(root, runs.trajectories)
    if best and data:
        out["instance"] = f"/instance?path={quote(data)}&id={quote(best[2].instance_id)}"
    elif data:
        first = dataset_index(root / data).rows[0].summary.instance_id
        out["instance"] = f"/instance?path={quote(data)}&id={quote(first)}"
    if best:
        out["trajectory"] = f"/trajectory?path={quote(best[0])}&line={best[1]}"
    reports = [r for r in runs.reports if readable(root / r)]
    if len(reports) >= 2:
        out["compare"] = f"/compare?a={quote(reports[0])}&b={quote(reports[1])}"
    elif reports:
        out["evaluation"] = f"/eval?path={quote(reports[0])}"
    if runs.training:
        out["training"] = f"/training?path={quote(runs.training[0])}"
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs_dir", nargs="?", default="runs")
    ap.add_argument("--out", default="docs/img")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--height", type=int, default=760)
    a = ap.parse_args()
    root = Path(a.runs_dir).resolve()
    if not root.is_dir() or not Path(CHROMIUM).exists():
        print(f"error: need a runs directory ({root}) and {CHROMIUM} (scripts/setup.sh installs it)", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    server = uvicorn.Server(uvicorn.Config(create_app(root), host="127.0.0.1", port=0, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": a.width, "height": a.height})
        for name, path in pages(root).items():
            page.goto(f"http://127.0.0.1:{port}{path}")
            png = out / f"view-{name}.png"
            page.screenshot(path=str(png))
            print(f"{png} ({png.stat().st_size // 1024} KB) <- {path}")
        browser.close()
    server.should_exit = True
    return 0


if __name__ == "__main__":
    sys.exit(main())
