"""`bugforge factory env | generate | export`: repository -> environment -> validated bugs -> task
instances. Option defaults come from EnvironmentConfig, GenerateConfig, LMConfig and ExportConfig."""

from __future__ import annotations

import sys
from pathlib import Path

from bugforge.cli.common import Bars, console, log
from bugforge.factory.environment import EnvironmentConfig
from bugforge.factory.export import ExportConfig
from bugforge.factory.generate import GenerateConfig
from bugforge.factory.lm_bugs import LMConfig
from bugforge.factory.validate import MODES


def configure(p) -> None:
    fa = p.add_subparsers(dest="cmd", required=True)
    env = EnvironmentConfig
    e = fa.add_parser("env", help="environment image + baseline + per-test coverage map for a repository")
    e.add_argument("repo", help="git URL, local path, or pypi:NAME==VERSION")
    e.add_argument("--commit", help="commit, branch or tag (git sources)")
    e.add_argument("--recipe", help="an edited recipe.json to use instead of detection")
    e.add_argument("--out", default="runs", help="output directory (default: runs)")
    e.add_argument(
        "--runs", type=int, default=env.runs, help=f"baseline runs, for flaky-test detection (default {env.runs})"
    )
    e.add_argument(
        "--timeout", type=float, default=env.timeout, help=f"seconds per baseline run (default {env.timeout})"
    )
    e.add_argument(
        "--test-limit",
        type=float,
        default=env.test_limit,
        help=f"CPU-seconds (or 3x as many wall-seconds) one test may take at baseline before it is deselected"
        f" (default {env.test_limit:g})",
    )
    e.add_argument("--force", action="store_true", help="rebuild the record even if an identical one exists")
    e.set_defaults(func=cmd_env)

    gen = GenerateConfig
    g = fa.add_parser("generate", help="propose bugs and validate them against the tests (resumable)")
    g.add_argument("env", help="environment record (runs/NAME/env.json or its directory)")
    g.add_argument("--strategies", help="comma-separated (default: all procedural + history + combine)")
    g.add_argument(
        "--max-candidates",
        type=int,
        default=gen.max_candidates,
        help=f"procedural candidates to validate (default {gen.max_candidates})",
    )
    g.add_argument("--workers", type=int, default=gen.workers, help=f"parallel warm containers (default {gen.workers})")
    g.add_argument("--seed", type=int, default=gen.seed)
    g.add_argument(
        "--validation",
        choices=list(MODES),
        default=gen.mode,
        help="selected: coverage-chosen tests in a warm container (default); full: SWE-smith's way",
    )
    g.add_argument(
        "--ray", metavar="ADDRESS", default=gen.ray, help="validate on a Ray cluster (`auto`: the running one)"
    )
    g.add_argument("--lm-model", help="model for lm_modify/lm_rewrite (any OpenAI-compatible endpoint)")
    g.add_argument("--lm-base-url", help="endpoint base URL (default: $OPENAI_BASE_URL)")
    g.add_argument(
        "--lm-per-strategy", type=int, default=LMConfig.per_strategy, help="functions to ask the LM about, per strategy"
    )
    g.add_argument(
        "--lm-max-tokens",
        type=int,
        default=LMConfig.max_tokens,
        help=f"longest reply the LM may write (default {LMConfig.max_tokens})",
    )
    g.set_defaults(func=cmd_generate)

    x = fa.add_parser("export", help="build instance images and write SWE-bench-format rows (resumable)")
    x.add_argument("env", help="environment record (runs/NAME/env.json or its directory)")
    x.add_argument(
        "--format",
        choices=["jsonl", "harbor"],
        default="jsonl",
        help="jsonl: SWE-bench rows (default); harbor: the rows, then a Harbor task directory per row",
    )
    x.add_argument(
        "--out",
        help="jsonl: the JSONL to append to (default: runs/NAME/instances.jsonl); "
        "harbor: the folder for the task directories (default: runs/NAME/harbor)",
    )
    x.add_argument("--limit", type=int, default=ExportConfig.limit, help="export at most this many")
    x.add_argument(
        "--method",
        choices=["layers", "commit"],
        default=ExportConfig.method,
        help="layers: image layers written here, loaded in batches (default); commit: a container per instance",
    )
    x.add_argument(
        "--statement-model",
        default=ExportConfig.statement_model,
        help="a model that rewrites each problem statement (any OpenAI-compatible endpoint); its output is "
        "scrubbed of the bug's changed lines; on an endpoint error the template statement is kept, with a warning",
    )
    x.add_argument(
        "--statement-base-url",
        default=ExportConfig.statement_base_url,
        help="the statement model's endpoint base URL (default: $OPENAI_BASE_URL)",
    )
    x.add_argument(
        "--statement-max-tokens",
        type=int,
        default=ExportConfig.statement_max_tokens,
        help=f"longest statement the model may write (default {ExportConfig.statement_max_tokens})",
    )
    x.set_defaults(func=cmd_export)


def warn(msg: str) -> None:
    """A one-line warning on stderr (the run goes on)."""
    print(msg, file=sys.stderr, flush=True)


def cmd_env(a) -> int:
    from bugforge.factory import build_environment

    rec, reused = build_environment(
        a.repo,
        commit=a.commit,
        recipe_path=a.recipe,
        out=Path(a.out),
        runs=a.runs,
        timeout=a.timeout,
        test_limit=a.test_limit,
        force=a.force,
        log=log,
    )
    print_env_summary(rec, reused)
    return 0


def cmd_generate(a) -> int:
    from bugforge.factory.generate import generate

    strategies = [s.strip() for s in a.strategies.split(",")] if a.strategies else None
    lm = (
        LMConfig(a.lm_model, a.lm_base_url, per_strategy=a.lm_per_strategy, max_tokens=a.lm_max_tokens)
        if a.lm_model
        else None
    )
    with Bars() as bars:
        rep = generate(
            a.env,
            strategies=strategies,
            max_candidates=a.max_candidates,
            workers=a.workers,
            seed=a.seed,
            mode=a.validation,
            ray=a.ray,
            lm=lm,
            progress=bars,
            log=log,
        )
    print_generate_report(rep)
    return 0


def cmd_export(a) -> int:
    from bugforge.factory.export import export
    from bugforge.records import read_jsonl

    polisher = None
    if a.statement_model:
        from bugforge.factory.statement import Polisher

        polisher = Polisher(
            a.statement_model, a.statement_base_url, max_tokens=a.statement_max_tokens, log=warn, seed=ExportConfig.seed
        )
    if a.format == "harbor":
        from bugforge.factory.harbor import export_harbor

        with Bars() as bars:
            done = export_harbor(a.env, a.out, limit=a.limit, method=a.method, progress=bars, statement_lm=polisher)
        if polisher:
            console.print(polisher.summary())
        console.print(
            f"{len(done.tasks)} Harbor tasks in {done.out} ({done.written} files written, {done.unchanged} "
            f"already right); run them with `harbor run -p {done.out} -a oracle` (docs/harbor.md)"
        )
        return 0
    with Bars() as bars:
        out = export(a.env, a.out, limit=a.limit, method=a.method, progress=bars, statement_lm=polisher)
    rows = read_jsonl(out)
    if polisher:
        console.print(polisher.summary())
    console.print(
        f"{len(rows)} task instances in {out} (one image each; score them with "
        f"`python -m swebench.harness.run_evaluation -d {out} -p gold --run_id check`)"
    )
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
    for i, r in enumerate(rec.recipe.repairs):  # the repair loop's steps (docs/environments.md, "Repair")
        s.add_row("repair" if i == 0 else "", f"{r.problem} -> {r.action}: {r.result}")
    for i, x in enumerate(rec.recipe.excluded):
        s.add_row("excluded" if i == 0 else "", f"{x.path} ({x.reason})")
    s.add_row("record", str(Path(rec.testmap).parent / "env.json"))
    console.print(s)


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
