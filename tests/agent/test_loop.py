"""The agent loop (bugforge.agent.loop) with a scripted policy over an in-process FAKE session: both action
formats, format errors, the limits, submit, and what reaches the trajectory. No Docker here: the fake has
the session interface the loop and the editor use (run, read, write, list, diff); the same loop on real
sandboxes is tested in test_agent.py."""

from __future__ import annotations

import difflib
import json

import pytest

from bugforge.agent import AgentConfig, run_episode
from bugforge.agent.policy import PolicyError
from bugforge.errors import BugforgeError
from bugforge.records import Turn
from bugforge.sandbox.shell import RunResult

INSTANCE = {"instance_id": "fake.1", "problem_statement": "add() subtracts"}


class FakeSession:
    """An in-process stand-in for a sandbox session: files in a dict, a shell that answers `echo` and
    `cat`, and scripted results for other commands. `diff()` is the files' changes, as a patch."""

    def __init__(self, files: dict[str, str], results: dict[str, RunResult] | None = None):
        self.start, self.files, self.results = dict(files), dict(files), results or {}
        self.commands: list[tuple[str, float | None]] = []
        self.diff_error: str | None = None

    def run(self, command: str, timeout: float | None = None) -> RunResult:
        self.commands.append((command, timeout))
        if command in self.results:
            return self.results[command]
        if command.startswith("echo "):
            return RunResult(command[5:] + "\n", 0)
        if command.startswith("cat ") and command[4:] in self.files:
            return RunResult(self.files[command[4:]], 0)
        return RunResult(f"bash: {command.split()[0]}: command not found\n", 127)

    def read(self, path: str, max_bytes: int = 1 << 20) -> str:
        if any(p.startswith(path.rstrip("/") + "/") for p in self.files):
            raise BugforgeError(f"{path}: [Errno 21] Is a directory")
        if path not in self.files:
            raise BugforgeError(f"{path}: [Errno 2] No such file or directory")
        return self.files[path][:max_bytes]

    def write(self, path: str, content: str) -> None:
        self.files[path] = content

    def list(self, path: str = ".") -> list[dict]:
        under = [p[len(path) + 1 :] for p in self.files if p.startswith(path + "/")]
        return [{"name": n.split("/")[0], "dir": "/" in n} for n in sorted(set(under))]

    def diff(self) -> str:
        if self.diff_error:
            raise BugforgeError(self.diff_error)
        return "".join(
            "".join(difflib.unified_diff(self.start.get(p, "").splitlines(True), text.splitlines(True), p, p))
            for p, text in sorted(self.files.items())
            if self.start.get(p) != text
        )


@pytest.fixture
def box():
    return FakeSession({"calc/ops.py": "def add(a, b):\n    return a - b\n"})


def bash(command: str) -> str:
    return f"Let me run this.\n```bash\n{command}\n```"


def calls(*pairs, ids=None) -> Turn:
    """A turn of tool calls: (name, arguments) pairs; a dict of arguments becomes JSON."""
    tcs = [
        {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": n, "arguments": a if isinstance(a, str) else json.dumps(a)},
        }
        for i, (n, a) in enumerate(pairs)
    ]
    return Turn(content="", tool_calls=tcs)


def test_text_format_runs_commands_and_submits(box, scripted):
    t = run_episode(INSTANCE, scripted([bash("echo hi"), bash("cat calc/ops.py"), bash("submit")]), box)
    assert t.exit_reason == "submitted" and t.instance_id == "fake.1" and t.model == "scripted-test-policy"
    assert [c for c, _ in box.commands] == ["echo hi", "cat calc/ops.py"]  # submit is not a command
    assert box.commands[0][1] == AgentConfig().command_timeout
    assert [s["tool"] for s in t.steps] == ["bash", "bash"] and t.steps[0]["input"] == {"command": "echo hi"}
    assert t.steps[0]["output"] == "exit code: 0\nhi\n" and t.steps[0]["exit_code"] == 0
    assert [m["role"] for m in t.messages] == ["system", "user"] + ["assistant", "user"] * 2 + ["assistant"]
    assert "exactly one ```bash code block" in t.messages[0]["content"]
    assert t.messages[1]["content"] == "Fix this issue:\n\nadd() subtracts\n"
    assert t.messages[5]["content"] == "exit code: 0\ndef add(a, b):\n    return a - b\n"
    assert len(t.turns) == 3 and t.patch == "" and t.error == ""


def test_tool_calls_edit_files_and_the_patch_is_the_diff(box, scripted):
    fix = {"command": "str_replace", "path": "calc/ops.py", "old_str": "a - b", "new_str": "a + b"}
    replies = [
        calls(("bash", {"command": "echo looking"}), ("str_replace_editor", {"command": "view", "path": "calc"})),
        calls(("str_replace_editor", fix)),
        calls(("submit", ""), ("bash", {"command": "echo never"})),  # nothing after submit runs
    ]
    t = run_episode(INSTANCE, scripted(replies), box, AgentConfig(mode="tools"))
    assert t.exit_reason == "submitted" and [c for c, _ in box.commands] == ["echo looking"]
    assert "str_replace_editor" in t.messages[0]["content"]
    tool_msgs = [m for m in t.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c0", "c1", "c0"]
    assert tool_msgs[0]["content"] == "exit code: 0\nlooking\n" and tool_msgs[1]["content"] == "ops.py"
    assert tool_msgs[2]["content"].startswith("Edited calc/ops.py.")
    assert all("tool_calls" in m for m in t.messages if m["role"] == "assistant")
    assert [s["tool"] for s in t.steps] == ["bash", "str_replace_editor", "str_replace_editor"]
    assert box.files["calc/ops.py"] == "def add(a, b):\n    return a + b\n"
    assert "-    return a - b\n+    return a + b\n" in t.patch and t.patch == box.diff()


def test_tool_errors_are_observations_and_the_episode_goes_on(box, scripted):
    replies = [
        calls(("str_replace_editor", {"command": "str_replace", "path": "calc/ops.py", "old_str": "zzz"})),
        calls(("str_replace_editor", {"command": "view", "path": "nope.py"})),
        calls(("submit", "{}")),
    ]
    t = run_episode(INSTANCE, scripted(replies), box, AgentConfig(mode="tools"))
    assert t.exit_reason == "submitted"
    assert t.steps[0]["output"].startswith("error: old_str was not found in calc/ops.py")
    assert t.steps[1]["output"] == "error: nope.py: [Errno 2] No such file or directory"
    assert t.steps[0]["exit_code"] is None and t.patch == ""


@pytest.mark.parametrize(
    "mode,bad,why",
    [
        ("text", "I think the bug is in add.", "found 0"),
        ("text", bash("ls") + "\n" + bash("pwd"), "found 2"),
        ("text", "```bash\n\n```", "is empty"),
        ("tools", Turn(content="I will look first."), "Call one of the tools"),
        ("tools", calls(("rm_rf", {})), "Unknown tool 'rm_rf'"),
        ("tools", calls(("bash", "{not json")), "not valid JSON"),
        ("tools", calls(("bash", {"cmd": "ls"})), "string argument `command`"),
    ],
)
def test_format_errors_end_the_episode_after_the_limit(box, scripted, mode, bad, why):
    t = run_episode(INSTANCE, scripted([bad]), box, AgentConfig(mode=mode, max_format_errors=3))
    assert t.exit_reason == "format_errors" and len(t.turns) == 3 and t.steps == [] and box.commands == []
    errors = [m["content"] for m in t.messages if m["content"].startswith("Format error: ")]
    assert len(errors) == 3 and all(why in e for e in errors) and t.messages[-1]["role"] == "user"


def test_a_valid_action_resets_the_format_error_count(box, scripted):
    replies = ["no block", "no block", bash("echo ok"), "no block", "no block", bash("submit")]
    t = run_episode(INSTANCE, scripted(replies), box, AgentConfig(max_format_errors=3))
    assert t.exit_reason == "submitted" and len(t.turns) == 6 and len(t.steps) == 1


def test_step_limit_counts_turns(box, scripted):
    t = run_episode(INSTANCE, scripted(["no block", bash("echo a")]), box, AgentConfig(max_steps=4))
    assert t.exit_reason == "max_steps" and len(t.turns) == 4 and len(t.steps) == 2  # format errors are steps too
    t = run_episode(INSTANCE, scripted([bash("submit")]), box, AgentConfig(max_steps=1))
    assert t.exit_reason == "submitted"  # the last allowed turn may submit
    t = run_episode(INSTANCE, scripted([bash("submit")]), box, AgentConfig(max_steps=0))
    assert t.exit_reason == "max_steps" and t.turns == []


def test_token_limit_counts_completion_tokens_or_characters(box, scripted):
    """A turn's tokens are its completion token ids, or a quarter of its characters (at least 1)."""
    counted = Turn(content=bash("echo a"), completion_token_ids=list(range(40)))
    t = run_episode(INSTANCE, scripted([counted]), box, AgentConfig(max_tokens=100))
    assert t.exit_reason == "max_tokens" and len(t.turns) == 3 and t.tokens == 120 and len(t.steps) == 3
    t = run_episode(INSTANCE, scripted([bash("echo " + "x" * 395)]), box, AgentConfig(max_tokens=250))
    assert t.exit_reason == "max_tokens" and len(t.turns) == 3 and t.tokens == 3 * (len(bash("echo " + "x" * 395)) // 4)
    t = run_episode(
        INSTANCE, scripted([calls(("bash", {"command": "echo a"}))]), box, AgentConfig("tools", max_tokens=2)
    )
    assert t.exit_reason == "max_tokens" and t.tokens == 2  # an empty text turn counts 1


def test_timeouts_truncation_and_long_output_reach_the_model(scripted):
    long = "".join(f"line {i}\n" for i in range(2000))
    s = FakeSession(
        {},
        {
            "sleep 99": RunResult("partial\n", None, timed_out=True),
            "yes": RunResult("y\n" * 10, 0, truncated=True),
            "seq": RunResult(long, 0),
        },
    )
    cfg = AgentConfig(command_timeout=7, observation_chars=1000)
    t = run_episode(INSTANCE, scripted([bash("sleep 99"), bash("yes"), bash("seq"), bash("submit")]), s, cfg)
    assert s.commands[0] == ("sleep 99", 7)
    assert t.steps[0]["output"] == "exit code: None\npartial\n\n[the command ran past 7 s and was interrupted]"
    assert t.steps[1]["output"].endswith("y\n\n[output truncated]")
    seen = t.messages[-2]["content"]  # what the model was told: clipped in the middle
    assert seen.startswith("exit code: 0\nline 0\n") and seen.endswith("line 1999\n")
    assert f"[... {len(long) - 1000} characters cut ...]" in seen and len(seen) < 1100
    assert len(t.steps[2]["output"]) <= 2000  # the step record keeps at most 2000 characters


def test_a_failing_model_ends_the_episode_with_its_error(box):
    class Dying:
        model = "dying"

        def __init__(self):
            self.n = 0

        def complete(self, messages, tools=None):
            self.n += 1
            if self.n == 2:
                raise PolicyError("Connection refused")
            return Turn(content=bash("echo one"))

    t = run_episode(INSTANCE, Dying(), box)
    assert t.exit_reason == "model_error" and t.error == "Connection refused" and len(t.turns) == 1


def test_seconds_limit_and_a_diff_that_fails(box, scripted):
    t = run_episode(INSTANCE, scripted([bash("echo a")]), box, AgentConfig(max_seconds=0))
    assert t.exit_reason == "max_seconds" and len(t.turns) == 1 and t.seconds >= 0
    box.diff_error = "the session is gone"
    t = run_episode(INSTANCE, scripted([bash("submit")]), box)
    # the patch cannot be known: an infrastructure failure, not an empty submission (training leaves it out)
    assert t.exit_reason == "sandbox_error" and t.patch == "" and t.error == "the session is gone"
