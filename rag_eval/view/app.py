"""The web app of ``rag-eval view`` (Starlette, pages rendered on the server with Jinja2, which
escapes every value; a little vanilla JS on the labelling page). Run folders are only read; the
only file it writes is a run's labels file (``view/labels_file.py``)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from rag_eval.errors import RagEvalError
from rag_eval.judges.registry import HUMAN_LABELS
from rag_eval.orchestration.diff import diff_runs
from rag_eval.orchestration.history import headline_figures
from rag_eval.report.assemble import summary
from rag_eval.report.diff_records import DiffData
from rag_eval.report.formatting import fmt
from rag_eval.report.sections import render_html
from rag_eval.view import labels_file
from rag_eval.view.figures import figures_json
from rag_eval.view.figures import label_figures as figures_with_labels
from rag_eval.view.queue import (
    RunSources,
    answer_view,
    base_row,
    build_queue,
    labelled_with_certainty,
    run_sources,
    uncertain_ranks,
)
from rag_eval.view.run_folders import (
    NotARun,
    failures_line,
    list_runs,
    load_report,
    run_failures,
    run_folder,
    run_status,
)

STATIC = Path(__file__).parent / "static"
# The browser's tab icon: a tick on the accent colour, small enough to live here.
FAVICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" '
    'fill="#2f5bd3"/><path d="M4 8.5l2.6 2.6L12 5.5" fill="none" stroke="#fff" stroke-width="2"/></svg>'
)


def _env() -> Environment:
    env = Environment(loader=PackageLoader("rag_eval.view", "templates"), autoescape=select_autoescape(default=True))
    env.filters.update(fig=lambda e, digits=2: fmt(e, digits), pct=lambda p: "–" if p is None else f"{p:.2f}")
    env.globals.update(failures_line=failures_line)
    return env


@dataclasses.dataclass(frozen=True)
class Filters:
    """The run page's question filters, as its query string sets them ("" where it does not)."""

    prompt: str = ""
    outcome: str = ""
    judge: str = ""
    verdict: str = ""
    uncertain: str = ""

    @classmethod
    def of(cls, request: Request) -> Filters:
        return cls(**{f.name: request.query_params.get(f.name, "") for f in dataclasses.fields(cls)})


def _name(request: Request) -> str:
    """The run named in the page's path."""
    return str(request.path_params["name"])


def _question_rows(report, q: Filters) -> list[dict]:
    """The attribution rows that pass the filters (prompt, outcome, judge, verdict, uncertain)."""
    out = []
    for r in report.rows():
        judges = {n: j for n, j in r.judges.items() if j.status != "skipped"}
        if q.prompt and r.prompt != q.prompt:
            continue
        if q.outcome and r.outcome != q.outcome:
            continue
        judge = q.judge
        if judge and judge not in judges:
            continue
        if q.verdict:
            shown = [judges[judge].shown()] if judge else [j.shown() for j in judges.values()]
            if q.verdict not in shown:
                continue
        if q.uncertain:
            pool = [judges[judge]] if judge else list(judges.values())
            if r.outcome != "uncertain" and not any(j.status == "uncertain" for j in pool):
                continue
        out.append({"row": r, "judges": judges})
    return out


def create_app(runs_dir: Path, allowed_hosts: Sequence[str] | None = None, adapt: bool = False) -> Starlette:
    """The app over ``runs_dir``; ``allowed_hosts``: the Host headers it answers (None: any);
    ``adapt``: the figures with the judges adapted to each run's corpus by its labels."""
    runs_dir = Path(runs_dir).resolve()
    label_figures = functools.partial(figures_with_labels, adapt=adapt)
    env = _env()
    sources_cache: dict[Path, tuple[float, RunSources]] = {}

    def page(template: str, code: int = 200, **ctx) -> HTMLResponse:
        return HTMLResponse(env.get_template(template).render(runs_dir=str(runs_dir), **ctx), status_code=code)

    def not_found(what: str) -> HTMLResponse:
        return page("error.html", 404, title="Not found", message=f"{what} is not a run folder in {runs_dir}.")

    def run_or_none(name: str) -> Path | None:
        try:
            return run_folder(runs_dir, name)
        except NotARun:
            return None

    async def runs(request: Request) -> Response:
        return page("runs.html", title="Runs", runs=list_runs(runs_dir))

    async def run(request: Request) -> Response:
        name = _name(request)
        path = run_or_none(name)
        if path is None or not (path / "report.json").exists():
            return not_found(name)
        report = load_report(path)
        figs = label_figures(path, report)
        labelled = figs.report
        heads = headline_figures(summary(labelled), labelled.dump())
        q = Filters.of(request)
        rows = report.rows()
        judges = sorted({n for r in rows for n, j in r.judges.items() if j.status != "skipped"})
        verdicts = sorted({j.shown() for r in rows for n, j in r.judges.items() if not q.judge or n == q.judge})
        return page(
            "run.html",
            title=name,
            name=name,
            status=run_status(path),
            failures=run_failures(path),
            report=labelled,
            figs=figs,
            heads=heads,
            q=q,
            rows=_question_rows(report, q),
            total=len(rows),
            prompts=sorted({r.prompt for r in rows}),
            outcomes=list(dict.fromkeys(r.outcome for r in rows)),
            judges=judges,
            verdicts=verdicts,
            others=[e.name for e in list_runs(runs_dir) if e.name != name and e.has_report],
            has_answers=(path / "generation.jsonl").exists(),
        )

    async def report_page(request: Request) -> Response:
        name = _name(request)
        path = run_or_none(name)
        if path is None or not (path / "report.json").exists():
            return not_found(name)
        report = label_figures(path, load_report(path)).report
        if report.retrieval is None:
            return page(
                "error.html", 404, title="No report page", message=f"{name} has no HTML report (no retrieval stage)."
            )
        return HTMLResponse(render_html(report))

    def sources_of(path: Path, report) -> RunSources:
        """The run's corpus, cut and evidence, read once per version of its report."""
        mtime = (path / "report.json").stat().st_mtime
        got = sources_cache.get(path)
        if got is None or got[0] != mtime:
            got = sources_cache[path] = (mtime, run_sources(path, report))
        return got[1]

    def queue_of(path: Path):
        report = load_report(path)
        rows = labels_file.read_rows(labels_file.labels_path(path))
        return report, rows, build_queue(path, report, rows)

    async def label_start(request: Request) -> Response:
        name = _name(request)
        path = run_or_none(name)
        if path is None or not (path / "report.json").exists():
            return not_found(name)
        try:
            report, rows, queue = queue_of(path)
        except RagEvalError as exc:
            return page("error.html", 400, title="Nothing to label", message=exc.render())
        done = labels_file.labelled_values(rows)
        first = next(
            (i for i, it in enumerate(queue) if not any(v is not None for v in done.get(it.key, {}).values())), 0
        )
        return RedirectResponse(f"/runs/{name}/label/{first}", status_code=303)

    async def label_page(request: Request) -> Response:
        name = _name(request)
        path = run_or_none(name)
        if path is None or not (path / "report.json").exists():
            return not_found(name)
        try:
            report, rows, queue = queue_of(path)
        except RagEvalError as exc:
            return page("error.html", 400, title="Nothing to label", message=exc.render())
        i = request.path_params["i"]
        if not queue or not 0 <= i < len(queue):
            return page(
                "error.html", 404, title="Not in the queue", message=f"{name} has {len(queue)} answers to label."
            )
        sources = sources_of(path, report)
        view = answer_view(i, queue[i], report, sources, rows)
        prev = None
        p = request.query_params.get("prev", "")
        if p.isdigit() and int(p) < len(queue):
            prev = answer_view(int(p), queue[int(p)], report, sources, rows)
        done = labels_file.labelled_values(rows)
        labelled = sum(any(v is not None for v in done.get(it.key, {}).values()) for it in queue)
        return page(
            "label.html",
            title=f"Label {name}",
            name=name,
            view=view,
            prev=prev,
            total=len(queue),
            labelled=labelled,
            figs=label_figures(path, report),
            blind=request.query_params.get("blind", "1") != "0",
            columns=HUMAN_LABELS,
        )

    async def post_label(request: Request) -> Response:
        name = _name(request)
        path = run_or_none(name)
        if path is None or not (path / "report.json").exists():
            return JSONResponse({"error": f"{name} is not a run folder in {runs_dir}"}, 404)
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "send the label as application/json"}, 415)
        try:
            body = await request.json()
            key = (str(body["question_id"]), str(body["prompt"]))
            values = {str(c): v for c, v in dict(body.get("values") or {}).items()}
            note = body.get("note")
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "expected {question_id, prompt, values: {column: true|false|null}}"}, 400)
        bad = [c for c, v in values.items() if c not in HUMAN_LABELS or v not in (True, False, None)]
        if bad or (note is not None and not isinstance(note, str)):
            return JSONResponse({"error": f"unknown label column or value: {', '.join(bad) or 'note'}"}, 400)
        report, _, queue = queue_of(path)
        item = next((it for it in queue if it.key == key), None)
        if item is None:
            return JSONResponse({"error": f"question {key[0]} with prompt {key[1]} is not in the labelling queue"}, 404)
        rows_by_key = {(r.question_id, r.prompt): r for r in report.rows()}
        ranks = uncertain_ranks(report)

        def change(rows: list[dict[str, str]]) -> list[dict[str, str]]:
            if not rows:  # the first label: the file starts as the draw, like rag-eval label's
                rows = [base_row(it, rows_by_key.get(it.key)) for it in queue if it.part == "drawn"]
                rows = [{**r, **{c: "" for c in HUMAN_LABELS}, "note": ""} for r in rows]
            rows = labels_file.set_label(rows, base_row(item, rows_by_key.get(key)), values, note)
            return labelled_with_certainty(rows, ranks, key) if item.part == "uncertain" else rows

        labels_file.update(labels_file.labels_path(path), change)
        # The page that opens next shows the figures: no need to compute them twice.
        if request.query_params.get("figures") == "0":
            return JSONResponse({"saved": True})
        return JSONResponse({"saved": True, "figures": figures_json(label_figures(path, load_report(path)))})

    async def figures(request: Request) -> Response:
        path = run_or_none(_name(request))
        if path is None or not (path / "report.json").exists():
            return JSONResponse({"error": "not a run folder"}, 404)
        return JSONResponse(figures_json(label_figures(path, load_report(path))))

    async def compare(request: Request) -> Response:
        base, new = request.query_params.get("base", ""), request.query_params.get("new", "")
        bp, np_ = run_or_none(base), run_or_none(new)
        if bp is None or np_ is None:
            return not_found(base if bp is None else new)
        try:
            diff = DiffData.load(diff_runs(bp, np_).to_json())
        except RagEvalError as exc:
            return page("error.html", 400, title="Cannot compare", message=exc.render())
        return page("compare.html", title=f"{base} vs {new}", base=base, new=new, diff=diff)

    async def favicon(request: Request) -> Response:
        return Response(FAVICON, media_type="image/svg+xml", headers={"cache-control": "max-age=86400"})

    routes = [
        Route("/", runs),
        Route("/favicon.ico", favicon),
        Route("/runs/{name}", run),
        Route("/runs/{name}/report", report_page),
        Route("/runs/{name}/label", label_start),
        Route("/runs/{name}/label/{i:int}", label_page),
        Route("/api/runs/{name}/labels", post_label, methods=["POST"]),
        Route("/api/runs/{name}/figures", figures),
        Route("/compare", compare),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = [Middleware(SameOrigin)]
    if allowed_hosts:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    return Starlette(routes=routes, middleware=middleware)


class SameOrigin:
    """Refuse a request that changes something (any method but GET/HEAD) from another site's page:
    its Origin header, when sent, must name this server's host."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD"):
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            origin = headers.get("origin")
            if origin and urlsplit(origin).netloc != headers.get("host"):
                await JSONResponse({"error": "cross-site request refused"}, 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)
