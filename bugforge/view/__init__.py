"""`bugforge view`: a read-only local web application over a runs directory (datasets, instances,
trajectories, evaluations, training curves). `create_app(runs_dir)` is the FastAPI app; `serve` runs
it with uvicorn; ViewConfig holds the command's defaults. What each page shows: docs/view.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bugforge.errors import BugforgeError


@dataclass
class ViewConfig:
    """Options of `bugforge view`."""

    runs_dir: str = "runs"
    host: str = "127.0.0.1"
    port: int = 8765


def serve(
    runs_dir: str | Path = ViewConfig.runs_dir,
    *,
    host: str = ViewConfig.host,
    port: int = ViewConfig.port,
    log=print,
) -> None:
    """Serve the viewer until interrupted. Raises BugforgeError when `runs_dir` is not a directory or the
    port is taken."""
    import socket

    import uvicorn

    from bugforge.view.app import create_app

    root = Path(runs_dir)
    if not root.is_dir():
        raise BugforgeError(f"{root} is not a directory", "pass the runs directory (e.g. `bugforge view runs`)")
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError as e:
            raise BugforgeError(f"cannot listen on {host}:{port}: {e.strerror}", "pass another --port")
    log(f"bugforge view: http://{host}:{port}/ over {root} (Ctrl-C to stop)")
    uvicorn.run(create_app(root), host=host, port=port, log_level="warning")
