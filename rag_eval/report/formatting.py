"""The pieces every report page is made of: figures with their intervals as text, model text made
inert, and Markdown and HTML tables."""

from __future__ import annotations

import html
from html import escape

from rag_eval.base_records import Figure
from rag_eval.judges.judge_records import LabelledEstimate


def fmt(est: Figure | LabelledEstimate | dict | None, digits: int = 3) -> str:
    """``0.720 [0.610, 0.820]``, or ``–`` when there is no value (a dict is read as a figure)."""
    if isinstance(est, dict):
        est = Figure.load(est)
    if est is None or est.value is None:
        return "–"
    if est.ci_low is None or est.ci_high is None:  # one label: no interval
        return f"{est.value:.{digits}f} [no interval]"
    return f"{est.value:.{digits}f} [{est.ci_low:.{digits}f}, {est.ci_high:.{digits}f}]"


def text(value: object, limit: int | None = None) -> str:
    """Model or user text made inert in Markdown: HTML escaped (an answer may hold ``<script>``),
    on one line, cut to ``limit`` characters."""
    s = " ".join(str(value if value is not None else "").split())
    return html.escape(s[:limit] if limit else s, quote=False)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    esc = [[text(c).replace("|", "\\|") for c in row] for row in rows]
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in esc]


def judge_columns(figures: dict[str, dict]) -> list[str]:
    """The judged figures present in any prompt, in the order they were computed (the registry's)."""
    return list(dict.fromkeys(m for f in figures.values() for m in f))


def html_table(header: list[str], rows: list[list[str]], attrs: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table {attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
