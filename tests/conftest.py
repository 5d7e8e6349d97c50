"""Shared fixtures. Everything is real: a Docker engine, images, containers, git repositories built
by the tests, pytest runs inside containers. Nothing here mocks Docker, git or the test runner.

Helpers are fixtures that return the function (`git_repo`, `write_tree`, `cli`, `make_tiny_model`), so no
test module imports this file or another test module. Every test whose fixtures reach `engine` is marked
`docker` here: `pytest -m "not docker"` runs the engine-free tests alone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# One thread per torch process (this one and the servers and trainers the tests start): the tiny models
# gain little from two, and with another process busy on a 2-core machine two spinning threads made a
# GRPO test 10x slower (433 s against 44 s, docs/figures.md "Test suite").
os.environ.setdefault("OMP_NUM_THREADS", "1")

from bugforge.engine import client  # noqa: E402
from bugforge.records import read_jsonl


def pytest_collection_modifyitems(config, items):
    """Mark `docker` every test that needs the engine through its fixtures (their closure names `engine`)."""
    for item in items:
        if "engine" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.docker)


@pytest.fixture(scope="session")
def engine(tmp_path_factory):
    """The engine. At the session's end, the environment and instance images the tests' own records
    (env.json, *.jsonl under this session's temporary folder) name are removed: left behind they pile
    up (thousands after a few hundred runs) and every engine-wide listing, SWE-bench's harness's
    included, slows with them."""
    c = client()
    yield c
    from bugforge.images.prune import PREFIXES, referenced

    names: set[str] = set()
    for pattern in ("env.json", "*.jsonl"):
        for record in tmp_path_factory.getbasetemp().rglob(pattern):
            try:
                names |= referenced([record])
            except Exception:  # noqa: BLE001 -- a test's deliberately broken record names nothing
                pass
    ours = (n for n in names if n.startswith(PREFIXES))  # never a base image, never a pushed copy
    for name in sorted(ours, key=lambda n: "/env." in n):  # instance images first: they are built on the env's
        try:
            c.api.remove_image(name)
        except Exception:  # noqa: BLE001 -- gone already, or in use: clean-up is best effort
            pass


@pytest.fixture(scope="session")
def base_image(engine) -> str:
    from bugforge.images import ensure_base_image

    return ensure_base_image("3.11").tag


def _bugforge(*args, env: dict | None = None, cwd=None, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run the real `bugforge` command line, capturing its output."""
    return subprocess.run(
        [sys.executable, "-m", "bugforge.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def _write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def _git_repo(root: Path, files: dict[str, str], message: str = "init") -> Path:
    """A real git repository with `files` committed."""
    _write_tree(root, files)
    run = lambda *a: subprocess.run(["git", "-C", str(root), *a], check=True, capture_output=True)  # noqa: E731
    if not (root / ".git").exists():
        run("init", "-q", "-b", "main")
        run("config", "user.email", "t@t")
        run("config", "user.name", "t")
    run("add", "-A")
    run("commit", "-q", "-m", message)
    return root


@pytest.fixture(scope="session")
def cli():
    """`cli(*args, env=None, cwd=None, timeout=900)`: the real `bugforge` command line, output captured."""
    return _bugforge


@pytest.fixture(scope="session")
def write_tree():
    """`write_tree(root, files)`: writes {path: dedented text} under root; returns root."""
    return _write_tree


@pytest.fixture(scope="session")
def git_repo():
    """`git_repo(root, files, message="init")`: a real git repository with `files` committed."""
    return _git_repo


# --- the calc repository: the factory's tests, and the task instances sandbox/agent/training use --------

CALC = {
    "setup.py": "from setuptools import setup, find_packages\nsetup(name='calc', packages=find_packages())\n",
    "calc/__init__.py": "",
    "calc/ops.py": """
        SCALE = 10


        def add(a, b):
            return a + b


        def sub(a, b):
            return a - b


        def scaled(x):
            return x * SCALE


        def countdown(n):
            while n > 0:
                n -= 1
            return n


        def sign(x):
            if x >= 0:
                return 1
            else:
                return -1
        """,
    "tests/test_ops.py": """
        import pytest

        from calc.ops import add, countdown, scaled, sign, sub


        @pytest.fixture(scope="module")
        def five():
            return add(2, 3)


        def test_add():
            assert add(2, 3) == 5


        def test_sub():
            assert sub(5, 3) == 2


        def test_scaled():
            assert scaled(2) == 20


        def test_countdown():
            assert countdown(3) == 0


        def test_uses_five(five):
            assert five == 5


        def test_sign():
            assert sign(3) == 1
        """,
}


@pytest.fixture(scope="session")
def calc_files() -> dict[str, str]:
    """The calc fixture repository's files (copy before changing them)."""
    return dict(CALC)


@pytest.fixture(scope="session")
def calc_runs(base_image, tmp_path_factory) -> Path:
    """runs/ with a real environment record and a few task instances (images included) made by the
    factory from a small repo: runs/calc/{env.json,testmap.json.gz,instances.jsonl,...}. Built once per
    session: no test changes it (`instances`, a fresh copy of its rows per module, is theirs to change)."""
    from bugforge.factory import build_environment
    from bugforge.factory.export import export
    from bugforge.factory.generate import generate

    root = tmp_path_factory.mktemp("sbx")
    _git_repo(root / "calc", CALC)
    env, _ = build_environment(str(root / "calc"), out=root / "runs", log=lambda m: None)
    generate(
        root / "runs" / "calc",
        max_candidates=6,
        workers=2,
        log=lambda m: None,
        strategies=["op_change", "remove_assign", "change_return"],
    )
    assert len(read_jsonl(export(root / "runs" / "calc", limit=2))) == 2
    return root / "runs"


@pytest.fixture(scope="module")
def instances(calc_runs):
    return read_jsonl(calc_runs / "calc" / "instances.jsonl")


# --- a tiny model ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def make_tiny_model():
    """`make_tiny_model(path, seed=0)`: a tiny random Llama model and its tokenizer saved at path."""
    return _make_tiny_model


CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def _make_tiny_model(path: Path, seed: int = 0) -> Path:
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
