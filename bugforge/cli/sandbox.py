"""`bugforge sandbox serve`: the sandbox HTTP service. Container limits and the pool default to
SandboxConfig's values; the idle-session limit to the service's own (create_app)."""

from __future__ import annotations

from bugforge.cli.common import check_port, console, default_of, load_instances
from bugforge.sandbox.runtime import SandboxConfig
from bugforge.sandbox.service import create_app


def configure(p) -> None:
    sb = p.add_subparsers(dest="cmd", required=True)
    cfg = SandboxConfig
    sv = sb.add_parser("serve", help="run the sandbox HTTP service")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8765)
    sv.add_argument("--token", help="bearer token (default: $BUGFORGE_SANDBOX_TOKEN, else a new one, printed)")
    sv.add_argument("--dataset", action="append", help="task instances JSONL (repeatable): sessions by instance id")
    sv.add_argument("--pool", type=int, default=cfg.pool_size, help="warm containers per image")
    sv.add_argument(
        "--ttl", type=float, default=default_of(create_app, "session_ttl"), help="close sessions idle this many seconds"
    )
    sv.add_argument("--mem", default=cfg.mem_limit)
    sv.add_argument("--cpus", type=float, default=cfg.cpus)
    sv.add_argument("--pids", type=int, default=cfg.pids_limit)
    sv.add_argument("--owner", default=cfg.owner, help="label for this service's containers (orphan clean-up)")
    sv.set_defaults(func=cmd_serve)


def cmd_serve(a) -> int:
    import os
    import secrets

    import uvicorn

    from bugforge.sandbox.runtime import Runtime

    check_port(a.host, a.port)  # before the runtime (which cleans up orphans) and uvicorn start
    token = a.token or os.environ.get("BUGFORGE_SANDBOX_TOKEN")
    if not token:
        token = secrets.token_urlsafe(24)
        console.print(f"token (set BUGFORGE_SANDBOX_TOKEN to choose one): {token}", markup=False)
    cfg = SandboxConfig(pool_size=a.pool, mem_limit=a.mem, cpus=a.cpus, pids_limit=a.pids, owner=a.owner)
    runtime = Runtime(cfg, load_instances(a.dataset))
    app = create_app(runtime, token, session_ttl=a.ttl)
    uvicorn.run(app, host=a.host, port=a.port, log_level="warning")
    return 0
