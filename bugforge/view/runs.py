"""Agent runs as the pages show them: trajectories (agent/run.py's trajectories JSONL, one Trajectory a
line) laid out turn by turn, evaluation run reports (sandbox/evaluate.py's MODEL.RUN.json) broken down
by strategy, difficulty and repo and compared two at a time, and training metrics (metrics.jsonl of
training/grpo.py and training/sft.py)."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from bugforge.records import Trajectory, Turn, from_dict
from bugforge.view.jsonl import JsonlIndex, index


@dataclass(frozen=True)
class TrajSummary:
    instance_id: str
    model: str
    exit_reason: str
    turns: int
    steps: int
    tokens: int
    seconds: float
    resolved: bool | None


def summarize_trajectory(d: dict) -> TrajSummary:
    grade = d.get("grade") or {}
    return TrajSummary(
        d["instance_id"],
        d.get("model") or "?",
        d.get("exit_reason") or "-",
        len(d.get("turns") or ()),
        len(d.get("steps") or ()),
        int(d.get("tokens") or 0),
        float(d.get("seconds") or 0.0),
        grade.get("resolved") if isinstance(grade, dict) else None,
    )


def trajectory_index(path: Path) -> JsonlIndex:
    return index(path, summarize_trajectory, "trajectories")


def trajectory(idx: JsonlIndex, line: int) -> Trajectory:
    row = next((r for r in idx.rows if r.line == line), None)
    if row is None:
        raise KeyError(f"no trajectory on line {line} of {idx.path.name}")
    data = idx.read(row)
    known = Trajectory.__dataclass_fields__
    traj = from_dict(Trajectory, {k: v for k, v in data.items() if k in known})
    turn_fields = Turn.__dataclass_fields__
    traj.turns = [Turn(**{k: v for k, v in t.items() if k in turn_fields}) for t in traj.turns]
    return traj


def line_of(idx: JsonlIndex, iid: str) -> int | None:
    for r in idx.rows:
        if r.summary.instance_id == iid:
            return r.line
    return None


@dataclass
class Observation:
    text: str
    tool: str = ""
    input: object = None
    exit_code: int | None = None
    seconds: float | None = None
    format_error: bool = False


@dataclass
class TurnView:
    number: int
    turn: Turn
    action: str
    """The parsed action(s) in words (tool and input), or why none could be parsed."""
    observations: list[Observation] = field(default_factory=list)


def turns(traj: Trajectory) -> list[TurnView]:
    """Each model turn with what followed it: agent/loop.py appends, per turn, the assistant message, then
    either one `Format error: ...` message or one observation per executed action (a step; none for
    submit)."""
    out: list[TurnView] = []
    steps = list(traj.steps)
    assistant = [i for i, m in enumerate(traj.messages) if m.get("role") == "assistant"]
    for n, turn in enumerate(traj.turns):
        view = TurnView(n + 1, turn, "")
        if n < len(assistant):
            start = assistant[n] + 1
            stop = assistant[n + 1] if n + 1 < len(assistant) else len(traj.messages)
            for m in traj.messages[start:stop]:
                text = m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
                if text.startswith("Format error:"):
                    view.observations.append(Observation(text, format_error=True))
                    continue
                step = steps.pop(0) if steps else {}
                view.observations.append(
                    Observation(
                        text, step.get("tool", ""), step.get("input"), step.get("exit_code"), step.get("seconds")
                    )
                )
        parts = [f"{o.tool}: {fmt_input(o.input)}" for o in view.observations if o.tool]
        if any(o.format_error for o in view.observations):
            view.action = "no valid action (format error)"
        elif parts:
            view.action = "\n".join(parts)
        elif n == len(traj.turns) - 1 and traj.exit_reason == "submitted":
            view.action = "submit"
        else:
            view.action = "-"
        out.append(view)
    return out


def fmt_input(value) -> str:
    if isinstance(value, dict) and set(value) == {"command"}:
        return str(value["command"])
    return json.dumps(value, indent=1) if not isinstance(value, str) else value


# ---- evaluation reports ----------------------------------------------------------------------------

STATUSES = ("resolved", "unresolved", "empty patch", "error", "not submitted")


def load_report(path: Path) -> dict:
    data = json.loads(path.read_text())
    missing = {"resolved_ids", "submitted_ids"} - set(data)
    if missing:
        raise ValueError(f"{path.name} is not an evaluation report (no {', '.join(sorted(missing))})")
    return data


def status_of(report: dict, iid: str) -> str:
    if iid in set(report.get("resolved_ids", ())):
        return "resolved"
    if iid in set(report.get("unresolved_ids", ())):
        return "unresolved"
    if iid in set(report.get("empty_patch_ids", ())):
        return "empty patch"
    if iid in set(report.get("error_ids", ())):
        return "error"
    return "not submitted" if iid not in set(report.get("submitted_ids", ())) else "unresolved"


def statuses(report: dict) -> dict[str, str]:
    out = {i: "unresolved" for i in report.get("submitted_ids", ())}
    for key, name in (
        ("unresolved_ids", "unresolved"),
        ("empty_patch_ids", "empty patch"),
        ("error_ids", "error"),
        ("resolved_ids", "resolved"),
    ):
        for i in report.get(key, ()):
            out[i] = name
    return out


def breakdown(report: dict, meta: dict[str, tuple[str, str, str]], which: int) -> list[tuple[str, int, int]]:
    """(value, resolved, submitted) per strategy (which=0), difficulty (1) or repo (2) of the instances
    the report names; `meta` maps instance id -> (strategy, difficulty, repo)."""
    st = statuses(report)
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for iid, s in st.items():
        key = meta.get(iid, ("?", "?", "?"))[which]
        out[key][1] += 1
        out[key][0] += s == "resolved"
    return [(k, a, n) for k, (a, n) in sorted(out.items())]


def compare(a: dict, b: dict) -> tuple[list[tuple[str, str, str]], dict[str, int]]:
    """Rows (instance id, status in a, status in b), flipped ones first, and the counts of flips."""
    sa, sb = statuses(a), statuses(b)
    ids = sorted(set(sa) | set(sb))
    rows = [(i, sa.get(i, "not submitted"), sb.get(i, "not submitted")) for i in ids]
    gained = [r for r in rows if r[1] != "resolved" and r[2] == "resolved"]
    lost = [r for r in rows if r[1] == "resolved" and r[2] != "resolved"]
    same = [r for r in rows if r not in gained and r not in lost]
    counts = {
        "resolved by B only": len(gained),
        "resolved by A only": len(lost),
        "resolved by both": sum(1 for r in same if r[1] == "resolved"),
        "resolved by neither": sum(1 for r in same if r[1] != "resolved"),
    }
    return lost + gained + same, counts


# ---- training metrics -------------------------------------------------------------------------------

CURVES = (
    ("reward", ("reward", "reward_std")),
    ("resolve rate", ("resolve_rate",)),
    ("filtered share", ("filtered_share", "submitted_share")),
    ("tokens", ("tokens", "model_tokens")),
    ("seconds per step: rollout vs update", ("rollout_seconds", "update_seconds")),
    ("loss", ("loss",)),
)


def metrics_index(path: Path) -> JsonlIndex:
    def keep(d: dict) -> dict:
        return {k: v for k, v in d.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}

    return index(path, keep, "metrics")


def curves(idx: JsonlIndex) -> list[tuple[str, dict[str, list[tuple[float, float]]]]]:
    """(title, {series: [(step, value)]}) for each curve with data; the x is `step`, else the row's place
    (SFT restarts `step` each epoch: then the row's place too)."""
    rows = [r.summary for r in idx.rows]
    steps = [r.get("step") for r in rows]
    monotone = all(isinstance(s, (int, float)) for s in steps) and all(a < b for a, b in zip(steps, steps[1:]))
    xs = steps if monotone else list(range(1, len(rows) + 1))
    out = []
    for title, keys in CURVES:
        series = {k: [(x, r[k]) for x, r in zip(xs, rows) if k in r] for k in keys}
        series = {k: v for k, v in series.items() if v}
        if series:
            out.append((title, series))
    return out
