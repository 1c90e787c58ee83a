"""The history of a system's runs as one self-contained HTML page: each headline figure plotted
across the runs with its interval (inline SVG, the report's style), the runs whose config, corpus
or test set changed marked on every plot."""

from __future__ import annotations

from html import escape
from typing import Any

from rag_eval.base_records import Figure, Model
from rag_eval.report.history_records import HistoryData, HistoryRun
from rag_eval.report.html import COLORS, CSS, _table, y_grid
from rag_eval.report.markdown import fmt

CHANGE_COLORS = {
    "config": "#e07b39",
    "gates": "#2a8c8c",
    "corpus": "#b63b6f",
    "test_set": "#7a5cc2",
    "judges": "#3b6fb6",
    "version": "#8c8c3b",
}
# Which change colours a run's line where it has several: the weightiest first; any kind not listed
# (a kind added later) after them, so every change draws a line.
CHANGE_ORDER = ("corpus", "test_set", "config", "judges", "gates")


class CorpusNote(Model):
    """What the history says of a run's corpus (``HistoryRun.corpus``): its fingerprint, its chunks
    and where it came from ("?" where a run folder did not say)."""

    fingerprint: Any = None
    chunks: Any = "?"
    source: Any = "?"


def trend_plot(runs: list[HistoryRun], figure: str, plot_id: str) -> str:
    """One figure across the runs: a point per run with its interval whiskers, joined in time
    order; a dashed line before each run where something changed."""
    step, h, top, left = max(36, min(90, 900 // max(1, len(runs)))), 160, 18, 40
    width = left + step * len(runs) + 20
    y = lambda v: top + h - v * h  # noqa: E731
    x = lambda i: left + step * i + step / 2  # noqa: E731
    parts = [
        f'<svg class="plot" id="{escape(plot_id)}" width="{width}" height="{h + top + 54}" role="img" '
        f'aria-label="{escape(figure)} across runs">'
    ]
    parts += y_grid(left, width - 10, y)
    for i, r in enumerate(runs):
        kinds = [c.kind for c in r.changes if c.kind != "version"]
        if kinds:
            # One line per run, coloured by its weightiest change; the tooltip lists them all.
            weightiest = min(kinds, key=lambda k: CHANGE_ORDER.index(k) if k in CHANGE_ORDER else len(CHANGE_ORDER))
            color = CHANGE_COLORS.get(weightiest, "#888888")
            what = "; ".join(c.what for c in r.changes)
            cx = x(i) - step / 2
            parts.append(
                f'<line x1="{cx}" x2="{cx}" y1="{top - 6}" y2="{top + h}" stroke="{color}" stroke-dasharray="4 3" '
                f'class="change {" ".join(f"change-{k}" for k in kinds)}"><title>{escape(what)}</title></line>'
            )
        parts.append(f'<text x="{x(i) - 8}" y="{top + h + 16}">#{i + 1}</text>')
        parts.append(f'<text x="{x(i) - 16}" y="{top + h + 30}">{escape(r.created[5:10])}</text>')
        parts.append(f'<text x="{x(i) - 15}" y="{top + h + 44}">{escape(r.created[11:16])}</text>')
    points: list[tuple[int, float, Figure]] = []
    for i, r in enumerate(runs):
        e = r.figures.get(figure)
        if e is not None and e.value is not None:
            points.append((i, float(e.value), e))
    if len(points) > 1:
        path = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v, _ in points)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{COLORS[0]}" stroke-width="1.5"/>')
    for i, value, e in points:
        cx = x(i)
        if e.ci_low is not None and e.ci_high is not None:
            parts.append(f'<line x1="{cx}" x2="{cx}" y1="{y(e.ci_low):.1f}" y2="{y(e.ci_high):.1f}" stroke="#222"/>')
            for v in (e.ci_low, e.ci_high):
                parts.append(f'<line x1="{cx - 4}" x2="{cx + 4}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#222"/>')
        parts.append(
            f'<circle cx="{cx}" cy="{y(value):.1f}" r="4" fill="{COLORS[0]}" class="point">'
            f"<title>run #{i + 1} {escape(runs[i].run)}: {escape(fmt(e))} (n={e.n})</title></circle>"
        )
    return "".join(parts) + "</svg>"


def render_history_html(hist: HistoryData | dict) -> str:
    """The whole history page."""
    hist = HistoryData.load(hist)
    out = [
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>rag-eval history</title>"
        f"<style>{CSS}</style></head><body>",
        f"<h1>rag-eval history: {escape(hist.runs_dir)}</h1>",
        "<p class=meta>Each figure of each finished run with its 95% interval, in time order. A dashed line "
        "marks a run whose config (orange), gates (teal), corpus (red), test set (violet) or judges (blue: their "
        "model, prompts, cut-offs or bands) changed since the run before; "
        "hover it for what changed. Two runs' difference is settled only by a paired comparison: "
        "<code>rag-eval diff BASE_RUN NEW_RUN</code>.</p>",
    ]
    for si, (name, runs) in enumerate(hist.systems.items()):
        out.append(f"<h2>{escape(name)} ({len(runs)} runs)</h2>")
        rows = [
            [
                str(i),
                escape(r.created),
                f"<code>{escape(r.run)}</code>",
                f"{CorpusNote.load(r.corpus).chunks} chunks · {len(r.test_set.ids)} questions",
                "<br>".join(escape(c.what) for c in r.changes) or ("first run" if i == 1 else "–"),
            ]
            for i, r in enumerate(runs, 1)
        ]
        out.append(_table(["#", "created", "run folder", "corpus · test set", "changed since the run before"], rows))
        figures = list(dict.fromkeys(f for r in runs for f in r.figures))
        for fi, figure in enumerate(figures):
            out.append(f"<h3>{escape(figure)}</h3>")
            out.append(trend_plot(runs, figure, f"trend-{si}-{fi}"))
    if hist.unfinished:
        out.append("<p class=meta>Unfinished runs left out:</p><ul>")
        out += [
            f"<li><code>{escape(r)}</code>: {escape(hist.unfinished_why.get(r, 'did not finish'))}</li>"
            for r in hist.unfinished
        ]
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out)
