"""Issue 36: one episode engine, so the same actions get the same observations in all three paths that run
episodes: `run-agent` (agent.run.episode), GRPO's rollout_func (training.grpo.SWERollout) and the TRL tool
environment (training.toolenv). Real containers; the actions come from SCRIPTED policies that know them
(not models). The actions cover a clipped long output, a timeout note, a failing command, and the editor."""

from __future__ import annotations

import json

import pytest

from bugforge.agent import AgentConfig
from bugforge.records import Turn
from bugforge.sandbox.runtime import Runtime
from bugforge.training import GRPOTrainConfig

COMMANDS = [
    "python3 -c \"print('x' * 20000)\"",  # longer than observation_chars: clipped in the middle
    "sleep 5; echo late",  # past command_timeout: the timeout note
    "ls /nonexistent",  # exit code 2
    "echo fixed > NOTES.txt && git status --short",
]
EDIT = {"command": "view", "path": "NOTES.txt"}
LIMITS = dict(command_timeout=1, observation_chars=3000)


class ScriptedActions:
    """SCRIPTED, NOT A MODEL: replies with `COMMANDS` (text: ```bash blocks; tools: bash calls, then an editor
    view), then submits."""

    model = "scripted-actions"

    def __init__(self, mode: str):
        self.mode, self.i = mode, 0

    def complete(self, messages, tools=None) -> Turn:
        acts = [("bash", {"command": c}) for c in COMMANDS] + (
            [("str_replace_editor", EDIT)] if self.mode == "tools" else []
        )
        name, args = acts[self.i] if self.i < len(acts) else ("submit", {})
        self.i += 1
        if self.mode == "text":
            return Turn(content=f"```bash\n{'submit' if name == 'submit' else args['command']}\n```")
        call = {"id": f"c{self.i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        return Turn(content="", tool_calls=[call])


class ScriptedGenerator:
    """SCRIPTED, NOT A MODEL: the rollout's generator, replying with the token ids of ScriptedActions' texts."""

    def __init__(self, tok):
        self.tok, self.policy = tok, ScriptedActions("text")

    def generate(self, ids, max_new, temperature):
        new = self.tok.encode(self.policy.complete([]).content, add_special_tokens=False) + [self.tok.eos_token_id]
        return new, [-1.0] * len(new)


@pytest.fixture(scope="module")
def box():
    rt = Runtime()
    yield rt
    rt.shutdown()


def agent_observations(instance, box, mode) -> list[str]:
    from bugforge.agent.run import episode

    t = episode(
        box, instance, make_policy=lambda r: ScriptedActions(mode), config=AgentConfig(mode=mode, **LIMITS), grade=False
    )
    assert t.exit_reason == "submitted", t.error
    seen, after = [], False
    for m in t.messages:
        after = after or m["role"] == "assistant"
        if after and m["role"] in ("user", "tool"):
            seen.append(m["content"])
    return seen


def test_same_actions_same_observations_in_all_three_paths(instances, box, tmp_path, make_tiny_model):
    from bugforge.agent.model import load
    from bugforge.training.grpo import SWERollout
    from bugforge.training.rollout import prompt_messages
    from bugforge.training.toolenv import ToolEnvFactory, task_dataset

    inst = instances[0]
    # 1. run-agent, both action formats
    text = agent_observations(inst, box, "text")
    tools = agent_observations(inst, box, "tools")
    assert len(text) == len(COMMANDS) and len(tools) == len(COMMANDS) + 1
    assert "characters cut" in text[0] and len(text[0]) < 3100
    assert "[the command ran past 1 s and was interrupted]" in text[1]
    assert text[2].startswith("exit code: 2\n") and text[3].startswith("exit code: 0\n")
    assert tools[: len(COMMANDS)] == text
    assert tools[-1] == "     1\tfixed"
    # 2. GRPO's rollout_func (text actions through the token policy)
    tok, _ = load(str(make_tiny_model(tmp_path / "tiny")))
    cfg = GRPOTrainConfig(
        agent_steps=10, turn_tokens=256, max_completion_tokens=100_000, output_dir=str(tmp_path / "g"), **LIMITS
    )
    rollout = SWERollout([inst], tok, cfg, box, generator=ScriptedGenerator(tok))
    rollout([prompt_messages(inst, cfg)], None)
    ep = rollout.episodes[0]
    assert ep.exit_reason == "submitted" and ep.observations == text
    for (a, b), obs in zip(ep.env_segments, text):  # and those are the tokens the model was trained on
        assert obs in tok.decode(ep.completion_ids[a:b])
    # 3. the TRL tool environment (TRL calls the tools; here the script does)
    factory = ToolEnvFactory([inst], box, **LIMITS)
    try:
        env = factory()
        env.reset(**task_dataset([inst])[0])
        got = [env.bash(c) for c in COMMANDS] + [env.str_replace_editor(**EDIT)]
        env.submit()
        assert got == tools
    finally:
        factory.close()
