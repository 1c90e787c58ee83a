"""The report's files in the run folder: report.json, summary.json, report.md and report.html."""

from __future__ import annotations

from pathlib import Path

from rag_eval.report.assemble import summary
from rag_eval.report.html import render_html
from rag_eval.report.markdown import render_markdown, render_traces_markdown
from rag_eval.report.report_records import Report
from rag_eval.rundir import write_json, write_text


def write_report(run_dir: Path, report: Report | dict) -> None:
    """report.json, summary.json, report.md and report.html from the report (a dict is read as an
    old run folder's report.json). A report without retrieval (supplied answers, traces judged
    without labels) has Markdown only for traces."""
    report = Report.load(report)
    write_json(run_dir / "report.json", report.dump())
    write_json(run_dir / "summary.json", summary(report))
    if report.retrieval is not None:
        write_text(run_dir / "report.md", render_markdown(report))
    elif report.traces is not None:
        write_text(run_dir / "report.md", render_traces_markdown(report))
    write_text(run_dir / "report.html", render_html(report))
