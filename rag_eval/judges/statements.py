"""An answer or a reference split into statements, as the statement judges and the citations
reader split it (a leaf: both import it)."""

from __future__ import annotations

import re

from rag_eval.words import names

MAX_STATEMENTS = 8
ALL_SENTENCES = 10**6  # split_statements' limit where every sentence is wanted


def split_statements(text: str, *, limit: int = MAX_STATEMENTS, claims_only: bool = False) -> list[str]:
    """Sentences and list items of a text (a cheap split instead of an LLM call), at most ``limit``.
    ``claims_only``: without the lead-ins and questions (``states_something``), dropped before short
    fragments are joined to their neighbours, so "Tuples are mutable. Need more?" keeps its claim;
    all of them where nothing else is left."""
    parts = []
    for line in re.split(r"\n+", text or ""):
        line = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", line).strip()
        parts += [p.strip() for p in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`])", line) if p.strip()]
    if claims_only:
        parts = [p for p in parts if states_something(p)] or parts
    merged: list[str] = []
    for p in parts:
        # A fragment of one or two words ("Yes.", "In Python 3.") belongs with its neighbour.
        if merged and len(p.split()) < 3:
            merged[-1] = f"{merged[-1]} {p}"
        else:
            merged.append(p)
    return merged[:limit]


def states_something(sentence: str) -> bool:
    """Whether a sentence of an answer is a statement a context could support: not a lead-in ("To
    reset it, follow these steps:") and not a question. The citations judge's ``makes_claim`` asks
    more of a claim; the statement judges drop only these, which support cannot be asked of."""
    t = sentence.strip()
    if not t or t.endswith("?"):
        return False
    # A lead-in with a number or a code name carries a claim ("The default timeout is 30 seconds, and
    # you can change it like this:"): judged (review 55 M11).
    return not t.endswith(":") or bool(re.search(r"\d", t) or names(t))


# A citation marker of numbers ("[1]", "[1, 3]", "[2-4]"): it names a passage, it states nothing.
# Not one written onto a name (``sys.argv[1]``, ``x[2-4]``): that is code, an index of it.
_NUMBERED_MARKER = re.compile(r"\s*(?<![\w\])])\[\d+(?:\s*[,\u2013-]\s*\d+)*\]")


def without_markers(statement: str) -> str:
    """A statement as a claim to check against the passages: numbered citation markers removed (their
    digits are no word of the claim that a passage should hold)."""
    return _NUMBERED_MARKER.sub("", statement).strip()
