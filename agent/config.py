"""The episode engine's configuration: `AgentConfig` (limits, action format, observation size, which
prompt file) and `Prompts` (the templates, read from a TOML file: agent/prompts.toml by default), kept out
of the code the way mini-swe-agent keeps its templates in its config files. `bugforge run-agent`, GRPO's
rollout_func (training.rollout, through `GRPOTrainConfig.agent_config()`) and the TRL tool environment all
take their prompts and observation limits from here."""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from pathlib import Path

import tomllib

from bugforge.errors import BugforgeError

PROMPTS_FILE = Path(__file__).with_name("prompts.toml")
MODES = ("text", "tools")
STAGES = ("full", "localized-repair")


@dataclass(frozen=True)
class Prompts:
    """The templates of agent/prompts.toml (each key documented there)."""

    system: str
    text_format: str
    tools_format: str
    task: str
    format_error: str
    bash_observation: str
    timeout_note: str
    truncated_note: str
    clipped: str
    tool_error: str

    def system_prompt(self, mode: str) -> str:
        return self.system.format(format=self.text_format if mode == "text" else self.tools_format)

    def task_prompt(self, instance: dict) -> str:
        return self.task.format(problem=instance["problem_statement"])

    def messages(self, instance: dict, mode: str) -> list[dict]:
        """The episode's opening: the system message and the task."""
        return [
            {"role": "system", "content": self.system_prompt(mode)},
            {"role": "user", "content": self.task_prompt(instance)},
        ]

    def clip(self, text: str, n: int) -> str:
        """`text` with its middle cut when longer than `n` characters (both ends kept)."""
        if len(text) <= n:
            return text
        return text[: n // 2] + self.clipped.format(n=len(text) - n) + text[-n // 2 :]


@functools.lru_cache(maxsize=16)
def load_prompts(path: str = "") -> Prompts:
    """The prompts in `path` (a TOML file with every key of `Prompts`); "" is the bundled agent/prompts.toml."""
    p = Path(path) if path else PROMPTS_FILE
    try:
        data = tomllib.loads(p.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise BugforgeError(f"cannot read the prompt file {p}: {e}", "pass a TOML file like agent/prompts.toml")
    want = {f.name for f in fields(Prompts)}
    missing, unknown = sorted(want - set(data)), sorted(set(data) - want)
    if missing or unknown:
        raise BugforgeError(
            f"prompt file {p}: "
            + "; ".join(
                s
                for s in (missing and f"missing {', '.join(missing)}", unknown and f"unknown {', '.join(unknown)}")
                if s
            ),
            "copy agent/prompts.toml and edit its values",
        )
    return Prompts(**{k: str(data[k]) for k in want})


@dataclass
class AgentConfig:
    """One episode's limits and wording (`bugforge run-agent` takes its defaults from here; GRPO's rollouts get
    one from `GRPOTrainConfig.agent_config()`)."""

    mode: str = "text"
    """text: one ```bash block per reply; tools: native tool calls."""
    max_steps: int = 30
    """Model turns; beyond, the episode ends with exit reason max_steps (its diff is still graded)."""
    max_tokens: int = 50_000
    """Completion tokens over the whole episode (max_tokens)."""
    max_seconds: float = 1800
    """Wall time of the episode (max_seconds)."""
    max_format_errors: int = 3
    """Consecutive replies that are not a valid action before the episode ends (format_errors); 0: no limit."""
    command_timeout: float = 60
    """Seconds a bash command may run before it is interrupted (the observation says so)."""
    observation_chars: int = 8_000
    """An observation longer than this is cut in the middle (`Prompts.clipped` says how much)."""
    prompts: str = ""
    """A prompt file (TOML, every key of agent/prompts.toml); "": the bundled one."""
    stage: str = "full"
    """Curriculum stage. full: the episode starts at the task; localized-repair: it starts after the scripted
    expert's localization turns (run a failing test, find and view the code), so the model's first move is
    the edit (training.curriculum)."""

    def load_prompts(self) -> Prompts:
        return load_prompts(self.prompts)

    def check(self) -> AgentConfig:
        if self.mode not in MODES:
            raise BugforgeError(f"unknown action format {self.mode!r}", f"use one of {', '.join(MODES)}")
        if self.stage not in STAGES:
            raise BugforgeError(f"unknown curriculum stage {self.stage!r}", f"use one of {', '.join(STAGES)}")
        self.load_prompts()
        return self
