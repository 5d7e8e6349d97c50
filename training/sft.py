"""SFT on successful trajectories (rejection-sampling fine-tuning): each trajectory whose patch resolved
its task becomes one example; the loss is on the assistant's tokens only. Segments are cut with the chat
template itself (the text each message adds), so any model's template works. Tool-call trajectories are
rendered as the model server renders them (the template's own tool format, else bugforge's fallback), so
SFT teaches the format the model will be asked to use."""

from __future__ import annotations

import json
import random
from pathlib import Path

from bugforge.errors import BugforgeError
from bugforge.records import read_jsonl
from bugforge.training.config import SFTTrainConfig

IGNORE = -100


def tokenize_conversation(
    tok, messages: list[dict], max_length: int, tools: list | None = None
) -> tuple[list[int], list[int]]:
    """(input_ids, labels): labels equal input_ids on assistant tokens and IGNORE everywhere else."""
    ids, labels, prev = [], [], ""
    kw = {"tools": tools} if tools else {}
    for i, m in enumerate(messages):
        text = tok.apply_chat_template(messages[: i + 1], tokenize=False, **kw)
        if not text.startswith(prev):
            raise BugforgeError("the chat template is not prefix-stable; cannot cut messages into segments")
        seg = tok(text[len(prev) :], add_special_tokens=False)["input_ids"]
        ids += seg
        labels += seg if m["role"] == "assistant" else [IGNORE] * len(seg)
        prev = text
    return ids[:max_length], labels[:max_length]


def examples_from(trajectories: Path, tok, cfg: SFTTrainConfig) -> list[tuple[list[int], list[int]]]:
    """One (input_ids, labels) per kept trajectory (resolved ones unless cfg.only_resolved is off)."""
    if not Path(trajectories).exists():
        raise BugforgeError(f"trajectory file {trajectories} does not exist", "run `bugforge run-agent` first")
    rows = read_jsonl(Path(trajectories))
    keep = [r for r in rows if not cfg.only_resolved or (r.get("grade") or {}).get("resolved")]
    if not keep:
        raise BugforgeError(
            f"no {'resolved ' if cfg.only_resolved else ''}trajectories in {trajectories}",
            "collect some with `bugforge run-agent` (trajectories are graded)",
        )
    out = []
    for r in keep:
        msgs, tools = sft_messages(r["messages"], tok)
        out.append(tokenize_conversation(tok, msgs, cfg.max_length, tools))
    return out


def sft_messages(messages: list[dict], tok) -> tuple[list[dict], list | None]:
    """(messages, tools) as the model sees them: plain text turns as they are; a tool-call conversation in
    the chat template's own tool format (with the tool schemas), or bugforge's fallback format (tool calls
    as `<tool_call>[...]</tool_call>` text) for templates that ignore tools — as `serve-model` renders it."""
    if not any(m.get("tool_calls") or m["role"] == "tool" for m in messages):
        return [{"role": m["role"], "content": m.get("content") or ""} for m in messages], None
    from bugforge.agent import toolcalls
    from bugforge.agent.server import renders_tools
    from bugforge.agent.tools import TOOL_SCHEMAS

    if renders_tools(tok):
        return toolcalls.template_messages(messages), TOOL_SCHEMAS
    return toolcalls.fallback_messages(messages, TOOL_SCHEMAS), None


def masked_loss(model, ids: list[int], labels: list[int]):
    import torch

    x = torch.tensor([ids])
    y = torch.tensor([labels])
    logits = model(input_ids=x).logits[:, :-1]
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(), y[:, 1:].reshape(-1), ignore_index=IGNORE
    )


def train_sft(examples, model, tok, cfg: SFTTrainConfig, log=print) -> list[float]:
    import torch

    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate)
    model.train()
    losses = []
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "metrics.jsonl", "a") as f:
        for epoch in range(cfg.epochs):
            order = list(range(len(examples)))
            random.shuffle(order)
            for step, i in enumerate(order):
                ids, labels = examples[i]
                if all(l == IGNORE for l in labels[1:]):
                    continue
                loss = masked_loss(model, ids, labels)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
                f.write(
                    json.dumps(
                        {
                            "epoch": epoch,
                            "step": step,
                            "loss": loss.item(),
                            "tokens": len(ids),
                            "assistant_tokens": sum(l != IGNORE for l in labels),
                        }
                    )
                    + "\n"
                )
                f.flush()
            log(f"sft: epoch {epoch + 1}/{cfg.epochs} mean loss {sum(losses[-len(order) :]) / max(1, len(order)):.4f}")
    model.save_pretrained(out / "final")
    tok.save_pretrained(out / "final")
    return losses
