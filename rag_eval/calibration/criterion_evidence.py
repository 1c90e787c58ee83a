"""What an answer's words show, for a user's criterion to weigh once labels say which matters.

A criterion is the user's own question, so no word feature can be fitted for it in advance, as the
citations and faithfulness blends were. But most criteria people write are partly visible in the
answer's words: "names the function to use" in its code names (above all those the question did
not bring), "quotes the documents" in runs of words copied from the contexts, "answers only what
was asked" in its length and in how much of it is the question's own words. Each decision of a
criterion keeps these few generic features of the inputs the criterion ``sees``;
``adaptation.adapt_criterion`` weighs those that separate the user's labels (if any do) beside the
model's probability.

Plain functions of the texts; no model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rag_eval.calibration.lexical import content_words, names, stem
from rag_eval.text import tokens

# The n of the word n-grams counted as copied: four words in a row rarely match by chance, and a
# small model's paraphrase keeps that much of the passage.
COPY_N = 4
_LONGEST_CAP = 60  # longer copied runs are rare; capping keeps the search linear in practice

# Every feature a criterion may keep, with the input it needs (None: the answer alone).
FEATURES: dict[str, str | None] = {
    "names": None,
    "length": None,
    "from_question": "question",
    "new_names": "question",
    "copied": "contexts",
    "longest_copied": "contexts",
    "from_reference": "reference",
}


def _share_in(answer: str, other: str) -> float:
    """The share of the answer's content words (stemmed) that ``other`` also holds."""
    mine = [stem(w) for w in content_words(answer)]
    theirs = {stem(w) for w in content_words(other)}
    return sum(w in theirs for w in mine) / len(mine) if mine else 0.0


def _new_names(answer: str, question: str) -> int:
    """How many of the answer's code names the question does not hold (the names it brings), each by
    its last dotted part, looked for anywhere in the question's text (a substring: ``define`` is
    held by "undefined")."""
    asked = (question or "").lower()
    return sum(name.split(".")[-1].lower() not in asked for name in names(answer or ""))


def _copied_share(answer: list[str], contexts: Sequence[list[str]]) -> float:
    grams = {tuple(t[i : i + COPY_N]) for t in contexts for i in range(len(t) - COPY_N + 1)}
    mine = [tuple(answer[i : i + COPY_N]) for i in range(len(answer) - COPY_N + 1)]
    return sum(g in grams for g in mine) / len(mine) if mine else 0.0


def _longest_run(answer: list[str], contexts: Sequence[list[str]]) -> int:
    """The most words in a row of the answer that one context holds in the same order."""
    joined = [" " + " ".join(t) + " " for t in contexts]
    best = 0
    for i in range(len(answer)):
        # Only a run longer than the best so far matters: grow from best + 1 while it matches.
        size = best + 1
        while i + size <= len(answer) and size <= _LONGEST_CAP:
            piece = " " + " ".join(answer[i : i + size]) + " "
            if not any(piece in c for c in joined):
                break
            best = size
            size += 1
    return best


def criterion_features(
    sees: Sequence[str], answer: str, question: str = "", contexts: Sequence[str] = (), reference: str = ""
) -> dict[str, float]:
    """The features of one answer for a criterion that sees ``sees``: ``names`` (log 1 + the code
    names it holds), ``length`` (log 1 + its words); where the criterion sees them,
    ``from_question`` and ``from_reference`` (the share of its content words the question or the
    reference also holds), ``copied`` (the share of its word 4-grams found in a context) and
    ``longest_copied`` (log 1 + the most words in a row copied from one context)."""
    words = tokens(answer or "")
    shown = [tokens(c) for c in contexts] if "contexts" in sees else []
    out = {
        "names": math.log1p(len(names(answer or ""))),
        "length": math.log1p(len(words)),
        **(
            {"from_question": _share_in(answer, question), "new_names": math.log1p(_new_names(answer, question))}
            if "question" in sees
            else {}
        ),
        **(
            {"copied": _copied_share(words, shown), "longest_copied": math.log1p(_longest_run(words, shown))}
            if "contexts" in sees
            else {}
        ),
        **({"from_reference": _share_in(answer, reference)} if "reference" in sees else {}),
    }
    return {k: round(v, 6) for k, v in out.items()}
