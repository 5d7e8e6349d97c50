"""The FastAPI application of `bugforge view`: server-rendered pages over a runs directory, read-only.
The pages themselves are in pages.py: every page resolves its `path` parameter inside the runs
directory; a file that cannot be read gives that page an error message (status 404 or 422), and bad
lines of a JSONL file are listed on the page above the rows that could be read. Any other failure is a
bug of the viewer: logged with its traceback, and the page says so (status 500); the server goes on."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from bugforge.view import datasets as ds
from bugforge.view import render
from bugforge.view.pages import UNREADABLE, PageError, Pages
from bugforge.view.scan import cached_scan, resolve

__all__ = ["PageError", "create_app"]
log = logging.getLogger("bugforge.view")


def warm_up(root: Path, done: threading.Event) -> None:
    """Index every dataset of `root` (the list pages then open warm); set `done`."""
    for rel in cached_scan(root).datasets:
        try:
            ds.dataset_index(resolve(root, rel))
        except UNREADABLE:  # a bad file shows its error when its page is opened
            pass
    done.set()


def create_app(runs_dir: str | Path, warm: bool = True) -> FastAPI:
    """The viewer over `runs_dir`. With `warm`, every dataset is indexed in a background thread at start
    (`app.state.warmed` is set when done), so the first list page a person opens is a warm one."""
    root = Path(runs_dir).resolve()
    app = FastAPI(title="bugforge view", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.warmed = threading.Event()
    if warm:
        threading.Thread(target=warm_up, args=(root, app.state.warmed), name="bugforge-view-warm", daemon=True).start()
    else:
        app.state.warmed.set()
    _handlers(app, root)
    _routes(app, Pages(root))
    return app


def _handlers(app: FastAPI, root: Path) -> None:
    @app.exception_handler(PageError)
    async def page_error(request: Request, exc: PageError):
        return HTMLResponse(render.page("error.html", root=str(root), message=exc.message), status_code=exc.status)

    @app.exception_handler(Exception)
    async def viewer_bug(request: Request, exc: Exception):
        log.error("bugforge view: %s failed", request.url, exc_info=exc)
        msg = f"the viewer failed on this page ({type(exc).__name__}: {exc}); the server's log has the traceback"
        return HTMLResponse(render.page("error.html", root=str(root), message=msg), status_code=500)


def _routes(app: FastAPI, pages: Pages) -> None:
    page = lambda url, fn: app.get(url, response_class=HTMLResponse)(fn)  # noqa: E731
    page("/", pages.home)
    page("/env", pages.environment)
    page("/instance", pages.instance)
    page("/trajectories", pages.trajectories)
    page("/trajectory", pages.trajectory)
    page("/evals", pages.evals)
    page("/eval", pages.evaluation)
    page("/compare", pages.compare)
    page("/training", pages.training)

    @app.get("/dataset", response_class=HTMLResponse)
    def dataset(
        path: str,
        q: str = "",
        strategy: str = "",
        difficulty: str = "",
        file_: str = Query("", alias="file"),
        f2p: str = "",
        page: int = 1,
    ):
        return pages.dataset(path, ds.Filters(q, strategy, difficulty, file_, f2p, page))

    @app.get("/training/charts", response_class=HTMLResponse)
    def training_charts(path: str):
        return HTMLResponse(pages.training_charts(path))

    @app.get("/static/style.css")
    def style() -> Response:
        text = (render.HERE / "static" / "style.css").read_text() + render.css()
        return Response(text, media_type="text/css")

    @app.get("/healthz", response_class=PlainTextResponse)
    def healthz():
        return "ok"
