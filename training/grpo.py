"""GRPO on SWE tasks through TRL's GRPOTrainer. Harness `rollout` (default): a `rollout_func` where each
row of a batch is one episode of the agent in its own sandbox session (G rows per task, in input order).
Harness `env`: TRL's `environment_factory` with native tool calls over the same sessions
(training/toolenv.py). Either way the reward is the grading of the episode's patch in a fresh container —
the same grading as the factory and evaluation. Metrics per step go to metrics.jsonl (and a PNG of the
curves); checkpoints every `save_steps`."""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bugforge.errors import BugforgeError
from bugforge.training.config import PRESETS, GRPOTrainConfig
from bugforge.training.rollout import (
    BatchedGenerator,
    Episode,
    VLLMGenerator,
    group_signal,
    prompt_messages,
    reward_of,
    run_episode,
)


def _key(prompt: list[dict]) -> str:
    return json.dumps(prompt, sort_keys=True)


class SWERollout:
    """TRL's rollout_func: prompts (one per row, G consecutive rows per task) -> episodes, in order. Each
    episode runs on the agent's engine (training.rollout.run_episode); then infrastructure failures get a
    None reward (out of their group's statistics), and groups with no signal are run again
    (`resample_equal_groups`) or skipped (training.rollout.group_signal). `generator` replaces the model's
    (a scripted one in tests)."""

    def __init__(self, instances: list[dict], tok, cfg: GRPOTrainConfig, sandbox, generator=None):
        self.by_prompt = {_key(prompt_messages(r, cfg)): r for r in instances}
        self.tok, self.cfg, self.sandbox, self.gen = tok, cfg, sandbox, generator
        self.last: dict = {}
        self.episodes: list[Episode] = []
        self.lock = threading.Lock()

    def generator(self, trainer):
        if self.gen is not None:
            return self.gen
        if self.cfg.backend == "transformers":
            return BatchedGenerator(trainer.model, self.tok, max_batch=self.cfg.rollout_workers)
        return VLLMGenerator(trainer)

    def _one(self, prompt, gen) -> Episode:
        from bugforge.sandbox.grader import grade_patch

        inst = self.by_prompt[_key(prompt)]
        try:
            session = self.sandbox.create(image=inst["image"])
        except BugforgeError as e:  # (a lost Ray node): the episode ends at its first command, sandbox_error
            session = _Failed(e)
        try:
            ep = run_episode(inst, gen, self.tok, session, self.cfg)
        finally:
            session.close()
        grade = None
        if ep.patch.strip() and not ep.infra:
            try:  # on the sandbox's nodes when it grades (RaySandbox), else on this machine's engine
                grade = getattr(self.sandbox, "grade", grade_patch)(inst, ep.patch)
            except BugforgeError as e:  # infrastructure: no reward signal, no loss
                ep.error, ep.infra, ep.filtered = f"grading: {e.what}", True, True
                ep.env_mask = [0] * len(ep.env_mask)
        ep.reward = reward_of(grade, self.cfg.reward)
        ep.resolved = bool(grade and grade.resolved)
        return ep

    def __call__(self, prompts: list, trainer) -> dict:
        t0 = time.monotonic()
        gen = self.generator(trainer)
        g = self.cfg.num_generations
        with ThreadPoolExecutor(max_workers=self.cfg.rollout_workers) as pool:
            eps = list(pool.map(lambda p: self._one(p, gen), prompts))  # map keeps input order
            resampled = 0
            for _ in range(self.cfg.resample_equal_groups):
                flat = [i for i in range(0, len(eps), g) if _no_signal(eps[i : i + g])]
                if not flat:
                    break
                resampled += len(flat)
                rows = [j for i in flat for j in range(i, min(i + g, len(eps)))]
                for j, ep in zip(rows, pool.map(lambda j: self._one(prompts[j], gen), rows)):
                    eps[j] = ep
        signal = group_signal(eps, g)
        with self.lock:
            self.episodes = eps
            self.last = {
                "rollout_seconds": round(time.monotonic() - t0, 3),
                "resolve_rate": sum(e.resolved for e in eps) / len(eps),
                "filtered_share": sum(e.filtered for e in eps) / len(eps),
                "model_tokens": sum(e.model_tokens for e in eps),
                "tokens": sum(len(e.completion_ids) for e in eps),
                "exit_reasons": {r: sum(e.exit_reason == r for e in eps) for r in {e.exit_reason for e in eps}},
                **signal,
                "resampled_groups": resampled,
                "stage": self.cfg.stage,
                **({"generation_batches": _mean(gen.batches)} if getattr(gen, "batches", None) else {}),
            }
        return {
            "prompt_ids": [e.prompt_ids for e in eps],
            "completion_ids": [e.completion_ids for e in eps],
            "logprobs": [e.logprobs for e in eps],
            "env_mask": [e.env_mask for e in eps],
            "episode_reward": [None if e.infra else e.reward for e in eps],
            "resolved": [e.resolved for e in eps],
        }


def _no_signal(group: list[Episode]) -> bool:
    scored = [e.reward for e in group if not e.infra]
    return len(scored) < 2 or len(set(scored)) == 1


def _mean(xs: list[int]) -> float:
    return round(sum(xs) / len(xs), 3)


class _Failed:
    """A session that could not be made: each call raises why."""

    def __init__(self, error: BugforgeError):
        self.error = error

    def run(self, *a, **kw):
        raise self.error

    diff = run

    def close(self) -> None:
        pass


def test_pass_reward(prompts, completions, episode_reward, **kwargs) -> list[float | None]:
    """The reward is the grading, computed in the rollout (it needs the sandbox, not the text). None for an
    infrastructure failure: TRL then leaves the episode out of its group's mean and std (advantage 0)."""
    return [None if r is None else float(r) for r in episode_reward]


def build_trainer(instances: list[dict], model, tok, cfg: GRPOTrainConfig, sandbox, *, resume: bool = False):
    """(trainer, driver): the driver is the SWERollout (harness rollout) or the ToolEnvFactory (harness env);
    its `last` summary goes into metrics.jsonl each step."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    on_gpu = torch.cuda.is_available()
    args = GRPOConfig(
        output_dir=str(out),
        max_steps=cfg.max_steps,
        learning_rate=cfg.learning_rate,
        seed=cfg.seed,
        num_generations=cfg.num_generations,
        per_device_train_batch_size=cfg.num_generations * cfg.tasks_per_step,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_iterations=1,
        max_completion_length=cfg.max_completion_tokens,
        temperature=cfg.temperature,
        logging_steps=1,
        save_steps=cfg.save_steps,
        save_strategy="steps",
        report_to="none",
        use_cpu=not on_gpu,
        bf16=on_gpu,
        **({"gradient_checkpointing": True} if cfg.gradient_checkpointing else {}),
        use_vllm=cfg.backend != "transformers",
        vllm_mode="server" if cfg.backend == "vllm_server" else "colocate",
        **({"vllm_server_base_url": cfg.vllm_server_base_url} if cfg.vllm_server_base_url else {}),
        **({"max_tool_calling_iterations": cfg.agent_steps} if cfg.harness == "env" else {}),
        **PRESETS[cfg.preset],
    )
    if cfg.harness == "env":
        from bugforge.training.toolenv import ToolEnvFactory, prepare_tokenizer, task_dataset

        tok = prepare_tokenizer(tok, model, cfg.tool_template)
        driver = ToolEnvFactory(instances, sandbox, reward=cfg.reward, command_timeout=cfg.command_timeout)
        dataset = task_dataset(instances)
        # the environment owns the reward (get_reward): TRL adds it as the reward source, named after its class
        how = {"environment_factory": driver, "reward_funcs": None}
    else:
        driver = SWERollout(instances, tok, cfg, sandbox)
        rows = [{"prompt": prompt_messages(r, cfg), "instance_id": r["instance_id"]} for r in instances]
        dataset = Dataset.from_list(rows)
        how = {"rollout_func": driver, "reward_funcs": [test_pass_reward]}
    metrics_path = out / "metrics.jsonl"

    class Metrics(TrainerCallback):
        step_start = 0.0

        def on_step_begin(self, args, state, control, **kw):
            self.step_start = time.monotonic()
            if hasattr(driver, "begin_step"):
                driver.begin_step()

        def on_log(self, args, state, control, logs=None, **kw):
            if not logs or "loss" not in logs and "reward" not in logs:
                return
            row = {
                "step": state.global_step,
                **{k: v for k, v in logs.items() if isinstance(v, (int, float))},
                **driver.last,
            }
            if self.step_start:
                row["update_seconds"] = round(
                    time.monotonic() - self.step_start - driver.last.get("rollout_seconds", 0), 3
                )
            with open(metrics_path, "a") as f:
                f.write(json.dumps(row) + "\n")

    try:
        trainer = GRPOTrainer(
            model=model, processing_class=tok, args=args, train_dataset=dataset, callbacks=[Metrics()], **how
        )
    except BaseException:
        if hasattr(driver, "close"):
            driver.close()
        raise
    return trainer, driver


def plot(metrics_path: Path, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(l) for l in Path(metrics_path).read_text().splitlines() if l.strip()]
    if not rows:
        return
    keys = [k for k in ("reward", "reward_std", "resolve_rate", "filtered_share", "loss") if any(k in r for r in rows)]
    fig, axes = plt.subplots(len(keys), 1, figsize=(6, 2 * len(keys)), sharex=True)
    for ax, k in zip(axes if len(keys) > 1 else [axes], keys):
        xs = [r["step"] for r in rows if k in r]
        ax.plot(xs, [r[k] for r in rows if k in r], marker="o")
        ax.set_ylabel(k)
    plt.xlabel("step")
    plt.tight_layout()
    plt.savefig(png)
    plt.close(fig)


def train_grpo(
    instances: list[dict],
    model_dir: str | None,
    cfg: GRPOTrainConfig,
    *,
    resume: bool = False,
    sandbox=None,
    model=None,
    tok=None,
):
    from bugforge.agent.model import load
    from bugforge.sandbox import connect

    if sandbox is None and cfg.ray:  # before compute: the images are checked on every actor's node
        images = sorted({r["image"] for r in instances})
        box = connect(ray=cfg.ray, workers=cfg.ray_workers, images=images)
    else:
        box = sandbox or connect(None)
    try:
        if model is None:
            tok, model = load(model_dir)
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        trainer, rollout = build_trainer(instances, model, tok, cfg, box, resume=resume)
        try:
            ckpts = sorted(Path(cfg.output_dir).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
            if resume and not ckpts:
                raise BugforgeError(f"no checkpoint in {cfg.output_dir} to resume from", "drop --resume to start fresh")
            trainer.train(resume_from_checkpoint=str(ckpts[-1]) if resume else None)
        finally:
            if hasattr(rollout, "close"):
                rollout.close()  # the tool environments' sessions (harness env)
    finally:
        if sandbox is None and hasattr(box, "shutdown"):
            box.shutdown()
    trainer.save_model(str(Path(cfg.output_dir) / "final"))
    if (Path(cfg.output_dir) / "metrics.jsonl").exists():
        plot(Path(cfg.output_dir) / "metrics.jsonl", Path(cfg.output_dir) / "metrics.png")
    return trainer, rollout
