"""Markdown for the system where it runs: the deployed system's calls and failures, and a traces
audit (what was read, what was skipped and why, the judged figures over the traffic)."""

from __future__ import annotations

from rag_eval.base_records import required
from rag_eval.report.formatting import _table, fmt, judge_columns, text
from rag_eval.report.report_records import Report


def _cut(value: object, limit: int) -> str:
    """Text for a table cell, on one line and cut to ``limit`` characters; not escaped here, since
    ``_table`` escapes every cell (escaping twice shows ``&amp;lt;`` for ``<``)."""
    return " ".join(str(value if value is not None else "").split())[:limit]


def system_markdown(report: Report) -> list[str]:
    """How the system was called, which questions failed (not_judged), how its passages mapped."""
    s = required(report.system, "the report's system section")
    if s.type == "traces":
        return []
    p = s.passages
    out = [
        "",
        f"## The system ({s.type}: {text(s.endpoint)})",
        "",
        f"- asked {s.questions} questions: {s.answered} answered, {len(s.failed)} failed (not_judged; "
        "left out of the retrieval figures, which are over the answered questions)",
        f"- passages returned: {p.passages}: {p.by_id} by corpus id, {p.by_text} matched to a corpus "
        f"chunk by text, {p.own_text} not in the corpus (relevant when an evidence quote is in them), "
        f"{p.unknown_id} with an id the corpus lacks and no text",
    ]
    if s.failed:
        out += ["", f"Failed questions ({len(s.failed)}):", ""]
        out += _table(
            ["question", "error"],
            [[f"{f.question_id}: {_cut(f.question, 80)}", _cut(f.error, 200)] for f in s.failed[:50]],
        )
    return out + [""]


def traces_markdown(report: Report) -> list[str]:
    """Traces read, audited and skipped (each skipped one named)."""
    t = required(report.traces, "the report's traces section")
    out = [
        "",
        f"## Traces ({', '.join(text(f) for f in t.files)})",
        "",
        f"- {t.read} traces read, {t.audited} audited, "
        + (
            "skipped: " + ", ".join(f"{n} {reason}" for reason, n in t.skipped.items()) if t.skipped else "none skipped"
        ),
    ]
    if t.skipped_lines:
        counts: dict[str, int] = {}
        for line in t.skipped_lines:
            counts[line.reason] = counts.get(line.reason, 0) + 1
        out.append(
            f"- {len(t.skipped_lines)} unreadable parts of the files skipped: "
            + ", ".join(f"{n} {reason}" for reason, n in counts.items())
        )
    if t.labels:
        lab = t.labels
        out.append(f"- {lab.n} traces drawn to label (seed {lab.seed}): {text(lab.csv)}, {text(lab.html)}")
    if t.skipped_traces:
        out += ["", "Skipped traces:", ""]
        out += _table(
            ["trace id", "question", "reason", "detail"],
            [[s.trace_id, _cut(s.question or "–", 80), s.reason, _cut(s.detail, 160)] for s in t.skipped_traces[:100]],
        )
    if t.skipped_lines:
        out += ["", "Skipped lines (the traces on them were not read):", ""]
        out += _table(
            ["where", "reason", "detail"],
            [[f"{x.file}:{x.line}", x.reason, _cut(x.detail, 160)] for x in t.skipped_lines[:100]],
        )
    return out + [""]


def judged_markdown(report: Report) -> list[str]:
    j = required(report.judges, "the report's judges section")
    cols = judge_columns(j.figures)
    out = ["", "## Judged answers (95% intervals over the traces)", ""]
    out += _table(
        ["prompt"] + cols,
        [
            [p] + [f"{fmt(f[m], 2)} n={f[m].n} nj={f[m].n_not_judged}" if m in f else "–" for m in cols]
            for p, f in j.figures.items()
        ],
    )
    a = required(report.attribution, "the report's attribution section")
    present = a.present()
    supplied = required(report.supplied, "the report's supplied section")
    out += ["", "## Where it fails: one outcome per trace", "", f"> {supplied.note}", ""]
    out += _table(
        ["prompt"] + present,
        [[p] + [f"{sh[o].count} ({fmt(sh[o], 2)})" for o in present] for p, sh in a.shares.items()],
    )
    failed = [r for r in a.rows if r.outcome != "ok"]
    if failed:
        out += ["", "Failed traces:", ""]
        out += _table(
            ["trace", "outcome", "question", "why"],
            [[r.question_id, r.outcome, _cut(r.question, 80), _cut(r.why, 200)] for r in failed[:100]],
        )
    return out
