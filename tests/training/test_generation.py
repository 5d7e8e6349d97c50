"""Issue 36: generation batched across a group (one left-padded `generate` with the KV cache) gives the same
tokens as generating each prompt alone at temperature 0, called directly and from concurrent episodes'
threads through BatchedGenerator. A tiny real model built here (tests/conftest.py), no mocks."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, make_tiny_model):
    from bugforge.agent.model import load

    return load(str(make_tiny_model(tmp_path_factory.mktemp("tiny"), seed=3)))


def prompts_of(tok) -> list[list[int]]:
    from bugforge.training.rollout import _ids

    texts = ["Fix this issue: the tests fail", "exit code: 0\n```bash\nls\n```", "def f(x):", "git diff; cat file.py"]
    return [_ids(tok.apply_chat_template([{"role": "user", "content": t}], add_generation_prompt=True)) for t in texts]


def test_batched_generation_matches_one_at_a_time_at_temperature_0(tiny):
    from bugforge.training.generation import generate_batch

    tok, model = tiny
    prompts = [list(p) for p in prompts_of(tok)]
    assert len({len(p) for p in prompts}) > 1  # different lengths: the batch is left-padded
    limits = [24, 9, 24, 17]
    alone = [generate_batch(model, tok, [p], n, 0.0)[0] for p, n in zip(prompts, limits)]
    together = generate_batch(model, tok, prompts, limits, 0.0)
    for (a_ids, a_lps), (b_ids, b_lps), n in zip(alone, together, limits):
        assert b_ids == a_ids and 0 < len(a_ids) <= n
        assert b_lps == pytest.approx(a_lps, abs=1e-4)
        assert all(lp <= 0 for lp in a_lps)


def test_batched_generator_gathers_concurrent_turns(tiny):
    from bugforge.training.generation import BatchedGenerator, TransformersGenerator

    tok, model = tiny
    prompts = [list(p) for p in prompts_of(tok)]
    one = TransformersGenerator(model, tok)
    alone = [one.generate(p, 16, 0.0)[0] for p in prompts]
    gen = BatchedGenerator(model, tok, max_batch=4, max_wait=5.0)
    for _ in prompts:  # four episodes in flight, as in a rollout of one group
        gen.enter()

    def episode(p):
        try:
            return gen.generate(p, 16, 0.0)[0]
        finally:
            gen.leave()

    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(episode, prompts))
    assert got == alone
    assert gen.batches == [4]  # one batch for the whole group, not four generations
