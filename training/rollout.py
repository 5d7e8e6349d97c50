"""Multi-turn rollouts for RL, token in / token out: the conversation is kept as token ids; the model's
own tokens get env_mask 1 and logprobs, tool-output tokens (and template glue) get env_mask 0. An
episode that hits a step, length or time limit is *filtered*: its env_mask is all zero, so it adds
nothing to the loss (DeepSWE's overlong filtering), and it is counted.

The same tools, prompts and parsing as agent/ are used, so what is trained is what is evaluated."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from bugforge.agent.loop import SYSTEM, TASK, TEXT_FORMAT, _clip
from bugforge.agent.tools import SUBMIT, FormatError, parse_text
from bugforge.errors import BugforgeError
from bugforge.training.config import GRPOTrainConfig


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
    model_tokens: int = 0
    env_segments: list[tuple[int, int]] = field(default_factory=list)
    """(start, end) of each tool-output segment in completion_ids."""
    seconds: float = 0.0
    turns: int = 0
    """Model turns; `format_errors` of them were not a valid action."""
    format_errors: int = 0
    error: str = ""
    """Why the sandbox failed (exit_reason sandbox_error), or grading did."""


def prompt_messages(instance: dict) -> list[dict]:
    return [
        {"role": "system", "content": SYSTEM.format(format=TEXT_FORMAT)},
        {"role": "user", "content": TASK.format(problem=instance["problem_statement"])},
    ]


def _ids(x) -> list[int]:
    if hasattr(x, "input_ids"):
        x = x["input_ids"]
    return list(x)


def continuation_text(tok, messages: list[dict], reply: str, observation: str, ended_with_eos: bool) -> str:
    """The text between the end of the model's reply and the start of its next turn: the end of the
    assistant message (unless the model emitted it), the observation as a user message, and the next
    generation prompt — derived from the chat template itself."""
    with_reply = messages + [{"role": "assistant", "content": reply}]
    r1 = tok.apply_chat_template(with_reply, tokenize=False)
    r2 = tok.apply_chat_template(
        with_reply + [{"role": "user", "content": observation}], tokenize=False, add_generation_prompt=True
    )
    end = r1.rindex(reply) + len(reply) if reply else len(r1.rstrip())
    tail = r1[end:]
    if ended_with_eos and tok.eos_token and tail.startswith(tok.eos_token):
        tail = tail[len(tok.eos_token) :]
    assert r2.startswith(r1), "the chat template is not prefix-stable"
    return tail + r2[len(r1) :]


class TransformersGenerator:
    """Generation with the trainer's own model (CPU or one GPU); one generation at a time."""

    def __init__(self, model, tok):
        self.model, self.tok, self.lock = model, tok, threading.Lock()

    def generate(self, ids: list[int], max_new: int, temperature: float) -> tuple[list[int], list[float]]:
        import torch

        with self.lock, torch.no_grad():
            was_training = self.model.training
            self.model.eval()
            device = next(self.model.parameters()).device
            out = self.model.generate(
                torch.tensor([ids], device=device),
                max_new_tokens=max_new,
                do_sample=temperature > 0,
                temperature=temperature or None,
                top_p=None,
                top_k=None,
                return_dict_in_generate=True,
                output_logits=True,
                pad_token_id=self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id,
            )
            if was_training:
                self.model.train()
        new = out.sequences[0][len(ids) :].tolist()
        lps = [torch.log_softmax(l[0].float() / (temperature or 1.0), -1)[t].item() for l, t in zip(out.logits, new)]
        return new, lps


class VLLMGenerator:
    """Generation through TRL's vLLM integration (colocate or server mode), for GPU machines."""

    def __init__(self, trainer):
        self.trainer = trainer
        self.lock = threading.Lock()

    def generate(self, ids: list[int], max_new: int, temperature: float) -> tuple[list[int], list[float]]:
        with self.lock:
            _, completion_ids, logprobs, _ = self.trainer.vllm_generation.generate(
                prompts=[ids], images=None, num_generations=1, max_tokens=max_new
            )
        return completion_ids[0], [lp[0] for lp in logprobs[0]]


def run_episode(instance: dict, gen, tok, session, cfg: GRPOTrainConfig, max_format_errors: int = 0) -> Episode:
    """One episode; `max_format_errors` > 0 ends it (exit_reason format_errors, not filtered) after that many
    invalid replies in a row, as the agent loop does (evaluation uses it; training leaves it off)."""
    t0 = time.monotonic()
    messages = prompt_messages(instance)
    ep = Episode(
        instance["instance_id"], _ids(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True))
    )
    eos, streak = tok.eos_token_id, 0
    for _ in range(cfg.agent_steps):
        budget = cfg.max_completion_tokens - len(ep.completion_ids)
        if budget <= 0:
            ep.exit_reason = "max_tokens"
            break
        new, lps = gen.generate(ep.prompt_ids + ep.completion_ids, min(cfg.turn_tokens, budget), cfg.temperature)
        ep.completion_ids += new
        ep.env_mask += [1] * len(new)
        ep.logprobs += lps
        ep.model_tokens += len(new)
        ep.turns += 1
        ended = bool(new) and new[-1] == eos
        reply = tok.decode(new, skip_special_tokens=True)
        try:
            action = parse_text(reply)
            if action.tool == SUBMIT:
                ep.exit_reason = "submitted"
                break
            r = session.run(action.args["command"], cfg.command_timeout)
            obs = f"exit code: {r.exit_code}\n{_clip(r.output, 4000)}"
            streak = 0
        except BugforgeError as e:  # the session is gone (a lost Ray node, a dead container)
            ep.exit_reason, ep.error = "sandbox_error", e.what
            break
        except FormatError as e:
            ep.format_errors += 1
            streak += 1
            obs = f"Format error: {e}"
            if max_format_errors and streak >= max_format_errors:
                ep.exit_reason = "format_errors"
                break
        if time.monotonic() - t0 > cfg.episode_seconds:
            ep.exit_reason = "max_seconds"
            break
        glue = _ids(tok(continuation_text(tok, messages, reply, obs, ended), add_special_tokens=False))
        messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": obs}]
        start = len(ep.completion_ids)
        ep.completion_ids += glue
        ep.env_mask += [0] * len(glue)
        ep.logprobs += [0.0] * len(glue)
        ep.env_segments.append((start, len(ep.completion_ids)))
    else:
        ep.exit_reason = "max_steps"
    if len(ep.completion_ids) > cfg.max_completion_tokens:
        ep.exit_reason = ep.exit_reason if ep.exit_reason != "submitted" else "max_tokens"
        ep.completion_ids = ep.completion_ids[: cfg.max_completion_tokens]
        ep.env_mask = ep.env_mask[: cfg.max_completion_tokens]
        ep.logprobs = ep.logprobs[: cfg.max_completion_tokens]
    if ep.exit_reason != "sandbox_error":
        try:
            ep.patch = session.diff()
        except BugforgeError as e:
            ep.exit_reason, ep.error = "sandbox_error", e.what
    ep.filtered = ep.exit_reason in ("max_steps", "max_tokens", "max_seconds", "sandbox_error")
    if ep.filtered:
        ep.env_mask = [0] * len(ep.env_mask)
    ep.seconds = time.monotonic() - t0
    return ep


def reward_of(grade, kind: str) -> float:
    if grade is None or grade.status in ("EMPTY_PATCH", "PATCH_FAILED", "TIMEOUT", "ERROR", "SUSPICIOUS"):
        return 0.0
    if kind == "partial":
        return grade.f2p_fraction if not grade.PASS_TO_PASS.get("failure") else 0.0
    return 1.0 if grade.resolved else 0.0
