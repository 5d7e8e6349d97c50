"""`bugforge view`: browse a runs directory in a local web application (read-only)."""

from __future__ import annotations

from bugforge.view import ViewConfig


def configure(vw) -> None:
    vw.add_argument("runs_dir", nargs="?", default=ViewConfig.runs_dir, help="the runs directory (default: runs)")
    vw.add_argument("--port", type=int, default=ViewConfig.port)
    vw.add_argument("--host", default=ViewConfig.host, help="address to listen on (default: local only)")
    vw.set_defaults(func=cmd_view)


def cmd_view(a) -> int:
    from bugforge.cli.common import console
    from bugforge.view import serve

    serve(a.runs_dir, host=a.host, port=a.port, log=lambda m: console.print(m, markup=False, soft_wrap=True))
    return 0
