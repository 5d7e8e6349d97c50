"""The FastAPI application of `bugforge view`: server-rendered pages over a runs directory, read-only.
Every page resolves its `path` parameter inside the runs directory; a file that cannot be read gives
that page an error message (status 404 or 422), never a crash of the server, and bad lines of a JSONL
file are listed on the page above the rows that could be read."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from bugforge.view import datasets as ds
from bugforge.view import render
from bugforge.view import runs as rn
from bugforge.view.scan import cached_scan, resolve


class PageError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def create_app(runs_dir: str | Path, warm: bool = True) -> FastAPI:
    """The viewer over `runs_dir`. With `warm`, every dataset is indexed in a background thread at start
    (`app.state.warmed` is set when done), so the first list page a person opens is a warm one."""
    root = Path(runs_dir).resolve()
    app = FastAPI(title="bugforge view", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.warmed = threading.Event()

    def warm_up() -> None:
        for rel in cached_scan(root).datasets:
            try:
                ds.dataset_index(resolve(root, rel))
            except Exception:  # a bad file shows its error when its page is opened
                pass
        app.state.warmed.set()

    if warm:
        threading.Thread(target=warm_up, name="bugforge-view-warm", daemon=True).start()
    else:
        app.state.warmed.set()

    def html(template: str, **context) -> HTMLResponse:
        return HTMLResponse(render.page(template, root=str(root), **context))

    def file(rel: str) -> Path:
        try:
            return resolve(root, rel)
        except ValueError as e:
            raise PageError(404, str(e))

    @app.exception_handler(PageError)
    async def page_error(request: Request, exc: PageError):
        return HTMLResponse(render.page("error.html", root=str(root), message=exc.message), status_code=exc.status)

    @app.exception_handler(Exception)
    async def any_error(request: Request, exc: Exception):
        msg = f"{type(exc).__name__}: {exc}"
        return HTMLResponse(render.page("error.html", root=str(root), message=msg), status_code=422)

    def unreadable(what: str, e: Exception) -> PageError:
        return PageError(422, f"{what} could not be read: {type(e).__name__}: {e}")

    @app.get("/static/style.css")
    def style() -> Response:
        text = (render.HERE / "static" / "style.css").read_text() + render.css()
        return Response(text, media_type="text/css")

    @app.get("/", response_class=HTMLResponse)
    def home():
        runs = cached_scan(root)
        envs = []
        for rel in runs.envs:
            try:
                env = ds.environment(root / rel)
                envs.append({"rel": rel, "env": env, "error": ""})
            except Exception as e:
                envs.append({"rel": rel, "env": None, "error": f"env.json could not be read: {e}"})
        sets = []
        for rel in runs.datasets:
            try:
                idx = ds.dataset_index(root / rel)
                vals = ds.validations((root / rel).parent)
                sets.append(
                    {
                        "rel": rel,
                        "stats": ds.stats(idx),
                        "problems": len(idx.problems()),
                        "cost": ds.cost(vals) if vals else None,
                    }
                )
            except Exception as e:
                sets.append({"rel": rel, "stats": None, "problems": 1, "error": str(e)})
        reports = []
        for rel in runs.reports:
            try:
                reports.append({"rel": rel, "rep": rn.load_report(root / rel)})
            except Exception as e:
                reports.append({"rel": rel, "rep": None, "error": str(e)})
        return html("home.html", runs=runs, envs=envs, datasets=sets, reports=reports)

    @app.get("/env", response_class=HTMLResponse)
    def environment(path: str):
        d = file(path)
        try:
            env = ds.environment(d)
        except Exception as e:
            raise unreadable("env.json", e)
        vals = ds.validations(d)
        cost = ds.cost(vals) if vals else None
        runs = cached_scan(root)
        exports = [r for r in runs.datasets if str(Path(r).parent) == path]
        return html(
            "env.html",
            rel=path,
            env=env,
            cost=cost,
            candidates=ds.candidates_count(d),
            exports=exports,
            problems=vals.problems() if vals else [],
        )

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
        p = file(path)
        try:
            idx = ds.dataset_index(p)
        except OSError as e:
            raise unreadable(path, e)
        f = ds.Filters(q, strategy, difficulty, file_, f2p, page)
        shown, total, pages = ds.select(idx, f)
        vals = ds.validations(p.parent)
        return html(
            "dataset.html",
            rel=path,
            stats=ds.stats(idx),
            f=f,
            shown=shown,
            total=total,
            pages=pages,
            page=min(max(1, page), pages),
            cost=ds.cost(vals) if vals else None,
            problems=idx.problems() + (vals.problems() if vals else []),
            trajectories=_trajectory_files(path),
        )

    @app.get("/instance", response_class=HTMLResponse)
    def instance(path: str, id: str, view: str = "unified"):
        p = file(path)
        idx = ds.dataset_index(p)
        try:
            inst = ds.instance(idx, id)
        except KeyError as e:
            raise PageError(404, str(e.args[0]))
        except Exception as e:
            raise unreadable(f"instance {id}", e)
        vals = ds.validations(p.parent)
        validation = ds.validation_of(vals, id) if vals else None
        runs = []
        for rel in _trajectory_files(path):
            tidx = rn.trajectory_index(root / rel)
            line = rn.line_of(tidx, id)
            if line:
                runs.append({"rel": rel, "line": line, "summary": next(r.summary for r in tidx.rows if r.line == line)})
        return html(
            "instance.html",
            rel=path,
            inst=inst,
            f2p=ds.tests_of(inst.FAIL_TO_PASS),
            p2p=ds.tests_of(inst.PASS_TO_PASS),
            validation=json.dumps(validation, indent=1) if validation else "",
            view=view,
            runs=runs,
        )

    def _trajectory_files(dataset_rel: str) -> list[str]:
        """Trajectory files beside the dataset first, then the rest."""
        runs = cached_scan(root)
        here = str(Path(dataset_rel).parent)
        return sorted(runs.trajectories, key=lambda r: (str(Path(r).parent) != here, r))

    @app.get("/trajectories", response_class=HTMLResponse)
    def trajectories(path: str, page: int = 1):
        idx = _traj_index(file(path), path)
        pages = max(1, -(-len(idx.rows) // ds.PAGE))
        page = min(max(1, page), pages)
        rows = idx.rows[(page - 1) * ds.PAGE : page * ds.PAGE]
        return html("trajectories.html", rel=path, rows=rows, page=page, pages=pages, problems=idx.problems())

    def _traj_index(p: Path, rel: str):
        try:
            return rn.trajectory_index(p)
        except OSError as e:
            raise unreadable(rel, e)

    @app.get("/trajectory", response_class=HTMLResponse)
    def trajectory(path: str, line: int):
        idx = _traj_index(file(path), path)
        try:
            traj = rn.trajectory(idx, line)
        except KeyError as e:
            raise PageError(404, str(e.args[0]))
        except Exception as e:
            raise unreadable(f"the trajectory on line {line}", e)
        grades = _grades(traj.instance_id, traj.model)
        return html("trajectory.html", rel=path, line=line, traj=traj, turns=rn.turns(traj), grades=grades)

    def _grades(iid: str, model: str) -> list[dict]:
        """What evaluation reports of this model say about the instance (with the per-instance report
        SWE-bench-style logs hold, when found)."""
        out = []
        name = model.replace("/", "__")
        for rel in cached_scan(root).reports:
            p = root / rel
            if not p.name.startswith(name + "."):
                continue
            try:
                rep = rn.load_report(p)
            except Exception:
                continue
            if iid not in set(rep["submitted_ids"]):
                continue
            run = p.name[len(name) + 1 : -len(".json")]
            detail = None
            for logs in (root / "logs" / "run_evaluation", p.parent / "logs" / "run_evaluation"):
                f = logs / run / name / iid / "report.json"
                if f.is_file():
                    try:
                        detail = json.loads(f.read_text()).get(iid)
                    except (OSError, ValueError):
                        detail = None
                    break
            out.append({"rel": rel, "run": run, "status": rn.status_of(rep, iid), "detail": detail})
        return out

    def _meta() -> dict[str, tuple[str, str, str, str]]:
        meta = {}
        for rel in cached_scan(root).datasets:
            try:
                idx = ds.dataset_index(root / rel)
            except OSError:
                continue
            for r in idx.rows:
                s = r.summary
                meta.setdefault(s.instance_id, (s.strategy, s.difficulty, s.repo, rel))
        return meta

    def _report(rel: str) -> dict:
        try:
            return rn.load_report(file(rel))
        except PageError:
            raise
        except Exception as e:
            raise unreadable(rel, e)

    @app.get("/evals", response_class=HTMLResponse)
    def evals():
        rows = []
        for rel in cached_scan(root).reports:
            try:
                rep = rn.load_report(root / rel)
                rows.append({"rel": rel, "rep": rep, "error": ""})
            except Exception as e:
                rows.append({"rel": rel, "rep": None, "error": str(e)})
        return html("evals.html", rows=rows)

    def _traj_links(report_rel: str) -> dict[str, tuple[str, int]]:
        """instance id -> (trajectory file, line) for the report's model, files beside the report first."""
        name = Path(report_rel).name  # MODEL.RUN.json; a model name may hold dots itself
        here = str(Path(report_rel).parent)
        links: dict[str, tuple[str, int]] = {}
        for rel in sorted(cached_scan(root).trajectories, key=lambda r: (str(Path(r).parent) != here, r)):
            try:
                idx = rn.trajectory_index(root / rel)
            except OSError:
                continue
            for r in idx.rows:
                if name.startswith(r.summary.model.replace("/", "__") + "."):
                    links.setdefault(r.summary.instance_id, (rel, r.line))
        return links

    @app.get("/eval", response_class=HTMLResponse)
    def evaluation(path: str):
        rep = _report(path)
        meta = _meta()
        by = {name: rn.breakdown(rep, meta, i) for i, name in enumerate(("strategy", "difficulty", "repo"))}
        st = rn.statuses(rep)
        return html(
            "eval.html", rel=path, rep=rep, by=by, statuses=sorted(st.items()), meta=meta, links=_traj_links(path)
        )

    @app.get("/compare", response_class=HTMLResponse)
    def compare(a: str, b: str):
        ra, rb = _report(a), _report(b)
        rows, counts = rn.compare(ra, rb)
        return html(
            "compare.html",
            a=a,
            b=b,
            rows=rows,
            counts=counts,
            links_a=_traj_links(a),
            links_b=_traj_links(b),
            meta=_meta(),
        )

    @app.get("/training", response_class=HTMLResponse)
    def training(path: str | None = None):
        runs = cached_scan(root).training
        if path is None:
            return html("training_list.html", runs=runs)
        return html("training.html", rel=path, body=_training_charts(path))

    @app.get("/training/charts", response_class=HTMLResponse)
    def training_charts(path: str):
        return HTMLResponse(_training_charts(path))

    def _training_charts(path: str) -> str:
        try:
            idx = rn.metrics_index(file(path))
        except OSError as e:
            raise unreadable(path, e)
        shown = {"step", *(k for _, keys in rn.CURVES for k in keys)}
        last = {k: v for k, v in (idx.rows[-1].summary if idx.rows else {}).items() if k in shown}
        return render.page(
            "training_charts.html",
            rel=path,
            curves=rn.curves(idx),
            steps=len(idx.rows),
            last=last,
            problems=idx.problems(),
        )

    @app.get("/healthz", response_class=PlainTextResponse)
    def healthz():
        return "ok"

    return app
