"""Rendering the report data as one self-contained HTML page: inline CSS and SVG, no network (each\nsection's part; the page is put together in ``report/sections.py``)."""

from __future__ import annotations

from html import escape

from rag_eval.attribution.records import AttributionRow, FailureSplit, OutcomeShare
from rag_eval.base_records import Figure, PairedComparison, required
from rag_eval.llm.usage import Usage
from rag_eval.report.formatting import fmt, judge_columns
from rag_eval.report.formatting import html_table as _table
from rag_eval.report.markdown import (
    CRITERIA_SHOWN,
    calibration_lines,
    cause_notes,
    comparison_rows,
    criterion_facts,
    criterion_failures,
    figure_cell,
    labels_counted,
    labels_table,
    sample_note,
)
from rag_eval.report.quotes import answer_quotes, filtered_table, highlight, reasons_html
from rag_eval.report.report_records import Report
from rag_eval.retrievers.retrieval_records import RetrievalSection

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#1d2330;padding:0 1em}
h1{font-size:1.6em}h2{margin-top:1.8em;border-bottom:2px solid #e4e7ee;padding-bottom:.2em}h3{margin-top:1.3em}
table{border-collapse:collapse;margin:.6em 0;width:100%}th,td{border:1px solid #dde1ea;padding:4px 7px;text-align:left;vertical-align:top}
th{background:#f2f4f8}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.sev-severe{color:#b00020;font-weight:600}.sev-warning{color:#a35a00;font-weight:600}.sev-info{color:#406080}
.warn{background:#fff4e0;border-left:4px solid #e0a000;padding:.5em .8em}.meta{color:#556}
.rel{font-weight:600;color:#11763a}.chip{display:inline-block;padding:0 6px;border-radius:8px;background:#eef;margin:1px;font-size:12px}
.o-ok,.o-correct_refusal{background:#d6f5df}.o-retrieval_miss{background:#ffe0e0}.o-not_judged{background:#eee}.o-uncertain{background:#fff3c4}
.o-refused,.o-incorrect,.o-unfaithful,.o-answered_unanswerable,.o-failed_criterion{background:#ffefd0}
svg text{font:11px system-ui,sans-serif}details{margin:.4em 0}
"""
COLORS = ["#3b6fb6", "#e07b39", "#3a9d5d", "#b63b6f", "#7a5cc2", "#8c8c3b", "#3bb0b6", "#b6913b"]
OUTCOME_COLORS = {
    "ok": "#4caf6a",
    "retrieval_miss": "#d9534f",
    "refused": "#f0ad4e",
    "incorrect": "#e8743b",
    "unfaithful": "#c77dff",
    "miscited": "#9b59b6",
    "uncited": "#b39ddb",
    "correct_refusal": "#7bc96f",
    "answered_unanswerable": "#a94442",
    "failed_criterion": "#d4a017",
    "not_judged": "#b0b0b0",
    "uncertain": "#e6c229",
}


def _uncertain_count(split: FailureSplit) -> str:
    return f"; {split.uncertain} uncertain" if split.uncertain else ""


def y_grid(left: int, right: int, y) -> list[str]:
    """Horizontal grid lines at 0, 0.25, ..., 1 with their labels; ``y`` maps a value to a height."""
    return [
        f'<line x1="{left}" x2="{right}" y1="{y(t)}" y2="{y(t)}" stroke="#e4e7ee"/><text x="4" y="{y(t) + 4}">{t:.2f}</text>'
        for t in (0, 0.25, 0.5, 0.75, 1)
    ]


def metric_bars(retrievers: dict[str, dict[str, Figure]], metrics: list[str]) -> str:
    """Grouped bars per metric, one per retriever, with 95% interval whiskers."""
    names = list(retrievers)
    group_w, bar_w, h, top, left = 30 + 24 * len(names), 20, 200, 20, 36
    width = left + group_w * len(metrics) + 20
    y = lambda v: top + h - v * h  # noqa: E731
    parts = [
        f'<svg class="plot" id="metric-bars" width="{width}" '
        f'height="{h + top + 60}" role="img" aria-label="metrics with intervals">'
    ]
    parts += y_grid(left, width - 10, y)
    for mi, m in enumerate(metrics):
        x0 = left + mi * group_w + 10
        for ri, name in enumerate(names):
            e = retrievers[name].get(m)
            if e is None or e.value is None:
                continue
            x = x0 + ri * 24
            parts.append(
                f'<rect x="{x}" y="{y(e.value):.1f}" width="{bar_w}" height="{h * e.value:.1f}" '
                f'fill="{COLORS[ri % len(COLORS)]}"><title>{escape(name)} {escape(m)}: {fmt(e)}</title></rect>'
            )
            cx = x + bar_w / 2
            parts.append(
                f'<line x1="{cx}" x2="{cx}" y1="{y(e.ci_low):.1f}" y2="{y(e.ci_high):.1f}" '
                f'stroke="#222" stroke-width="1.5"/>'
            )
            for v in (e.ci_low, e.ci_high):
                parts.append(f'<line x1="{cx - 4}" x2="{cx + 4}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#222"/>')
        parts.append(f'<text x="{x0}" y="{top + h + 16}">{escape(m)}</text>')
    for ri, name in enumerate(names):
        parts.append(
            f'<rect x="{left + ri * 110}" y="{top + h + 30}" width="10" height="10" '
            f'fill="{COLORS[ri % len(COLORS)]}"/><text x="{left + ri * 110 + 14}" y="{top + h + 39}">'
            f"{escape(name)}</text>"
        )
    return "".join(parts) + "</svg>"


def rank_distribution(hist: dict[str, dict[str, int]]) -> str:
    """Per retriever, answerable questions by the rank of the first relevant chunk."""
    buckets = list(next(iter(hist.values())))
    names = list(hist)
    peak = max((max(h.values()) for h in hist.values()), default=1) or 1
    bw, h, top, left = 12, 160, 16, 30
    group = len(names) * bw + 14
    width = left + group * len(buckets) + 20
    parts = [
        f'<svg class="plot" id="rank-distribution" width="{width}" '
        f'height="{h + top + 56}" role="img" aria-label="rank distribution">'
    ]
    for bi, b in enumerate(buckets):
        x0 = left + bi * group
        for ri, name in enumerate(names):
            n = hist[name][b]
            bar = h * n / peak
            parts.append(
                f'<rect x="{x0 + ri * bw}" y="{top + h - bar:.1f}" width="{bw - 2}" height="{bar:.1f}" '
                f'fill="{COLORS[ri % len(COLORS)]}"><title>{escape(name)}, rank {escape(b)}: {n}</title></rect>'
            )
        parts.append(f'<text x="{x0}" y="{top + h + 14}">{escape(b)}</text>')
    parts.append(f'<text x="2" y="{top + 8}">{peak}</text><text x="2" y="{top + h}">0</text>')
    for ri, name in enumerate(names):
        parts.append(
            f'<rect x="{left + ri * 110}" y="{top + h + 28}" width="10" height="10" '
            f'fill="{COLORS[ri % len(COLORS)]}"/><text x="{left + ri * 110 + 14}" y="{top + h + 37}">'
            f"{escape(name)}</text>"
        )
    return "".join(parts) + "</svg>"


def outcome_bars(shares: dict[str, dict[str, OutcomeShare]], outcomes: list[str]) -> str:
    """One stacked bar per prompt: the share of each outcome."""
    w, bh, left = 600, 24, 110
    height = 30 + len(shares) * (bh + 10) + 40
    parts = [
        f'<svg class="plot" id="outcome-shares" width="{left + w + 20}" '
        f'height="{height}" role="img" aria-label="outcome shares">'
    ]
    for pi, (prompt, sh) in enumerate(shares.items()):
        y = 10 + pi * (bh + 10)
        x: float = left
        parts.append(f'<text x="4" y="{y + 16}">{escape(prompt)}</text>')
        for o in outcomes:
            v = sh[o].value or 0
            if v <= 0:
                continue
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w * v:.1f}" height="{bh}" fill="{OUTCOME_COLORS[o]}">'
                f"<title>{escape(o)}: {sh[o].count} ({fmt(sh[o], 2)})</title></rect>"
            )
            x += w * v
    ly = 10 + len(shares) * (bh + 10) + 8
    for oi, o in enumerate(outcomes):
        lx = left + (oi % 4) * 150
        ly2 = ly + (oi // 4) * 16
        parts.append(
            f'<rect x="{lx}" y="{ly2}" width="10" height="10" fill="{OUTCOME_COLORS[o]}"/>'
            f'<text x="{lx + 14}" y="{ly2 + 9}">{escape(o)}</text>'
        )
    return "".join(parts) + "</svg>"


def _num(text: str) -> str:
    return f'<td class="num">{escape(text)}</td>'


def head_html(report: Report) -> list[str]:
    """The page's head: its title, when it was made and what it audited."""
    c, ts = report.corpus, report.test_set
    return [
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>rag-eval: {escape(report.name)}</title>"
        f"<style>{CSS}</style></head><body>",
        f"<h1>rag-eval report: {escape(report.name)}</h1>",
        f"<p class=meta>{escape(report.created)} · rag-eval {escape(str(report.rag_eval_version))} · "
        + (
            f"corpus {escape(c.source)} ({c.chunks} chunks) · test set {escape(ts.path)}: {ts.questions} questions "
            f"({ts.answerable} answerable, {ts.unanswerable} unanswerable)</p>"
            if c is not None and ts is not None
            else "answers judged without retrieval labels</p>"  # supplied answers, traces without a test set
        ),
    ]


def lint_html(report: Report) -> list[str]:
    """The test-set health findings."""
    out = ["<h2>Test-set health</h2><ul>"]
    for f in report.lint:
        ids = ", ".join(f.questions[:12]) + (" …" if len(f.questions) > 12 else "")
        out.append(
            f'<li><span class="sev-{f.severity}">{f.severity}</span> <code>{escape(f.code)}'
            f"</code>: {escape(f.message)}{' (' + escape(ids) + ')' if ids else ''}"
            f"{'. Fix: ' + escape(f.fix) if f.fix else ''}</li>"
        )
    out.append("</ul>")
    return out


def _usage_row(u: Usage) -> list[str]:
    return [
        escape(u.model),
        _num(str(u.calls)),
        _num(str(u.cache_hits)),
        _num(str(u.failures)),
        _num(str(u.prompt_tokens)),
        _num(str(u.completion_tokens)),
        _num(f"{u.cost:.4f}"),
    ]


def models_html(report: Report) -> list[str]:
    out: list[str] = []
    g = report.generation
    if not g:
        return out
    if report.judges is not None and report.judges.same_model:
        out.append('<p class="warn">The generator and the judge are the same model: it grades its own answers.</p>')
    out.append("<h2>Models and usage</h2>")
    out.append(
        _table(
            ["model", "calls", "cache hits", "failures", "prompt tokens", "completion tokens", "cost"],
            [_usage_row(u) for u in g.usage],
        )
    )
    out.append(
        _table(
            ["prompt", "hash", "answered", "failed"],
            [
                [
                    escape(p),
                    f"<code>{escape(v.prompt_hash)}</code>" if v.prompt_hash else "–",  # a system has no prompt file
                    _num(str(v.answered)),
                    _num(str(v.failed)),
                ]
                for p, v in g.prompts.items()
            ],
        )
    )
    return out


def _comparison_table(comparisons: list[PairedComparison], pair_first: bool, attrs: str = "") -> str:
    """Paired comparisons as an HTML table (the Markdown report's columns)."""
    names = ["pair", "metric"] if pair_first else ["metric", "pair"]
    header = names + ["difference [95% CI]", "better/worse/same", "p (Holm)" if not pair_first else "p", "verdict"]
    rows = [
        [escape(a), escape(b), _num(diff), _num(counts), _num(p), escape(verdict)]
        for a, b, diff, counts, p, verdict in comparison_rows(comparisons, pair_first)
    ]
    return _table(header, rows, attrs)


def comparison_html(report: Report) -> list[str]:
    c = required(report.comparison, "the report's comparison section")
    out = [
        "<h2>Prompts compared on the same contexts</h2>",
        "<p class=meta>Paired tests question by question; p-values Holm-corrected across metrics and pairs, "
        "the difference intervals not adjusted.</p>",
    ]
    out.append(_comparison_table(c.comparisons, pair_first=False, attrs='id="comparison"'))
    if c.disagreements:
        prompts = list(c.disagreements[0].answers)
        out.append(f"<h3>Questions where the prompts disagree ({len(c.disagreements)})</h3>")
        rows = []
        for d in c.disagreements:
            cells = [f"<b>{escape(d.question_id)}</b> {escape(d.question)}"]
            for p in prompts:
                a = d.answers.get(p)
                if not a:
                    cells.append("–")
                    continue
                judges = "<br>".join(
                    f"<b>{escape(n)}</b>: {escape(str(j.verdict or j.score or j.status))}"
                    f" – {escape((j.reason or j.error or '')[:240])}"
                    for n, j in a.judges.items()
                )
                cells.append(
                    f'<span class="chip o-{a.outcome}">{escape(a.outcome)}</span><br>'
                    f"{escape(a.answer or '–')}<br><small>{judges}</small>"
                )
            rows.append(cells)
        out.append(_table(["question"] + prompts, rows, 'id="disagreements"'))
    return out


def attribution_html(report: Report) -> list[str]:
    a = required(report.attribution, "the report's attribution section")
    out = ["<h2>Where it fails</h2>"]
    note = sample_note(report)
    if note:
        g = required(report.generation, "the report's generation section")
        ts = required(report.test_set, "the report's test_set")
        out.append(
            f"<p class=meta>The LLM stages ran on a stratified, seeded sample of {g.questions} of "
            f"{ts.questions} questions (generation.sample).</p>"
        )
    present = a.present()
    out.append(outcome_bars(a.shares, present))
    out.append(
        _table(
            ["prompt"] + present,
            [[escape(p)] + [_num(f"{sh[o].count} · {fmt(sh[o], 2)}") for o in present] for p, sh in a.shares.items()],
        )
    )
    out.append(
        "<ul>"
        + "".join(
            f"<li><b>{escape(p)}</b>: {sp.failures} failures of {sp.questions}: {sp.retrieval} in retrieval, "
            f"{sp.generation} in generation; {sp.not_judged} not judged{_uncertain_count(sp)}</li>"
            for p, sp in a.split.items()
        )
        + "</ul>"
    )
    failed = [x for x in a.rows if x.failed]
    out.append(f"<h3>Failed questions ({len(failed)})</h3>")
    rows = []
    for x in failed:
        ctx = " ".join(
            f'<span class="chip{" rel" if ci.relevant else ""}">{escape(ci.id)}{" ✓" if ci.relevant else ""}</span>'
            for ci in x.contexts
        )
        rows.append(
            (
                x.outcome,
                [
                    f"<b>{escape(x.question_id)}</b><br>{escape(x.question)}",
                    escape(x.prompt),
                    f'<td class="o-{x.outcome}">{escape(x.outcome)}<br><small>{escape(x.why[:300])}</small>'
                    f"{criteria_flags(x)}</td>",
                    ctx,
                    highlight(x.answer or "–", answer_quotes(x.judges)),
                    reasons_html(x.judges),
                ],
            )
        )
    header = ["question", "prompt", "outcome", "retrieved (✓ relevant)", "answer (quoted by a judge marked)", "judges"]
    out.append(filtered_table("failures", header, rows))
    return out


def retrieval_html(report: Report, r: RetrievalSection) -> list[str]:
    ts = required(report.test_set, "the report's test_set")
    out = [
        f"<h2>Retrieval ({ts.answerable} answerable questions)</h2>",
        "<p class=meta>Means with 95% bootstrap intervals (the exact binomial interval for a figure with the "
        "same value on every question).</p>",
    ]
    out.append(
        _table(
            ["retriever"] + r.table,
            [[escape(n)] + [_num(fmt(f.get(m))) for m in r.table] for n, f in r.retrievers.items()],
        )
    )
    out.append(metric_bars(r.retrievers, r.table))
    if r.rank_histogram:
        out.append("<h3>Rank of the first relevant chunk</h3>")
        out.append(rank_distribution(r.rank_histogram))
    if r.comparisons:
        out.append("<h3>Retrievers compared, question by question (Holm-corrected)</h3>")
        out.append(_comparison_table(r.comparisons, pair_first=True))
    out.append(f"<h3>Misses (no relevant chunk in the top {r.miss_k}), by probable cause</h3>")
    for name, rows in r.misses.items():
        out.append(f"<details><summary><b>{escape(name)}</b>: {len(rows)} misses</summary>")
        out.append(
            _table(
                ["question", "cause", "rank found", "relevant", "top retrieved", "rule"],
                [
                    [
                        f"<b>{escape(m.question_id)}</b> {escape(m.question)}",
                        escape(m.diagnosis.cause if m.diagnosis else ""),
                        _num(str(m.rank or "none")),
                        escape(", ".join(m.relevant[:3])),
                        escape(", ".join(m.top[:3])),
                        escape((m.diagnosis.rule if m.diagnosis else "") + cause_notes(m.diagnosis)),
                    ]
                    for m in rows
                ],
            )
        )
        out.append("</details>")
    return out


def judges_html(report: Report) -> list[str]:
    j = required(report.judges, "the report's judges section")
    cols = judge_columns(j.figures)
    out = [
        "<h2>Judged answers</h2>",
        "<p class=meta>Scores are means, verdicts shares, with 95% intervals; "
        "not-judged answers are excluded and counted, never scored 0.</p>",
    ]
    notes = [escape(line[2:]).replace("`", "") for line in calibration_lines(j) if line]
    if notes:
        out.append("<ul class=meta>" + "".join(f"<li>{n}</li>" for n in notes) + "</ul>")
    out.append(
        _table(
            ["prompt"] + cols,
            [
                [escape(p)]
                + [
                    _num(figure_cell(f[m], sep=", ", not_judged="not judged ", uncertain="uncertain "))
                    if m in f
                    else "<td>–</td>"
                    for m in cols
                ]
                for p, f in j.figures.items()
            ],
        )
    )
    a = report.adaptation
    if a is not None:
        out.append(f"<h3>Judges adapted to this corpus ({a.answers_labelled} labelled answers)</h3>")
        out.append(f"<p class=meta>{escape(a.note)}.</p>")
        out.append(
            _table(
                ["judge prompt", "labels", "cut-off", "verdicts changed", "uncertain", "on its labels, cross-fitted"],
                [
                    [
                        escape(x.variant),
                        f"<td>{x.labels} ({x.positives} positive)</td>",
                        f"<td>{x.cutoff_before:.3f} → {x.cutoff_after:.3f}</td>",
                        f"<td>{x.changed}</td>",
                        f"<td>{x.uncertain_before} → {x.uncertain_after}</td>",
                        f"<td>{escape(x.held_out_text() or '–')}</td>",
                    ]
                    for x in a.judges
                ],
            )
        )
        for x in a.judges:
            if x.not_saved:
                out.append(
                    f"<p class=meta><b>{escape(x.variant)}</b>: {escape(x.not_saved)}: adapted in this report only, "
                    "not saved for later audits.</p>"
                )
    table = labels_table(report)
    if table is not None:
        out.append(f"<h3>With human labels ({escape(labels_counted(report))})</h3>")
        out.append(
            "<p class=meta>Prediction-powered inference (PPI++): the judge's verdicts on every answer, corrected "
            "by its error on the labelled ones.</p>"
        )
        header, rows = table
        out.append(_table(header, [[escape(c) for c in r] for r in rows]))
    return out


def criteria_flags(row: AttributionRow) -> str:
    """The criteria an answer failed, as chips beside its outcome."""
    return "".join(f'<br><span class="chip o-failed_criterion">⚑ {escape(n)}</span>' for n in row.failed_criteria)


def criteria_html(report: Report) -> list[str]:
    """The user's own criteria (``markdown.criteria_markdown`` as HTML)."""
    j = report.judges
    if j is None or not j.criteria:
        return []
    out = [
        "<h2>Your criteria</h2>",
        "<p class=meta>The share of the answers each criterion applies to that pass it, with 95% intervals; "
        "uncertain decisions are excluded and counted. A failed criterion is a flag beside the question's outcome "
        "(⚑) and changes it only where the criterion counts as a failure (failed_criterion).</p>",
    ]
    for name, c in j.criteria.items():
        out.append(f"<h3 id=criterion-{escape(name)}><code>{escape(name)}</code>: {escape(c.question)}</h3>")
        items = [criterion_facts(c)] + [
            f"{p}: {figure_cell(f, sep=', ', not_judged='not judged ', uncertain='uncertain ')}"
            + (f"; mean level {fmt(c.mean_level[p], 2)}" if p in c.mean_level else "")
            for p, f in c.figures.items()
        ]
        items.append(c.calibration)
        out.append("<ul class=meta>" + "".join(f"<li>{escape(i)}</li>" for i in items) + "</ul>")
        failed = [] if c.gate_only else criterion_failures(report, name)
        if failed:
            rows = [
                [
                    f"<b>{escape(r.question_id)}</b><br>{escape(r.question)}",
                    escape(r.prompt),
                    f'<td class="o-{r.outcome}">{escape(r.outcome)}</td>',
                    highlight(r.answer or "–", answer_quotes({name: r.judges[name]})),
                    reasons_html({name: r.judges[name]}),
                ]
                for r in failed[:CRITERIA_SHOWN]
            ]
            out.append(
                f"<p>Failed ({len(failed)}{', first ' + str(CRITERIA_SHOWN) if len(failed) > CRITERIA_SHOWN else ''}):</p>"
            )
            out.append(_table(["question", "prompt", "outcome", "answer (quoted marked)", "reason"], rows))
    return out
