"""The agent's tools and how replies are parsed into actions.

Tools: `bash` (one command in the session's persistent shell), `str_replace_editor` (view with line
numbers, create, str_replace, insert, undo_edit; SWE-agent's editor), `submit`. Two action formats:
native tool calls, or plain text with exactly one fenced ```bash block per reply (mini-swe-agent's
format, for models without tool calling) where the command `submit` submits."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from bugforge.errors import BugforgeError

SUBMIT = "submit"
TOOL_SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run one bash command in the repository (cwd and variables persist).",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "str_replace_editor",
            "description": "View, create and edit files. view: file with line numbers (or a directory listing); "
            "create: a new file; str_replace: replace old_str, which must occur exactly once; "
            "insert: new_str after line insert_line; undo_edit: revert the last edit of path.",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "undo_edit"]},
                    "path": {"type": "string"},
                    "file_text": {"type": "string"},
                    "old_str": {"type": "string"},
                    "new_str": {"type": "string"},
                    "insert_line": {"type": "integer"},
                    "view_range": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["command", "path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "submit",
            "description": "Submit the current changes as the final answer.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]
FENCE = re.compile(r"```(?:bash|sh|shell)?[ \t]*\n(.*?)```", re.S)


@dataclass
class Action:
    tool: str
    args: dict = field(default_factory=dict)
    call_id: str | None = None


class FormatError(ValueError):
    """The reply could not be read as an action; the message is what the model is told."""


def parse_text(reply: str) -> Action:
    blocks = FENCE.findall(reply or "")
    if len(blocks) != 1:
        raise FormatError(
            f"Your reply must contain exactly one ```bash code block (found {len(blocks)}). "
            "Put one command in it, or the single word `submit` when you are done."
        )
    cmd = blocks[0].strip()
    if not cmd:
        raise FormatError("The ```bash block is empty. Put one command in it.")
    if cmd == SUBMIT:
        return Action(SUBMIT)
    return Action("bash", {"command": cmd})


def parse_tool_calls(tool_calls: list[dict]) -> list[Action]:
    if not tool_calls:
        raise FormatError("Call one of the tools (bash, str_replace_editor, submit).")
    actions = []
    for tc in tool_calls:
        fn = tc.get("function", {})
        name = fn.get("name")
        if name not in ("bash", "str_replace_editor", "submit"):
            raise FormatError(f"Unknown tool {name!r}; the tools are bash, str_replace_editor and submit.")
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except json.JSONDecodeError as e:
            raise FormatError(f"The arguments of {name} are not valid JSON ({e.msg}).")
        if not isinstance(args, dict):
            raise FormatError(f"The arguments of {name} must be a JSON object.")
        if name == "bash" and not isinstance(args.get("command"), str):
            raise FormatError("bash needs a string argument `command`.")
        actions.append(Action(name, args, tc.get("id")))
    return actions


class Editor:
    """SWE-agent's file editor over a sandbox session (in-process or HTTP, same interface)."""

    def __init__(self, session):
        self.session = session
        self.history: dict[str, list[str]] = {}

    def __call__(self, args: dict) -> str:
        cmd, path = args.get("command"), args.get("path")
        if not path:
            raise BugforgeError("str_replace_editor needs `path`")
        if cmd == "view":
            return self.view(path, args.get("view_range"))
        commands = {
            "create": self.create,
            "str_replace": self.str_replace,
            "insert": self.insert,
            "undo_edit": self.undo,
        }
        if cmd not in commands:
            raise BugforgeError(f"unknown editor command {cmd!r}; use view, create, str_replace, insert or undo_edit")
        return commands[cmd](path, args)

    def create(self, path: str, args: dict) -> str:
        if "file_text" not in args:
            raise BugforgeError("create needs `file_text`")
        if self._exists(path):
            raise BugforgeError(f"{path} already exists; use str_replace to change it")
        self.session.write(path, args["file_text"])
        return f"Created {path}."

    def str_replace(self, path: str, args: dict) -> str:
        old, new = args.get("old_str"), args.get("new_str", "")
        if not old:
            raise BugforgeError("str_replace needs a non-empty `old_str`")
        text = self.session.read(path)
        n = text.count(old)
        if n != 1:
            raise BugforgeError(
                f"old_str occurs {n} times in {path}; it must occur exactly once "
                "(add surrounding lines to make it unique)"
                if n
                else f"old_str was not found in {path}; view the file and copy the text exactly"
            )
        self.history.setdefault(path, []).append(text)
        self.session.write(path, text.replace(old, new, 1))
        return f"Edited {path}.\n" + self._snippet(text.replace(old, new, 1), text.index(old), new)

    def insert(self, path: str, args: dict) -> str:
        line = args.get("insert_line")
        text = self.session.read(path)
        lines = text.splitlines(keepends=True)
        if not isinstance(line, int) or not 0 <= line <= len(lines):
            raise BugforgeError(f"insert_line must be between 0 and {len(lines)}")
        new = args.get("new_str", "")
        self.history.setdefault(path, []).append(text)
        self.session.write(
            path, "".join(lines[:line]) + new + ("" if new.endswith("\n") else "\n") + "".join(lines[line:])
        )
        return f"Inserted after line {line} of {path}."

    def undo(self, path: str, args: dict) -> str:
        if not self.history.get(path):
            raise BugforgeError(f"no edit of {path} to undo")
        self.session.write(path, self.history[path].pop())
        return f"Reverted the last edit of {path}."

    def _exists(self, path: str) -> bool:
        try:
            self.session.read(path, max_bytes=1)
            return True
        except BugforgeError:
            return False

    def view(self, path: str, view_range=None) -> str:
        try:
            text = self.session.read(path)
        except BugforgeError as e:
            if "Is a directory" not in str(e):
                raise
            return "\n".join(e["name"] + ("/" if e["dir"] else "") for e in self.session.list(path))
        lines = text.splitlines()
        lo, hi = 1, len(lines)
        if view_range:
            lo, hi = int(view_range[0]), (len(lines) if int(view_range[1]) == -1 else int(view_range[1]))
            if not 1 <= lo <= max(hi, 1) <= max(len(lines), 1):
                raise BugforgeError(f"view_range must lie within 1..{len(lines)}")
        return "\n".join(f"{i:6}\t{lines[i - 1]}" for i in range(lo, hi + 1))

    @staticmethod
    def _snippet(text: str, at: int, new: str) -> str:
        start = text.count("\n", 0, at)
        lines = text.splitlines()
        lo, hi = max(0, start - 3), min(len(lines), start + new.count("\n") + 4)
        return "\n".join(f"{i + 1:6}\t{lines[i]}" for i in range(lo, hi))
