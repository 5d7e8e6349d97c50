"""Issue 24: the TRL tool environment (`GRPOTrainer(environment_factory=...)`) over bugforge sessions:
the tools act in real containers, the reward is bugforge's grading (partial, SUSPICIOUS -> 0), no session
outlives its episode, and one GRPO step through TRL 1.16's own environment loop with a tiny model calls
the tools, logs the graded reward and changes the weights."""

from __future__ import annotations

import copy
import json
import secrets
from pathlib import Path

import pytest

from bugforge.agent.loop import TASK
from bugforge.engine import client
from bugforge.errors import BugforgeError
from bugforge.sandbox.runtime import OWNER, Runtime, SandboxConfig
from bugforge.training import GRPOTrainConfig, SFTTrainConfig
from bugforge.training.toolenv import BugforgeToolEnv, ToolEnvFactory, prepare_tokenizer, task_dataset

ECHO = {"name": "bash", "arguments": {"command": "echo fixed > NOTES.txt"}}
SUBMIT = {"name": "submit", "arguments": {}}


@pytest.fixture
def runtime():
    """An in-process sandbox whose containers carry an owner label of their own (to count leaks)."""
    rt = Runtime(SandboxConfig(owner=f"toolenv-{secrets.token_hex(4)}"))
    yield rt
    rt.shutdown()


def containers_of(rt: Runtime) -> list:
    return client().containers.list(all=True, filters={"label": f"{OWNER}={rt.config.owner}"})


def test_tools_grading_and_no_leaked_sessions(instances, easy_instance, runtime):
    bug = instances[0]
    factory = ToolEnvFactory([bug, easy_instance], runtime, reward="partial")
    env = factory()
    row = {"prompt": task_dataset([bug])[0]["prompt"], "instance_id": bug["instance_id"]}
    # episode 1: the gold patch through the editor and bash, then submit -> graded resolved
    task = env.reset(**row)
    assert bug["problem_statement"] in task
    assert env.str_replace_editor("create", "gold.diff", file_text=bug["patch"]).startswith("Created gold.diff")
    assert env.bash("git apply gold.diff && rm gold.diff && git status --short").startswith("exit code: 0\n")
    assert env.str_replace_editor("view", bug["files"][0], view_range=[1, 2]).startswith("     1\t")
    assert env.str_replace_editor("str_replace", "nope.py", old_str="x").startswith("error: ")
    assert env.submit().startswith("Submitted")
    assert "the episode is over" in env.bash("ls")  # no tool works after submit
    assert len(containers_of(runtime)) == 0  # the session closed at submit; grading runs apart
    assert env.get_reward() == 1.0
    ep = factory.episodes[-1]
    assert (ep.status, ep.resolved, ep.submitted, ep.tool_calls) == ("RESOLVED_FULL", True, True, 5)
    # episode 2, same environment object (TRL reuses them): a tampered run is SUSPICIOUS -> 0
    env.reset(prompt=row["prompt"], instance_id=easy_instance["instance_id"])
    exit_at_import = f'printf \'import os\\ngetattr(os, "_" + "exit")(0)\\n\' >> {bug["files"][0]}'
    assert env.bash(exit_at_import).startswith("exit code: 0")
    assert env.get_reward() == 0.0  # graded without submit: the diff as it stands
    assert factory.episodes[-1].status == "SUSPICIOUS"
    assert len(containers_of(runtime)) == 0
    # a row that carries a whole instance needs no lookup, and without a prompt reset gives the instructions
    other = BugforgeToolEnv(ToolEnvFactory(sandbox=runtime))
    assert "str_replace_editor" in other.reset(**easy_instance)
    with pytest.raises(BugforgeError, match="unknown to the tool environment"):
        factory().reset(prompt=row["prompt"], instance_id="nope")
    # an episode left open is closed by the factory
    env.reset(**row)
    env.bash("true")
    assert len(containers_of(runtime)) == 2
    factory.close()
    other._factory.close()
    assert len(containers_of(runtime)) == 0 and not runtime.sessions


def chatml_tiny_model(make_tiny_model, path: Path):
    """The tiny random model with ChatML turn tokens and tool-call tags as tokens (as Qwen has), so that
    tool_template auto picks TRL's Qwen2.5 tool template."""
    from bugforge.agent.model import load

    make_tiny_model(path)
    tok, model = load(str(path))
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.add_tokens(["<tool_call>", "</tool_call>"])
    model.resize_token_embeddings(len(tok))
    tok.eos_token = "<|im_end|>"
    model.config.eos_token_id = model.generation_config.eos_token_id = tok.eos_token_id
    return tok, model


def primed(tok, model, instance: dict, path: Path):
    """A few SFT steps so that the first reply to the task is one of two tool calls (write the file /
    submit), in the template's tool-call format: episodes then call tools and their rewards differ."""
    from bugforge.training.sft import IGNORE, train_sft

    env = BugforgeToolEnv(ToolEnvFactory([instance]))
    prompt = task_dataset([instance])[0]["prompt"]
    prompt[-1]["content"] += TASK.format(problem=instance["problem_statement"])  # what reset appends
    tools = [env.bash, env.str_replace_editor, env.submit]  # as TRL lists them: sorted by name
    head = tok.apply_chat_template(prompt, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False)
    examples = []
    for call in (ECHO, ECHO, SUBMIT):
        reply = f"<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>"
        ids = tok(reply, add_special_tokens=False)["input_ids"]
        examples.append((head + ids, [IGNORE] * len(head) + ids))
    train_sft(
        examples, model, tok, SFTTrainConfig(epochs=150, learning_rate=3e-3, output_dir=str(path)), log=lambda m: None
    )


def test_one_grpo_step_through_environment_factory(easy_instance, tmp_path, make_tiny_model, runtime):
    import torch

    from bugforge.training.grpo import train_grpo

    tok, model = chatml_tiny_model(make_tiny_model, tmp_path / "tiny")
    with pytest.raises(BugforgeError, match="cannot be used for tool calls"):
        prepare_tokenizer(copy.deepcopy(tok), model, "own")  # its own template renders no tool calls
    tok = prepare_tokenizer(tok, model, "auto")
    primed(tok, model, easy_instance, tmp_path / "prime")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    cfg = GRPOTrainConfig(
        harness="env",
        num_generations=4,
        max_steps=1,
        learning_rate=5e-3,
        agent_steps=2,
        max_completion_tokens=400,
        save_steps=10,
        seed=0,
        output_dir=str(tmp_path / "grpo"),
    )
    trainer, factory = train_grpo([easy_instance], None, cfg, model=model, tok=tok, sandbox=runtime)
    assert trainer.state.global_step == 1
    eps = factory.episodes
    assert len(eps) == 4 and sum(e.tool_calls >= 1 for e in eps) >= 3  # episodes called the tools
    # the rewards are the grading: an applied patch resolves the easy task, an empty one does not
    for e in eps:
        assert e.reward == (1.0 if e.resolved else 0.0)
        assert e.status == ("RESOLVED_FULL" if e.patch.strip() else "EMPTY_PATCH")
    assert {e.reward for e in eps} == {0.0, 1.0}  # the group's rewards differ
    rows = [json.loads(line) for line in (tmp_path / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1]
    mean = sum(e.reward for e in eps) / 4
    assert rows[0]["reward"] == pytest.approx(mean)  # TRL's reward is the graded one...
    assert rows[0]["rewards/BugforgeToolEnv/mean"] == pytest.approx(mean)  # ...from get_reward
    assert rows[0]["resolve_rate"] == pytest.approx(mean) and rows[0]["tools/call_frequency"] > 0
    after = model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)  # weights changed
    assert len(containers_of(runtime)) == 0 and not runtime.sessions  # every session closed
    assert (tmp_path / "grpo" / "final" / "chat_template.jinja").exists() or (
        "tool_call" in json.loads((tmp_path / "grpo" / "final" / "tokenizer_config.json").read_text())["chat_template"]
    )
