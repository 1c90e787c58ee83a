"""The report's citations section: the citations judge's figures per prompt, and each answer whose
citations failed, sentence by sentence, each citation marked supported or not with the passage's
words that decided it."""

from __future__ import annotations

from rag_eval.attribution.records import Quote
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


def _num(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def _quote(row: SentenceCheck) -> str:
    """The verified quote of the passage that decided a sentence, where the reason has one."""
    quotes = [Quote.load(q) for q in row.evidence.get("quotes") or []]
    passage = next((q for q in quotes if q.verified and str(q.found_in or "").startswith("passage")), None)
    return f' — {passage.found_in} says "{passage.text}"' if passage else ""


def sentence_lines(j: Judgement) -> list[str]:
    """Each sentence of one judged answer: its text as written, its kind, each citation's relevance."""
    out = []
    for r in map(SentenceCheck.load, j.details.get("sentences") or []):
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
                f"precision {_num(r.details.get('citation_precision'))}"
            )
            out += sentence_lines(r)
        if len(failing) > SHOWN:
            out.append(f"- ... and {len(failing) - SHOWN} more (report.json)")
    if uncertain:
        out += ["", f"Uncertain ({len(uncertain)}): " + ", ".join(f"{r.question_id} ({r.prompt})" for r in uncertain)]
    return out
