"""The report's sections, listed once: in the order report.md shows them, each with its Markdown,
its HTML and where report.html places it (the page leads with the answers' outcomes, the retrieval
figures after them). ``render_markdown`` and ``render_html`` are these sections under the page's
head.

A new section is one :class:`Section` registered in ``SECTIONS`` (a line in the list below, or
``SECTIONS.register(...)`` in a plug-in's module; an installed plug-in's entry point in
``rag_eval.report_sections``): the sections the stages build read their part of the report; one
that builds its own data gives ``build``, which runs each time the report is written and keeps
what it returns in report.json under the section's name (read back by :func:`section_data`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval.base_records import required
from rag_eval.registry import Registry
from rag_eval.report import html
from rag_eval.report.citations_section import citations_html, citations_markdown
from rag_eval.report.markdown import (
    adaptation_markdown,
    attribution_markdown,
    comparison_markdown,
    criteria_markdown,
    generation_markdown,
    judges_markdown,
    labels_markdown,
    lint_markdown,
    resume_markdown,
    retrieval_markdown,
)
from rag_eval.report.report_records import Report
from rag_eval.report.system_html import system_html
from rag_eval.report.trace_markdown import judged_markdown, system_markdown, traces_markdown
from rag_eval.report.triage import triage_html, triage_markdown

Render = Callable[[Report], list[str]]

# Where report.html places a section registered without a place: after the shipped ones.
LAST = 100


def _none(report: Report) -> list[str]:
    return []


@dataclass(frozen=True)
class Section:
    """One section of the report: its ``name``, its lines in report.md and in report.html (each
    empty where the section has nothing to show), its place on the HTML page (``html_rank``, lowest
    first), and ``build``: its data from the finished report and the run folder, for a section that
    no stage builds (None: a stage builds it into the report)."""

    name: str
    markdown: Render = _none
    html: Render = _none
    html_rank: int = LAST
    build: Callable[[Report, Path], Any] | None = None


def _when(present: Callable[[Report], object], render: Render) -> Render:
    """``render`` where ``present`` holds, else nothing."""
    return lambda report: render(report) if present(report) else []


def _judged(render: Render) -> Render:
    return _when(lambda r: r.judges is not None, render)


# Every section, in report.md's order; a section registered later comes after these.
SECTIONS: Registry[Section] = Registry("report section", lambda s: s.name, group="rag_eval.report_sections")
for _section in (
    Section("models", html=html.models_html, html_rank=0),
    Section("resume", markdown=lambda r: resume_markdown(r.resume)),
    Section(
        "lint", markdown=lambda r: lint_markdown(r.lint), html=_when(lambda r: r.lint, html.lint_html), html_rank=2
    ),
    Section(
        "system",
        markdown=_when(lambda r: r.system is not None, system_markdown),
        html=_when(lambda r: r.system is not None or r.traces is not None, system_html),  # traces' too
        html_rank=1,
    ),
    Section("traces", markdown=_when(lambda r: r.traces is not None, traces_markdown)),
    Section(
        "retrieval",
        markdown=retrieval_markdown,
        html=lambda r: html.retrieval_html(r, r.retrieval) if r.retrieval is not None else [],
        html_rank=5,
    ),
    Section("generation", markdown=_when(lambda r: r.generation is not None, generation_markdown)),
    Section(
        "comparison",
        markdown=_when(lambda r: r.comparison is not None, comparison_markdown),
        html=_when(lambda r: r.comparison is not None, html.comparison_html),
        html_rank=3,
    ),
    Section(
        "attribution",
        markdown=_when(lambda r: r.attribution is not None, attribution_markdown),
        html=_when(lambda r: r.attribution is not None, html.attribution_html),
        html_rank=4,
    ),
    Section("judges", markdown=_judged(judges_markdown), html=_judged(html.judges_html), html_rank=6),
    Section("criteria", markdown=_judged(criteria_markdown), html=_judged(html.criteria_html), html_rank=7),
    Section("citations", markdown=_judged(citations_markdown), html=_judged(citations_html), html_rank=7),
    Section("adaptation", markdown=_judged(adaptation_markdown)),
    Section("labels", markdown=_judged(labels_markdown)),
    Section("triage", markdown=_judged(triage_markdown), html=_judged(triage_html), html_rank=8),
):
    SECTIONS.register(_section)


def section_data(report: Report, name: str) -> Any:
    """The data a section's ``build`` kept in the report (as JSON once read back from report.json);
    None before it was built."""
    return (report.model_extra or {}).get(name)


def build_sections(report: Report, run_dir: Path) -> Report:
    """Each section's own data (``build``) from the report and the run folder, kept in the report."""
    for section in SECTIONS.values():
        if section.build is not None:
            setattr(report, section.name, section.build(report, run_dir))
    return report


def render_markdown(report: Report | dict) -> str:
    """The whole report as Markdown."""
    report = Report.load(report)
    c = required(report.corpus, "the report's corpus")
    ts = required(report.test_set, "the report's test_set")
    out = [
        f"# rag-eval report: {report.name}",
        "",
        f"- created: {report.created} (rag-eval {report.rag_eval_version})",
        f"- corpus: {c.source}, {c.chunks} chunks",
        f"- test set: {ts.path}, {ts.questions} questions ({ts.answerable} answerable, {ts.unanswerable} unanswerable)",
        "",
    ]
    for section in SECTIONS.values():
        out += section.markdown(report)
    return "\n".join(out).rstrip() + "\n"


def render_traces_markdown(report: Report | dict) -> str:
    """A traces audit as Markdown: the full report when traces were matched to a labelled test set,
    else the traces, the judged figures and the outcomes."""
    report = Report.load(report)
    if report.retrieval is not None:
        return render_markdown(report)
    out = [
        f"# rag-eval traces report: {report.name}",
        "",
        f"- created: {report.created} (rag-eval {report.rag_eval_version})",
    ]
    out += traces_markdown(report)
    out += judged_markdown(report)
    return "\n".join(out).rstrip() + "\n"


def render_html(report: Report | dict) -> str:
    """The whole report as one HTML page."""
    report = Report.load(report)
    out = html.head_html(report)
    for section in sorted(SECTIONS.values(), key=lambda s: s.html_rank):
        out += section.html(report)
    out.append("</body></html>")
    return "\n".join(out)
