"""Tool calls in model text, for the local model server: which format a chat template uses, how to
render a tool conversation for it, what to prefill to force a call, and how to read OpenAI-style
`tool_calls` back out of the model's output. Pure functions over strings and dicts; no model here.

Formats: `hermes` (`<tool_call>{json}</tool_call>`: Hermes, Qwen, SmolLM3), `llama3_json` (a bare
`{"name": ..., "parameters": ...}`, optionally after `<|python_tag|>`), `mistral` (`[TOOL_CALLS] [...]`,
or `[TOOL_CALLS]name[ARGS]{...}` for newer tokenizers), `bugforge` (templates that ignore `tools`:
bugforge writes the tools into the system message and asks for `<tool_call>[...]</tool_call>`, the
format SmolLM2 was tuned on), and `json` (a template that renders tools in a format not known here:
every parser is tried). docs/agent.md describes the choices."""

from __future__ import annotations

import json
import re
import secrets
import string
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolFormat:
    name: str
    """hermes | llama3_json | mistral | bugforge | json."""
    opening: str = ""
    """Text that starts a call (prefilled for tool_choice "required"); empty: none known."""
    named: str = ""
    """Text that starts a call of one named function, with `{name}` (prefilled for a named tool_choice)."""
    markers: tuple[str, ...] = ()
    """Strings the parser needs; they may be special tokens, so the decoded text must keep them."""


HERMES = ToolFormat(
    "hermes",
    '<tool_call>\n{"name": "',
    '<tool_call>\n{{"name": "{name}", "arguments": ',
    ("<tool_call>", "</tool_call>"),
)
BUGFORGE = ToolFormat(
    "bugforge",
    '<tool_call>[{"name": "',
    '<tool_call>[{{"name": "{name}", "arguments": ',
    ("<tool_call>", "</tool_call>"),
)
LLAMA3 = ToolFormat("llama3_json", '{"name": "', '{{"name": "{name}", "parameters": ', ("<|python_tag|>",))
GENERIC = ToolFormat("json", markers=("<tool_call>", "</tool_call>", "[TOOL_CALLS]", "[ARGS]", "<|python_tag|>"))


def mistral(template: str) -> ToolFormat:
    if "[ARGS]" in template:  # v11+ tokenizers: [TOOL_CALLS]name[ARGS]{...}
        return ToolFormat("mistral", "[TOOL_CALLS]", "[TOOL_CALLS]{name}[ARGS]", ("[TOOL_CALLS]", "[ARGS]"))
    sep = " " if "[TOOL_CALLS] [" in template else ""
    return ToolFormat(
        "mistral",
        f'[TOOL_CALLS]{sep}[{{"name": "',
        f'[TOOL_CALLS]{sep}[{{{{"name": "{{name}}", "arguments": ',
        ("[TOOL_CALLS]",),
    )


def detect_format(template: str | None, renders_tools: bool) -> ToolFormat:
    """The tool format of a chat template. `renders_tools`: whether the template's output changes when
    `tools` are passed (a template that ignores them gets bugforge's own tool prompt)."""
    if not renders_tools or not template:
        return BUGFORGE
    if "[TOOL_CALLS]" in template:
        return mistral(template)
    if "<tool_call>" in template:
        return HERMES
    if "<|python_tag|>" in template or ("<|start_header_id|>" in template and "parameters" in template):
        return LLAMA3
    return GENERIC


def prefill(fmt: ToolFormat, tool_choice, tools: list | None = None) -> str:
    """The text the server writes after the generation prompt before the model continues: for a named
    tool_choice, the format's call opening with the function's name and the opening of its arguments
    (`args_opening`); for "required", the call opening alone (the server picks the name first, see
    docs/agent.md); else "". A format with no known opening gets ""."""
    name = chosen_name(tool_choice)
    if name:
        if not fmt.named:
            return ""
        schema = next(((t.get("function") or t).get("parameters") for t in tools or [] if _name(t) == name), None)
        return fmt.named.format(name=name) + args_opening(schema)
    return fmt.opening if tool_choice == "required" else ""


def args_opening(schema: dict | None) -> str:
    """The start every valid arguments object for `schema` can begin with: `{"KEY": ` for its first
    required property (plus the opening quote when that is a string), `{}` when it has no properties,
    else `{`; "" when the schema is unknown."""
    if not isinstance(schema, dict):
        return ""
    props = schema.get("properties") or {}
    required = [k for k in schema.get("required") or [] if k in props]
    if not props:
        return "{}"
    if not required:
        return "{"
    key = required[0]
    quote = '"' if (props[key] or {}).get("type") == "string" and "enum" not in (props[key] or {}) else ""
    return "{" + json.dumps(key) + ": " + quote


def _name(tool) -> str | None:
    return (tool.get("function") or tool).get("name") if isinstance(tool, dict) else None


def chosen_name(tool_choice) -> str | None:
    """The function named by a tool_choice ({"type": "function", "function": {"name": N}}), else None."""
    if isinstance(tool_choice, dict):
        fn = tool_choice.get("function")
        name = fn.get("name") if isinstance(fn, dict) else tool_choice.get("name")
        return name if isinstance(name, str) and name else None
    return None


def tool_names(tools: list | None) -> set[str]:
    return {_name(t) for t in tools or []} - {None}


# --- rendering ---------------------------------------------------------------------------------------


def _args_obj(arguments):
    """Arguments as a dict for templates (`tojson` them): OpenAI sends a JSON string."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments or "{}")
        except json.JSONDecodeError:
            return arguments
    return arguments if arguments is not None else {}


def template_messages(messages: list[dict]) -> list[dict]:
    """Messages for a template that renders tools itself: content never None, and each tool call's
    arguments an object (HF templates write them with `tojson`)."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("content") is None:
            m["content"] = ""
        if m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                tc = dict(tc)
                fn = dict(tc.get("function") or {})
                fn["arguments"] = _args_obj(fn.get("arguments"))
                tc["function"] = fn
                calls.append(tc)
            m["tool_calls"] = calls
        out.append(m)
    return out


TOOL_PROMPT = """# Tools

You may call one or more functions to do the task. Their signatures, one JSON object per line:
<tools>
{tools}
</tools>

To call functions, reply with a JSON list of calls between <tool_call> and </tool_call>, like this:
<tool_call>[{{"name": "function_name", "arguments": {{"argument_name": "value"}}}}]</tool_call>
The results come back between <tool_response> and </tool_response>."""


def fallback_messages(messages: list[dict], tools: list | None) -> list[dict]:
    """Messages for a template that knows nothing of tools (bugforge's `bugforge` format): the tool
    signatures are appended to the system message (one is added if there is none), assistant tool calls
    become `<tool_call>[...]</tool_call>` text, tool results become user messages in
    `<tool_response>` tags. Without tools, only the conversation is converted."""
    out = []
    for m in messages:
        role, content = m.get("role"), m.get("content")
        text = content if isinstance(content, str) else _text_of(content)
        if role == "assistant" and m.get("tool_calls"):
            calls = [
                {
                    "name": (tc.get("function") or {}).get("name"),
                    "arguments": _args_obj((tc.get("function") or {}).get("arguments")),
                }
                for tc in m["tool_calls"]
            ]
            call_text = "<tool_call>" + json.dumps(calls, ensure_ascii=False) + "</tool_call>"
            out.append({"role": "assistant", "content": (text + "\n" if text else "") + call_text})
        elif role == "tool":
            out.append({"role": "user", "content": f"<tool_response>\n{text}\n</tool_response>"})
        else:
            out.append({"role": role, "content": text})
    if tools:
        sigs = "\n".join(json.dumps(t.get("function") or t, ensure_ascii=False) for t in tools)
        block = TOOL_PROMPT.format(tools=sigs)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": (out[0]["content"] + "\n\n" + block).strip()}
        else:
            out.insert(0, {"role": "system", "content": block})
    return out


def _text_of(content) -> str:
    """OpenAI content parts ([{"type": "text", "text": ...}]) or None as one string."""
    if not content:
        return ""
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


# --- parsing -----------------------------------------------------------------------------------------


class _Invalid(ValueError):
    pass


def _call(obj, names: set[str], arg_keys=("arguments", "parameters")) -> tuple[str, str]:
    """(name, arguments as a JSON string) of one decoded call object, or _Invalid."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise _Invalid("not a call object")
    if obj["name"] not in names:
        raise _Invalid(f"unknown tool {obj['name']!r}")
    args = next((obj[k] for k in arg_keys if k in obj), {})
    if isinstance(args, str):
        try:
            args = json.loads(args or "{}")
        except json.JSONDecodeError:
            raise _Invalid("arguments are not JSON") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise _Invalid("arguments are not an object")
    return obj["name"], json.dumps(args, ensure_ascii=False)


def _decode(text: str):
    """The first JSON value in text and where it ends, ignoring leading blanks (and a ```json fence)."""
    s = text.lstrip()
    s = re.sub(r"^```(?:json)?\s*", "", s)
    value, end = json.JSONDecoder().raw_decode(s)
    return value, len(text) - len(s) + end


def _calls_of(value, names) -> list[tuple[str, str]]:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise _Invalid("empty call list")
    return [_call(v, names) for v in items]


def _hermes(text: str, names: set[str]):
    if "<tool_call>" not in text:
        return None
    calls, rest, pos = [], [], 0
    for m in re.finditer(r"<tool_call>(.*?)(?:</tool_call>|$)", text, re.S):
        rest.append(text[pos : m.start()])
        pos = m.end()
        try:
            value, end = _decode(m.group(1))
        except json.JSONDecodeError:
            raise _Invalid("unparseable JSON in <tool_call>") from None
        if m.group(1)[end:].strip().strip("`").strip():
            raise _Invalid("text after the JSON inside <tool_call>")
        calls += _calls_of(value, names)
    rest.append(text[pos:])
    return calls, "".join(rest)


def _mistral(text: str, names: set[str]):
    if "[TOOL_CALLS]" not in text:
        return None
    head, *parts = text.split("[TOOL_CALLS]")
    calls, tail = [], ""
    for part in parts:
        m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[ARGS\])?", part)
        if m and not part.lstrip().startswith(("[", "{")):  # name[ARGS]{...} or name{...}
            try:
                args, end = _decode(part[m.end() :])
            except json.JSONDecodeError:
                raise _Invalid("unparseable arguments after [TOOL_CALLS]") from None
            calls.append(_call({"name": m.group(1), "arguments": args}, names))
            tail += part[m.end() + end :]
        else:
            try:
                value, end = _decode(part)
            except json.JSONDecodeError:
                raise _Invalid("unparseable JSON after [TOOL_CALLS]") from None
            calls += _calls_of(value, names)
            tail += part[end:]
    return calls, head + tail


def _llama3(text: str, names: set[str]):
    body = text.replace("<|python_tag|>", "")
    calls, rest, i, pos = [], [], 0, 0
    while (i := body.find("{", i)) != -1:
        try:
            value, end = json.JSONDecoder().raw_decode(body, i)
        except json.JSONDecodeError:
            i += 1
            continue
        if isinstance(value, dict) and "name" in value and ({"parameters", "arguments"} & value.keys()):
            calls.append(_call(value, names))
            rest.append(body[pos:i])
            pos = end
        i = end
    if not calls:
        return None
    rest.append(body[pos:])
    return calls, "".join(r for r in rest if r.strip(" \t\n;"))


PARSERS = {"hermes": (_hermes,), "bugforge": (_hermes,), "mistral": (_mistral,), "llama3_json": (_llama3,)}
PARSERS["json"] = (_hermes, _mistral, _llama3)


def parse(text: str, fmt: ToolFormat | str, names: set[str]) -> tuple[str | None, list[tuple[str, str]]]:
    """(content, [(name, arguments JSON string)]) from a model's output in format `fmt`. Content is the
    text outside the calls, stripped, None when empty. A call to a tool not in `names`, or JSON that does
    not parse: no calls, and the whole text is the content."""
    key = fmt if isinstance(fmt, str) else fmt.name
    for parser in PARSERS[key]:
        try:
            found = parser(text, names)
        except _Invalid:
            return text, []
        if found is not None:
            calls, rest = found
            return (rest.strip() or None), calls
    return text, []


def complete_call(text: str, fmt: ToolFormat | str, names: set[str]) -> bool:
    """Whether `text` already holds at least one whole, valid call (generation for a forced call can end)."""
    return bool(parse(text, fmt, names)[1])


def call_id(fmt: ToolFormat | str) -> str:
    """A new tool call id: 9 letters and digits for Mistral templates (they reject others), else call_..."""
    if (fmt if isinstance(fmt, str) else fmt.name) == "mistral":
        return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(9))
    return "call_" + secrets.token_hex(12)


def openai_tool_calls(calls: list[tuple[str, str]], fmt: ToolFormat | str) -> list[dict]:
    return [
        {"id": call_id(fmt), "type": "function", "function": {"name": name, "arguments": args}} for name, args in calls
    ]
