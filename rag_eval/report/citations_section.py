"""The report's citations section: the citations judge's figures per prompt, and each answer whose
citations failed, sentence by sentence, each citation marked supported or not with the passage's
words that decided it."""

from __future__ import annotations

from html import escape

from rag_eval.attribution.records import ReasonEvidence
from rag_eval.base_records import Model, Num
from rag_eval.judges.citations_judge import JUDGE, SentenceCheck
from rag_eval.judges.judgement import Judgement
from rag_eval.report.formatting import fmt, text
from rag_eval.report.report_records import Report

SHOWN = 30  # failing answers listed
FIGURES = ("citation_recall", "citation_precision", "well_cited", "miscited", "uncited")
MARK = {
    "supported": "supported by its citations",
    "miscited": "MISCITED: its citations do not support it, another given passage does",
    "uncited": "UNCITED: no citation, a given passage supports it",
    "unsupported": "UNSUPPORTED: no given passage supports it",
    "uncertain": "uncertain (near the cut-off; label it)",
    "no_claim": "no claim (not counted)",
}


class CitationsDetails(Model):
    """The citations judge's details as the report reads them: each sentence decided, and the
    answer's citation precision."""

    sentences: list[SentenceCheck] | None = None
    citation_precision: Num | None = None


def _num(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def _quote(row: SentenceCheck) -> str:
    """The verified quote of the passage that decided a sentence, where the reason has one."""
    quotes = ReasonEvidence.load(row.evidence).quotes
    passage = next((q for q in quotes if q.verified and str(q.found_in or "").startswith("passage")), None)
    return f' — {passage.found_in} says "{passage.text}"' if passage else ""


def sentence_lines(j: Judgement) -> list[str]:
    """Each sentence of one judged answer: its text as written, its kind, each citation's relevance."""
    out = []
    for r in CitationsDetails.load(j.details).sentences or []:
        cites = []
        for c in r.citations:
            mark = "names no given passage" if not c.contexts else ("needed" if c.relevant else "not needed")
            cites.append(f"`{c.marker}` {mark}" if c.relevant is not None else f"`{c.marker}`")
        why = f"; {text(r.reason, 200)}" if r.kind not in ("supported", "no_claim") else ""
        out.append(
            f"  - {text(r.display, 240)} — {MARK.get(r.kind, r.kind)}"
            + (f" ({', '.join(cites)})" if cites else "")
            + why
            + _quote(r)
        )
    return out


def citations_markdown(report: Report) -> list[str]:
    """The citations section, where the citations judge ran."""
    j = report.judges
    if j is None or JUDGE not in j.metrics:
        return []
    records = [r for r in j.records if r.judge == JUDGE]
    outcomes = {(r.question_id, r.prompt): r.outcome for r in (report.attribution.rows if report.attribution else [])}
    out = [
        "",
        "## Citations",
        "",
        "Each sentence that makes a claim is checked against the passages it cites (shown only those): "
        "`citation_recall` is the mean share of an answer's claims its citations support, `citation_precision` "
        "the share of citations needed (ALCE's rule: a citation that alone does not support its sentence while "
        "the others still do is not needed), over the answers that cite; `well_cited`, `miscited` and `uncited` "
        "are shares of answers (95% intervals; `unc` uncertain, counted apart).",
        "",
    ]
    for prompt, figs in j.figures.items():
        shown = [f"{name} {fmt(figs[name], 2)} (n={figs[name].n})" for name in FIGURES if name in figs]
        unc = figs.get("citation_recall")
        extra = f"; {unc.n_uncertain} uncertain" if unc is not None and unc.n_uncertain else ""
        if shown:
            out.append(f"- {prompt}: {', '.join(shown)}{extra}")
    failing = [r for r in records if r.status == "judged" and r.verdict != "cited"]
    uncertain = [r for r in records if r.status == "uncertain"]
    if failing:
        out += ["", f"Answers whose citations fail ({len(failing)}):", ""]
        for r in failing[:SHOWN]:
            outcome = outcomes.get((r.question_id, r.prompt), "")
            out.append(
                f"- **{r.question_id}** ({r.prompt}, `{outcome}`): {r.verdict}, recall {_num(r.score)}, "
                f"precision {_num(CitationsDetails.load(r.details).citation_precision)}"
            )
            out += sentence_lines(r)
        if len(failing) > SHOWN:
            out.append(f"- ... and {len(failing) - SHOWN} more (report.json)")
    if uncertain:
        out += ["", f"Uncertain ({len(uncertain)}): " + ", ".join(f"{r.question_id} ({r.prompt})" for r in uncertain)]
    return out


def _html_sentence(r: SentenceCheck) -> str:
    cites = ", ".join(
        f"<code>{escape(c.marker)}</code> "
        + ("names no given passage" if not c.contexts else ("needed" if c.relevant else "not needed"))
        for c in r.citations
        if c.relevant is not None
    )
    why = f"; {escape(r.reason)}" if r.kind not in ("supported", "no_claim") else ""
    quote = escape(_quote(r))
    css = "ok" if r.kind in ("supported", "no_claim") else "bad"
    return (
        f"<li class=cite-{css}>{escape(r.display)} — <b>{escape(MARK.get(r.kind, r.kind))}</b>"
        + (f" ({cites})" if cites else "")
        + why
        + quote
        + "</li>"
    )


def citations_html(report: Report) -> list[str]:
    """The citations section (``citations_markdown`` as HTML)."""
    j = report.judges
    if j is None or JUDGE not in j.metrics:
        return []
    records = [r for r in j.records if r.judge == JUDGE]
    outcomes = {(r.question_id, r.prompt): r.outcome for r in (report.attribution.rows if report.attribution else [])}
    out = [
        "<h2>Citations</h2>",
        "<p class=meta>Each sentence that makes a claim checked against the passages it cites: citation recall, "
        "citation precision (ALCE's rule) and the shares of well cited, miscited and uncited answers, with 95% "
        "intervals; uncertain decisions counted apart.</p>",
        "<ul class=meta>",
    ]
    for prompt, figs in j.figures.items():
        shown = [f"{name} {fmt(figs[name], 2)} (n={figs[name].n})" for name in FIGURES if name in figs]
        if shown:
            out.append(f"<li>{escape(prompt)}: {escape(', '.join(shown))}</li>")
    out.append("</ul>")
    failing = [r for r in records if r.status == "judged" and r.verdict != "cited"]
    for r in failing[:SHOWN]:
        outcome = outcomes.get((r.question_id, r.prompt), "")
        out.append(
            f"<h3>{escape(r.question_id)} ({escape(r.prompt)}, <span class=o-{escape(outcome)}>{escape(outcome)}</span>): "
            f"{escape(r.verdict or '')}</h3><ul>"
            + "".join(_html_sentence(s) for s in CitationsDetails.load(r.details).sentences or [])
            + "</ul>"
        )
    if len(failing) > SHOWN:
        out.append(f"<p class=meta>... and {len(failing) - SHOWN} more (report.json)</p>")
    return out
