"""Shared fixtures. Everything is real: a Docker engine, images, containers, git repositories built
by the tests, pytest runs inside containers. Nothing here mocks Docker, git or the test runner."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bugforge.engine import client


@pytest.fixture(scope="session")
def engine():
    return client()


@pytest.fixture(scope="session")
def base_image(engine) -> str:
    from bugforge.images import ensure_base_image

    return ensure_base_image("3.11").tag


def bugforge(*args, env: dict | None = None, cwd=None, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run the real `bugforge` command line, capturing its output."""
    return subprocess.run(
        [sys.executable, "-m", "bugforge.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def git_repo(root: Path, files: dict[str, str], message: str = "init") -> Path:
    """A real git repository with `files` committed."""
    write_tree(root, files)
    run = lambda *a: subprocess.run(["git", "-C", str(root), *a], check=True, capture_output=True)  # noqa: E731
    if not (root / ".git").exists():
        run("init", "-q", "-b", "main")
        run("config", "user.email", "t@t")
        run("config", "user.name", "t")
    run("add", "-A")
    run("commit", "-q", "-m", message)
    return root


MINI = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "mini"
        version = "0.1"
        requires-python = ">=3.9"
        [project.optional-dependencies]
        test = ["pytest"]
        """,
    "src/mini/__init__.py": """
        def f(x):
            y = x + 1
            return y * 2


        def g(x):
            return x - 1


        def h(x):
            return x * 10
        """,
    "tests/test_shared.py": """
        import pytest

        from mini import h


        @pytest.fixture(scope="module")
        def ten():
            return h(1)


        def test_uses_ten(ten):
            assert ten == 10


        def test_uses_ten_too(ten):
            assert ten + 1 == 11
        """,
    "tests/test_mini.py": """
        from mini import f, g


        def test_f():
            assert f(1) == 4


        def test_g():
            assert g(1) == 0


        def test_constant():
            assert 2 + 2 == 4
        """,
}


CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def make_tiny_model(path: Path, seed: int = 0) -> Path:
    """A real (tiny, randomly initialised) Llama model and a tokenizer built here: no hub, no download.
    The tokenizer is byte-level BPE trained on a few lines, with a chat template."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<|pad|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [
        "```bash\nls\n```",
        "```bash\nsubmit\n```",
        "def f(x):\n    return x + 1\n",
        "git diff; cat file.py",
        "Fix this issue: the tests fail",
        "exit code: 0",
        "python -m pytest -q tests/",
    ] * 20
    tok.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=400, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<|pad|>", eos_token="<|end|>")
    fast.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        pad_token_id=fast.pad_token_id,
        eos_token_id=fast.eos_token_id,
        bos_token_id=None,
    )
    model = LlamaForCausalLM(cfg)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path
