"""Sandbox backends side by side on one task instance (bench/sandbox.py --backends): `docker` (a container
per session; cold start, and from the warm pool) and `process` (bubblewrap over the instance's tree
exported by `bugforge images rootfs`): session start, the latency of a trivial command in the session's
persistent shell, and grading the gold patch (Docker's fresh container vs the process backend's fresh
copy of the tree; the same grade_patch). Every figure is measured in this one run, on this machine."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from bugforge.images.rootfs import export_rootfs
from bugforge.sandbox.grader import grade_patch
from bugforge.sandbox.process import ProcessRuntime
from bugforge.sandbox.runtime import Runtime, SandboxConfig


def ms(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def starts(rt, iid: str, k: int) -> list[float]:
    """Milliseconds to create (and then close, not timed) k sessions of instance `iid`."""
    out = []
    for _ in range(k):
        t = time.perf_counter()
        s = rt.create(instance_id=iid)
        out.append((time.perf_counter() - t) * 1000)
        rt.close(s.id)
    return out


def commands(rt, iid: str, n: int) -> list[float]:
    """Milliseconds per `true` in one session's shell (5 warm-up runs first)."""
    s = rt.create(instance_id=iid)
    try:
        for _ in range(5):
            s.run("true")
        return [ms(lambda: s.run("true")) for _ in range(n)]
    finally:
        rt.close(s.id)


def grades(grade, row: dict, k: int) -> list[float]:
    """Seconds per grading of the gold patch (each must resolve)."""
    out = []
    for _ in range(k):
        t = time.perf_counter()
        g = grade(row, row["patch"])
        assert g.resolved, (g.status, g.log[-500:])
        out.append(time.perf_counter() - t)
    return out


def measure(dataset: str, rootfs: str | None, *, n: int, k: int) -> dict[str, dict[str, list[float]]]:
    """{backend: {"start cold", "start warm", "command", "grade": samples}} on the dataset's first row;
    `rootfs`: its exported trees (default: exported now to a temporary folder, not timed)."""
    folder = Path(rootfs or tempfile.mkdtemp(prefix="bench-rootfs-"))
    if rootfs is None:
        export_rootfs(dataset, folder, log=lambda m: None)
    prt = ProcessRuntime(SandboxConfig(owner="bench"), rootfs=folder)
    row = next(iter(prt.instances.values()))
    iid = row["instance_id"]
    drt = Runtime(SandboxConfig(owner="bench", pool_size=0), {iid: row})
    out: dict[str, dict[str, list[float]]] = {"docker": {}, "process": {}}
    try:
        out["docker"]["start cold"] = starts(drt, iid, k)
        drt.warm(row["image"], k)
        out["docker"]["start warm"] = starts(drt, iid, k)
        out["docker"]["command"] = commands(drt, iid, n)
        out["docker"]["grade"] = grades(grade_patch, row, k)
        out["process"]["start cold"] = starts(prt, iid, k)
        out["process"]["command"] = commands(prt, iid, n)
        out["process"]["grade"] = grades(prt.grade, row, k)
    finally:
        drt.shutdown()
        prt.shutdown()
    return out


def num(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def table(results: dict[str, dict[str, list[float]]], pct) -> str:
    """The side-by-side table (markdown), p50 and p99 of each measurement."""
    units = {"start cold": "ms", "start warm": "ms", "command": "ms", "grade": "s"}
    lines = ["| measurement | docker p50 / p99 | process p50 / p99 |", "|---|---|---|"]
    for what, unit in units.items():
        cells = []
        for backend in ("docker", "process"):
            xs = results[backend].get(what)
            cells.append(f"{num(pct(xs, 50))} / {num(pct(xs, 99))} {unit}" if xs else "(no pool)")
        lines.append(f"| {what} | {cells[0]} | {cells[1]} |")
    p50 = {b: statistics.median(results[b]["command"]) for b in results}
    lines.append(f"\nload average at the end: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    lines.append(
        f"\nsamples: { ({k: len(v) for k, v in results['docker'].items()}) } per backend; "
        f"command p50 process/docker: {p50['process'] / p50['docker']:.2f}x"
    )
    return "\n".join(lines)
