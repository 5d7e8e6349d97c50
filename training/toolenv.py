"""A TRL tool environment over a bugforge sandbox session, for `GRPOTrainer(environment_factory=...)`.

`BugforgeToolEnv`'s public methods are the agent's tools (`bash`, `str_replace_editor`, `submit`: the
same semantics and observations as bugforge.agent). `reset(**row)` opens a session from the row's
instance image (started in the background) and returns the task text; `get_reward()` grades the
session's diff in a fresh container with the grading and `reward_of` the rollout_func path uses, then
closes the session. `ToolEnvFactory` is the `environment_factory`: it holds the instances, the sandbox
and the episodes of the current step, and `close()` closes every session still open. How TRL 1.16
drives an environment, and the commands: docs/trl-environment.md."""

from __future__ import annotations

import atexit
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from bugforge.agent.config import AgentConfig
from bugforge.agent.engine import Actor, SandboxFailure
from bugforge.agent.tools import Action
from bugforge.errors import BugforgeError
from bugforge.training.config import TOOL_TEMPLATES
from bugforge.training.rollout import reward_of

log = logging.getLogger("bugforge.training")
CHATML = ("<|im_start|>", "<|im_end|>")


@dataclass
class ToolEpisode:
    """One environment episode, as graded."""

    instance_id: str
    tool_calls: int = 0
    submitted: bool = False
    patch: str = ""
    status: str = ""
    """The grade's status (RESOLVED_FULL, ..., SUSPICIOUS), EMPTY_PATCH, or ERROR (with `error`)."""
    resolved: bool = False
    reward: float = 0.0
    error: str = ""
    infra: bool = False
    """The session or the grading failed: get_reward returns None (out of the group's statistics)."""


class ToolEnvFactory:
    """`environment_factory` for GRPOTrainer: each call returns a new `BugforgeToolEnv` bound to these
    instances (by `instance_id`; a row that carries a whole instance needs none) and this sandbox
    (`bugforge.sandbox.connect(...)`; an in-process Runtime, owned and shut down by `close()`, if none)."""

    def __init__(
        self,
        instances: list[dict] | None = None,
        sandbox=None,
        *,
        reward: str = "binary",
        command_timeout: float = 60,
        observation_chars: int = AgentConfig.observation_chars,
        grade_timeout: float = 600,
        prompts: str = "",
    ):
        if reward not in ("binary", "partial"):
            raise BugforgeError(f"unknown reward {reward!r}", "use binary or partial")
        self.instances = {r["instance_id"]: r for r in instances or []}
        self._sandbox, self._owns_sandbox = sandbox, sandbox is None
        self.reward, self.command_timeout, self.observation_chars = reward, command_timeout, observation_chars
        self.agent_config = AgentConfig(
            mode="tools", command_timeout=command_timeout, observation_chars=observation_chars, prompts=prompts
        ).check()
        """The engine's configuration for the tools: the same observations as `run-agent --format tools`."""
        self.grade_timeout = grade_timeout
        self.envs: list[BugforgeToolEnv] = []
        self.episodes: list[ToolEpisode] = []
        """Episodes graded since the last `begin_step()`."""
        self.last: dict = {}
        """Summary of `episodes` (written to metrics.jsonl by bugforge's trainer)."""
        self.lock = threading.Lock()
        self.pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="toolenv")
        self._t0: float | None = None

    def __call__(self) -> BugforgeToolEnv:
        return BugforgeToolEnv(self)

    @property
    def sandbox(self):
        with self.lock:
            if self._sandbox is None:
                from bugforge.sandbox import connect

                self._sandbox = connect(None)
            return self._sandbox

    def instance(self, row: dict) -> dict:
        iid = row.get("instance_id")
        if iid in self.instances:
            return self.instances[iid]
        if all(k in row for k in ("image", "FAIL_TO_PASS", "PASS_TO_PASS")):
            return row
        raise BugforgeError(
            f"instance {iid!r} of a training row is unknown to the tool environment",
            "give ToolEnvFactory the instances, or train on rows that carry whole instances",
        )

    def begin_step(self) -> None:
        with self.lock:
            self.episodes, self._t0 = [], None

    def _started(self) -> None:
        with self.lock:
            self._t0 = self._t0 or time.monotonic()

    def _graded(self, ep: ToolEpisode) -> None:
        with self.lock:
            self.episodes.append(ep)
            eps = self.episodes
            self.last = {
                "rollout_seconds": round(time.monotonic() - (self._t0 or time.monotonic()), 3),
                "resolve_rate": sum(e.resolved for e in eps) / len(eps),
                "submitted_share": sum(e.submitted for e in eps) / len(eps),
                "env_tool_calls": sum(e.tool_calls for e in eps),
                "statuses": {s: sum(e.status == s for e in eps) for s in {e.status for e in eps}},
            }

    def close(self) -> None:
        """Close every session still open (and the sandbox, if this factory made it)."""
        for env in list(self.envs):
            env._close()
        self.pool.shutdown(wait=True)
        if self._owns_sandbox and self._sandbox is not None and hasattr(self._sandbox, "shutdown"):
            self._sandbox.shutdown()


_default: ToolEnvFactory | None = None


def _default_factory() -> ToolEnvFactory:
    global _default
    if _default is None:
        _default = ToolEnvFactory()
        atexit.register(_default.close)
    return _default


class BugforgeToolEnv:
    """One agent episode at a time in a bugforge sandbox session (reused across episodes by TRL)."""

    def __init__(self, factory: ToolEnvFactory | None = None):
        self._factory = factory or _default_factory()
        self._instance: dict | None = None
        self._pending: Future | None = None
        self._grading: Future | None = None
        self._actor: Actor | None = None
        self._episode: ToolEpisode | None = None
        self._lock = threading.Lock()
        with self._factory.lock:
            self._factory.envs.append(self)  # so that the factory's close() reaches its session

    # --- TRL's environment contract -----------------------------------------------------------
    def reset(self, **row) -> str:
        """Start an episode on the row's instance: a session opens in the background; returns the task
        (the system instructions too when the row has no `prompt`), appended by TRL to the last user message."""
        self._close()
        f = self._factory
        inst = f.instance(row)
        f._started()
        self._instance, self._episode, self._actor = inst, ToolEpisode(inst["instance_id"]), None
        self._pending = f.pool.submit(f.sandbox.create, image=inst["image"])
        prompts = f.agent_config.load_prompts()
        task = prompts.task_prompt(inst)
        return task if "prompt" in row else prompts.system_prompt("tools") + "\n\n" + task

    def get_reward(self) -> float | None:
        """The graded reward of the episode's patch (binary or partial, 0 for SUSPICIOUS and a patch that fails
        to apply); None when the infrastructure failed (the session or the grading: `infra`), which TRL leaves
        out of the group's mean and std."""
        ep = self._episode
        if ep is None:
            return 0.0
        if self._grading is None:
            self._finish()
        try:
            grade = self._grading.result()
            ep.reward = reward_of(grade, self._factory.reward)
            ep.resolved = bool(grade and grade.resolved)
            ep.status = grade.status if grade else ("ERROR" if ep.error else "EMPTY_PATCH")
        except Exception as e:  # noqa: BLE001 - grading infrastructure failed: recorded (infra: out of the group's statistics), no reward
            ep.reward, ep.status, ep.error, ep.infra = 0.0, "ERROR", str(e), True
        self._factory._graded(ep)
        self._episode, self._grading = None, None
        return None if ep.infra else ep.reward

    # --- tools ----------------------------------------------------------------------------------
    def bash(self, command: str) -> str:
        """Run one bash command in the repository at /testbed (the working directory and variables persist).

        Args:
            command: The command line to run.
        """
        return self._observe(Action("bash", {"command": command}))

    def str_replace_editor(
        self,
        command: str,
        path: str,
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        view_range: list[int] | None = None,
    ) -> str:
        """View, create and edit files.

        Args:
            command: The operation (choices: ["view", "create", "str_replace", "insert", "undo_edit"]).
            path: The file (or, for view, directory), relative to /testbed or absolute.
            file_text: create: the content of the new file.
            old_str: str_replace: the text to replace; it must occur exactly once.
            new_str: str_replace: the replacement; insert: the text to insert.
            insert_line: insert: the line after which new_str goes (0: at the top).
            view_range: view: [first, last] line numbers (last -1: to the end).
        """
        args = {"command": command, "path": path, "file_text": file_text, "old_str": old_str, "new_str": new_str}
        args.update(insert_line=insert_line, view_range=view_range)
        return self._observe(Action("str_replace_editor", {k: v for k, v in args.items() if v is not None}))

    def submit(self) -> str:
        """Submit the current changes as the final answer; the episode ends and no tool works after it."""
        try:
            self._session()
        except BugforgeError as e:
            return self._factory.agent_config.load_prompts().tool_error.format(error=e.what)
        self._episode.submitted = True
        self._finish()
        return "Submitted. The changes are being graded; the episode is over."

    # --- internals ------------------------------------------------------------------------------
    def _observe(self, action: Action) -> str:
        """The engine's observation of `action` (agent.engine.Actor); a failed session is an infrastructure
        failure of the episode (its reward is None), told to the model as an error."""
        prompts = self._factory.agent_config.load_prompts()
        try:
            session = self._session()
        except BugforgeError as e:
            if self._episode is not None and not self._episode.submitted and self._pending is not None:
                self._episode.infra, self._episode.error = True, e.what  # the session could not be made
            return prompts.tool_error.format(error=e.what)
        if self._actor is None or self._actor.session is not session:
            self._actor = Actor(session, self._factory.agent_config)
        try:
            return self._actor.observe(action)[0]
        except SandboxFailure as e:
            self._episode.infra, self._episode.error = True, str(e)
            return prompts.tool_error.format(error=e)

    def _session(self):
        if self._episode is None:
            raise BugforgeError("no episode is running", "call reset first")
        if self._episode.submitted or self._pending is None:
            raise BugforgeError("the changes were submitted; the episode is over")
        self._episode.tool_calls += 1
        return self._pending.result()

    def _finish(self) -> None:
        """Take the diff, close the session and start grading (in the background)."""
        ep, inst, f = self._episode, self._instance, self._factory
        try:
            ep.patch = self._pending.result().diff() if self._pending else ""
        except Exception as e:  # noqa: BLE001 - the sandbox failed: recorded in the episode (infra), which is left out
            ep.error, ep.infra = f"no diff: {e}", True
        self._close()
        self._grading = f.pool.submit(_grade, f.sandbox, inst, ep.patch, f.grade_timeout)

    def _close(self) -> None:
        with self._lock:
            pending, self._pending, self._actor = self._pending, None, None
        if pending is None:
            return
        try:
            session = pending.result()
        except Exception:  # noqa: BLE001 - the session never started: nothing to close (the episode recorded why)
            return
        try:
            self._factory.sandbox.close(session.id)
        except Exception as e:  # noqa: BLE001 - clean-up: whatever the backend raised, the session is closed directly
            log.warning("closing session %s through the sandbox failed (%s); closing it directly", session.id, e)
            session.close()


def _grade(sandbox, instance: dict, patch: str, timeout: float):
    """On the sandbox's nodes when it grades (RaySandbox), else on this machine's engine."""
    from bugforge.sandbox.grader import grade_patch

    if not patch.strip():
        return None
    if hasattr(sandbox, "grade"):
        return sandbox.grade(instance, patch, timeout=timeout)
    return grade_patch(instance, patch, timeout=timeout)


def task_dataset(instances: list[dict]):
    """A `datasets.Dataset` for the trainer: a system prompt and an empty user message per instance
    (`reset` appends the task), and the `instance_id` that `reset` receives."""
    from datasets import Dataset

    system = AgentConfig(mode="tools").load_prompts().system_prompt("tools")
    prompt = [{"role": "system", "content": system}, {"role": "user", "content": ""}]
    return Dataset.from_list([{"prompt": prompt, "instance_id": r["instance_id"]} for r in instances])


def prepare_tokenizer(tok, model, tool_template: str = "auto"):
    """Make `tok` render and parse tool calls the way TRL needs. own: the model's template as it is
    (TRL must know it, or the tokenizer carries a response_template); qwen2.5: TRL's Qwen2.5 template
    (ChatML with <tool_call> JSON), for tokenizers with ChatML tokens (SmolLM2, Qwen); auto: own when
    TRL can use it, else qwen2.5."""
    from trl.chat_template_utils import add_response_schema, qwen2_5_chat_template, supports_tool_calling

    if tool_template not in TOOL_TEMPLATES:
        raise BugforgeError(f"unknown tool_template {tool_template!r}", f"use one of {', '.join(TOOL_TEMPLATES)}")
    if tool_template in ("auto", "own") and supports_tool_calling(tok):
        if getattr(tok, "response_template", None) or getattr(tok, "response_schema", None):
            return tok
        try:
            return add_response_schema(tok)
        except ValueError:
            pass
    if tool_template == "own":
        raise BugforgeError(
            "the model's chat template cannot be used for tool calls by TRL (it does not render them, or TRL "
            "cannot parse its replies)",
            'set tool_template = "qwen2.5" (ChatML models) or use a model with a Qwen or Llama 3.1 template',
        )
    vocab = tok.get_vocab()
    if not all(t in vocab for t in CHATML):
        raise BugforgeError(
            "the model's chat template has no tool calls and its tokenizer lacks the ChatML tokens "
            "<|im_start|>/<|im_end|> for the Qwen2.5 tool template",
            "use a model with a tool-calling chat template (Qwen2.5/Qwen3, Llama 3.1) for --harness env",
        )
    tok.chat_template = qwen2_5_chat_template
    end = tok.convert_tokens_to_ids(CHATML[1])
    gc = model.generation_config
    eos = [] if gc.eos_token_id is None else [gc.eos_token_id] if isinstance(gc.eos_token_id, int) else gc.eos_token_id
    if end not in eos:
        gc.eos_token_id = [*eos, end]
    return add_response_schema(tok)
