"""The agent loop, kept as an import path: the loop itself is `bugforge.agent.engine.run_episode` (one
engine for run-agent, GRPO's rollouts and the TRL tool environment) and its configuration
`bugforge.agent.config.AgentConfig`. The prompt names below are read from agent/prompts.toml."""

from __future__ import annotations

from bugforge.agent.config import AgentConfig, load_prompts
from bugforge.agent.engine import run_episode

_P = load_prompts()
SYSTEM = _P.system
TEXT_FORMAT = _P.text_format
TOOLS_FORMAT = _P.tools_format
TASK = _P.task

__all__ = ["AgentConfig", "run_episode", "SYSTEM", "TEXT_FORMAT", "TOOLS_FORMAT", "TASK"]
