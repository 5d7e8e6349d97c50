"""The curriculum: a difficulty estimate for every instance from what the factory knows about its bug, a
selection by it (`bugforge train split --max-difficulty`), and the named stages an episode can start at.

The estimate (`estimate(row)`) combines five things, each scaled to 0..1 (0: easy):
- lines changed by the fix (the gold patch's +/- lines; 1 line -> 0, 21+ -> 1),
- files changed (1 -> 0, 3+ -> 1),
- the size of the edit in tokens (the fix's added and removed code; 0 -> 0, 150+ -> 1; a tokenizer's count
  when one is given, else words and punctuation),
- the strategy that made the bug (a prior: an operator swap is local, a removed block or an LM rewrite is not),
- whether the failing tests' failure text (the validation's messages when given, else the problem
  statement, which is written from them) names the buggy function: a named function is already localized.
`score` is their weighted mean, `level` easy (< 1/3) | medium | hard (>= 2/3). Export's own `difficulty`
field (factory.export.difficulty: lines and files only) is kept as it is; this estimate travels in the
rows that `train split` writes, as `difficulty_estimate`.

Stages (`STAGES`, the engine's `AgentConfig.stage` / `GRPOTrainConfig.stage`): `full` starts at the task;
`localized-repair` starts after the scripted expert's localization turns (a failing test run, the function
found, the code viewed: agent.expert.localized_start), so the model's first move is the edit. Metrics and
reports name the stage (`stage` in metrics.jsonl)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass

from bugforge.agent.config import STAGES as STAGE_NAMES

STAGES = {
    "full": "the episode starts at the task: find the bug, edit, check, submit",
    "localized-repair": "the episode starts after the scripted expert's localization turns (failing test run, "
    "function found, code viewed): the model's first move is the edit",
}
assert tuple(STAGES) == STAGE_NAMES
STRATEGY_PRIOR = {
    # one token or one expression changes in place
    **dict.fromkeys(["op_change", "op_swap", "flip_operators", "op_change_const", "off_by_one", "swap_args"], 0.1),
    **dict.fromkeys(["change_return", "wrong_default", "op_break_chains", "ctrl_invert_if"], 0.3),
    # a statement or block is gone or moved: the fix has to be written, not flipped
    **dict.fromkeys(["remove_assign", "remove_cond", "remove_assert", "remove_raise", "remove_except"], 0.5),
    **dict.fromkeys(["remove_loop", "remove_wrapper", "ctrl_shuffle", "history"], 0.6),
    **dict.fromkeys(["class_rm_base", "class_rm_funcs", "class_shuffle_funcs", "lm_modify"], 0.7),
    **dict.fromkeys(["lm_rewrite", "combine"], 0.9),
}
WEIGHTS = {"lines": 0.25, "files": 0.15, "tokens": 0.25, "strategy": 0.2, "traceback": 0.15}
TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass
class Difficulty:
    score: float
    """0 (easiest) .. 1, the weighted mean of the parts."""
    level: str
    """easy | medium | hard."""
    lines_changed: int
    files_changed: int
    edit_tokens: int
    strategy: str
    traceback_names_function: bool | None
    """None: the instance names no function."""


def _changed(patch: str) -> tuple[list[str], int]:
    lines = [l[1:] for l in patch.splitlines() if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    files = sum(1 for l in patch.splitlines() if l.startswith("+++ "))
    return lines, files


def estimate(
    row: dict, failure_text: str | None = None, count_tokens: Callable[[str], int] | None = None
) -> Difficulty:
    """The difficulty of an instance (a dataset row with its gold `patch`); see the module docstring."""
    lines, files_in_patch = _changed(row.get("patch") or "")
    files = len(row.get("files") or []) or files_in_patch or 1
    text = "\n".join(lines)
    tokens = count_tokens(text) if count_tokens else len(TOKEN.findall(text))
    func = (row.get("function") or "").split(".")[-1]
    named = None
    if func:
        seen = failure_text if failure_text is not None else row.get("problem_statement") or ""
        named = bool(re.search(rf"\b{re.escape(func)}\b", seen))
    strategy = row.get("strategy") or ""
    parts = {
        "lines": min(1.0, max(0, len(lines) - 1) / 20),
        "files": min(1.0, (files - 1) / 2),
        "tokens": min(1.0, tokens / 150),
        "strategy": STRATEGY_PRIOR.get(strategy.split("+")[0] if "+" in strategy else strategy, 0.5),
        "traceback": 0.5 if named is None else 0.0 if named else 1.0,
    }
    score = round(sum(WEIGHTS[k] * v for k, v in parts.items()), 4)
    level = "easy" if score < 1 / 3 else "medium" if score < 2 / 3 else "hard"
    return Difficulty(score, level, len(lines), files, tokens, strategy, named)


def annotate(rows: list[dict], messages: dict[str, str] | None = None) -> list[dict]:
    """The rows, each with `difficulty_estimate` (the Difficulty as a dict). `messages`: instance id -> the
    failing tests' failure text (validation records), when known."""
    return [{**r, "difficulty_estimate": asdict(estimate(r, (messages or {}).get(r["instance_id"])))} for r in rows]


def select(rows: list[dict], max_score: float | None = None, levels: list[str] | None = None) -> list[dict]:
    """The rows at most `max_score` difficult (and of one of `levels`, if given), easiest first."""
    est = [(r, r.get("difficulty_estimate") or asdict(estimate(r))) for r in rows]
    keep = [
        (r, d)
        for r, d in est
        if (max_score is None or d["score"] <= max_score) and (not levels or d["level"] in levels)
    ]
    return [r for r, _ in sorted(keep, key=lambda x: x[1]["score"])]
