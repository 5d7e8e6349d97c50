"""Learning bench (run by hand, not in CI): does a model learn in the gym? Expert demonstrations (the
SCRIPTED gold-patch demonstrator, never a model result) on the train split -> SFT of SmolLM2-135M-Instruct
-> GRPO from the SFT checkpoint (deepswe preset, partial reward) and the same GRPO with lr=0; then four
arms on held-out instances (split by source function), several seeded samples each: base, SFT,
SFT+GRPO, SFT+GRPO lr=0. Prints per arm the valid-action rate, submit rate, resolve rate (Wilson 95%
interval) and mean partial reward, and the GRPO reward curve per step. Every stage is recorded under
--out and skipped when done, so a rerun resumes.

    python bench/learning.py --datasets runs/learn/textkit/instances.jsonl \\
        runs/learn/cachetools/instances.jsonl runs/learn/six/instances.jsonl --out runs/bench-learning

Figures: docs/figures.md, "Learning bench"; the recipe: docs/training.md.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bugforge.records import append_jsonl, read_jsonl
from bugforge.training import GRPOTrainConfig, SFTTrainConfig
from bugforge.training.splits import split, write_splits

ARMS = ("base", "sft", "sft+grpo", "sft+grpo lr=0")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def agent_cfg(a, **kw) -> GRPOTrainConfig:
    """The episode limits, shared by GRPO's rollouts and the held-out evaluation."""
    return GRPOTrainConfig(
        agent_steps=a.agent_steps,
        turn_tokens=a.turn_tokens,
        max_completion_tokens=a.max_tokens,
        command_timeout=30,
        episode_seconds=600,
        seed=a.seed,
        **kw,
    )


def demonstrations(train: list[dict], a, out: Path) -> Path:
    """The expert's (SCRIPTED) text-format trajectories on --demos train instances (one-file bugs), graded."""
    from bugforge.agent import AgentConfig, ExpertPolicy
    from bugforge.agent.run import run_dataset
    from bugforge.sandbox import connect

    one_file = [r for r in train if len(r.get("files") or []) == 1]  # shorter episodes: cheaper SFT on CPU
    rows = random.Random(a.seed).sample(one_file, min(a.demos, len(one_file)))
    box = connect(None)
    try:
        trajs = run_dataset(
            rows,
            lambda r: ExpertPolicy(r, "text"),
            box,
            predictions=out / "demos" / "predictions.jsonl",
            trajectories=out / "demos" / "trajectories.jsonl",
            workers=2,
            config=AgentConfig(mode="text", max_steps=20),
        )
    finally:
        box.shutdown()
    done = read_jsonl(out / "demos" / "trajectories.jsonl")
    log(
        f"demonstrations (expert, scripted): {sum(bool((t.get('grade') or {}).get('resolved')) for t in done)}"
        f"/{len(done)} resolved ({len(trajs)} new)"
    )
    return out / "demos" / "trajectories.jsonl"


def sft(demos: Path, a, out: Path) -> Path:
    final = out / "sft" / "final"
    if (final / "config.json").exists():
        return final
    from bugforge.agent.model import load
    from bugforge.training.sft import examples_from, train_sft

    cfg = SFTTrainConfig(
        epochs=a.sft_epochs,
        learning_rate=a.sft_lr,
        max_length=a.sft_max_length,
        seed=a.seed,
        output_dir=str(out / "sft"),
    )
    (out / "sft" / "metrics.jsonl").unlink(missing_ok=True)
    tok, model = load(None)
    ex = examples_from(demos, tok, cfg)
    t = time.monotonic()
    losses = train_sft(ex, model, tok, cfg, log=log)
    n = max(1, len(ex))
    log(
        f"SFT: {len(ex)} demonstrations, {len(losses)} steps, {time.monotonic() - t:.0f} s; mean loss first epoch "
        f"{sum(losses[:n]) / n:.3f}, last epoch {sum(losses[-n:]) / n:.3f}"
    )
    return final


def grpo(train: list[dict], init: Path, lr: float, a, out: Path) -> tuple[Path, list[dict]]:
    d = out / f"grpo-lr{lr:g}"
    if not (d / "final" / "config.json").exists():
        from bugforge.training.grpo import train_grpo

        (d / "metrics.jsonl").unlink(missing_ok=True)
        for ck in d.glob("checkpoint-*"):
            import shutil

            shutil.rmtree(ck)
        tasks = random.Random(a.seed + 1).sample(train, min(len(train), a.grpo_steps))
        cfg = agent_cfg(
            a,
            preset="deepswe",
            reward="partial",
            num_generations=a.generations,
            tasks_per_step=1,
            max_steps=a.grpo_steps,
            learning_rate=lr,
            temperature=1.0,
            rollout_workers=2,
            save_steps=10_000,
            output_dir=str(d),
        )
        t = time.monotonic()
        train_grpo(tasks, str(init), cfg)
        log(f"GRPO lr={lr:g}: {a.grpo_steps} steps in {time.monotonic() - t:.0f} s")
    return d / "final", read_jsonl(d / "metrics.jsonl")


def weights_digest(model_dir: Path) -> str:
    from safetensors.torch import load_file

    h = hashlib.sha256()
    for f in sorted(Path(model_dir).glob("*.safetensors")):
        for k, v in sorted(load_file(str(f)).items()):
            h.update(k.encode())
            h.update(v.float().numpy().tobytes())
    return h.hexdigest()


class SeededGenerator:
    """Generation with the model, one call at a time. Each episode keeps its KV cache between turns (the
    context is re-read only where it is new: the observation and the next prompt), and the sampling seed
    of each call is fixed by the episode's seed and the turn, so every arm sees the same seeds on the
    same (instance, sample)."""

    def __init__(self, model, tok):
        self.model, self.tok, self.lock = model, tok, threading.Lock()

    def for_episode(self, seed: int):
        outer = self

        class _G:
            turn, cache, cached = 0, None, []

            def generate(self, ids, max_new, temperature):
                import torch
                from transformers import DynamicCache

                with outer.lock, torch.no_grad():
                    torch.manual_seed(seed * 1000 + self.turn)
                    self.turn += 1
                    if self.cache is None or ids[: len(self.cached)] != self.cached:
                        self.cache, self.cached = DynamicCache(), []
                    out = outer.model.generate(
                        torch.tensor([ids]),
                        past_key_values=self.cache,
                        max_new_tokens=max_new,
                        do_sample=temperature > 0,
                        temperature=temperature or None,
                        top_p=None,
                        top_k=None,
                        return_dict_in_generate=True,
                        output_logits=True,
                        pad_token_id=outer.tok.pad_token_id
                        if outer.tok.pad_token_id is not None
                        else outer.tok.eos_token_id,
                    )
                    new = out.sequences[0][len(ids) :].tolist()
                    self.cache = out.past_key_values
                    self.cached = out.sequences[0].tolist()[: self.cache.get_seq_length()]
                t = temperature or 1.0
                return new, [torch.log_softmax(x[0].float() / t, -1)[i].item() for x, i in zip(out.logits, new)]

        return _G()


def evaluate(arm: str, model_dir: Path | None, held: list[dict], a, out: Path) -> list[dict]:
    """Episodes of one arm on every (held-out instance, sample), appended to eval/<arm>.jsonl (resumable)."""
    from bugforge.agent.model import load
    from bugforge.sandbox import connect
    from bugforge.sandbox.grader import grade_patch
    from bugforge.training.rollout import reward_of, run_episode

    path = out / "eval" / f"{arm.replace(' ', '_').replace('=', '')}.jsonl"
    done = {(r["instance_id"], r["sample"]) for r in read_jsonl(path)}
    todo = [(i, r, s) for i, r in enumerate(held) for s in range(a.samples) if (r["instance_id"], s) not in done]
    if todo:
        tok, model = load(str(model_dir) if model_dir else None)
        model.eval()
        gen = SeededGenerator(model, tok)
        cfg = agent_cfg(a, temperature=a.eval_temperature)
        box, lock, t0 = connect(None), threading.Lock(), time.monotonic()

        def one(item):
            i, row, s = item
            session = box.create(image=row["image"])
            try:
                ep = run_episode(
                    row, gen.for_episode(a.seed * 100_003 + i * 101 + s), tok, session, cfg, max_format_errors=3
                )
            finally:
                session.close()
            grade = grade_patch(row, ep.patch) if ep.patch.strip() else None
            rec = {
                "arm": arm,
                "instance_id": row["instance_id"],
                "sample": s,
                "turns": ep.turns,
                "format_errors": ep.format_errors,
                "exit_reason": ep.exit_reason,
                "submitted": ep.exit_reason == "submitted",
                "resolved": bool(grade and grade.resolved),
                "reward": reward_of(grade, "partial"),
                "model_tokens": ep.model_tokens,
                "seconds": round(ep.seconds, 1),
                "transcript": tok.decode(ep.completion_ids)[:6000],
            }
            with lock:
                append_jsonl(path, rec)
                done.add((row["instance_id"], s))
                log(f"{arm}: {len(done)}/{len(held) * a.samples} episodes ({time.monotonic() - t0:.0f} s)")

        try:
            with ThreadPoolExecutor(max_workers=2) as pool:  # one generates while the other runs commands
                list(pool.map(one, todo))
        finally:
            box.shutdown()
    return read_jsonl(path)


def wilson(k: int, n: int) -> tuple[float, float]:
    from scipy.stats import binomtest

    if n == 0:
        return 0.0, 0.0
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def table(results: dict[str, list[dict]], curves: dict[float, list[dict]], a, shared: str) -> str:
    lines = [
        f"held-out: {a.heldout} instances x {a.samples} samples (seeds fixed per instance and sample), "
        f"{a.agent_steps} turns x {a.turn_tokens} tokens, eval temperature {a.eval_temperature}",
        "",
        "| arm | episodes | valid actions | submit rate | resolved | resolve rate (95% Wilson) | mean partial reward"
        " | how episodes ended |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for arm in ARMS:
        rows = results.get(arm, [])
        n = len(rows)
        turns = sum(r["turns"] for r in rows)
        valid = (turns - sum(r["format_errors"] for r in rows)) / turns if turns else 0.0
        sub = sum(r["submitted"] for r in rows)
        k = sum(r["resolved"] for r in rows)
        lo, hi = wilson(k, n)
        lines.append(
            f"| {arm} | {n} | {valid:.1%} ({turns} turns) | {sub / max(1, n):.1%} | {k} | "
            f"{k / max(1, n):.1%} [{lo:.1%}, {hi:.1%}] | {sum(r['reward'] for r in rows) / max(1, n):.3f} | "
            + ", ".join(f"{e} {c}" for e, c in collections.Counter(r["exit_reason"] for r in rows).most_common())
            + " |"
        )
    if shared:
        lines.append(f"\n{shared}")
    lines += ["", "GRPO reward per step (partial reward, train tasks, G episodes each):", ""]
    lines += [
        f"| step | reward lr={a.lr:g} | resolve | filtered | how episodes ended | reward lr=0 | resolve | filtered |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def cells(m: dict) -> str:
        if not m:
            return "not run | | "
        return f"{m.get('reward', 0):.3f} | {m.get('resolve_rate', 0):.2f} | {m.get('filtered_share', 0):.2f}"

    control = curves.get(0.0) or [{} for _ in curves.get(a.lr, [])]
    for x, y in zip(curves.get(a.lr, []), control):
        ends = ", ".join(f"{k} {v}" for k, v in sorted((x.get("exit_reasons") or {}).items()))
        lines.append(f"| {x['step']} | {cells(x)} | {ends} | {cells(y)} |")
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", required=True)
    ap.add_argument("--out", default="runs/bench-learning")
    ap.add_argument("--held-out-fraction", type=float, default=0.4)
    ap.add_argument("--heldout", type=int, default=30, help="held-out instances evaluated")
    ap.add_argument("--samples", type=int, default=2, help="seeded episodes per held-out instance and arm")
    ap.add_argument("--demos", type=int, default=40, help="train instances the expert demonstrates")
    ap.add_argument("--sft-epochs", type=int, default=2)
    ap.add_argument("--sft-lr", type=float, default=3e-5)
    ap.add_argument("--sft-max-length", type=int, default=2048, help="tokens per demonstration (memory, CPU time)")
    ap.add_argument("--grpo-steps", type=int, default=3)
    ap.add_argument("--generations", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--agent-steps", type=int, default=7)
    ap.add_argument("--turn-tokens", type=int, default=128)
    ap.add_argument("--max-tokens", type=int, default=4096)
    ap.add_argument("--eval-temperature", type=float, default=0.7)
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args()


def train_arms(train: list[dict], sft_dir, a: argparse.Namespace, out: Path) -> tuple[dict, dict, list[str]]:
    """GRPO at --lr, then the lr=0 control unless the first left SFT's weights as they were: (final model
    dir by lr, curve by lr, notes for the table)."""
    curves, finals, notes = {}, {}, []
    finals[a.lr], curves[a.lr] = grpo(train, sft_dir, a.lr, a, out)
    if weights_digest(finals[a.lr]) == weights_digest(sft_dir) and not (out / "grpo-lr0" / "final").exists():
        # No step changed the weights (every group filtered or of equal rewards): the lr=0 control would
        # sample from these same weights, so it is not run.
        notes.append(f"GRPO lr={a.lr:g} left the weights bit-identical to SFT's: the lr=0 control was not run.")
    else:
        finals[0.0], curves[0.0] = grpo(train, sft_dir, 0.0, a, out)
    return finals, curves, notes


def evaluate_arms(held: list[dict], sft_dir, finals: dict, a: argparse.Namespace, out: Path, notes: list[str]) -> dict:
    """Each arm's held-out episodes; an arm whose weights are bit-identical to an earlier arm's reuses
    that arm's episodes (said in `notes`)."""
    results: dict[str, list[dict]] = {}
    first: dict[str, str] = {}  # weights digest -> the arm evaluated with them
    for arm, model_dir in (
        ("base", None),
        ("sft", sft_dir),
        ("sft+grpo", finals[a.lr]),
        ("sft+grpo lr=0", finals.get(0.0, sft_dir)),  # (not run: lr=0 leaves SFT's weights as they are)
    ):
        digest = weights_digest(model_dir) if model_dir else "base"
        if digest in first:
            notes.append(
                f"{arm}: its weights are bit-identical to {first[digest]}'s, so its held-out episodes are those."
            )
            results[arm] = [{**r, "arm": arm} for r in results[first[digest]]]
        else:
            first[digest] = arm
            results[arm] = evaluate(arm, model_dir, held, a, out)
    return results


def main() -> int:
    a = parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "settings.json").write_text(json.dumps(vars(a), indent=1) + "\n")
    t0 = time.monotonic()
    rows = [r for d in a.datasets for r in read_jsonl(Path(d))]
    s = split(rows, a.held_out_fraction, a.seed, sources=a.datasets)
    write_splits(rows, s, out / "splits")
    by_id = {r["instance_id"]: r for r in rows}
    train = [by_id[i] for i in s.train]
    held = random.Random(a.seed).sample([by_id[i] for i in s.held_out], min(a.heldout, len(s.held_out)))
    log(f"split: {len(s.train)} train / {len(s.held_out)} held-out instances from {len(a.datasets)} datasets")
    demos = demonstrations(train, a, out)
    sft_dir = sft(demos, a, out)
    finals, curves, notes = train_arms(train, sft_dir, a, out)
    results = evaluate_arms(held, sft_dir, finals, a, out, notes)
    shared = "\n".join(notes)
    text = table(results, curves, a, shared)
    (out / "table.md").write_text(text + "\n")
    print(text)
    log(f"total {time.monotonic() - t0:.0f} s; table -> {out / 'table.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
