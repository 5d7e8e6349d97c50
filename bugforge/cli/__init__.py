"""The `bugforge` command. Thin: parse arguments, call the library, print. Every user error is one
line on stderr and a non-zero exit.

One module per command group (doctor, images, factory, sandbox, agent, eval, train, demo, view). COMMANDS
lists the top-level commands with their one-line help and the function of their module that adds the
options (`configure(parser)`, which also sets `func`, the command's entry point); option defaults
come from the library's config dataclasses. Only the module of the command being run is imported (its
library imports take most of a second), so `bugforge --help` and the other commands stay fast."""

from __future__ import annotations

import argparse
import importlib
import sys

from bugforge.errors import BugforgeError

# name -> (help, "module.function" under bugforge.cli), in the order `bugforge --help` lists them
COMMANDS = {
    "doctor": ("check the Docker engine, disk and base image", "doctor.configure"),
    "images": ("base images; prune, push, pull and check task images; export root file systems", "images.configure"),
    "factory": ("turn a repository into task instances", "factory.configure"),
    "sandbox": ("sessions in containers", "sandbox.configure"),
    "run-agent": ("run an agent over a dataset (parallel, resumable)", "agent.configure_run_agent"),
    "eval": ("score predictions SWE-bench-style", "eval.configure"),
    "serve-model": ("a local OpenAI-compatible model server (CPU, no hub)", "agent.configure_serve_model"),
    "train": ("RL and SFT on task instances", "train.configure"),
    "demo": ("the main job on the bundled example repository", "demo.configure"),
    "view": ("browse a runs directory in a local web app (read-only)", "view.configure"),
}


def parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with the options of the command `argv` names (of every command when argv is None)."""
    p = argparse.ArgumentParser(prog="bugforge", description="A containerized SWE-task factory and code-agent RL gym.")
    sub = p.add_subparsers(dest="command", required=True)
    chosen = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    for name, (help_, target) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_)
        if chosen is None or chosen == name:
            module, function = target.split(".")
            getattr(importlib.import_module(f"bugforge.cli.{module}"), function)(cmd)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser(argv).parse_args(argv)
    try:
        return args.func(args)
    except BugforgeError as e:
        print(e.line(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; finished work is kept, rerun to resume", file=sys.stderr)
        return 130
