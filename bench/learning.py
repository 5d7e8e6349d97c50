"""CPU learning check (not a timed test): GRPO on SmolLM2-135M-Instruct over an easy curriculum of
factory tasks (single-line bugs), against the same run with learning rate 0 and the same seeds. Prints
both reward curves (mean reward, resolve rate, filtered share per step) and their difference.

    python bench/learning.py --dataset runs/textkit/instances.jsonl --tasks 3 --steps 3 --generations 2

Figures: docs/figures.md, "Learning check".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bugforge.records import read_jsonl  # noqa: E402
from bugforge.training import GRPOTrainConfig  # noqa: E402
from bugforge.training.grpo import train_grpo  # noqa: E402

EASY = ("op_change", "op_change_const", "flip_operators", "change_return", "remove_assign", "off_by_one")


def curriculum(rows: list[dict], n: int) -> list[dict]:
    easy = [
        r
        for r in rows
        if r.get("difficulty") == "easy" and r.get("strategy") in EASY and len(json.loads(r["FAIL_TO_PASS"])) <= 3
    ]
    easy.sort(key=lambda r: (len(r["problem_statement"]), r["instance_id"]))
    return easy[:n]


def run(rows, lr: float, a, out: Path) -> list[dict]:
    cfg = GRPOTrainConfig(
        num_generations=a.generations,
        tasks_per_step=1,
        max_steps=a.steps,
        learning_rate=lr,
        agent_steps=a.agent_steps,
        turn_tokens=a.turn_tokens,
        max_completion_tokens=a.max_tokens,
        save_steps=10_000,
        rollout_workers=a.generations,
        seed=a.seed,
        temperature=1.0,
        output_dir=str(out),
    )
    if (out / "metrics.jsonl").exists():
        (out / "metrics.jsonl").unlink()
    train_grpo(rows, None, cfg)
    return [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines()]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="runs/textkit/instances.jsonl")
    ap.add_argument("--tasks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--generations", type=int, default=4)
    ap.add_argument("--agent-steps", type=int, default=3)
    ap.add_argument("--turn-tokens", type=int, default=128)
    ap.add_argument("--max-tokens", type=int, default=2048)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/bench-learning")
    a = ap.parse_args()
    rows = curriculum(read_jsonl(Path(a.dataset)), a.tasks)
    if not rows:
        print("no easy instances in the dataset; run `make demo` first")
        return 1
    print(f"curriculum: {len(rows)} easy tasks ({', '.join(r['instance_id'] for r in rows)})")
    curves = {lr: run(rows, lr, a, Path(a.out) / f"lr{lr:g}") for lr in (a.lr, 0.0)}
    print(
        f"\nGRPO (deepswe preset) on SmolLM2-135M-Instruct, CPU; G={a.generations}, {a.steps} steps, "
        f"{a.agent_steps} turns x {a.turn_tokens} tokens, seed {a.seed}"
    )
    print(
        f"{'step':>4} | {'reward lr=' + format(a.lr, 'g'):>16} {'reward lr=0':>12} {'diff':>7} | "
        f"{'resolved':>9} {'resolved0':>9} | {'filtered':>8} {'filtered0':>9}"
    )
    for x, y in zip(curves[a.lr], curves[0.0]):
        print(
            f"{x['step']:>4} | {x.get('reward', 0):>16.3f} {y.get('reward', 0):>12.3f} "
            f"{x.get('reward', 0) - y.get('reward', 0):>+7.3f} | {x.get('resolve_rate', 0):>9.2f} "
            f"{y.get('resolve_rate', 0):>9.2f} | {x.get('filtered_share', 0):>8.2f} {y.get('filtered_share', 0):>9.2f}"
        )
    mean = lambda c: sum(r.get("reward", 0) for r in c) / max(1, len(c))  # noqa: E731
    print(
        f"mean reward: lr={a.lr:g} {mean(curves[a.lr]):.3f}, lr=0 {mean(curves[0.0]):.3f}, "
        f"difference {mean(curves[a.lr]) - mean(curves[0.0]):+.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
