"""The web app of ``rag-eval view`` (Starlette, pages rendered on the server with Jinja2, which
escapes every value; a little vanilla JS on the labelling page). Run folders are only read; the
only file it writes is a run's labels file (``view/labels_file.py``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jinja2 import Environment, PackageLoader, select_autoescape
from pydantic import BaseModel, ConfigDict
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from rag_eval.errors import RagEvalError
from rag_eval.labels.columns import run_columns
from rag_eval.labels.human import header_problems
from rag_eval.orchestration.diff import diff_runs
from rag_eval.orchestration.history import headline_figures
from rag_eval.report.assemble import summary
from rag_eval.report.diff_records import DiffData
from rag_eval.report.formatting import fmt
from rag_eval.report.report_records import Report
from rag_eval.report.sections import render_html
from rag_eval.rundir import not_being_written
from rag_eval.view import labels_file
from rag_eval.view.figures import LabelFigures, figures_json
from rag_eval.view.figures import label_figures as figures_with_labels
from rag_eval.view.queue import (
    QueueItem,
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
    # "<name>:failed" or "<name>:uncertain": the answers a criterion of the run failed or left uncertain.
    criterion: str = ""

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
        if q.criterion and not _criterion_matches(judges, q.criterion):
            continue
        out.append({"row": r, "judges": judges})
    return out


def _criterion_matches(judges: dict, wanted: str) -> bool:
    """Whether an answer's verdict of one criterion is ``wanted`` ("<name>:failed" or "<name>:uncertain")."""
    name, _, state = wanted.rpartition(":")
    j = judges.get(name)
    if j is None:
        return False
    return j.status == "uncertain" if state == "uncertain" else (j.status == "judged" and j.verdict == "fail")


@dataclasses.dataclass
class ViewState:
    """What every page of the app reads: the folder of runs, the templates, whether figures are
    shown with the judges adapted, and each run's corpus and evidence read once per report."""

    runs_dir: Path
    adapt: bool = False
    env: Environment = dataclasses.field(default_factory=_env)
    sources_cache: dict[Path, tuple[float, RunSources]] = dataclasses.field(default_factory=dict)

    def page(self, template: str, code: int = 200, **ctx) -> HTMLResponse:
        html = self.env.get_template(template).render(runs_dir=str(self.runs_dir), **ctx)
        return HTMLResponse(html, status_code=code)

    def not_found(self, what: str) -> HTMLResponse:
        return self.page(
            "error.html", 404, title="Not found", message=f"{what} is not a run folder in {self.runs_dir}."
        )

    def run_or_none(self, name: str) -> Path | None:
        try:
            return run_folder(self.runs_dir, name)
        except NotARun:
            return None

    def reported(self, name: str) -> Path | None:
        """The run folder of that name, where it holds a report."""
        path = self.run_or_none(name)
        return path if path is not None and (path / "report.json").exists() else None

    def label_figures(self, path: Path, report: Report) -> LabelFigures:
        return figures_with_labels(path, report, adapt=self.adapt)

    def sources_of(self, path: Path, report: Report) -> RunSources:
        """The run's corpus, cut and evidence, read once per version of its report."""
        mtime = (path / "report.json").stat().st_mtime
        got = self.sources_cache.get(path)
        if got is None or got[0] != mtime:
            got = self.sources_cache[path] = (mtime, run_sources(path, report))
        return got[1]


def _state(request: Request) -> ViewState:
    return request.app.state.view


def _queue_of(path: Path) -> tuple[Report, list[dict[str, str]], list[QueueItem]]:
    """The run's report, its labels file's rows and the labelling queue."""
    report = load_report(path)
    answers = {(r.question_id, r.prompt): r.answer for r in report.rows()}
    rows = labels_file.as_shown(labels_file.read_rows(labels_file.labels_path(path)), answers)
    return report, rows, build_queue(path, report, rows)


async def runs_page(request: Request) -> Response:
    """``/``: the runs with their headline figures and status."""
    view = _state(request)
    return view.page("runs.html", title="Runs", runs=list_runs(view.runs_dir))


async def run_page(request: Request) -> Response:
    """``/runs/{name}``: a run's figures and its questions, filtered by the query string."""
    view, name = _state(request), _name(request)
    path = view.reported(name)
    if path is None:
        return view.not_found(name)
    report = load_report(path)
    figs = view.label_figures(path, report)
    labelled = figs.report
    q = Filters.of(request)
    rows = report.rows()
    return view.page(
        "run.html",
        title=name,
        name=name,
        status=run_status(path),
        failures=run_failures(path),
        report=labelled,
        figs=figs,
        heads=headline_figures(summary(labelled), labelled.dump()),
        q=q,
        rows=_question_rows(report, q),
        total=len(rows),
        prompts=sorted({r.prompt for r in rows}),
        outcomes=list(dict.fromkeys(r.outcome for r in rows)),
        judges=sorted({n for r in rows for n, j in r.judges.items() if j.status != "skipped"}),
        verdicts=sorted({j.shown() for r in rows for n, j in r.judges.items() if not q.judge or n == q.judge}),
        criteria=list(report.judges.criteria) if report.judges else [],
        others=[e.name for e in list_runs(view.runs_dir) if e.name != name and e.has_report],
        has_answers=(path / "generation.jsonl").exists(),
    )


async def report_page(request: Request) -> Response:
    """``/runs/{name}/report``: the run's HTML report, with the labels' figures."""
    view, name = _state(request), _name(request)
    path = view.reported(name)
    if path is None:
        return view.not_found(name)
    # Every run has one, a run without retrieval (supplied answers, traces) too.
    return HTMLResponse(render_html(view.label_figures(path, load_report(path)).report))


async def label_start(request: Request) -> Response:
    """``/runs/{name}/label``: on to the first answer of the queue without a label."""
    view, name = _state(request), _name(request)
    path = view.reported(name)
    if path is None:
        return view.not_found(name)
    try:
        not_being_written(path)  # a run or a resume is writing its answers: `rag-eval label` refuses too
    except RagEvalError as exc:
        return view.page("error.html", 409, title="Being written", message=exc.render())
    try:
        _, rows, queue = _queue_of(path)
    except RagEvalError as exc:
        return view.page("error.html", 400, title="Nothing to label", message=exc.render())
    done = labels_file.labelled_values(rows)
    first = next((i for i, it in enumerate(queue) if not any(v is not None for v in done.get(it.key, {}).values())), 0)
    return RedirectResponse(f"/runs/{name}/label/{first}", status_code=303)


async def label_page(request: Request) -> Response:
    """``/runs/{name}/label/{i}``: the queue's answer i to label (and the one labelled before it)."""
    view, name = _state(request), _name(request)
    path = view.reported(name)
    if path is None:
        return view.not_found(name)
    try:
        report, rows, queue = _queue_of(path)
    except RagEvalError as exc:
        return view.page("error.html", 400, title="Nothing to label", message=exc.render())
    i = request.path_params["i"]
    if not queue or not 0 <= i < len(queue):
        return view.page(
            "error.html", 404, title="Not in the queue", message=f"{name} has {len(queue)} answers to label."
        )
    sources = view.sources_of(path, report)
    prev = None
    p = request.query_params.get("prev", "")
    if p.isdigit() and int(p) < len(queue):
        prev = answer_view(int(p), queue[int(p)], report, sources, rows)
    done = labels_file.labelled_values(rows)
    return view.page(
        "label.html",
        title=f"Label {name}",
        name=name,
        view=answer_view(i, queue[i], report, sources, rows),
        prev=prev,
        total=len(queue),
        labelled=sum(any(v is not None for v in done.get(it.key, {}).values()) for it in queue),
        figs=view.label_figures(path, report),
        blind=request.query_params.get("blind", "1") != "0",
        columns=run_columns(report),
    )


class LabelBody(BaseModel):
    """The JSON body of ``POST /api/runs/{name}/labels`` (what the labelling page posts): the
    answer's question id and prompt, its labels by column (true, false or null) and a note; the
    values are checked against the run's columns after."""

    model_config = ConfigDict(extra="ignore")

    question_id: Any
    prompt: Any
    values: Any = None
    note: Any = None


async def post_label(request: Request) -> Response:
    """``POST /api/runs/{name}/labels``: one answer's labels written to the run's labels file; the
    figures with the labels so far in the reply (unless ``?figures=0``)."""
    view, name = _state(request), _name(request)
    path = view.reported(name)
    if path is None:
        return JSONResponse({"error": f"{name} is not a run folder in {view.runs_dir}"}, 404)
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return JSONResponse({"error": "send the label as application/json"}, 415)
    try:
        body = LabelBody.model_validate(await request.json())
        key = (str(body.question_id), str(body.prompt))
        values = {str(c): v for c, v in dict(body.values or {}).items()}
        note = body.note
    except (ValueError, KeyError, TypeError):
        return JSONResponse({"error": "expected {question_id, prompt, values: {column: true|false|null}}"}, 400)
    report, _, queue = _queue_of(path)
    columns = run_columns(report)  # a criterion of the run is a label column too
    bad = [c for c, v in values.items() if c not in columns or v not in (True, False, None)]
    if bad or (note is not None and not isinstance(note, str)):
        return JSONResponse({"error": f"unknown label column or value: {', '.join(bad) or 'note'}"}, 400)
    item = next((it for it in queue if it.key == key), None)
    if item is None:
        return JSONResponse({"error": f"question {key[0]} with prompt {key[1]} is not in the labelling queue"}, 404)
    if problems := header_problems(labels_file.labels_path(path), columns):
        # Writing would add a correctly named column beside the misspelt one, and a rename then
        # duplicates it (user trial 5 F6): the file is fixed first, by the person.
        return JSONResponse({"error": "; ".join(f"{p} (fix: {p.fix})" for p in problems)}, 409)
    labels_file.update(labels_file.labels_path(path), _labelled(report, queue, item, values, note, path))
    # The page that opens next shows the figures: no need to compute them twice.
    if request.query_params.get("figures") == "0":
        return JSONResponse({"saved": True})
    return JSONResponse({"saved": True, "figures": figures_json(view.label_figures(path, load_report(path)))})


def _labelled(
    report: Report, queue: list[QueueItem], item: QueueItem, values: dict, note: str | None, run_dir: Path
) -> Callable[[list[dict[str, str]]], list[dict[str, str]]]:
    """The change to the labels file's rows that sets the item's labels. A row it starts again (it
    labelled an answer the run no longer gives) is kept in ``labels.replaced.csv`` first: a
    person's labels are never dropped."""
    rows_by_key = {(r.question_id, r.prompt): r for r in report.rows()}
    ranks = uncertain_ranks(report)
    columns = run_columns(report)

    def change(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        if not rows:  # the first label: the file starts as the draw, like rag-eval label's
            rows = [base_row(it, rows_by_key.get(it.key)) for it in queue if it.part == "drawn"]
            rows = [{**r, **{c: "" for c in columns}, "note": ""} for r in rows]
        replaced: list[dict[str, str]] = []
        rows = labels_file.set_label(rows, base_row(item, rows_by_key.get(item.key)), values, note, columns, replaced)
        if replaced:
            kept = labels_file.replaced_path(run_dir)
            labels_file.write_rows(kept, labels_file.read_rows(kept) + replaced)
        return labelled_with_certainty(rows, ranks, item.key) if item.part == "uncertain" else rows

    return change


async def figures(request: Request) -> Response:
    """``/api/runs/{name}/figures``: the run's figures with the labels so far, as JSON."""
    view = _state(request)
    path = view.reported(_name(request))
    if path is None:
        return JSONResponse({"error": "not a run folder"}, 404)
    return JSONResponse(figures_json(view.label_figures(path, load_report(path))))


async def compare_page(request: Request) -> Response:
    """``/compare?base=A&new=B``: two runs side by side with the questions that moved."""
    view = _state(request)
    base, new = request.query_params.get("base", ""), request.query_params.get("new", "")
    bp, np_ = view.run_or_none(base), view.run_or_none(new)
    if bp is None or np_ is None:
        return view.not_found(base if bp is None else new)
    try:
        diff = DiffData.load(diff_runs(bp, np_).to_json())
    except RagEvalError as exc:
        return view.page("error.html", 400, title="Cannot compare", message=exc.render())
    return view.page("compare.html", title=f"{base} vs {new}", base=base, new=new, diff=diff)


async def favicon(request: Request) -> Response:
    return Response(FAVICON, media_type="image/svg+xml", headers={"cache-control": "max-age=86400"})


ROUTES = [
    Route("/", runs_page),
    Route("/favicon.ico", favicon),
    Route("/runs/{name}", run_page),
    Route("/runs/{name}/report", report_page),
    Route("/runs/{name}/label", label_start),
    Route("/runs/{name}/label/{i:int}", label_page),
    Route("/api/runs/{name}/labels", post_label, methods=["POST"]),
    Route("/api/runs/{name}/figures", figures),
    Route("/compare", compare_page),
    Mount("/static", StaticFiles(directory=STATIC), name="static"),
]


def create_app(runs_dir: Path, allowed_hosts: Sequence[str] | None = None, adapt: bool = False) -> Starlette:
    """The app over ``runs_dir``; ``allowed_hosts``: the Host headers it answers (None: any);
    ``adapt``: the figures with the judges adapted to each run's corpus by its labels."""
    middleware = [Middleware(SameOrigin)]
    if allowed_hosts:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    app = Starlette(routes=ROUTES, middleware=middleware)
    app.state.view = ViewState(Path(runs_dir).resolve(), adapt)
    return app


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
