"""LM-made bugs through any OpenAI-compatible endpoint: `lm_modify` asks the model to slip a bug into a
covered function; `lm_rewrite` blanks a function's body and asks the model to write it again (bugs come
from what it gets wrong). Prompts are the template files in factory/templates/."""

from __future__ import annotations

import os
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
import openai
from libcst.metadata import MetadataWrapper, PositionProvider

from bugforge.records import Candidate, EnvRecord
from bugforge.testing.patches import changed_lines, file_diff, patch_id
from bugforge.testing.testmap import TestMap

TEMPLATES = Path(__file__).parent / "templates"


@dataclass
class LMConfig:
    model: str
    base_url: str | None = None
    api_key: str | None = None
    temperature: float = 0.8
    max_tokens: int = 1024
    per_strategy: int = 20
    """How many functions to ask about, per LM strategy."""

    def client(self):
        from openai import OpenAI

        return OpenAI(
            base_url=self.base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key=self.api_key or os.environ.get("OPENAI_API_KEY") or "none",
            timeout=300,
            max_retries=1,
        )


def functions(source: str) -> tuple[cst.Module, list[tuple[str, int, int, cst.FunctionDef]]]:
    """The parsed module, and (qualified name, first line, last line, node) of each function in it."""
    wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
    pos = wrapper.resolve(PositionProvider)
    out, stack = [], []

    class V(cst.CSTVisitor):
        def visit_ClassDef(self, node):
            stack.append(node.name.value)

        def leave_ClassDef(self, node):
            stack.pop()

        def visit_FunctionDef(self, node):
            p = pos[node]
            out.append((".".join(stack + [node.name.value]), p.start.line, p.end.line, node))
            stack.append(node.name.value)

        def leave_FunctionDef(self, node):
            stack.pop()

    wrapper.module.visit(V())
    return wrapper.module, out


def extract_code(reply: str) -> str | None:
    """The code of the first fenced block in a model's reply (or the reply itself if it is bare code). A
    block cut off by the token limit counts up to the cut (if that is a whole function, it is one)."""
    m = re.search(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", reply, re.S)
    if m:
        return m.group(1).strip("\n") + "\n"
    return reply.strip("\n") + "\n" if reply.lstrip().startswith("def ") else None


def replace_function(source: str, qualname: str, new_code: str) -> str | None:
    """`source` with the function `qualname` replaced by the single function in `new_code`
    (same name required; decorators and spacing kept from the original)."""
    try:
        new_defs = [s for s in cst.parse_module(new_code).body if isinstance(s, cst.FunctionDef)]
        module, funcs = functions(source)
    except cst.ParserSyntaxError:
        return None
    target = next((n for q, _, _, n in funcs if q == qualname), None)
    if len(new_defs) != 1 or target is None or new_defs[0].name.value != target.name.value:
        return None

    class R(cst.CSTTransformer):
        def leave_FunctionDef(self, original, updated):
            if original is target:
                return new_defs[0].with_changes(leading_lines=original.leading_lines, decorators=original.decorators)
            return updated

    return module.visit(R()).code


def stub_of(func: cst.FunctionDef) -> str:
    """The function with its body replaced by its docstring (if any) and `...`."""
    doc = func.get_docstring(clean=False)
    body = [cst.SimpleStatementLine([cst.Expr(cst.SimpleString(f'"""{doc}"""'))])] if doc else []
    body.append(cst.SimpleStatementLine([cst.Expr(cst.Ellipsis())]))
    return cst.Module(body=[func.with_changes(body=cst.IndentedBlock(body=body), decorators=())]).code


def lm_candidates(
    env: EnvRecord,
    testmap: TestMap,
    cfg: LMConfig,
    strategies: list[str],
    seed: int = 0,
    log: Callable[[str], None] = print,
) -> list[Candidate]:
    """Ask the model about up to `cfg.per_strategy` covered functions per strategy; each usable reply
    (one function of the same name, changed, compiling) is a candidate. An endpoint error costs that
    candidate, not the run: it is logged in one line, and after 3 with no reply yet the strategy stops asking.
    One line per strategy says what became of the replies."""
    from bugforge.factory.generate import source_files

    rng = random.Random(seed)
    sites = []
    for path in source_files(env):
        covered = testmap.covered_lines(path)
        source = (Path(env.repo_dir) / path).read_text()
        for q, a, b, node in functions(source)[1]:
            if covered & set(range(a + 1, b + 1)) and b - a <= 60:
                sites.append((path, q, node, source))
    rng.shuffle(sites)
    client = cfg.client()
    out = []
    for strategy in strategies:
        template = (TEMPLATES / f"{strategy}.txt").read_text()
        tally: Counter = Counter()
        for path, q, node, source in sites[: cfg.per_strategy]:
            if tally["endpoint error"] >= 3 and not tally["candidate"] + tally["unusable reply"]:
                break  # a dead endpoint: stop asking
            code = cst.Module(body=[node]).code
            prompt = template.format(path=path, code=code, stub=stub_of(node))
            try:
                text = ask(client, cfg, prompt, seed)
            except openai.OpenAIError as e:
                tally["endpoint error"] += 1
                log(f"warning: {strategy} {path}::{q}: {cfg.model} failed: {type(e).__name__}: {str(e)[:160]}")
                continue
            cand = candidate_of(strategy, path, q, source, text, cfg.model)
            tally["candidate" if cand else "unusable reply"] += 1
            out += [cand] if cand else []
        log(
            f"{strategy}: asked {cfg.model} about {sum(tally.values())} functions: "
            + ", ".join(f"{n} {k}" for k, n in sorted(tally.items()))
        )
    return out


def ask(client, cfg: LMConfig, prompt: str, seed: int) -> str:
    reply = client.chat.completions.create(
        model=cfg.model,
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
        seed=seed,
        messages=[{"role": "user", "content": prompt}],
    )
    return (reply.choices[0].message.content or "") if reply.choices else ""


def candidate_of(strategy: str, path: str, qualname: str, source: str, reply: str, model: str) -> Candidate | None:
    """The candidate a model's reply makes of function `qualname` in `path`, or None when the reply holds
    no function of that name, changes nothing, or does not compile."""
    new_code = extract_code(reply)
    new = replace_function(source, qualname, new_code) if new_code else None
    if not new or new == source:
        return None
    try:
        compile(new, path, "exec")
    except (SyntaxError, ValueError):
        return None
    patch = file_diff(path, source, new)
    return Candidate(
        patch_id(patch),
        strategy,
        patch,
        [path],
        {path: sorted(changed_lines(source, new))},
        qualname,
        [],
        [],
        {"model": model},
    )
