"""Sandbox backends side by side on one task instance (bench/sandbox.py --backends): `docker` (a container
per session; cold start, and from the warm pool), `process` (bubblewrap over the instance's tree
exported by `bugforge images rootfs`) and `podman` (the same Runtime and grader on rootless Podman's
Docker-compatible API: bugforge.podman): session start, the latency of a trivial command in the session's
persistent shell, and grading the gold patch (a fresh container vs the process backend's fresh copy of the tree; the same
grade_patch). Every figure is measured in this one run, on this machine."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from bugforge import engine
from bugforge.images.registry import dataset_path
from bugforge.images.rootfs import export_rootfs
from bugforge.records import read_jsonl
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


BACKENDS = ("docker", "process", "podman")


def measure(
    dataset: str, rootfs: str | None, *, n: int, k: int, backends=BACKENDS[:2]
) -> dict[str, dict[str, list[float]]]:
    """{backend: {"start cold", "start warm", "command", "grade": samples}} on the dataset's first row, for each of
    `backends` in turn. `rootfs`: the process backend's exported trees (default: exported now to a temporary folder,
    not timed). podman: the rootless Podman service (bugforge.podman), which must hold the dataset's images
    (`bugforge images save` / `images load --backend podman`); its sessions and grading run while it is selected."""
    row = read_jsonl(dataset_path(dataset))[0]
    iid, out = row["instance_id"], {}
    for backend in backends:
        if backend == "process":
            out[backend] = _process(dataset, rootfs, iid, n, k)
            continue
        with engine.using(backend):
            out[backend] = _containers(row, n, k)
    return out


def _containers(row: dict, n: int, k: int) -> dict[str, list[float]]:
    """The measurements on the selected container engine: cold starts, warm-pool starts, commands, gold grading."""
    iid, rt = row["instance_id"], Runtime(SandboxConfig(owner="bench", pool_size=0), {row["instance_id"]: row})
    try:
        got = {"start cold": starts(rt, iid, k)}
        rt.warm(row["image"], k)
        got["start warm"] = starts(rt, iid, k)
        got["command"] = commands(rt, iid, n)
        got["grade"] = grades(grade_patch, row, k)
        return got
    finally:
        rt.shutdown()


def _process(dataset: str, rootfs: str | None, iid: str, n: int, k: int) -> dict[str, list[float]]:
    folder = Path(rootfs or tempfile.mkdtemp(prefix="bench-rootfs-"))
    if rootfs is None:
        export_rootfs(dataset, folder, log=lambda m: None)
    prt = ProcessRuntime(SandboxConfig(owner="bench"), rootfs=folder)
    try:
        return {
            "start cold": starts(prt, iid, k),
            "command": commands(prt, iid, n),
            "grade": grades(prt.grade, prt.instances[iid], k),
        }
    finally:
        prt.shutdown()


def num(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def table(results: dict[str, dict[str, list[float]]], pct) -> str:
    """The side-by-side table (markdown), p50 and p99 of each measurement."""
    units = {"start cold": "ms", "start warm": "ms", "command": "ms", "grade": "s"}
    names = list(results)
    lines = ["| measurement | " + " | ".join(f"{b} p50 / p99" for b in names) + " |", "|---" * (len(names) + 1) + "|"]
    for what, unit in units.items():
        cells = []
        for backend in names:
            xs = results[backend].get(what)
            cells.append(f"{num(pct(xs, 50))} / {num(pct(xs, 99))} {unit}" if xs else "(no pool)")
        lines.append(f"| {what} | " + " | ".join(cells) + " |")
    p50 = {b: statistics.median(results[b]["command"]) for b in names}
    lines.append(f"\nload average at the end: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    lines.append(f"\nsamples: { ({k: len(v) for k, v in results[names[0]].items()}) } per backend")
    if "docker" in p50:
        ratios = ", ".join(f"{b}/docker {p50[b] / p50['docker']:.2f}x" for b in names if b != "docker")
        lines.append(f"command p50 {ratios}")
    return "\n".join(lines)
