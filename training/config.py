"""Training configuration: one documented dataclass per trainer, loaded from a JSON or TOML file whose
keys must all be known (a typo is an error before any compute is spent)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from bugforge.errors import BugforgeError

PRESETS = {
    # DeepSWE (R2E-Gym, Qwen3-32B): DAPO-style token-level loss, no KL, clip-high 0.28, no std scaling
    # of advantages, overlong/timeout episodes filtered from the loss.
    "deepswe": {"loss_type": "dapo", "beta": 0.0, "epsilon": 0.2, "epsilon_high": 0.28, "scale_rewards": "none"},
    # plain GRPO (DeepSeekMath): sequence-mean loss, KL to the reference, symmetric clipping, std scaling.
    "grpo": {"loss_type": "grpo", "beta": 0.04, "epsilon": 0.2, "epsilon_high": 0.2, "scale_rewards": "group"},
}
HARNESSES = ("rollout", "env")
TOOL_TEMPLATES = ("auto", "own", "qwen2.5")


@dataclass
class GRPOTrainConfig:
    preset: str = "deepswe"
    """deepswe | grpo: the loss, KL, clipping and advantage scaling (see PRESETS)."""
    num_generations: int = 4
    """G: episodes per task in a group."""
    tasks_per_step: int = 1
    """Tasks (groups) per optimizer step."""
    max_steps: int = 50
    """Optimizer steps."""
    learning_rate: float = 1e-6
    temperature: float = 1.0
    agent_steps: int = 8
    """Model turns per episode (beyond: the episode is overlong and filtered from the loss)."""
    turn_tokens: int = 256
    """Tokens per model turn."""
    max_completion_tokens: int = 4096
    """Tokens in a whole episode (model and tool output); beyond: overlong, filtered."""
    episode_seconds: float = 900
    command_timeout: float = 30
    reward: str = "binary"
    """binary: 1 if resolved else 0; partial: fraction of FAIL_TO_PASS fixed, 0 if any PASS_TO_PASS breaks."""
    backend: str = "transformers"
    """transformers: the trainer's own model generates (CPU or GPU); vllm_colocate | vllm_server: TRL's vLLM."""
    vllm_server_base_url: str = ""
    rollout_workers: int = 4
    """Episodes run at once (sandbox starts and test runs overlap; generation is serialised per model)."""
    ray: str = ""
    """A Ray cluster address (`auto`, HOST:PORT; docs/scale.md): the episodes' sandbox sessions and their grading
    run on `ray_workers` actors on nodes with a Docker engine; empty: on this machine's engine, no Ray."""
    ray_workers: int = 4
    """Sandbox actors on the Ray cluster (each one unit of the `docker` resource, any number of sessions)."""
    save_steps: int = 10
    seed: int = 0
    output_dir: str = "runs/train/grpo"
    gradient_checkpointing: bool = False
    harness: str = "rollout"
    """rollout: TRL's rollout_func with bugforge's own episode loop (```bash text actions, env_mask, overlong
    episodes filtered); env: TRL's environment_factory with native tool calls (bash, str_replace_editor,
    submit) through training/toolenv.py — agent_steps caps the tool-calling turns, max_completion_tokens the
    episode; turn_tokens, episode_seconds and rollout_workers are not used (docs/trl-environment.md)."""
    tool_template: str = "auto"
    """harness env only: auto | own | qwen2.5 — the chat template that renders and parses tool calls (own:
    the model's; qwen2.5: TRL's Qwen2.5 template, for ChatML tokenizers such as SmolLM2's; auto: own when
    TRL can use it, else qwen2.5)."""


@dataclass
class SFTTrainConfig:
    epochs: int = 2
    learning_rate: float = 1e-5
    max_length: int = 4096
    batch_size: int = 1
    seed: int = 0
    output_dir: str = "runs/train/sft"
    only_resolved: bool = True
    """Train on trajectories whose patch resolved the task (rejection sampling)."""


def load_config(cls, path: str | None, overrides: dict | None = None):
    data: dict = {}
    if path:
        p = Path(path)
        if not p.exists():
            raise BugforgeError(f"config file {path} does not exist", "pass an existing .json or .toml file")
        try:
            if p.suffix == ".toml":
                import tomllib

                data = tomllib.loads(p.read_text())
            else:
                data = json.loads(p.read_text())
        except Exception as e:
            raise BugforgeError(f"config file {path} cannot be read: {e}", "fix its syntax") from None
    data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise BugforgeError(
            f"unknown config key(s) {', '.join(unknown)} in {path or 'options'}",
            f"known keys: {', '.join(sorted(known))}",
        )
    cfg = cls(**data)
    if isinstance(cfg, GRPOTrainConfig):
        if cfg.preset not in PRESETS:
            raise BugforgeError(f"unknown preset {cfg.preset!r}", f"use one of {', '.join(PRESETS)}")
        if cfg.reward not in ("binary", "partial"):
            raise BugforgeError(f"unknown reward {cfg.reward!r}", "use binary or partial")
        if cfg.backend not in ("transformers", "vllm_colocate", "vllm_server"):
            raise BugforgeError(f"unknown backend {cfg.backend!r}", "use transformers, vllm_colocate or vllm_server")
        if cfg.harness not in HARNESSES:
            raise BugforgeError(f"unknown harness {cfg.harness!r}", f"use one of {', '.join(HARNESSES)}")
        if cfg.tool_template not in TOOL_TEMPLATES:
            raise BugforgeError(
                f"unknown tool_template {cfg.tool_template!r}", f"use one of {', '.join(TOOL_TEMPLATES)}"
            )
        if cfg.num_generations < 2:
            raise BugforgeError("num_generations must be at least 2 (GRPO compares episodes within a group)")
    return cfg
