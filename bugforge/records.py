"""The typed records that cross stage boundaries. Every record is a dataclass that round-trips
through JSON (`to_json` / `from_json`); JSONL files hold one record per line."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def to_dict(record: Any) -> dict:
    return dataclasses.asdict(record)


def from_dict(cls: type[T], data: dict) -> T:
    """Build `cls` from a dict, refusing unknown keys (a typo in an edited file is an error, not a no-op)."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)} for {cls.__name__}; known: {sorted(names)}")
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            value = data[f.name]
            sub = _NESTED.get((cls.__name__, f.name))
            if sub is not None and isinstance(value, dict):
                value = from_dict(sub, value)
            elif sub is not None and isinstance(value, list):
                value = [from_dict(sub, v) if isinstance(v, dict) else v for v in value]
            kwargs[f.name] = value
    return cls(**kwargs)


def write_json(path: Path, record: Any) -> None:
    """Write atomically: a crash never leaves half a file where a good one was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(to_dict(record) if dataclasses.is_dataclass(record) else record, indent=2) + "\n")
    tmp.replace(path)


def append_jsonl(path: Path, record: Any) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(to_dict(record) if dataclasses.is_dataclass(record) else record) + "\n")
        f.flush()


def read_jsonl(path: Path) -> list[dict]:
    """All complete lines; a torn last line (a killed writer) is skipped, not fatal."""
    rows = []
    if not Path(path).exists():
        return rows
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


@dataclass
class RepairStep:
    """One step of the repair loop: what failed at collection, what was done, and what came of it."""

    problem: str
    """e.g. "tests/test_io.py: ModuleNotFoundError: No module named 'yaml'"."""
    action: str
    """The install command or pytest argument tried, and why that one (e.g. "from extra 'yaml'")."""
    result: str
    """fixed | not fixed | failed: <why> | reverted: <why> (a step that made collection worse, undone);
    a failed or reverted install is not kept in the recipe."""


@dataclass
class ExcludedFile:
    """A test file (or directory) left out of every run because it cannot be collected after repair."""

    path: str
    reason: str
    """The collection error's last line."""


@dataclass
class Recipe:
    """How to install a repository and run its tests. Detected automatically, written next to the
    environment record, and editable: pass the edited file back with --recipe."""

    python: str = "3.11"
    """Python version of the environment (major.minor)."""
    install: list[str] = field(default_factory=list)
    """Shell commands run in /testbed, in order, each its own build step."""
    pytest_args: list[str] = field(default_factory=list)
    """Extra pytest arguments used by every test run (baseline, validation, grading)."""
    test_files: list[str] = field(default_factory=list)
    """Paths (files or directories) handed to pytest; empty means pytest's own discovery."""
    notes: list[str] = field(default_factory=list)
    """Why each choice was made, for the person reading or editing the recipe."""
    repairs: list[RepairStep] = field(default_factory=list)
    """What the repair loop did after the first build, in order (factory/repair.py); its install
    commands are already in `install`, its pytest arguments in `pytest_args`."""
    excluded: list[ExcludedFile] = field(default_factory=list)
    """Test files left out (`--ignore` in `pytest_args`) because they cannot be collected after repair;
    their tests are never labels."""
    as_of: str = ""
    """Period-correct tooling: when set (an ISO date), every `pip install` step resolves with uv as of that
    date (`uv pip install --exclude-newer`), pytest included; empty: the newest releases."""
    resolved: list[str] = field(default_factory=list)
    """What a period-correct build installed (`name==version`, from the image): the resolution, recorded."""


@dataclass
class TestOutcome:
    """One test across the baseline runs."""

    __test__ = False  # not a pytest test class

    outcome: str
    """passed | failed | error | skipped | xfailed | xpassed, as in the first run."""
    duration: float
    """Seconds, the mean over runs."""
    flaky: bool = False
    """True when runs disagreed; a flaky test is never used as a label."""


@dataclass
class EnvRecord:
    """An environment: the image in which a repository's tests run, and what they do there."""

    name: str
    source: str
    """The repository as the user gave it (URL, path, pypi:NAME==VER)."""
    source_commit: str
    """Commit of the source (for sources that are not git repos: of the snapshot)."""
    base_commit: str
    """The single commit at /testbed in the image (and in `repo_dir` on the host)."""
    repo_dir: str
    image: str
    base_image: str
    recipe: Recipe
    tests: dict[str, TestOutcome]
    suite_seconds: float
    """Wall time of one plain baseline run of the whole suite, inside the container."""
    runs: int
    testmap: str
    """Path of the per-test coverage map (see bugforge.testing.testmap)."""
    key: str
    """Hash of (source commit, recipe, base image): equal keys mean an unchanged environment."""
    created_at: str = ""
    history_dir: str | None = None
    """A clone with the source's history (for history-revert bugs), when the source has one."""

    @property
    def passing(self) -> list[str]:
        return sorted(t for t, o in self.tests.items() if o.outcome == "passed" and not o.flaky)

    @property
    def flaky(self) -> list[str]:
        return sorted(t for t, o in self.tests.items() if o.flaky)


_NESTED: dict[tuple[str, str], type] = {
    ("EnvRecord", "recipe"): Recipe,
    ("Recipe", "repairs"): RepairStep,
    ("Recipe", "excluded"): ExcludedFile,
}


def load_env(path: Path) -> EnvRecord:
    data = json.loads(Path(path).read_text())
    tests = {k: TestOutcome(**v) for k, v in data.pop("tests", {}).items()}
    rec = from_dict(EnvRecord, data | {"tests": {}})
    rec.tests = tests
    return rec


@dataclass
class TestRun:
    """What one pytest run inside a container produced, read from bugforge's structured report."""

    __test__ = False  # not a pytest test class

    outcomes: dict[str, str] = field(default_factory=dict)
    """node id -> passed | failed | error | skipped | xfailed | xpassed."""
    durations: dict[str, float] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    """node id -> the failure's location and message (for problem statements)."""
    collect_errors: dict[str, str] = field(default_factory=dict)
    exit_code: int | None = None
    timed_out: bool = False
    running: str | None = None
    """The test that was running when the run was killed, if any."""
    limit: float | None = None
    """The CPU-seconds limit that test ran past, when that is what ended the run (the probe enforces it)."""
    budget: float | None = None
    """The wall-seconds budget the run's tests ran past together, when that is what ended the run."""
    wall: float = 0.0
    log_tail: str = ""
    tamper: list[str] = field(default_factory=list)
    """What the probe's integrity checks found (grading: SUSPICIOUS; docs/security.md)."""
    finished: bool = False
    """Whether pytest's session finished (the report's end-of-run record)."""

    def suspicious(self) -> list[str]:
        """Why a graded run cannot be trusted: tampering seen, or no end-of-run record (the process
        ended before the checks ran). Empty for a run that timed out: that is its own verdict."""
        if self.timed_out:
            return []
        return self.tamper or ([] if self.finished else ["the test run ended before pytest's session finished"])


@dataclass
class TestLimits:
    """CPU-seconds one test may take (setup and teardown included), and wall-seconds a run's tests may
    take together, before the run counts as a timeout (the probe watches; factory/validate.py
    sets them)."""

    __test__ = False  # not a pytest test class

    default: float
    slow: dict[str, float] = field(default_factory=dict)
    """node id -> seconds, for the tests allowed more than `default` (the slow ones at baseline)."""
    budget: float = 0.0
    """Wall-seconds the run's tests may take together (0: no budget)."""

    def lines(self) -> str:
        """The BUGFORGE_TEST_LIMITS file: `NODE ID<TAB>SECONDS` a line."""
        return "".join(f"{t}\t{s:g}\n" for t, s in sorted(self.slow.items()))


@dataclass
class Candidate:
    """A proposed bug: a patch against the environment's base commit, with where and how it was made."""

    id: str
    strategy: str
    patch: str
    """The bug as a unified diff (base commit -> buggy state)."""
    files: list[str]
    changed: dict[str, list[int]]
    """file -> base-commit lines the bug replaces or deletes (what coverage selection looks at)."""
    function: str = ""
    line_span: list[int] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)
    """For combined bugs: the candidates combined."""
    meta: dict = field(default_factory=dict)


@dataclass
class Validation:
    """What running the tests against a candidate showed."""

    candidate: str
    status: str
    """valid | no_failures | unreached (no test runs the change) | timeout | apply_failed | error"""
    FAIL_TO_PASS: list[str] = field(default_factory=list)
    PASS_TO_PASS: list[str] = field(default_factory=list)
    mode: str = ""
    """selected (coverage-chosen tests, warm container) | suite (whole suite, warm container: coverage
    could not decide) | full (fresh container, whole suite: SWE-smith's way)"""
    tests_run: int = 0
    seconds: float = 0.0
    messages: dict[str, str] = field(default_factory=dict)
    """F2P test -> failure message with the bug (for problem statements); for a timeout, the test that
    was running ("" for none) -> what ended it."""


@dataclass
class TaskInstance:
    """A row of the exported JSONL: a SWE-bench 5.x instance plus bugforge's own fields. `image_name`
    (SWE-smith's and SWE-agent's name) and `docker_image` (mini-swe-agent's second choice) repeat
    `image`; rows written before they existed read with them filled in from `image`."""

    instance_id: str
    repo: str
    base_commit: str
    patch: str
    """The gold fix (the reverse of the bug)."""
    test_patch: str
    problem_statement: str
    FAIL_TO_PASS: str
    """JSON-encoded list, as in SWE-bench's published datasets."""
    PASS_TO_PASS: str
    version: str
    created_at: str
    image: str
    eval_script: str
    log_parser: str
    eval_type: str
    environment_setup_commit: str = ""
    hints_text: str = ""
    strategy: str = ""
    bug_patch: str = ""
    files: list[str] = field(default_factory=list)
    function: str = ""
    difficulty: str = ""
    env_image: str = ""
    test_files: list[str] = field(default_factory=list)
    pytest_args: list[str] = field(default_factory=list)
    image_name: str = ""
    docker_image: str = ""
    tools: str = ""
    """digest of the in-container grading tools the image and eval_script carry (at export); an export
    with older tools grades by older rules under the official harness (`bugforge eval` warns)"""

    def __post_init__(self):
        self.image_name = self.image_name or self.image
        self.docker_image = self.docker_image or self.image


@dataclass
class Prediction:
    """One model's patch for one instance, as the SWE-bench harness reads it (sandbox.predictions reads
    every file form that harness accepts into these)."""

    instance_id: str
    model_patch: str
    """A unified diff against the instance's base commit; empty: the model produced no patch."""
    model_name_or_path: str = "model"


@dataclass
class Turn:
    """One assistant turn as the policy produced it, with token ids and logprobs when the endpoint
    returns them (bugforge's model server and vLLM do), so training need not re-tokenize."""

    content: str
    tool_calls: list[dict] = field(default_factory=list)
    prompt_token_ids: list[int] = field(default_factory=list)
    completion_token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: str = ""
    seconds: float = 0.0
    prefilled_tokens: int = 0
    """Leading completion tokens the endpoint forced (serve-model's tool_choice prefill), not sampled:
    a trainer masks them out of the policy loss."""


@dataclass
class Trajectory:
    """One episode of an agent on a task instance."""

    instance_id: str
    model: str
    messages: list[dict] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)
    """Per action: {"tool", "input", "output", "exit_code", "seconds"}."""
    exit_reason: str = ""
    """submitted | max_steps | max_tokens | max_seconds | format_errors | model_error | sandbox_error"""
    error: str = ""
    patch: str = ""
    grade: dict = field(default_factory=dict)
    seconds: float = 0.0
    tokens: int = 0
    scripted: bool = False
    """The policy was a script (the oracle, the expert demonstrator), not a model: never a model result."""
