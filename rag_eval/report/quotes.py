"""The judges' quoted evidence in the report: what a row keeps of it, the Markdown lines, and the
HTML pieces (quoted words highlighted, reasons folded under a failed question, rows filtered by
outcome with CSS alone, so the page stays self-contained)."""

from __future__ import annotations

import re
from html import escape
from typing import Any

from rag_eval.attribution.records import JudgeBrief, Quote
from rag_eval.base_records import Model

QUOTES_SHOWN = 4  # quotes listed per judge in a failed question (a statement judge may have 8)


class _Evidence(Model):
    """A reason's evidence as a judgement's details hold it (its quotes kept as written)."""

    shown: Any = None
    quotes: list[Any] | None = None


class _Statement(Model):
    """One statement of a statement judge's details, as far as the report row reads it."""

    statement: Any = None
    supported: Any = None
    evidence: _Evidence | None = None


class _RowDetails(Model):
    """What a report row reads of a judgement's ``details`` (any kind of judge): the model's word,
    the reason's evidence, each statement's or context's."""

    model_said: Any = None
    evidence: _Evidence | None = None
    statements: list[_Statement] | None = None
    contexts: list[_Evidence] | None = None


def _held(m: Model | None) -> bool:
    """Whether a record read from a dict held any key (an empty dict reads as nothing)."""
    return m is not None and bool(m.model_fields_set or m.model_extra)


def row_evidence(j: dict) -> dict:
    """What a report row keeps of a judgement's evidence: the model's word, the quotes of its
    reason (each statement's or context's too), and how the shown reason was made."""
    return details_evidence(j.get("details"))


def details_evidence(details: dict | None) -> dict:
    """``row_evidence`` of a judgement's ``details`` dict."""
    d = _RowDetails.model_validate(details or {})
    out: dict = {}
    if "model_said" in d.model_fields_set:
        out |= {"model_said": d.model_said}
    ev = d.evidence
    if ev is not None and _held(ev):
        out |= {"evidence": {"shown": ev.shown, "quotes": ev.quotes or []}}
    parts = d.statements or []
    if parts and any("evidence" in s.model_fields_set for s in parts):
        out |= {
            "parts": [
                {
                    "text": s.statement,
                    "decided": "supported" if s.supported else "not supported",
                    "quotes": (s.evidence.quotes if s.evidence is not None else None) or [],
                }
                for s in parts
            ]
        }
    elif d.contexts:
        out |= {
            "parts": [
                {"text": f"context {i + 1}", "decided": None, "quotes": e.quotes or []}
                for i, e in enumerate(d.contexts)
            ]
        }
    return out


def quote_note(q: Quote) -> str:
    """Where a quote was found: ``answer ✓``, ``context 2 ✓``, ``not found ✗``, ``repeats the prompt ✗``,
    ``in context 1, one plain word ✗``."""
    if q.verified:
        return f"{q.found_in} ✓"
    if q.too_short:
        return f"in {q.found_in}, one plain word ✗"
    return "repeats the prompt ✗" if q.copies_prompt else "not found ✗"


# Said in place of the quotes a reason took from the judge prompt's own text (its example): they
# are no evidence about this answer, so they are not shown as quotes.
PROMPT_QUOTES = "no quote from the inputs: the model's reason repeated the judge prompt's example"


def only_prompt_quotes(quotes: list[Quote]) -> bool:
    """Whether a reason quoted the judge prompt's example and nothing worth showing (said in their
    place with ``PROMPT_QUOTES``)."""
    return any(q.copies_prompt for q in quotes) and not shown_quotes(quotes)


def shown_quotes(quotes: list[Quote]) -> list[Quote]:
    """The quotes worth showing a reader: all but those repeating the judge prompt's own text, one
    plain word ("Yes", "httpx": found in nearly any text, no evidence of anything) and a quote shown
    already (a reason may quote the same words twice)."""
    seen: set[tuple[str, str | None]] = set()
    out = []
    for q in quotes:
        key = (" ".join(str(q.text).split()), q.found_in)
        # A made-up plain word ("No") is no quote; a found one is hidden only where check_quote said
        # too_short ("8443", "False", "h2" are evidence: review 55 L4).
        one_word = not q.verified and key[0].isalpha() and len(key[0]) < 8
        if q.copies_prompt or q.too_short or one_word or key in seen:
            continue
        seen.add(key)
        out.append(q)
    return out


def markdown_quotes(j: JudgeBrief, text) -> list[str]:
    """Sub-items of a judge's line in a failed question: each quote and where it was found
    (``text`` makes model text inert); a quote of the judge prompt's example is not shown."""
    own = j.evidence.quotes if j.evidence else []
    lines = [f'  - "{text(q.text, 200)}" ({quote_note(q)})' for q in shown_quotes(own)]
    if only_prompt_quotes(own):
        lines.append(f"  - {PROMPT_QUOTES}")
    for p in j.parts:
        if not p.quotes:
            continue
        head = f"{p.decided}: " if p.decided else ""
        kept = shown_quotes(p.quotes)
        quotes = "; ".join(f'"{text(q.text, 160)}" ({quote_note(q)})' for q in kept)
        quotes = quotes or (PROMPT_QUOTES if only_prompt_quotes(p.quotes) else "")
        lines.append(f"  - {head}{text(p.text, 160)}" + (f" – {quotes}" if quotes else ""))
    return lines[: QUOTES_SHOWN + 1]


def _pattern(quote: str) -> re.Pattern | None:
    words = quote.split()
    return re.compile(r"\s+".join(map(re.escape, words))) if words else None


def highlight(text: str, quotes: list[str]) -> str:
    """``text`` HTML-escaped, with every occurrence of each quote (whitespace-insensitive) in <mark>."""
    spans = []
    for q in quotes:
        pat = _pattern(q)
        if pat is not None:
            spans += [m.span() for m in pat.finditer(text)]
    out, at = [], 0
    for start, end in sorted(spans):
        if start < at:  # overlapping marks merge into the first
            start = at
        if start >= end:
            continue
        out += [escape(text[at:start]), f"<mark>{escape(text[start:end])}</mark>"]
        at = end
    return "".join(out) + escape(text[at:])


def _quote_html(q: Quote) -> str:
    note = escape(quote_note(q))
    if q.verified and q.excerpt and q.span:
        s, e = q.span
        ex = q.excerpt
        shown = f"{escape(ex[:s])}<mark>{escape(ex[s:e])}</mark>{escape(ex[e:])}"
        return f'<li><span class="q-ok">{note}</span>: {shown}</li>'
    return f'<li><span class="q-bad">{note}</span>: “{escape(q.text)}”</li>'


def reasons_html(judges: dict[str, JudgeBrief]) -> str:
    """The judges of one failed question, folded: a summary of the verdicts, and when opened each
    reason with its quotes, highlighted in the stretch of the answer, context or reference they
    come from."""
    summary = ", ".join(f"{escape(n)}: {escape(j.shown())}" for n, j in judges.items())
    items = []
    for n, j in judges.items():
        reason = escape((j.reason or j.error or "")[:400])
        said = j.model_said
        said = f' <span class="meta">(the model wrote {escape(said)})</span>' if isinstance(said, str) else ""
        own = j.evidence.quotes if j.evidence else []
        quotes = [_quote_html(q) for q in shown_quotes(own)]
        if only_prompt_quotes(own):
            quotes.append(f'<li class="meta">{escape(PROMPT_QUOTES)}</li>')
        for p in j.parts:
            if p.quotes:
                head = escape(f"{p.decided}: " if p.decided else "") + escape(p.text[:200])
                kept = "".join(_quote_html(q) for q in shown_quotes(p.quotes))
                if not kept and only_prompt_quotes(p.quotes):
                    kept = f'<li class="meta">{escape(PROMPT_QUOTES)}</li>'
                quotes.append(f"<li>{head}<ul>{kept}</ul></li>" if kept else f"<li>{head}</li>")
        listed = f"<ul>{''.join(quotes)}</ul>" if quotes else ""
        items.append(f"<li><b>{escape(n)}</b>: {escape(j.shown())}{said} – {reason}{listed}</li>")
    return f'<details class="reasons"><summary>{summary}</summary><ul>{"".join(items)}</ul></details>'


def answer_quotes(judges: dict[str, JudgeBrief]) -> list[str]:
    """The verified quotes the judges took from the answer (highlighted where the answer is shown)."""
    return [q.text for j in judges.values() for q in j.all_quotes() if q.verified and q.found_in == "answer"]


def filtered_table(table_id: str, header: list[str], rows: list[tuple[str, list[str]]]) -> str:
    """A table whose rows filter by outcome with radio buttons and CSS alone (no script: the page
    stays self-contained and works with scripts off). ``rows``: (outcome, cells)."""
    outcomes = list(dict.fromkeys(o for o, _ in rows))
    name = f"{table_id}-filter"
    radios = [
        f'<input type="radio" name="{name}" id="{name}-all" checked><label for="{name}-all">all ({len(rows)})</label>'
    ]
    css = []
    for o in outcomes:
        rid = f"{name}-{o}"
        count = sum(x == o for x, _ in rows)
        radios.append(f'<input type="radio" name="{name}" id="{rid}"><label for="{rid}">{escape(o)} ({count})</label>')
        css.append(f"#{rid}:checked~table tbody tr:not(.row-{o}){{display:none}}")
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        f'<tr class="row-{o}">' + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in cells) + "</tr>"
        for o, cells in rows
    )
    style = (
        "<style>.ofilter input{margin-left:.8em}.ofilter label{margin-right:.3em}"
        f"mark{{background:#fff0a0}}.q-ok{{color:#11763a}}.q-bad{{color:#b00020}}{''.join(css)}</style>"
    )
    return (
        f'<div class="ofilter">{style}<span class=meta>show:</span>{"".join(radios)}'
        f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
    )
