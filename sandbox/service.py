"""The sandbox as a service: FastAPI over the in-process Runtime. Bearer-token auth, a request-size
limit, OpenAPI at /openapi.json. On start and on shutdown it removes the bugforge containers whose owning
process is gone (bugforge.engine.remove_orphans: a killed service's, once one is started again), never a
live process's; on shutdown it also closes its own sessions. Idle sessions are closed after their TTL;
a failure of that reaper is logged and the reaper goes on. Errors: an unknown session id is 404 (and
only that), a BugforgeError 400 with its one line. `bugforge sandbox serve` runs it."""

from __future__ import annotations

import hmac
import logging
import threading
import time
from dataclasses import asdict

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from bugforge.errors import BugforgeError
from bugforge.sandbox.runtime import NoSession, Runtime

MAX_TEXT = 4_000_000
log = logging.getLogger("bugforge.sandbox")


class CreateRequest(BaseModel):
    image: str | None = Field(None, max_length=300, description="image to start (default: the instance's)")
    instance_id: str | None = Field(None, max_length=300, description="a task instance the service knows")


class RunRequest(BaseModel):
    command: str = Field(..., max_length=1_000_000)
    timeout: float | None = Field(None, gt=0, le=3600)


class PathRequest(BaseModel):
    path: str = Field(".", max_length=4096)
    max_bytes: int = Field(1 << 20, ge=0, le=MAX_TEXT)


class WriteRequest(BaseModel):
    path: str = Field(..., max_length=4096)
    content: str = Field(..., max_length=MAX_TEXT)


class EditRequest(BaseModel):
    path: str = Field(..., max_length=4096)
    old: str = Field(..., max_length=MAX_TEXT)
    new: str = Field("", max_length=MAX_TEXT)


class GradeRequest(BaseModel):
    instance_id: str = Field(..., max_length=300)
    patch: str = Field(..., max_length=MAX_TEXT)


def create_app(
    runtime: Runtime, token: str, *, max_body: int = 8_000_000, session_ttl: float = 1800, reap_every: float = 30
) -> FastAPI:
    app = FastAPI(title="bugforge sandbox", version="1", description="Sessions in containers for coding agents.")
    bearer = HTTPBearer(auto_error=False)

    def auth(cred: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:
        if cred is None or not hmac.compare_digest(cred.credentials.encode(), token.encode()):
            raise HTTPException(401, "missing or wrong bearer token")

    _guards(app, max_body)
    _lifecycle(app, runtime, session_ttl, reap_every)
    _routes(app, runtime, [Depends(auth)])
    return app


def _guards(app: FastAPI, max_body: int) -> None:
    """The request-size limit, and the errors' answers: a BugforgeError 400 with its line, NoSession 404."""

    @app.middleware("http")
    async def limit_body(request: Request, call_next):
        size = request.headers.get("content-length")
        if size is not None and (not size.isdigit() or int(size) > max_body):
            return JSONResponse({"detail": f"request body over {max_body} bytes"}, status_code=413)
        if size is None and request.method in ("POST", "PUT", "PATCH"):
            body = await request.body()
            if len(body) > max_body:
                return JSONResponse({"detail": f"request body over {max_body} bytes"}, status_code=413)
        return await call_next(request)

    @app.exception_handler(BugforgeError)
    async def user_error(request: Request, e: BugforgeError):
        return JSONResponse({"detail": e.line()}, status_code=400)

    @app.exception_handler(NoSession)
    async def missing(request: Request, e: NoSession):
        return JSONResponse({"detail": str(e)}, status_code=404)


def _lifecycle(app: FastAPI, runtime: Runtime, session_ttl: float, reap_every: float) -> None:
    """Start: remove dead processes' containers, start the reaper of idle sessions. Shutdown: close this
    service's sessions, then remove dead processes' containers again."""
    stop = threading.Event()

    def reaper():
        while not stop.wait(reap_every):
            try:
                runtime.reap(session_ttl)
            except Exception:  # noqa: BLE001 - logged with its traceback; the reaper must outlive one failed round (the engine restarting)
                log.exception("sandbox service: closing idle sessions failed; retrying in %s s", reap_every)

    @app.on_event("startup")
    def startup() -> None:
        import anyio.to_thread

        anyio.to_thread.current_default_thread_limiter().total_tokens = 512  # sessions block on their shells
        n = runtime.remove_orphans()
        if n:
            log.warning("sandbox service: removed %d container(s) whose process is gone", n)
        threading.Thread(target=reaper, daemon=True).start()

    @app.on_event("shutdown")
    def shutdown() -> None:
        stop.set()
        runtime.shutdown()
        runtime.remove_orphans()


def _routes(app: FastAPI, runtime: Runtime, deps: list) -> None:
    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "sessions": len(runtime.sessions), "time": time.time()}

    @app.get("/sessions", dependencies=deps)
    def sessions() -> list[dict]:
        return [
            {
                "id": s.id,
                "image": s.image,
                "instance_id": s.instance_id,
                "user": s.user,
                "idle_s": round(time.time() - s.last_used, 1),
            }
            for s in list(runtime.sessions.values())
        ]

    @app.post("/sessions", dependencies=deps)
    def create(req: CreateRequest) -> dict:
        s = runtime.create(req.image, req.instance_id)
        return {"id": s.id, "image": s.image, "instance_id": s.instance_id, "user": s.user}

    _session_routes(app, runtime, deps)

    @app.post("/grade", dependencies=deps)
    def grade(req: GradeRequest) -> dict:
        from bugforge.sandbox.grader import grade_patch

        inst = runtime.instances.get(req.instance_id)
        if inst is None:
            raise BugforgeError(f"unknown instance {req.instance_id!r}", "start the service with a dataset that has it")
        return asdict(grade_patch(inst, req.patch))


def _session_routes(app: FastAPI, runtime: Runtime, deps: list) -> None:
    """One session's operations (an unknown id: NoSession, 404)."""

    @app.post("/sessions/{sid}/run", dependencies=deps)
    def run(sid: str, req: RunRequest) -> dict:
        return asdict(runtime.get(sid).run(req.command, req.timeout))

    @app.post("/sessions/{sid}/read", dependencies=deps)
    def read(sid: str, req: PathRequest) -> dict:
        return {"content": runtime.get(sid).read(req.path, req.max_bytes)}

    @app.post("/sessions/{sid}/write", dependencies=deps)
    def write(sid: str, req: WriteRequest) -> dict:
        runtime.get(sid).write(req.path, req.content)
        return {"ok": True}

    @app.post("/sessions/{sid}/edit", dependencies=deps)
    def edit(sid: str, req: EditRequest) -> dict:
        runtime.get(sid).edit(req.path, req.old, req.new)
        return {"ok": True}

    @app.post("/sessions/{sid}/list", dependencies=deps)
    def listing(sid: str, req: PathRequest) -> dict:
        return {"entries": runtime.get(sid).list(req.path)}

    @app.get("/sessions/{sid}/diff", dependencies=deps)
    def diff(sid: str) -> dict:
        return {"patch": runtime.get(sid).diff()}

    @app.post("/sessions/{sid}/submit", dependencies=deps)
    def submit(sid: str) -> dict:
        return asdict(runtime.get(sid).submit())

    @app.delete("/sessions/{sid}", dependencies=deps)
    def close(sid: str) -> dict:
        runtime.get(sid)
        runtime.close(sid)
        return {"ok": True}
