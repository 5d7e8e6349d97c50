"""The agent: a multi-turn coding agent over any OpenAI-compatible model, acting in a sandbox session.

`run_episode(instance, policy, session, config) -> Trajectory` is the entry point; `agent.run` runs a
dataset (parallel, resumable); `agent.server` serves a local model over the OpenAI API."""

from bugforge.agent.config import AgentConfig, Prompts, load_prompts  # noqa: F401
from bugforge.agent.engine import run_episode  # noqa: F401
from bugforge.agent.expert import EXPERT_MODEL, ExpertPolicy  # noqa: F401
from bugforge.agent.policy import ChatPolicy, OraclePolicy, PolicyError  # noqa: F401
