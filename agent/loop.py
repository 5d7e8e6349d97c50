"""The agent loop: a prompt, then (model turn -> action -> observation) until the model submits or a
limit ends the episode. The patch is the session's diff. Works with any policy (`complete`) and any
sandbox session (in-process or HTTP)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from bugforge.agent.policy import PolicyError
from bugforge.agent.tools import SUBMIT, TOOL_SCHEMAS, Action, Editor, FormatError, parse_text, parse_tool_calls
from bugforge.errors import BugforgeError
from bugforge.records import Trajectory

SYSTEM = """You are a software engineer fixing a bug in the repository at /testbed (your working directory).
Work step by step: look at the code, reproduce the problem, change the source (not the tests), check your fix.
{format}"""
TEXT_FORMAT = """Every reply must contain exactly one ```bash code block with exactly one command; you will see its output.
When the fix is done, reply with a ```bash block containing only the word: submit"""
TOOLS_FORMAT = "Use the tools: bash, str_replace_editor, and submit when the fix is done."
TASK = "Fix this issue:\n\n{problem}\n"


@dataclass
class AgentConfig:
    """Limits of one episode (`bugforge run-agent` takes its defaults from here)."""

    mode: str = "text"
    """text: one ```bash block per reply; tools: native tool calls."""
    max_steps: int = 30
    """Model turns."""
    max_tokens: int = 50_000
    """Completion tokens over the whole episode."""
    max_seconds: float = 1800
    max_format_errors: int = 3
    """Consecutive replies that are not a valid action."""
    command_timeout: float = 60
    observation_chars: int = 8_000


def _clip(text: str, n: int) -> str:
    return (
        text if len(text) <= n else text[: n // 2] + f"\n[... {len(text) - n} characters cut ...]\n" + text[-n // 2 :]
    )


def run_episode(instance: dict, policy, session, cfg: AgentConfig | None = None) -> Trajectory:
    cfg = cfg or AgentConfig()
    t0 = time.monotonic()
    traj = Trajectory(
        instance_id=instance["instance_id"],
        model=getattr(policy, "model", "?"),
        scripted=bool(getattr(policy, "scripted", False)),
    )
    traj.messages = [
        {"role": "system", "content": SYSTEM.format(format=TEXT_FORMAT if cfg.mode == "text" else TOOLS_FORMAT)},
        {"role": "user", "content": TASK.format(problem=instance["problem_statement"])},
    ]
    editor, format_errors = Editor(session), 0
    tools = TOOL_SCHEMAS if cfg.mode == "tools" else None
    while not traj.exit_reason:
        if len(traj.turns) >= cfg.max_steps:
            traj.exit_reason = "max_steps"
            break
        try:
            turn = policy.complete(traj.messages, tools)
        except PolicyError as e:
            traj.exit_reason, traj.error = "model_error", str(e)
            break
        traj.turns.append(turn)
        traj.tokens += len(turn.completion_token_ids) or max(1, len(turn.content) // 4)
        msg = {"role": "assistant", "content": turn.content}
        if turn.tool_calls:
            msg["tool_calls"] = turn.tool_calls
        traj.messages.append(msg)
        try:
            actions = parse_tool_calls(turn.tool_calls) if cfg.mode == "tools" else [parse_text(turn.content)]
            format_errors = 0
        except FormatError as e:
            format_errors += 1
            traj.messages.append({"role": "user", "content": f"Format error: {e}"})
            if format_errors >= cfg.max_format_errors:
                traj.exit_reason = "format_errors"
            continue
        for action in actions:
            if action.tool == SUBMIT:
                traj.exit_reason = "submitted"
                break
            out = _execute(action, session, editor, cfg, traj)
            if cfg.mode == "tools":
                traj.messages.append({"role": "tool", "tool_call_id": action.call_id or "", "content": out})
            else:
                traj.messages.append({"role": "user", "content": out})
        if not traj.exit_reason and traj.tokens >= cfg.max_tokens:
            traj.exit_reason = "max_tokens"
        if not traj.exit_reason and time.monotonic() - t0 >= cfg.max_seconds:
            traj.exit_reason = "max_seconds"
    try:
        traj.patch = session.diff()
    except BugforgeError as e:
        traj.error = traj.error or str(e)
    traj.seconds = round(time.monotonic() - t0, 3)
    return traj


def _execute(action: Action, session, editor: Editor, cfg: AgentConfig, traj: Trajectory) -> str:
    t = time.monotonic()
    code = None
    try:
        if action.tool == "bash":
            r = session.run(action.args["command"], cfg.command_timeout)
            code = r.exit_code
            out = r.output
            if r.timed_out:
                out += f"\n[the command ran past {cfg.command_timeout:.0f} s and was interrupted]"
            if r.truncated:
                out += "\n[output truncated]"
            out = f"exit code: {code}\n{_clip(out, cfg.observation_chars)}"
        else:
            out = _clip(editor(action.args), cfg.observation_chars)
    except BugforgeError as e:
        out = f"error: {e.what}"
    traj.steps.append(
        {
            "tool": action.tool,
            "input": action.args,
            "output": out[:2000],
            "exit_code": code,
            "seconds": round(time.monotonic() - t, 3),
        }
    )
    return out
