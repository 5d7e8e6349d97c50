"""SWE-bench's harness over task images that stop at once (StopSignal SIGKILL, as bugforge exports them)
against the same images stopping by SIGTERM (what layer-exported images did before): the harness ends
each container with `docker stop --time=15`, and its `tail -f` main process ignores SIGTERM. Side by side,
one run; the gold patches must resolve under both.

    python bench/harness_stop.py --dataset runs/textkit/instances.jsonl --n 8
"""

from __future__ import annotations

import argparse
import io
import time
import uuid

from bugforge.engine import client
from bugforge.records import read_jsonl
from bugforge.sandbox.harness import harness_verdicts

RUN = uuid.uuid4().hex[:8]  # this run's tags: a concurrent run removes only its own


def retag(image: str, signal: str) -> str:
    """`image` with its stop signal set to `signal`, under a tag of this bench's own."""
    tag = f"bugforge/bench-stop:{signal.lower()}-{RUN}-{image.split(':')[-1]}"
    client().images.build(fileobj=io.BytesIO(f"FROM {image}\nSTOPSIGNAL {signal}\n".encode()), tag=tag, rm=True)
    return tag


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="runs/textkit/instances.jsonl")
    ap.add_argument("--n", type=int, default=8, help="rows graded under each signal")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    rows = read_jsonl(a.dataset)[: a.n]
    times, made = {}, []
    try:
        for signal in ("SIGTERM", "SIGKILL"):
            copies = [{**r, "image": retag(r["image"], signal)} for r in rows]
            made += [r["image"] for r in copies]
            t0 = time.monotonic()
            verdicts = harness_verdicts(copies, {r["instance_id"]: r["patch"] for r in copies}, workers=a.workers)
            secs = time.monotonic() - t0
            assert set(verdicts.values()) == {"RESOLVED"}, (signal, verdicts)
            times[signal] = secs
            print(f"{signal}: {len(rows)} gold patches resolved in {secs:.1f} s ({secs / len(rows):.2f} s each)")
    finally:
        for tag in made:
            client().images.remove(tag, force=True)
    print(f"SIGTERM / SIGKILL: {times['SIGTERM'] / times['SIGKILL']:.1f}x ({a.workers} workers)")


if __name__ == "__main__":
    main()
