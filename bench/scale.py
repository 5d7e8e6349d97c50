"""Ray's overhead, side by side: the same candidates validated by the plain run (threads, warm Workbenches)
and by the Ray run (actors on a one-machine cluster with the same cores and the same number of warm
Workbenches), in one run. Prints whether both label every candidate identically, their throughput, the
ratio (target: the Ray run costs <= 10% more wall time), and the per-node figures docs/scale.md projects
from: validations per second per node, bytes the driver writes per validation, the environment image's
size (what reaching a new node costs), and containers per node.

    python bench/scale.py runs/learn/cachetools --candidates 40 --workers 2

Figures: docs/figures.md, "Ray overhead".
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bugforge.engine import client
from bugforge.factory.generate import PROCEDURAL, procedural_candidates
from bugforge.factory.validate import validate_all
from bugforge.records import Validation, load_env
from bugforge.testing.testmap import TestMap


def run(env, testmap, cands, workers: int, mode: str, ray: str | None, out: Path) -> tuple[dict, float]:
    out.unlink(missing_ok=True)
    t0 = time.monotonic()
    done: dict[str, Validation] = validate_all(
        env, testmap, cands, {}, mode=mode, workers=workers, path=out, progress=lambda *a: None, phase="", ray=ray
    )
    return done, time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("env", help="an environment record (runs/NAME or its env.json)")
    ap.add_argument("--candidates", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2, help="warm Workbenches, in both runs")
    ap.add_argument("--mode", default="selected")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=2, help="plain then Ray, Ray then plain, ...")
    a = ap.parse_args()
    path = Path(a.env) / "env.json" if Path(a.env).is_dir() else Path(a.env)
    env = load_env(path)
    testmap = TestMap.load(Path(env.testmap))
    cands, _ = procedural_candidates(env, testmap, set(PROCEDURAL), a.candidates, a.seed)
    cores = len(os.sched_getaffinity(0))
    print(f"{env.name}: {len(cands)} candidates, {a.workers} warm workbenches, {cores} cores, mode {a.mode}")

    import ray
    from ray.cluster_utils import Cluster

    tmp = Path(tempfile.mkdtemp(prefix="bugforge-scale-"))
    t0 = time.monotonic()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": cores, "resources": {"docker": a.workers}, "object_store_memory": 2**27},
    )
    ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
    print(f"one-node cluster started in {time.monotonic() - t0:.1f} s (not counted)")
    walls = {"plain": 0.0, "ray": 0.0}
    same = True
    try:
        for r in range(a.rounds):  # alternate which goes first: the machine is shared and warms up
            order = ["plain", "ray"] if r % 2 == 0 else ["ray", "plain"]
            got = {}
            for name in order:
                address = cluster.address if name == "ray" else None
                got[name], wall = run(env, testmap, cands, a.workers, a.mode, address, tmp / f"{name}.jsonl")
                walls[name] += wall
                print(f"round {r + 1} {name:5}: {wall:6.1f} s, {len(cands) / wall:.2f} validations/s")
            for k, v in got["plain"].items():
                w = got["ray"].get(k)
                if w is None or (v.status, v.FAIL_TO_PASS) != (w.status, w.FAIL_TO_PASS):
                    same = False
                    print(f"  differs: {k} plain {v.status} {v.messages} / ray {w and w.status} {w and w.messages}")
        n = len(cands) * a.rounds
        rate = n / walls["ray"]
        print(f"labels identical: {same}")
        print(f"overhead: ray / plain wall time = {walls['ray'] / walls['plain']:.3f} (target <= 1.10)")
        size = client().images.get(env.image).attrs["Size"]
        per = (tmp / "ray.jsonl").stat().st_size / len(cands)
        print("per node (this machine as one node):")
        print(f"  validations/s: {rate:.2f} ({rate / cores:.2f} per core)")
        print(f"  driver writes: {per:.0f} bytes per validation ({per * rate / 1e3:.1f} KB/s)")
        print(f"  environment image: {size / 1e6:.0f} MB ({env.image})")
        print(f"  containers held: {a.workers} warm workbenches")
        return 0 if same else 1
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
