"""Generation for GRPO's rollouts with the trainer's own model (transformers, CPU or GPU) or TRL's vLLM.

`generate_batch` runs several prompts as one left-padded batch through `model.generate` with the KV cache
on; `BatchedGenerator` gathers the turns that concurrent episodes ask for (G episodes of a group run at
once, each in its own thread) into such batches, so a group's turns are generated together instead of one
after another. At temperature 0 a batch gives the same tokens as generating each prompt alone
(tests/training/test_generation.py). Every generator has `generate(ids, max_new, temperature) -> (new token
ids, their logprobs)`."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


def _eos_ids(model, tok) -> set[int]:
    eos = getattr(model.generation_config, "eos_token_id", None)
    ids = set(eos if isinstance(eos, (list, tuple)) else [eos]) | {tok.eos_token_id}
    ids.discard(None)
    return ids


def generate_batch(
    model, tok, prompts: list[list[int]], max_new: list[int] | int, temperature: float
) -> list[tuple[list[int], list[float]]]:
    """(new ids, logprobs) per prompt: one left-padded `generate` over all of them, KV cache on. Each
    result ends at its first end-of-sequence token (kept) or after its own `max_new` tokens; logprobs are
    the model's at `temperature` (1 for greedy)."""
    import torch

    limits = [max_new] * len(prompts) if isinstance(max_new, int) else list(max_new)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    width = max(len(p) for p in prompts)
    device = next(model.parameters()).device
    ids = torch.tensor([[pad] * (width - len(p)) + list(p) for p in prompts], device=device)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
    eos = _eos_ids(model, tok)
    with torch.no_grad():
        was_training = model.training
        model.eval()
        try:
            out = model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=max(limits),
                do_sample=temperature > 0,
                temperature=temperature or None,
                top_p=None,
                top_k=None,
                use_cache=True,
                return_dict_in_generate=True,
                output_logits=True,
                pad_token_id=pad,
            )
        finally:
            if was_training:
                model.train()
    t = temperature or 1.0
    results = []
    for i, limit in enumerate(limits):
        new = out.sequences[i, width:].tolist()[:limit]
        end = next((k for k, x in enumerate(new) if x in eos), None)
        new = new if end is None else new[: end + 1]
        lps = [torch.log_softmax(out.logits[k][i].float() / t, -1)[x].item() for k, x in enumerate(new)]
        results.append((new, lps))
    return results


class TransformersGenerator:
    """Generation with the trainer's own model, one prompt at a time."""

    def __init__(self, model, tok):
        self.model, self.tok, self.lock = model, tok, threading.Lock()

    def generate(self, ids: list[int], max_new: int, temperature: float) -> tuple[list[int], list[float]]:
        with self.lock:
            return generate_batch(self.model, self.tok, [ids], max_new, temperature)[0]


@dataclass
class _Request:
    ids: list[int]
    max_new: int
    temperature: float
    done: threading.Event = field(default_factory=threading.Event)
    result: tuple | None = None
    error: BaseException | None = None


class BatchedGenerator:
    """Generation batched across concurrent episodes. Each episode's thread calls `generate`; the first
    caller to find the model free waits until every episode in flight has a turn queued (or `max_wait`
    seconds pass, for an episode still running a command), then generates the queued turns of one
    temperature as one batch (at most `max_batch`) and hands each its result. `enter()`/`leave()` count the
    episodes in flight (the rollout's token policy calls them)."""

    def __init__(self, model, tok, max_batch: int = 8, max_wait: float = 0.25):
        self.model, self.tok, self.max_batch, self.max_wait = model, tok, max(1, max_batch), max_wait
        self.cv = threading.Condition()
        self.queue: list[_Request] = []
        self.active = 0
        self.busy = False
        self.batches: list[int] = []
        """The size of every batch generated (for the rollout's metrics)."""

    def enter(self) -> None:
        with self.cv:
            self.active += 1

    def leave(self) -> None:
        with self.cv:
            self.active = max(0, self.active - 1)
            self.cv.notify_all()

    def generate(self, ids: list[int], max_new: int, temperature: float) -> tuple[list[int], list[float]]:
        req = _Request(list(ids), max_new, temperature)
        with self.cv:
            self.queue.append(req)
            self.cv.notify_all()
            while not req.done.is_set() and self.busy:
                self.cv.wait(0.05)
            if req.done.is_set():
                return self._result(req)
            self.busy = True  # this thread generates the next batch
            deadline = time.monotonic() + self.max_wait
            while len(self.queue) < min(self.max_batch, max(1, self.active)) and time.monotonic() < deadline:
                self.cv.wait(max(0.0, deadline - time.monotonic()))
            first = self.queue[0].temperature
            batch = [r for r in self.queue if r.temperature == first][: self.max_batch]
            self.queue = [r for r in self.queue if r not in batch]
        try:
            outs = generate_batch(self.model, self.tok, [r.ids for r in batch], [r.max_new for r in batch], first)
            for r, o in zip(batch, outs):
                r.result = o
        except BaseException as e:  # noqa: BLE001 - handed to every waiting episode, each of which raises it
            for r in batch:
                r.error = e
        finally:
            with self.cv:
                self.batches.append(len(batch))
                for r in batch:
                    r.done.set()
                self.busy = False
                self.cv.notify_all()
        if not req.done.is_set():  # its temperature differed from the batch's: queue again
            with self.cv:
                self.queue.remove(req)
            return self.generate(ids, max_new, temperature)
        return self._result(req)

    @staticmethod
    def _result(req: _Request) -> tuple[list[int], list[float]]:
        if req.error is not None:
            raise req.error
        return req.result


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
