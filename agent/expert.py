"""`ExpertPolicy`: a SCRIPTED demonstrator that knows the gold patch and works the way a person would, in
the agent's own action formats, so its episodes can be recorded as ordinary trajectories and used as SFT
data. It is never a model result: its model id is `expert-scripted-gold-patch` and its trajectories carry
`scripted: true`.

Its episode: run one FAIL_TO_PASS test; read the traceback for a frame in a file the fix touches (else
take the instance's function); `grep -n` for that function; view the code around the change (`cat -n`
in the text format, the editor's `view` with tool calls); make each gold hunk's change (text: `sed -i
'Nc\\...'` for a one-line change, else a python heredoc doing one exact replacement; tool calls:
`str_replace_editor str_replace`), falling back to the whole hunk when a trimmed edit does not match
exactly once; rerun the test; submit."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Generator
from dataclasses import dataclass, field

from unidiff import PatchSet

from bugforge.records import Turn

EXPERT_MODEL = "expert-scripted-gold-patch"
FRAME = re.compile(
    r'(?:^|\n)\s*(?:File "(?:/testbed/)?(?P<f1>[^"]+)", line (?P<l1>\d+), in (?P<n1>\w+)|'
    r"(?P<f2>[\w./-]+\.py):(?P<l2>\d+): in (?P<n2>\w+))"
)


@dataclass
class Edit:
    """One change to a file: replace `old` (lines of the file as it is then) with `new`; `line` is the
    1-based line of the file where `old` starts then."""

    path: str
    old: str
    new: str
    line: int
    at: int = 0
    """The first line the fix changes."""
    full_old: str = ""
    full_new: str = ""
    """The whole hunk (context included): the fallback when `old` does not occur exactly once."""


@dataclass
class FileFix:
    path: str
    edits: list[Edit] = field(default_factory=list)
    lo: int = 1
    hi: int = 1
    """Lines (of the buggy file) the fix spans."""


def plan(gold_patch: str, context: int = 1) -> list[FileFix]:
    """The gold patch as edits per file, each hunk trimmed to its changed lines plus `context` lines."""
    fixes = []
    for pf in PatchSet(gold_patch):
        fix, shift = FileFix(pf.path), 0
        for h in pf:
            lines = list(h)
            changed = [i for i, ln in enumerate(lines) if ln.is_added or ln.is_removed]
            if not changed:
                continue
            a, b = max(0, changed[0] - context), min(len(lines), changed[-1] + 1 + context)
            src = lambda ls: "".join(ln.value for ln in ls if not ln.is_added)  # noqa: E731
            tgt = lambda ls: "".join(ln.value for ln in ls if not ln.is_removed)  # noqa: E731
            before = sum(1 for ln in lines[:a] if not ln.is_added)
            fix.edits.append(
                Edit(
                    pf.path,
                    src(lines[a:b]),
                    tgt(lines[a:b]),
                    h.source_start + before + shift,
                    h.source_start + sum(1 for ln in lines[: changed[0]] if not ln.is_added) + shift,
                    src(lines),
                    tgt(lines),
                )
            )
            removed = [ln.source_line_no for ln in lines if ln.is_removed]
            first = removed[0] if removed else h.source_start + before
            last = removed[-1] if removed else first + 1
            fix.lo = first if not fix.edits[:-1] else min(fix.lo, first)
            fix.hi = max(fix.hi, last)
            shift += h.added - h.removed
        if fix.edits:
            fixes.append(fix)
    return fixes


def _pytest(test: str, args: list[str]) -> str:
    keep = [a for a in args if a not in ("-q", "-x")]
    return shlex.join(["python", "-m", "pytest", "-q", "-x", "--tb=short", *keep, test])


def _sed_one_line(e: Edit) -> str | None:
    """`sed -i 'Nc\\NEW'` when the edit replaces exactly one line by one line that sed can take verbatim."""
    old, new = e.old.splitlines(keepends=True), e.new.splitlines(keepends=True)
    if len(old) != len(new):
        return None
    diff = [i for i, (x, y) in enumerate(zip(old, new)) if x != y]
    if len(diff) != 1:
        return None
    line = new[diff[0]].rstrip("\n")
    if not line.strip() or any(c in line for c in "'\\") or not old[diff[0]].endswith("\n"):
        return None
    return f"sed -i '{e.line + diff[0]}c\\{line}' {shlex.quote(e.path)}"


def _heredoc(path: str, old: str, new: str) -> str:
    return "\n".join(
        [
            "python3 - <<'EOF'",
            "from pathlib import Path",
            f"p = Path({path!r})",
            "s = p.read_text()",
            f"old = {old!r}",
            f"new = {new!r}",
            "assert s.count(old) == 1, s.count(old)",
            "p.write_text(s.replace(old, new))",
            "EOF",
        ]
    )


@dataclass
class ExpertPolicy:
    """SCRIPTED EXPERT, NOT A MODEL: demonstrations from the gold patch (see the module docstring). One
    instance per episode (it keeps the episode's state)."""

    instance: dict
    mode: str = "text"
    model: str = EXPERT_MODEL
    scripted: bool = True

    def __post_init__(self):
        self._script = self._episode()
        self._started = False
        self.last_action: tuple[str, dict] = ("", {})
        """(tool, args) of the last turn, the editor's commands included (what the text format writes as bash)."""

    def complete(self, messages: list[dict], tools: list[dict] | None = None) -> Turn:
        obs = messages[-1]["content"] if messages and messages[-1]["role"] in ("user", "tool") else ""
        try:
            thought, tool, args = self._script.send(obs) if self._started else next(self._script)
        except StopIteration:
            thought, tool, args = "Done.", "submit", {}
        self._started = True
        self.last_action = (tool, args)
        step = sum(1 for m in messages if m["role"] == "assistant")
        if self.mode == "tools":
            call = {"name": tool, "arguments": json.dumps(args)}
            return Turn(
                content=thought,
                tool_calls=[{"id": f"call_{step}", "type": "function", "function": call}],
                finish_reason="tool_calls",
            )
        cmd = "submit" if tool == "submit" else args["command"] if tool == "bash" else self._as_bash(args)
        return Turn(content=f"{thought}\n\n```bash\n{cmd}\n```", finish_reason="stop")

    def _as_bash(self, args: dict) -> str:
        """The editor's commands written as bash, for the text format (which has only bash)."""
        if args["command"] == "view":
            lo, hi = args["view_range"]
            return f"cat -n {shlex.quote(args['path'])} | sed -n '{lo},{hi}p'"
        return args["_bash"]

    def _episode(self) -> Generator[tuple[str, str, dict], str, None]:
        inst = self.instance
        tests = json.loads(inst["FAIL_TO_PASS"]) if isinstance(inst["FAIL_TO_PASS"], str) else inst["FAIL_TO_PASS"]
        test_cmd = _pytest(tests[0], list(inst.get("pytest_args") or []))
        fixes = plan(inst["patch"])
        obs = yield ("Let me run one of the failing tests to see the failure.", "bash", {"command": test_cmd})
        frames = [(m["f1"] or m["f2"], int(m["l1"] or m["l2"]), m["n1"] or m["n2"]) for m in FRAME.finditer(obs or "")]
        for fix in fixes:
            hit = [f for f in frames if fix.path.endswith(f[0]) or f[0].endswith(fix.path)]
            func = hit[-1][2] if hit else (inst.get("function") or "").split(".")[-1] if len(fixes) == 1 else ""
            lo = fix.lo
            if func:
                why = (
                    f"The traceback goes through `{func}` in {fix.path} (line {hit[-1][1]})."
                    if hit
                    else f"The failure points at `{func}`; it is defined in {fix.path}."
                )
                obs = yield (
                    f"{why} Let me find where it starts.",
                    "bash",
                    {
                        "command": f"grep -nE {shlex.quote('(def|class) ' + func + chr(92) + 'b')} {shlex.quote(fix.path)}"
                    },
                )
                found = [int(n) for n in re.findall(r"^(\d+):", obs or "", re.M)]
                before = [n for n in found if n <= fix.lo]
                if before and fix.lo - before[-1] <= 40:
                    lo = before[-1]
            view = [max(1, min(lo, fix.lo - 3)), fix.hi + 3]
            yield (
                f"Let me look at the code in {fix.path}.",
                "str_replace_editor",
                {"command": "view", "path": fix.path, "view_range": view},
            )
            for e in fix.edits:
                for attempt, (old, new) in enumerate([(e.old, e.new), (e.full_old, e.full_new)]):
                    if attempt and (old, new) == (e.old, e.new):
                        break
                    thought = (
                        f"I see the bug at line {e.at} of {e.path}; fixing it."
                        if not attempt
                        else "That did not match exactly once; I'll replace the whole surrounding block."
                    )
                    sed = _sed_one_line(e) if not attempt else None
                    args = {"command": "str_replace", "path": e.path, "old_str": old, "new_str": new}
                    bash = sed or _heredoc(e.path, old, new)
                    obs = yield (
                        thought,
                        "str_replace_editor",
                        {**args, "_bash": bash} if self.mode == "text" else args,
                    )
                    if not _failed(obs):
                        break
        obs = yield ("Let me rerun the failing test to check the fix.", "bash", {"command": test_cmd})
        yield ("The test passes now; submitting." if "exit code: 0" in (obs or "") else "Submitting.", "submit", {})


def _failed(obs: str) -> bool:
    """Whether an edit's observation says it did not apply (editor error, or a non-zero bash exit)."""
    return (obs or "").startswith("error:") or bool(re.match(r"exit code: [1-9]", obs or ""))


def localized_start(instance: dict, actor, cfg) -> list[dict]:
    """The curriculum's localized-repair stage: the opening messages plus the SCRIPTED expert's localization
    turns (run a failing test, find the function, view the code), carried out in the episode's session
    through the engine's `step`, up to its first edit, which is left to the model. Raises
    engine.SandboxFailure when the session fails."""
    from bugforge.agent.engine import SandboxFailure, step
    from bugforge.agent.tools import TOOL_SCHEMAS

    expert = ExpertPolicy(instance, cfg.mode)
    messages = actor.prompts.messages(instance, cfg.mode)
    tools = TOOL_SCHEMAS if cfg.mode == "tools" else None
    for _ in range(cfg.max_steps):
        turn = expert.complete(messages, tools)
        tool, args = expert.last_action
        if tool == "submit" or (tool == "str_replace_editor" and args.get("command") != "view"):
            break
        s = step(turn, actor, cfg)
        if s.exit_reason == "sandbox_error":
            raise SandboxFailure(s.error)
        messages += s.messages
    return messages
