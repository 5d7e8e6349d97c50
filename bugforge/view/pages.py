"""The pages of `bugforge view` (app.py routes each URL to one method here). Every page resolves its
`path` parameter inside the runs directory; a file that cannot be read (UNREADABLE: the errors reading
and parsing our records raise) gives that page an error message (404 or 422); on the home and
evaluations lists, a row with its error."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.responses import HTMLResponse

from bugforge.view import datasets as ds
from bugforge.view import render
from bugforge.view import runs as rn
from bugforge.view.jsonl import UNREADABLE
from bugforge.view.scan import cached_scan, resolve


class PageError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def unreadable(what: str, e: Exception) -> PageError:
    return PageError(422, f"{what} could not be read: {type(e).__name__}: {e}")


def _record(read, what: str):
    """One record of a file, read by `read`: its KeyError (no such record) is a 404, a record that cannot be
    read a 422 naming `what`."""
    try:
        return read()
    except KeyError as e:
        raise PageError(404, str(e.args[0]))
    except UNREADABLE as e:
        raise unreadable(what, e)


class Pages:
    """The viewer's pages over one runs directory."""

    def __init__(self, root: Path):
        self.root = root

    # --- helpers ----------------------------------------------------------------------------------
    def html(self, template: str, **context) -> HTMLResponse:
        return HTMLResponse(render.page(template, root=str(self.root), **context))

    def file(self, rel: str) -> Path:
        try:
            return resolve(self.root, rel)
        except ValueError as e:
            raise PageError(404, str(e))

    def _env_row(self, rel: str) -> dict:
        try:
            return {"rel": rel, "env": ds.environment(self.root / rel), "error": ""}
        except UNREADABLE as e:
            return {"rel": rel, "env": None, "error": f"env.json could not be read: {e}"}

    def _dataset_row(self, rel: str) -> dict:
        try:
            idx = ds.dataset_index(self.root / rel)
            vals = ds.validations((self.root / rel).parent)
            cost = ds.cost(vals) if vals else None
            return {"rel": rel, "stats": ds.stats(idx), "problems": len(idx.problems()), "cost": cost}
        except UNREADABLE as e:
            return {"rel": rel, "stats": None, "problems": 1, "error": str(e)}

    def _report_row(self, rel: str) -> dict:
        try:
            return {"rel": rel, "rep": rn.load_report(self.root / rel), "error": ""}
        except UNREADABLE as e:
            return {"rel": rel, "rep": None, "error": str(e)}

    def _report(self, rel: str) -> dict:
        p = self.file(rel)
        try:
            return rn.load_report(p)
        except UNREADABLE as e:
            raise unreadable(rel, e)

    def _traj_index(self, p: Path, rel: str):
        try:
            return rn.trajectory_index(p)
        except OSError as e:
            raise unreadable(rel, e)

    def _trajectory_files(self, dataset_rel: str) -> list[str]:
        """Trajectory files beside the dataset first, then the rest."""
        here = str(Path(dataset_rel).parent)
        return sorted(cached_scan(self.root).trajectories, key=lambda r: (str(Path(r).parent) != here, r))

    def _runs_of(self, dataset_rel: str, iid: str) -> list[dict]:
        """The trajectories of instance `iid` in the trajectory files (those beside the dataset first)."""
        out = []
        for rel in self._trajectory_files(dataset_rel):
            tidx = rn.trajectory_index(self.root / rel)
            line = rn.line_of(tidx, iid)
            if line:
                out.append({"rel": rel, "line": line, "summary": next(r.summary for r in tidx.rows if r.line == line)})
        return out

    def _grades(self, iid: str, model: str) -> list[dict]:
        """What evaluation reports of this model say about the instance (with the per-instance report
        SWE-bench-style logs hold, when found)."""
        out = []
        name = model.replace("/", "__")
        for rel in cached_scan(self.root).reports:
            p = self.root / rel
            if not p.name.startswith(name + "."):
                continue
            try:
                rep = rn.load_report(p)
            except UNREADABLE:  # listed with its error on the evaluations page
                continue
            if iid in set(rep["submitted_ids"]):
                run = p.name[len(name) + 1 : -len(".json")]
                detail = self._grade_detail(p, run, name, iid)
                out.append({"rel": rel, "run": run, "status": rn.status_of(rep, iid), "detail": detail})
        return out

    def _grade_detail(self, report: Path, run: str, name: str, iid: str) -> dict | None:
        """The per-instance report.json SWE-bench-style logs hold for `iid` in `run`, when found."""
        for logs in (self.root / "logs" / "run_evaluation", report.parent / "logs" / "run_evaluation"):
            f = logs / run / name / iid / "report.json"
            if f.is_file():
                try:
                    return json.loads(f.read_text()).get(iid)
                except (OSError, ValueError):
                    return None
        return None

    def _meta(self) -> dict[str, tuple[str, str, str, str]]:
        meta = {}
        for rel in cached_scan(self.root).datasets:
            try:
                idx = ds.dataset_index(self.root / rel)
            except OSError:
                continue
            for r in idx.rows:
                s = r.summary
                meta.setdefault(s.instance_id, (s.strategy, s.difficulty, s.repo, rel))
        return meta

    def _traj_links(self, report_rel: str) -> dict[str, tuple[str, int]]:
        """instance id -> (trajectory file, line) for the report's model, files beside the report first."""
        name = Path(report_rel).name  # MODEL.RUN.json; a model name may hold dots itself
        here = str(Path(report_rel).parent)
        links: dict[str, tuple[str, int]] = {}
        for rel in sorted(cached_scan(self.root).trajectories, key=lambda r: (str(Path(r).parent) != here, r)):
            try:
                idx = rn.trajectory_index(self.root / rel)
            except OSError:
                continue
            for r in idx.rows:
                if name.startswith(r.summary.model.replace("/", "__") + "."):
                    links.setdefault(r.summary.instance_id, (rel, r.line))
        return links

    # --- pages ------------------------------------------------------------------------------------
    def home(self):
        runs = cached_scan(self.root)
        return self.html(
            "home.html",
            runs=runs,
            envs=[self._env_row(rel) for rel in runs.envs],
            datasets=[self._dataset_row(rel) for rel in runs.datasets],
            reports=[self._report_row(rel) for rel in runs.reports],
        )

    def environment(self, path: str):
        d = self.file(path)
        try:
            env = ds.environment(d)
        except UNREADABLE as e:
            raise unreadable("env.json", e)
        vals = ds.validations(d)
        exports = [r for r in cached_scan(self.root).datasets if str(Path(r).parent) == path]
        return self.html(
            "env.html",
            rel=path,
            env=env,
            cost=ds.cost(vals) if vals else None,
            candidates=ds.candidates_count(d),
            exports=exports,
            problems=vals.problems() if vals else [],
        )

    def dataset(self, path: str, f: ds.Filters):
        p = self.file(path)
        try:
            idx = ds.dataset_index(p)
        except OSError as e:
            raise unreadable(path, e)
        shown, total, pages = ds.select(idx, f)
        vals = ds.validations(p.parent)
        return self.html(
            "dataset.html",
            rel=path,
            stats=ds.stats(idx),
            f=f,
            shown=shown,
            total=total,
            pages=pages,
            page=min(max(1, f.page), pages),
            cost=ds.cost(vals) if vals else None,
            problems=idx.problems() + (vals.problems() if vals else []),
            trajectories=self._trajectory_files(path),
        )

    def instance(self, path: str, id: str, view: str = "unified"):
        p = self.file(path)
        idx = ds.dataset_index(p)
        inst = _record(lambda: ds.instance(idx, id), f"instance {id}")
        vals = ds.validations(p.parent)
        validation = ds.validation_of(vals, id) if vals else None
        return self.html(
            "instance.html",
            rel=path,
            inst=inst,
            f2p=ds.tests_of(inst.FAIL_TO_PASS),
            p2p=ds.tests_of(inst.PASS_TO_PASS),
            validation=json.dumps(validation, indent=1) if validation else "",
            view=view,
            runs=self._runs_of(path, id),
        )

    def trajectories(self, path: str, page: int = 1):
        idx = self._traj_index(self.file(path), path)
        pages = max(1, -(-len(idx.rows) // ds.PAGE))
        page = min(max(1, page), pages)
        rows = idx.rows[(page - 1) * ds.PAGE : page * ds.PAGE]
        return self.html("trajectories.html", rel=path, rows=rows, page=page, pages=pages, problems=idx.problems())

    def trajectory(self, path: str, line: int):
        idx = self._traj_index(self.file(path), path)
        traj = _record(lambda: rn.trajectory(idx, line), f"the trajectory on line {line}")
        grades = self._grades(traj.instance_id, traj.model)
        return self.html("trajectory.html", rel=path, line=line, traj=traj, turns=rn.turns(traj), grades=grades)

    def evals(self):
        return self.html("evals.html", rows=[self._report_row(rel) for rel in cached_scan(self.root).reports])

    def evaluation(self, path: str):
        rep = self._report(path)
        meta = self._meta()
        by = {name: rn.breakdown(rep, meta, i) for i, name in enumerate(("strategy", "difficulty", "repo"))}
        st = rn.statuses(rep)
        return self.html(
            "eval.html", rel=path, rep=rep, by=by, statuses=sorted(st.items()), meta=meta, links=self._traj_links(path)
        )

    def compare(self, a: str, b: str):
        ra, rb = self._report(a), self._report(b)
        rows, counts = rn.compare(ra, rb)
        return self.html(
            "compare.html",
            a=a,
            b=b,
            rows=rows,
            counts=counts,
            links_a=self._traj_links(a),
            links_b=self._traj_links(b),
            meta=self._meta(),
        )

    def training(self, path: str | None = None):
        if path is None:
            return self.html("training_list.html", runs=cached_scan(self.root).training)
        return self.html("training.html", rel=path, body=self.training_charts(path))

    def training_charts(self, path: str) -> str:
        try:
            idx = rn.metrics_index(self.file(path))
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
