"""The report's files in the run folder: report.json, summary.json, report.md and report.html (the
audit's own record), and a re-decision with people's labels or adapted judges beside them under its
own names (``report.labelled.json``, ``report.adapted.md``, ...), never over them."""

from __future__ import annotations

import html
from pathlib import Path

from rag_eval.report.assemble import summary
from rag_eval.report.report_records import Report
from rag_eval.report.sections import build_sections, render_html, render_markdown, render_traces_markdown
from rag_eval.rundir import write_json, write_text

# A re-decision of a finished run (``rag-eval report RUN --labels F [--adapt]``), by its name in
# the files it writes.
LABELLED = "labelled"
ADAPTED = "adapted"
KINDS = (LABELLED, ADAPTED)


def report_file(run_dir: Path, base: str, kind: str | None = None) -> Path:
    """Where one of the report's files is: ``base`` (report.json, summary.json, report.md,
    report.html) for the audit's own record, ``report.<kind>.json``-style beside it for a
    re-decision of ``kind`` (labelled, adapted)."""
    if kind is None:
        return run_dir / base
    if kind not in KINDS:
        raise ValueError(f"a re-decision is one of {', '.join(KINDS)}, not {kind!r}")
    stem, ext = base.rsplit(".", 1)
    return run_dir / f"{stem}.{kind}.{ext}"


def in_progress_markdown(markdown: str, note: str) -> str:
    """``markdown`` with ``note`` (what is still running) at its top, under the title."""
    title, _, rest = markdown.partition("\n")
    return f"{title}\n\n> **In progress:** {note}\n{rest}"


def in_progress_html(page: str, note: str) -> str:
    """``page`` with ``note`` (what is still running) at its top, under the title."""
    mark = f'<p class="warn in-progress" role="status"><b>In progress:</b> {html.escape(note)}</p>'
    at = page.find("</h1>")
    return page[: at + 5] + "\n" + mark + page[at + 5 :] if at >= 0 else page.replace("<body>", "<body>" + mark, 1)


def mark_stopped(run_dir: Path, note: str) -> list[Path]:
    """The report files of a run that stopped before its end (interrupted, or failed) say so where
    they said it was in progress: ``note`` (why it stopped and how to go on) replaces that line, the
    rest stays what was done. Returns the files changed."""
    changed = []
    for path, old, new in (
        (run_dir / "report.md", "> **In progress:**", "> **Stopped before the end:**"),
        (run_dir / "report.html", "<b>In progress:</b>", "<b>Stopped before the end:</b>"),
    ):
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if old not in text:
            continue
        head, _, rest = text.partition(old)
        line_end = rest.find("\n") if path.suffix == ".md" else rest.find("</p>")
        said = html.escape(note) if path.suffix == ".html" else note
        write_text(path, f"{head}{new} {said}{rest[line_end:] if line_end >= 0 else ''}")
        changed.append(path)
    return changed


def write_report(
    run_dir: Path, report: Report | dict, kind: str | None = None, in_progress: str | None = None
) -> list[Path]:
    """report.json, summary.json, report.md and report.html from the report (a dict is read as an
    old run folder's report.json); with ``kind`` (labelled, adapted) the same files under the
    re-decision's names beside them, the audit's own left as they are. A report without retrieval
    (supplied answers, traces judged without labels) has Markdown only for traces. ``in_progress``:
    what is still running (a report written before the run ends), said at the top of report.md and
    report.html. Returns the paths written."""
    report = build_sections(Report.load(report), run_dir)
    json_files = [(report_file(run_dir, "report.json", kind), report.dump())]
    json_files.append((report_file(run_dir, "summary.json", kind), summary(report)))
    for path, data in json_files:
        write_json(path, data)
    text_files = []
    if report.retrieval is not None:
        text_files.append((report_file(run_dir, "report.md", kind), render_markdown(report)))
    elif report.traces is not None:
        text_files.append((report_file(run_dir, "report.md", kind), render_traces_markdown(report)))
    text_files.append((report_file(run_dir, "report.html", kind), render_html(report)))
    if in_progress:
        marked = {".md": in_progress_markdown, ".html": in_progress_html}
        text_files = [(path, marked[path.suffix](text, in_progress)) for path, text in text_files]
    for path, text in text_files:
        write_text(path, text)
    return [path for path, _ in json_files] + [path for path, _ in text_files]
