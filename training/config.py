"""Training configuration: one documented dataclass per trainer, loaded from a JSON or TOML file whose
keys must all be known (a typo is an error before any compute is spent)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from bugforge.agent.config import STAGES, AgentConfig
from bugforge.errors import BugforgeError

PRESETS = {
    # DeepSWE (R2E-Gym, Qwen3-32B): DAPO-style token-level loss, no KL, clip-high 0.28, no std scaling
    # of advantages (DeepSWE also filters overlong/timeout episodes: bugforge's submit_at_limit = false).
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
    """Model turns per episode (beyond: the episode is truncated: see submit_at_limit)."""
    turn_tokens: int = 256
    """Tokens per model turn."""
    max_completion_tokens: int = 4096
    """Tokens in a whole episode (model and tool output); beyond: truncated (see submit_at_limit)."""
    episode_seconds: float = 900
    command_timeout: float = 30
    reward: str = "binary"
    """binary: 1 if resolved else 0; partial: fraction of FAIL_TO_PASS fixed, 0 if any PASS_TO_PASS breaks."""
    backend: str = "transformers"
    """transformers: the trainer's own model generates (CPU or GPU); vllm_colocate | vllm_server: TRL's vLLM."""
    vllm_server_base_url: str = ""
    rollout_workers: int = 4
    """Episodes run at once (sandbox starts and test runs overlap; with backend transformers their turns are
    generated together, one left-padded batch with a KV cache, training.generation)."""
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
    """rollout: TRL's rollout_func with bugforge's episode engine (```bash text actions, env_mask, truncated
    episodes graded: submit_at_limit); env: TRL's environment_factory with native tool calls (bash, str_replace_editor,
    submit) through training/toolenv.py — agent_steps caps the tool-calling turns, max_completion_tokens the
    episode; turn_tokens, episode_seconds and rollout_workers are not used (docs/trl-environment.md)."""
    observation_chars: int = AgentConfig.observation_chars
    """An observation longer than this is cut in the middle, as in `run-agent` (the same default)."""
    prompts: str = ""
    """A prompt file (TOML, every key of agent/prompts.toml); "": the bundled one, the same as `run-agent`'s."""
    submit_at_limit: bool = True
    """An episode that runs out of turns, tokens or time is graded on its diff as if it had submitted and
    keeps its loss; false: it is filtered (all-zero env_mask, DeepSWE's overlong filtering). Counted either way."""
    resample_equal_groups: int = 0
    """Dynamic sampling: times a group whose rewards are all equal is run again before it is skipped (left out
    of the loss and counted in `skipped_groups`); 0: skipped at once."""
    stage: str = "full"
    """Curriculum stage (training.curriculum): full, or localized-repair (harness rollout only: each episode
    starts after the scripted expert's localization turns, so the model's first move is the edit)."""
    tool_template: str = "auto"
    """harness env only: auto | own | qwen2.5 — the chat template that renders and parses tool calls (own:
    the model's; qwen2.5: TRL's Qwen2.5 template, for ChatML tokenizers such as SmolLM2's; auto: own when
    TRL can use it, else qwen2.5)."""

    def agent_config(self, **overrides) -> AgentConfig:
        """The engine's configuration for this trainer's episodes (the rollout's text format, no format-error
        limit in training), so rollouts use run-agent's observation wording and limits."""
        kw = dict(
            mode="text",
            max_steps=self.agent_steps,
            max_tokens=self.max_completion_tokens,
            max_seconds=self.episode_seconds,
            max_format_errors=0,
            command_timeout=self.command_timeout,
            observation_chars=self.observation_chars,
            prompts=self.prompts,
            stage=self.stage,
        )
        return AgentConfig(**{**kw, **overrides})


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
        except (OSError, ValueError) as e:  # unreadable, or not TOML/JSON (their decode errors are ValueErrors)
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
        _check_grpo(cfg)
    return cfg


def _check_grpo(cfg: GRPOTrainConfig) -> None:
    """Refuse a GRPO config naming an unknown preset, reward, backend, harness, template or stage."""
    if cfg.preset not in PRESETS:
        raise BugforgeError(f"unknown preset {cfg.preset!r}", f"use one of {', '.join(PRESETS)}")
    if cfg.reward not in ("binary", "partial"):
        raise BugforgeError(f"unknown reward {cfg.reward!r}", "use binary or partial")
    if cfg.backend not in ("transformers", "vllm_colocate", "vllm_server"):
        raise BugforgeError(f"unknown backend {cfg.backend!r}", "use transformers, vllm_colocate or vllm_server")
    if cfg.harness not in HARNESSES:
        raise BugforgeError(f"unknown harness {cfg.harness!r}", f"use one of {', '.join(HARNESSES)}")
    if cfg.tool_template not in TOOL_TEMPLATES:
        raise BugforgeError(f"unknown tool_template {cfg.tool_template!r}", f"use one of {', '.join(TOOL_TEMPLATES)}")
    if cfg.stage not in STAGES:
        raise BugforgeError(f"unknown curriculum stage {cfg.stage!r}", f"use one of {', '.join(STAGES)}")
    if cfg.stage != "full" and cfg.harness != "rollout":
        raise BugforgeError(f"stage {cfg.stage} needs harness rollout", 'set harness = "rollout"')
    cfg.agent_config().check()  # the prompt file
    if cfg.num_generations < 2:
        raise BugforgeError("num_generations must be at least 2 (GRPO compares episodes within a group)")
