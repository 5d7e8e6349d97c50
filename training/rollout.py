"""Multi-turn rollouts for RL, token in / token out, on the agent's own episode engine
(`bugforge.agent.engine.run_episode`: the same prompts, parsing, observations and limits as `run-agent`).
`TokenPolicy` is the engine's policy here: it keeps the conversation as token ids; the model's own tokens
get env_mask 1 and their logprobs, observation tokens (and template glue) env_mask 0.

How an episode counts (GRPOTrainConfig):
- one that ran out of turns, tokens or time is *truncated*: with `submit_at_limit` (the default) its diff is
  graded like a submission and its tokens keep their loss; without, it is filtered (all-zero env_mask,
  DeepSWE's overlong filtering). Either way it is counted.
- one whose sandbox (or grading) failed is an *infrastructure failure*: no loss, and its reward is None, so
  TRL leaves it out of its group's mean and std (training.grpo).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from bugforge.agent.config import load_prompts
from bugforge.agent.engine import INFRA_EXITS, LIMIT_EXITS, LimitReached, is_format_error
from bugforge.agent.engine import run_episode as run_engine
from bugforge.records import Turn
from bugforge.training.config import GRPOTrainConfig
from bugforge.training.generation import (  # noqa: F401  (import path of the generators)
    BatchedGenerator,
    TransformersGenerator,
    VLLMGenerator,
    generate_batch,
)


@dataclass
class Episode:
    instance_id: str
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    exit_reason: str = ""
    patch: str = ""
    reward: float = 0.0
    resolved: bool = False
    filtered: bool = False
    """No loss on any of its tokens (all-zero env_mask): an infrastructure failure, a truncated episode
    without submit_at_limit, or a member of a skipped group."""
    truncated: bool = False
    """It ran out of turns, tokens or time (max_steps, max_tokens, max_seconds)."""
    infra: bool = False
    """The sandbox or grading failed: its reward is left out of the group's statistics."""
    skipped: bool = False
    """Its group's rewards were all equal (no signal): dynamic sampling left it out of the loss."""
    model_tokens: int = 0
    env_segments: list[tuple[int, int]] = field(default_factory=list)
    """(start, end) of each tool-output segment in completion_ids."""
    seconds: float = 0.0
    turns: int = 0
    """Model turns; `format_errors` of them were not a valid action."""
    format_errors: int = 0
    error: str = ""
    """Why the sandbox failed (exit_reason sandbox_error), or grading did."""
    observations: list[str] = field(default_factory=list)
    """The observations the model was shown, in order (what the engine sent back)."""


def prompt_messages(instance: dict, cfg: GRPOTrainConfig | None = None) -> list[dict]:
    """The episode's opening messages (the rollout's action format, text)."""
    return load_prompts(cfg.prompts if cfg else "").messages(instance, "text")


def _ids(x) -> list[int]:
    if hasattr(x, "input_ids"):
        x = x["input_ids"]
    return list(x)


def continuation_text(tok, history: list[dict], new: list[dict], ended_with_eos: bool) -> str:
    """The text between the end of the model's reply (the last message of `history`) and the start of its
    next turn: the end of the assistant message (unless the model emitted it), the `new` messages (the
    observations) and the next generation prompt — derived from the chat template itself."""
    reply = history[-1]["content"]
    r1 = tok.apply_chat_template(history, tokenize=False)
    r2 = tok.apply_chat_template(history + new, tokenize=False, add_generation_prompt=True)
    end = r1.rindex(reply) + len(reply) if reply else len(r1.rstrip())
    tail = r1[end:]
    if ended_with_eos and tok.eos_token and tail.startswith(tok.eos_token):
        tail = tail[len(tok.eos_token) :]
    assert r2.startswith(r1), "the chat template is not prefix-stable"
    return tail + r2[len(r1) :]


class TokenPolicy:
    """The engine's policy in training: generates with `gen` and keeps the episode as token ids (prompt,
    then the model's tokens and the glue the template puts around each observation), within the whole
    episode's `max_completion_tokens` (beyond: LimitReached("max_tokens")) and `turn_tokens` a turn."""

    model = "trainer"

    def __init__(self, gen, tok, cfg: GRPOTrainConfig):
        self.gen, self.tok, self.cfg = gen, tok, cfg
        self.prompt_ids: list[int] | None = None
        self.completion_ids: list[int] = []
        self.env_mask: list[int] = []
        self.logprobs: list[float] = []
        self.env_segments: list[tuple[int, int]] = []
        self.model_tokens = 0
        self._seen = 0  # messages already in the token ids
        self._ended = False

    def complete(self, messages: list[dict], tools: list[dict] | None = None) -> Turn:
        tok = self.tok
        if self.prompt_ids is None:
            self.prompt_ids = _ids(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True))
        else:
            text = continuation_text(tok, messages[: self._seen], messages[self._seen :], self._ended)
            glue = _ids(tok(text, add_special_tokens=False))
            start = len(self.completion_ids)
            self.completion_ids += glue
            self.env_mask += [0] * len(glue)
            self.logprobs += [0.0] * len(glue)
            self.env_segments.append((start, len(self.completion_ids)))
        budget = self.cfg.max_completion_tokens - len(self.completion_ids)
        if budget <= 0:
            raise LimitReached("max_tokens")
        new, lps = self.gen.generate(
            self.prompt_ids + self.completion_ids, min(self.cfg.turn_tokens, budget), self.cfg.temperature
        )
        self.completion_ids += new
        self.env_mask += [1] * len(new)
        self.logprobs += lps
        self.model_tokens += len(new)
        self._ended = bool(new) and new[-1] == tok.eos_token_id
        self._seen = len(messages) + 1  # the engine appends this reply as the next message
        return Turn(content=tok.decode(new, skip_special_tokens=True), completion_token_ids=new, logprobs=lps)


def run_episode(instance: dict, gen, tok, session, cfg: GRPOTrainConfig, max_format_errors: int = 0) -> Episode:
    """One episode of the engine with the model behind `gen`; `max_format_errors` > 0 ends it (exit_reason
    format_errors, not truncated) after that many invalid replies in a row, as `run-agent` does
    (evaluation uses it; training leaves it off)."""
    t0 = time.monotonic()
    acfg = cfg.agent_config(max_format_errors=max_format_errors)
    policy = TokenPolicy(gen, tok, cfg)
    if hasattr(gen, "enter"):
        gen.enter()
    try:
        traj = run_engine(instance, policy, session, acfg)
    finally:
        if hasattr(gen, "leave"):
            gen.leave()
    if policy.prompt_ids is None:  # no model turn at all (the session failed first)
        opening = traj.messages or prompt_messages(instance, cfg)
        policy.prompt_ids = _ids(tok.apply_chat_template(opening, add_generation_prompt=True, tokenize=True))
    n = cfg.max_completion_tokens
    prompts = acfg.load_prompts()
    ep = Episode(
        instance["instance_id"],
        policy.prompt_ids,
        policy.completion_ids[:n],
        policy.env_mask[:n],
        policy.logprobs[:n],
        exit_reason=traj.exit_reason,
        patch=traj.patch,
        model_tokens=policy.model_tokens,
        env_segments=[(a, min(b, n)) for a, b in policy.env_segments if a < n],
        turns=len(traj.turns),
        format_errors=sum(is_format_error(m, prompts) for m in traj.messages),
        error=traj.error,
        observations=_observations(traj, prompts),
    )
    if len(policy.completion_ids) > n and ep.exit_reason == "submitted":
        ep.exit_reason = "max_tokens"
    ep.truncated = ep.exit_reason in LIMIT_EXITS
    ep.infra = ep.exit_reason in INFRA_EXITS
    ep.filtered = ep.infra or (ep.truncated and not cfg.submit_at_limit)
    if ep.filtered:
        ep.env_mask = [0] * len(ep.env_mask)
    ep.seconds = time.monotonic() - t0
    return ep


def _observations(traj, prompts) -> list[str]:
    """The observations of the episode's actions (the messages after each model turn, format errors aside)."""
    out, after_model = [], False
    for m in traj.messages:
        if m["role"] == "assistant":
            after_model = True
        elif after_model and m["role"] in ("user", "tool") and not is_format_error(m, prompts):
            out.append(m["content"])
    return out


def reward_of(grade, kind: str) -> float:
    if grade is None or grade.status in ("EMPTY_PATCH", "PATCH_FAILED", "TIMEOUT", "ERROR", "SUSPICIOUS"):
        return 0.0
    if kind == "partial":
        return grade.f2p_fraction if not grade.PASS_TO_PASS.get("failure") else 0.0
    return 1.0 if grade.resolved else 0.0


def group_signal(episodes: list[Episode], group_size: int) -> dict:
    """Dynamic sampling over consecutive groups of `group_size` episodes: a group whose scored rewards
    (infrastructure failures left out) are all equal, or that has fewer than two, carries no signal; its
    episodes are marked skipped and leave the loss (all-zero env_mask). Returns the counts."""
    groups = [episodes[i : i + group_size] for i in range(0, len(episodes), group_size)]
    skipped = 0
    for g in groups:
        scored = [e.reward for e in g if not e.infra]
        if len(scored) < 2 or len(set(scored)) == 1:
            skipped += 1
            for e in g:
                e.skipped, e.filtered = True, True
                e.env_mask = [0] * len(e.env_mask)
    return {
        "groups": len(groups),
        "skipped_groups": skipped,
        "infra_failures": sum(e.infra for e in episodes),
        "truncated_share": sum(e.truncated for e in episodes) / max(1, len(episodes)),
    }
