"""The one episode engine: `step` (a reply -> its actions -> their observations -> the messages that go back
to the model) and `run_episode` (the loop: prompt, then step until submit or a limit), behind two small
Protocols, `Policy` and `Session`. Every path that runs episodes goes through here: `bugforge run-agent`
(agent.run, with ChatPolicy / the scripted policies), GRPO's rollout_func (training.rollout, with a
token-keeping policy over the trainer's model) and the TRL tool environment (training.toolenv, whose loop TRL
owns: its tools call `Actor.observe`, the same action -> observation function). So an action gets the same
observation in training and in evaluation; prompts and limits come from `AgentConfig` (agent.config)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from bugforge.agent.config import AgentConfig, Prompts
from bugforge.agent.policy import PolicyError
from bugforge.agent.tools import SUBMIT, TOOL_SCHEMAS, Action, Editor, FormatError, parse_text, parse_tool_calls
from bugforge.errors import BugforgeError
from bugforge.records import Trajectory, Turn

LIMIT_EXITS = ("max_steps", "max_tokens", "max_seconds")
"""Exit reasons of an episode that ran out of budget: its diff is graded like a submission's."""
INFRA_EXITS = ("sandbox_error", "model_error")
"""Exit reasons that say the infrastructure failed, not the policy: such episodes carry no reward signal."""


class Policy(Protocol):
    """Anything that answers a conversation with one assistant turn (ChatPolicy, the scripted policies, the
    rollout's token policy)."""

    def complete(self, messages: list[dict], tools: list[dict] | None = None) -> Turn: ...


class Session(Protocol):
    """A sandbox session: an in-process `sandbox.runtime.Session` or the HTTP client's, same interface."""

    def run(self, command: str, timeout: float | None = None): ...

    def read(self, path: str, max_bytes: int = ...) -> str: ...

    def write(self, path: str, content: str) -> None: ...

    def list(self, path: str = ...) -> list[dict]: ...

    def diff(self) -> str: ...

    def close(self) -> None: ...


class LimitReached(Exception):
    """A policy raises this when it cannot take another turn within its own budget (the rollout's token
    budget): the episode ends with `reason` as its exit reason, like the engine's own limits."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class SandboxFailure(Exception):
    """The session itself failed (a command could not be run at all): an infrastructure failure."""


class Actor:
    """Carries out actions in one session and words what came back: the one action -> observation function."""

    def __init__(self, session: Session, cfg: AgentConfig):
        self.session, self.cfg, self.prompts = session, cfg, cfg.load_prompts()
        self.editor = Editor(session)

    def observe(self, action: Action) -> tuple[str, dict]:
        """(observation, step record) of one bash or editor action. A session that cannot run a bash command
        raises SandboxFailure; an editor request that cannot be done is an `error: ...` observation."""
        t, code, p, cfg = time.monotonic(), None, self.prompts, self.cfg
        if action.tool == "bash":
            try:
                r = self.session.run(action.args["command"], cfg.command_timeout)
            except BugforgeError as e:
                raise SandboxFailure(e.what) from None
            code, out = r.exit_code, r.output
            if r.timed_out:
                out += p.timeout_note.format(timeout=cfg.command_timeout)
            if r.truncated:
                out += p.truncated_note
            out = p.bash_observation.format(exit_code=code, output=p.clip(out, cfg.observation_chars))
        else:
            try:
                out = p.clip(self.editor(action.args), cfg.observation_chars)
            except BugforgeError as e:
                out = p.tool_error.format(error=e.what)
        rec = {"tool": action.tool, "input": action.args, "output": out[:2000], "exit_code": code}
        return out, {**rec, "seconds": round(time.monotonic() - t, 3)}


@dataclass
class Step:
    """What one reply did."""

    messages: list[dict] = field(default_factory=list)
    """The assistant message, then what goes back (observations, or the format error)."""
    observations: list[str] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)
    format_error: bool = False
    exit_reason: str = ""
    """submitted | sandbox_error | "" (the episode goes on)."""
    error: str = ""


def step(turn: Turn, actor: Actor, cfg: AgentConfig) -> Step:
    """One reply -> action(s) -> observation(s) -> messages."""
    msg = {"role": "assistant", "content": turn.content}
    if turn.tool_calls:
        msg["tool_calls"] = turn.tool_calls
    out = Step([msg])
    try:
        actions = parse_tool_calls(turn.tool_calls) if cfg.mode == "tools" else [parse_text(turn.content)]
    except FormatError as e:
        out.format_error = True
        out.messages.append({"role": "user", "content": actor.prompts.format_error.format(error=e)})
        return out
    for action in actions:
        if action.tool == SUBMIT:
            out.exit_reason = "submitted"
            break
        try:
            obs, rec = actor.observe(action)
        except SandboxFailure as e:
            out.exit_reason, out.error = "sandbox_error", str(e)
            break
        out.observations.append(obs)
        out.records.append(rec)
        if cfg.mode == "tools":
            out.messages.append({"role": "tool", "tool_call_id": action.call_id or "", "content": obs})
        else:
            out.messages.append({"role": "user", "content": obs})
    return out


def is_format_error(message: dict, prompts: Prompts) -> bool:
    head = prompts.format_error.split("{", 1)[0]
    return message.get("role") == "user" and bool(head) and message.get("content", "").startswith(head)


def exit_after_step(traj: Trajectory, cfg: AgentConfig, streak: int, t0: float) -> str:
    """The episode's exit reason after a step ("" to go on): too many consecutive format errors, else the
    step's own reason, else the first limit reached (tokens, then wall time)."""
    if cfg.max_format_errors and streak >= cfg.max_format_errors:
        return "format_errors"
    if traj.exit_reason:
        return traj.exit_reason
    if traj.tokens >= cfg.max_tokens:
        return "max_tokens"
    if time.monotonic() - t0 >= cfg.max_seconds:
        return "max_seconds"
    return ""


def take_patch(traj: Trajectory, session: Session) -> None:
    """The episode's patch is the session's diff; a sandbox that cannot give it ends it as sandbox_error."""
    try:
        traj.patch = session.diff()
    except BugforgeError as e:
        traj.exit_reason, traj.error = "sandbox_error", e.what


def run_episode(
    instance: dict, policy: Policy, session: Session, cfg: AgentConfig | None = None, history: list[dict] | None = None
) -> Trajectory:
    """The loop: the opening messages (or `history`, a conversation already under way: the curriculum's
    localized-repair start), then `step` until submit or a limit. The patch is the session's diff, taken at
    every end but a sandbox failure, so an episode that ran out of turns or tokens is graded on its diff."""
    cfg = (cfg or AgentConfig()).check()
    t0 = time.monotonic()
    actor = Actor(session, cfg)
    traj = Trajectory(
        instance_id=instance["instance_id"],
        model=getattr(policy, "model", "?"),
        scripted=bool(getattr(policy, "scripted", False)),
    )
    if history is None and cfg.stage == "localized-repair":
        from bugforge.agent.expert import localized_start

        try:
            history = localized_start(instance, actor, cfg)
        except SandboxFailure as e:
            traj.exit_reason, traj.error, traj.messages = "sandbox_error", str(e), []
            return traj
    traj.messages = list(history) if history is not None else actor.prompts.messages(instance, cfg.mode)
    tools = TOOL_SCHEMAS if cfg.mode == "tools" else None
    streak = 0
    while not traj.exit_reason:
        if len(traj.turns) >= cfg.max_steps:
            traj.exit_reason = "max_steps"
            break
        try:
            turn = policy.complete(traj.messages, tools)
        except LimitReached as e:
            traj.exit_reason = e.reason
            break
        except PolicyError as e:
            traj.exit_reason, traj.error = "model_error", str(e)
            break
        traj.turns.append(turn)
        traj.tokens += len(turn.completion_token_ids) or max(1, len(turn.content) // 4)
        s = step(turn, actor, cfg)
        traj.messages += s.messages
        traj.steps += s.records
        traj.exit_reason, traj.error = s.exit_reason, s.error or traj.error
        streak = streak + 1 if s.format_error else 0
        traj.exit_reason = exit_after_step(traj, cfg, streak, t0)
    if traj.exit_reason != "sandbox_error":
        take_patch(traj, session)
    traj.seconds = round(time.monotonic() - t0, 3)
    return traj
