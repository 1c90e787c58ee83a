"""HTML for the system where it runs: the deployed system's failed questions and passage mapping,
and the traces read, audited and skipped (each skipped one named)."""

from __future__ import annotations

from html import escape

from rag_eval.report.formatting import html_table as _table
from rag_eval.report.report_records import Report


def system_html(report: Report) -> list[str]:
    """The system's and the traces' sections of the HTML page (empty when the report has neither)."""
    out = []
    s = report.system
    if s and s.type != "traces":
        p = s.passages
        out += [
            f"<h2>The system ({escape(s.type)}: {escape(str(s.endpoint))})</h2>",
            f"<p>Asked {s.questions} questions: {s.answered} answered, {len(s.failed)} failed "
            "(not judged; left out of the retrieval figures). Passages: "
            f"{p.passages} returned, {p.by_id} by corpus id, {p.by_text} matched by text, "
            f"{p.own_text} not in the corpus, {p.unknown_id} with an unknown id and no text.</p>",
        ]
        if s.failed:
            rows = [[escape(f.question_id), escape(f.question), escape(f.error or "")] for f in s.failed]
            out.append(_table(["question", "text", "error"], rows[:100]))
    t = report.traces
    if t:
        skipped = ", ".join(f"{n} {escape(why)}" for why, n in t.skipped.items()) or "none"
        out += [
            f"<h2>Traces ({escape(', '.join(t.files))})</h2>",
            f"<p>{t.read} read, {t.audited} audited; skipped: {skipped}.</p>",
        ]
        if t.skipped_traces:
            rows = [
                [escape(x.trace_id), escape(x.question or "–"), escape(x.reason), escape(x.detail or "")]
                for x in t.skipped_traces
            ]
            out.append(_table(["trace id", "question", "reason", "detail"], rows[:200]))
    return out
