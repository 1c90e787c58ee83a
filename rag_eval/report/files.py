"""The report's files in the run folder: report.json, summary.json, report.md and report.html."""

from __future__ import annotations

from pathlib import Path

from rag_eval.report.assemble import summary
from rag_eval.report.html import render_html
from rag_eval.report.markdown import render_markdown, render_traces_markdown
from rag_eval.rundir import write_json, write_text


def write_report(run_dir: Path, report: dict) -> None:
    """report.json, summary.json and report.md from the report data."""
    if "retrieval" not in report and "traces" in report:  # traces judged without labels
        return write_traces_report(run_dir, report)
    write_json(run_dir / "report.json", report)
    write_json(run_dir / "summary.json", summary(report))
    write_text(run_dir / "report.md", render_markdown(report))
    write_text(run_dir / "report.html", render_html(report))


def write_traces_report(run_dir: Path, report: dict) -> None:
    """report.json, summary.json and report.md of a traces audit judged without labels (``rag-eval
    report RUN_DIR --labels FILE`` re-renders through here)."""
    summary = {
        "name": report["name"],
        "created": report["created"],
        "supplied": report["supplied"],
        "generation": report["judges"]["figures"],
        "attribution": report["attribution"]["shares"],
        "failure_split": report["attribution"]["split"],
        "traces": {k: report["traces"][k] for k in ("read", "audited", "skipped")},
        **({"labels": report["labels"]} if "labels" in report else {}),
    }
    write_json(run_dir / "report.json", report)
    write_json(run_dir / "summary.json", summary)
    write_text(run_dir / "report.md", render_traces_markdown(report))
