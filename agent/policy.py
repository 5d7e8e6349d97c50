"""Policies: anything with `complete(messages, tools) -> Turn`. `ChatPolicy` is any OpenAI-compatible
endpoint (vLLM, a hosted API, bugforge's local model server); `OraclePolicy` is a scripted policy that
applies the gold patch through tool calls — for testing plumbing only, never a model's result."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from bugforge.records import Turn


class PolicyError(RuntimeError):
    """The model endpoint failed (unreachable, died, bad answer): the episode ends with model_error."""


@dataclass
class ChatPolicy:
    model: str
    base_url: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 512
    seed: int | None = None
    logprobs: bool = False
    """Ask for per-token logprobs (training needs them)."""
    return_token_ids: bool = False
    """Ask for prompt and completion token ids (vLLM and bugforge's server understand this)."""
    timeout: float = 600
    tool_choice: str | dict | None = None
    """Sent with tools: "auto", "required" or a named function; None leaves it to the endpoint (auto)."""
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        import os

        from openai import OpenAI

        self.client = OpenAI(
            base_url=self.base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key=self.api_key or os.environ.get("OPENAI_API_KEY") or "none",
            timeout=self.timeout,
            max_retries=0,
        )

    def __getstate__(self) -> dict:  # the client is remade where the policy lands (a Ray node)
        return {k: v for k, v in self.__dict__.items() if k != "client"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    def complete(self, messages: list[dict], tools: list[dict] | None = None) -> Turn:
        import openai

        t0 = time.monotonic()
        extra = dict(self.extra)
        if self.return_token_ids:
            extra["return_token_ids"] = True
        kwargs = dict(
            model=self.model,
            messages=messages,
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self.max_tokens,
            extra_body=extra or None,
        )
        if self.seed is not None:
            kwargs["seed"] = self.seed
        if self.logprobs:
            kwargs["logprobs"] = True
        if tools:
            kwargs["tools"] = tools
            if self.tool_choice is not None:
                kwargs["tool_choice"] = self.tool_choice
        try:
            r = self.client.chat.completions.create(**kwargs)
        except openai.OpenAIError as e:  # "Connection error." alone hides why: add the cause (refused, DNS...)
            cause = f" ({e.__cause__})" if e.__cause__ is not None and str(e.__cause__) else ""
            raise PolicyError(f"{type(e).__name__}: {str(e)[:300]}{cause[:300]}") from None
        if not r.choices:
            raise PolicyError("the endpoint returned no choices")
        ch = r.choices[0]
        msg = ch.message
        calls = [
            {
                "id": tc.id,
                "type": "function",
                "function": {"name": tc.function.name, "arguments": tc.function.arguments},
            }
            for tc in (msg.tool_calls or [])
        ]
        lps = [c.logprob for c in (ch.logprobs.content or [])] if getattr(ch, "logprobs", None) else []
        raw = r.model_dump()
        return Turn(
            content=msg.content or "",
            tool_calls=calls,
            prompt_token_ids=raw.get("prompt_token_ids") or [],
            completion_token_ids=(raw["choices"][0].get("token_ids") or []),
            logprobs=lps,
            finish_reason=ch.finish_reason or "",
            seconds=time.monotonic() - t0,
            prefilled_tokens=raw["choices"][0].get("prefilled_token_count") or 0,
        )


@dataclass
class OraclePolicy:
    """SCRIPTED, NOT A MODEL: writes the instance's gold patch, applies it and submits. It exists to test
    the plumbing end to end (sandbox, tools, diff, grading); its resolve rate says nothing about agents."""

    gold_patch: str
    mode: str = "text"
    model: str = "oracle-scripted-gold-patch"
    scripted: bool = True

    def complete(self, messages: list[dict], tools: list[dict] | None = None) -> Turn:
        step = sum(1 for m in messages if m["role"] == "assistant")
        marker = "BUGFORGE_ORACLE_EOF"
        script = [
            f"cat > /tmp/gold.diff <<'{marker}'\n{self.gold_patch.rstrip(chr(10))}\n{marker}",
            "git apply /tmp/gold.diff && rm /tmp/gold.diff && git status --short",
            "submit",
        ]
        cmd = script[min(step, len(script) - 1)]
        if self.mode == "tools":
            call = (
                {"name": "submit", "arguments": "{}"}
                if cmd == "submit"
                else {"name": "bash", "arguments": json.dumps({"command": cmd})}
            )
            return Turn(
                content="",
                tool_calls=[{"id": f"call_{step}", "type": "function", "function": call}],
                finish_reason="tool_calls",
            )
        return Turn(content=f"Step {step + 1}.\n```bash\n{cmd}\n```", finish_reason="stop")
