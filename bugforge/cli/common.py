"""What every command module of the CLI shares: the console, the log line, progress bars, reading a
dataset of task instances, and `default_of` (an option's default read from the library function it
is passed to, so each default is written once)."""

from __future__ import annotations

import inspect
from pathlib import Path

from rich.console import Console

from bugforge.errors import BugforgeError

console = Console(stderr=False, highlight=False)


def log(msg: str) -> None:
    console.print(msg, style="dim", markup=False)


def default_of(function, name: str):
    """The default of `function`'s keyword `name` (for options whose library function has no config
    dataclass)."""
    return inspect.signature(function).parameters[name].default


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


def check_port(host: str, port: int) -> None:
    """A user error, before anything starts, for a port out of range or one this host cannot bind."""
    import os
    import socket

    if not 1 <= port <= 65535:
        raise BugforgeError(f"--port {port} is not a port number", "pass a port between 1 and 65535, e.g. --port 8765")
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as e:
        raise BugforgeError(
            f"cannot listen on {host}:{port}: {os.strerror(e.errno) if e.errno else e}",
            "pass a free --port, or a --host of this machine",
        ) from None


def dataset_file(path: str | Path) -> Path:
    """The JSONL of a dataset given as the file or as the export folder that holds it (as mini-swe-agent
    and `datasets` take it): FOLDER/instances.jsonl."""
    p = Path(path)
    if not p.exists():
        raise BugforgeError(f"dataset {p} does not exist", "pass a JSONL of task instances (factory export)")
    if p.is_dir():
        if not (p / "instances.jsonl").is_file():
            raise BugforgeError(
                f"dataset {p} is a folder without instances.jsonl",
                "pass the instances.jsonl that `bugforge factory export` wrote, or the folder it is in",
            )
        return p / "instances.jsonl"
    return p


def load_instances(paths: list[str]) -> dict[str, dict]:
    from bugforge.records import read_jsonl

    rows = {}
    for p in paths or []:
        p = dataset_file(p)
        try:
            found = read_jsonl(p)
        except (OSError, UnicodeDecodeError) as e:
            raise BugforgeError(
                f"cannot read dataset {p}: {e}", "pass a JSONL of task instances (factory export)"
            ) from None
        for r in found:
            if not isinstance(r, dict) or "instance_id" not in r or "image" not in r:
                raise BugforgeError(f"dataset {p} has a row without instance_id/image", "pass SWE-bench-format rows")
            rows[r["instance_id"]] = r
    return rows


def use_engine(a) -> None:
    """`--backend podman`: this process's sessions and graders run on Podman (bugforge.engine.select), before any
    image is looked up; with --ray or --sandbox-url (whose nodes and service have their own engine) a user error."""
    if a.backend != "podman":
        return
    if getattr(a, "ray", None) or getattr(a, "sandbox_url", None):
        raise BugforgeError(
            "--backend podman runs sessions and grading in this process", "leave out --ray/--sandbox-url"
        )
    from bugforge import engine

    engine.select("podman")


def load_dataset(path: str) -> list[dict]:
    """The rows of a dataset whose instance images are all present (else a user error, before any work)."""
    rows = list(load_instances([path]).values())
    if not rows:
        raise BugforgeError(f"dataset {path} has no instances", "pass the instances.jsonl that `factory export` wrote")
    from bugforge.images import image_exists

    missing = [r["image"] for r in rows if not image_exists(r["image"])]
    if missing:
        raise BugforgeError(
            f"{len(missing)} instance image(s) of {path} are not present, e.g. {missing[0]}",
            "run `bugforge factory export` (or load the images) first",
        )
    return rows
