"""Tool calls read out of model text in each chat-template format (bugforge.agent.toolcalls): pure
functions over strings, no model."""

from __future__ import annotations

import json

import pytest

from bugforge.agent import toolcalls as tc

NAMES = {"bash", "str_replace_editor", "submit"}


def args(calls):
    return [(name, json.loads(a)) for name, a in calls]


# --- hermes / Qwen / SmolLM3: <tool_call>{json}</tool_call> ---------------------------------------------


def test_hermes_single_call_with_text_before():
    text = 'Let me look.\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la"}}\n</tool_call>'
    content, calls = tc.parse(text, tc.HERMES, NAMES)
    assert content == "Let me look."
    assert args(calls) == [("bash", {"command": "ls -la"})]


def test_hermes_parallel_calls_and_no_content():
    text = (
        '<tool_call>\n{"name": "bash", "arguments": {"command": "pwd"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'
    )
    content, calls = tc.parse(text, tc.HERMES, NAMES)
    assert content is None
    assert args(calls) == [("bash", {"command": "pwd"}), ("submit", {})]


def test_hermes_unclosed_call_at_the_end_and_arguments_as_a_string():
    text = '<tool_call>{"name": "bash", "arguments": "{\\"command\\": \\"echo \\\\\\"hi\\\\\\"\\"}"}'
    content, calls = tc.parse(text, tc.HERMES, NAMES)
    assert content is None and args(calls) == [("bash", {"command": 'echo "hi"'})]


def test_hermes_missing_arguments_is_an_empty_object():
    assert args(tc.parse('<tool_call>{"name": "submit"}</tool_call>', tc.HERMES, NAMES)[1]) == [("submit", {})]


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "rm_everything", "arguments": {}}</tool_call>',  # unknown tool
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"</tool_call>',  # JSON cut short
        '<tool_call>{"name": "bash", "arguments": 2}</tool_call>',  # arguments not an object
        '<tool_call>{"name": "bash", "arguments": {}} and more</tool_call>',  # text after the JSON
        "<tool_call>[]</tool_call>",  # no call in the list
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call><tool_call>oops</tool_call>',
    ],
)
def test_hermes_bad_calls_leave_the_whole_text_as_content(text):
    assert tc.parse(text, tc.HERMES, NAMES) == (text, [])


def test_plain_text_is_content():
    assert tc.parse("I would run ls.", tc.HERMES, NAMES) == ("I would run ls.", [])
    assert tc.parse("I would run ls.", tc.LLAMA3, NAMES) == ("I would run ls.", [])


# --- bugforge's own prompt (SmolLM2's format): a list inside <tool_call> ---------------------------------


def test_bugforge_list_in_tool_call_tags():
    text = (
        '<tool_call>[{"name": "bash", "arguments": {"command": "ls"}}, {"name": "submit", "arguments": {}}]</tool_call>'
    )
    content, calls = tc.parse(text, tc.BUGFORGE, NAMES)
    assert content is None and args(calls) == [("bash", {"command": "ls"}), ("submit", {})]


def test_bugforge_text_after_the_call_is_content():
    text = '<tool_call>[{"name": "bash", "arguments": {"command": "ls"}}]</tool_call>\n\nThat lists files.'
    assert tc.parse(text, tc.BUGFORGE, NAMES)[0] == "That lists files."


# --- Llama 3 JSON: {"name": ..., "parameters": ...} ---------------------------------------------------


def test_llama3_parameters_and_python_tag():
    content, calls = tc.parse('<|python_tag|>{"name": "bash", "parameters": {"command": "git diff"}}', tc.LLAMA3, NAMES)
    assert content is None and args(calls) == [("bash", {"command": "git diff"})]


def test_llama3_calls_separated_by_semicolons():
    text = '{"name": "bash", "parameters": {"command": "ls"}}; {"name": "submit", "arguments": {}}'
    content, calls = tc.parse(text, tc.LLAMA3, NAMES)
    assert content is None and [n for n, _ in calls] == ["bash", "submit"]


def test_llama3_json_that_is_not_a_call_is_content():
    text = 'The config is {"name": "x"} and {"a": 1}.'
    assert tc.parse(text, tc.LLAMA3, NAMES) == (text, [])
    unknown = '{"name": "weather", "parameters": {"city": "Paris"}}'
    assert tc.parse(unknown, tc.LLAMA3, NAMES) == (unknown, [])


# --- Mistral: [TOOL_CALLS] [...] and [TOOL_CALLS]name[ARGS]{...} -----------------------------------------


def test_mistral_json_array():
    fmt = tc.mistral('{{- "[TOOL_CALLS] [" }}')
    text = '[TOOL_CALLS] [{"name": "bash", "arguments": {"command": "ls"}, "id": "abcdefghi"}]'
    content, calls = tc.parse(text, fmt, NAMES)
    assert content is None and args(calls) == [("bash", {"command": "ls"})]


def test_mistral_v11_name_args_and_text_before():
    fmt = tc.mistral("[TOOL_CALLS]{{ name }}[ARGS]{{ args }}")
    text = 'I will list.[TOOL_CALLS]bash[ARGS]{"command": "ls"}[TOOL_CALLS]submit[ARGS]{}'
    content, calls = tc.parse(text, fmt, NAMES)
    assert content == "I will list."
    assert args(calls) == [("bash", {"command": "ls"}), ("submit", {})]


def test_mistral_bad_json_is_content():
    text = "[TOOL_CALLS] [{'name': 'bash'}]"
    assert tc.parse(text, "mistral", NAMES) == (text, [])


def test_generic_format_tries_every_parser():
    assert tc.parse('<tool_call>{"name": "submit"}</tool_call>', tc.GENERIC, NAMES)[1] == [("submit", "{}")]
    assert tc.parse('[TOOL_CALLS][{"name": "submit", "arguments": {}}]', tc.GENERIC, NAMES)[1] == [("submit", "{}")]
    assert tc.parse('{"name": "submit", "parameters": {}}', tc.GENERIC, NAMES)[1] == [("submit", "{}")]


# --- detection, prefill, ids, rendering ------------------------------------------------------------


def test_detect_format_from_templates():
    assert tc.detect_format("{{ messages }}", renders_tools=False) is tc.BUGFORGE
    qwen = "{%- if tools %}<tools>{{ tool | tojson }}</tools> <tool_call>\\n{...}\\n</tool_call>{%- endif %}"
    assert tc.detect_format(qwen, True) is tc.HERMES
    llama = '<|start_header_id|>{"name": function name, "parameters": dictionary}<|python_tag|>'
    assert tc.detect_format(llama, True) is tc.LLAMA3
    assert tc.detect_format('{{- "[TOOL_CALLS] [" }}', True).name == "mistral"
    assert tc.detect_format("{% if tools %}{{ tools }}{% endif %}", True) is tc.GENERIC


def test_prefill_by_tool_choice():
    named = {"type": "function", "function": {"name": "bash"}}
    assert tc.prefill(tc.HERMES, "auto") == "" and tc.prefill(tc.HERMES, "none") == ""
    assert tc.prefill(tc.HERMES, "required") == '<tool_call>\n{"name": "'
    assert tc.prefill(tc.HERMES, named) == '<tool_call>\n{"name": "bash", "arguments": '
    assert tc.prefill(tc.LLAMA3, named) == '{"name": "bash", "parameters": '
    assert tc.prefill(tc.mistral("[TOOL_CALLS][ARGS]"), named) == "[TOOL_CALLS]bash[ARGS]"
    assert tc.prefill(tc.mistral('"[TOOL_CALLS] ["'), named) == '[TOOL_CALLS] [{"name": "bash", "arguments": '
    assert tc.prefill(tc.GENERIC, named) == ""
    # a prefilled opening plus what the model writes parses in the same format
    assert tc.parse(tc.prefill(tc.BUGFORGE, named) + '{"command": "ls"}}]</tool_call>', tc.BUGFORGE, NAMES)[1]


def test_call_ids():
    mistral_id = tc.call_id("mistral")
    assert len(mistral_id) == 9 and mistral_id.isalnum()
    calls = tc.openai_tool_calls([("bash", '{"command": "ls"}')], tc.HERMES)
    assert calls[0]["id"].startswith("call_") and calls[0]["type"] == "function"
    assert calls[0]["function"] == {"name": "bash", "arguments": '{"command": "ls"}'}


def test_fallback_messages_render_a_tool_conversation():
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "list"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    ]
    out = tc.fallback_messages(msgs, tools)
    assert out[0]["content"].startswith("Be brief.") and '"name": "bash"' in out[0]["content"]
    assert out[2] == {
        "role": "assistant",
        "content": '<tool_call>[{"name": "bash", "arguments": {"command": "ls"}}]</tool_call>',
    }
    assert out[3] == {"role": "user", "content": "<tool_response>\na.py\n</tool_response>"}
    assert tc.parse(out[2]["content"], tc.BUGFORGE, {"bash"})[1] == [("bash", '{"command": "ls"}')]
    assert tc.fallback_messages([{"role": "user", "content": "x"}], tools)[0]["role"] == "system"


def test_template_messages_give_templates_objects():
    msgs = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"function": {"name": "bash", "arguments": '{"command": "ls"}'}}],
        }
    ]
    out = tc.template_messages(msgs)
    assert out[0]["content"] == "" and out[0]["tool_calls"][0]["function"]["arguments"] == {"command": "ls"}
    assert msgs[0]["content"] is None  # the caller's messages are not changed


def test_args_opening_and_named_prefill_with_schemas():
    from bugforge.agent.tools import TOOL_SCHEMAS

    named = lambda n: {"type": "function", "function": {"name": n}}  # noqa: E731
    assert tc.prefill(tc.BUGFORGE, named("bash"), TOOL_SCHEMAS).endswith('"arguments": {"command": "')
    assert tc.prefill(tc.HERMES, named("str_replace_editor"), TOOL_SCHEMAS).endswith('"arguments": {"command": ')
    assert tc.prefill(tc.LLAMA3, named("submit"), TOOL_SCHEMAS) == '{"name": "submit", "parameters": {}'
    assert tc.args_opening({"type": "object", "properties": {"a": {"type": "integer"}}}) == "{"


def test_complete_call():
    assert not tc.complete_call('<tool_call>[{"name": "bash", "arguments": {"command": "ls"}}', tc.BUGFORGE, NAMES)
    assert tc.complete_call('<tool_call>[{"name": "bash", "arguments": {"command": "ls"}}]', tc.BUGFORGE, NAMES)
    assert not tc.complete_call('{"name": "bash", "parameters": {"command": "l', tc.LLAMA3, NAMES)
    assert tc.complete_call('[TOOL_CALLS]bash[ARGS]{"command": "ls"}', "mistral", NAMES)
