"""Does a chunk answer a question? Its evidence quote or its reference answer found in the chunk.

Used by the miss diagnosis (a retrieved chunk that answers the question makes the label suspect)
and by the test-set lint (the chunk to add to the label). Three kinds of evidence, the stronger
first:

- the evidence quote occurs in the chunk after normalisation: markup, case, punctuation and
  whitespace are ignored (the label itself matches quotes exactly, so a chunk that differs from
  the quote only in those is missed by the label);
- one passage of the chunk (``WINDOW`` consecutive words, about a paragraph) holds the reference
  answer: at least ``min_share`` of the reference's content words (and at least ``MIN_WORDS`` of
  them: half of a four-word reference is two words, which any chunk on the topic holds),
  ``margin`` more than the best passage of the labelled chunk, and the chunk names every symbol
  the reference names (``attrs.evolve``, ``__slots__``). Words are counted within a passage, not
  the whole chunk, because a long chunk holds most words of any reference on its topic without
  answering it;
- the chunk names every identifier the reference names (at least two distinct ones:
  ``merge_contextvars``, ``bind_contextvars``), the labelled chunk lacks one of them, and a passage
  holds ``min_share`` of the reference's words: the identifiers are the answer's key facts, and the
  label misses one.

Words alone cannot tell a chunk that answers from one on the same topic, so the diagnosis adds
meaning where an embedding model is at hand (:class:`MeaningMatch`): a retrieved chunk holding at
least ``min_share`` of the reference's words answers the question when its best passage is at
least as close to the question and its reference answer as the labelled chunk's best passage.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from rag_eval.data.testset import MARKUP_CHARS
from rag_eval.text import content_tokens, coverage, exact_tokens, tokens
from rag_eval.types import Question

WINDOW = 60  # words of one passage
MIN_WORDS = 3  # reference words a passage must hold, whatever the share
MEANING_WINDOW, MEANING_STEP = 40, 20  # words of one passage compared by meaning, and the stride
_LOOSE_WORD = re.compile(r"[a-z0-9]+")
_NO_MARKUP = str.maketrans("", "", MARKUP_CHARS)
# An ASCII text's markup deleted, its capitals made small and every other character but letters
# and digits a space, in one pass.
_ASCII_LOOSE = str.maketrans(
    {chr(c): None if chr(c) in MARKUP_CHARS else " " for c in range(128) if not chr(c).isalnum()}
    | {chr(c): chr(c).lower() for c in range(128) if chr(c).isupper()}
)


def loose(text: str) -> str:
    """Text reduced to lower-case words separated by single spaces (markup and punctuation gone)."""
    return " ".join(loose_words(text))


def loose_words(text: str) -> list[str]:
    """The words of :func:`loose`: the runs of lower-case letters and digits once the markup
    characters of ``strip_markup`` are deleted (whitespace needs no collapsing: it separates words
    either way)."""
    if text.isascii():  # split() where the regex engine is slower: the same words
        return text.translate(_ASCII_LOOSE).split()
    return _LOOSE_WORD.findall(text.translate(_NO_MARKUP).lower())


def symbols(text: str) -> list[set[str]]:
    """The word sets of the symbols a text names (``str.zfill()`` -> {"str", "zfill"}); an
    abbreviation such as "e.g." or "i.e." (single letters only) is not a symbol."""
    out = [set(tokens(t)) for t in exact_tokens(text)]
    return [s for s in out if s and any(len(w) > 1 for w in s)]


def distinct_symbols(text: str) -> list[set[str]]:
    """The distinct word sets of :func:`symbols` (``attrs.field`` and ``field()`` count once each)."""
    out: list[set[str]] = []
    for s in symbols(text):
        if s not in out:
            out.append(s)
    return out


def passage_share(words: set[str], toks: list[str], window: int = WINDOW) -> float:
    """The largest share of ``words`` that one run of ``window`` consecutive tokens holds."""
    if not words:
        return 0.0
    step = max(1, window // 3)
    return max(coverage(words, set(toks[i : i + window])) for i in range(0, max(1, len(toks) - window + step), step))


def holds_reference(share: float, ref: set[str], min_share: float) -> bool:
    """Whether a passage holding ``share`` of the reference's words ``ref`` holds enough of it."""
    return share >= min_share and share * len(ref) >= MIN_WORDS - 1e-9


def answer_in_chunk(
    question: Question, chunk_text: str, label_texts: list[str], min_share: float, margin: float
) -> dict | None:
    """How the chunk answers ``question`` (``{"by": ..., ...}``), or None. ``label_texts``: the
    texts of the labelled chunks."""
    flat = f" {loose(chunk_text)} "
    for quote in question.evidence:
        q = loose(quote)
        if len(q.split()) >= 3 and f" {q} " in flat:
            return {"by": "evidence quote", "quote": quote}
    ref = set(content_tokens(question.reference or ""))
    if len(ref) < MIN_WORDS:
        return None
    toks = tokens(chunk_text)
    share = passage_share(ref, toks)
    if not holds_reference(share, ref, min_share):
        return None
    label_share = max((passage_share(ref, tokens(t)) for t in label_texts), default=0.0)
    named = distinct_symbols(question.reference or "")
    if not all(s <= set(toks) for s in named):
        return None
    found = {
        "reference_share": round(share, 2),
        "label_share": round(label_share, 2),
        "symbols": [" ".join(sorted(s)) for s in named],
    }
    if share >= label_share + margin - 1e-9:
        return {"by": "reference answer", **found}
    in_label = max((sum(s <= set(tokens(t)) for s in named) for t in label_texts), default=0)
    if len(named) >= 2 and in_label < len(named):
        return {"by": "reference identifiers", **found, "symbols_in_label": in_label}
    return None


def passages(text: str, window: int = MEANING_WINDOW, step: int = MEANING_STEP) -> list[str]:
    """Overlapping runs of ``window`` words of a text (the whole text when shorter)."""
    words = text.split()
    if len(words) <= window:
        return [text]
    return [" ".join(words[i : i + window]) for i in range(0, len(words) - window + step, step)]


class MeaningMatch:
    """How close a chunk's best passage comes to a question with its reference answer, by an
    embedding model: ``embed(texts, kind)`` returns normalised embeddings (kind "query" or
    "passage"). Every text is embedded once, in one call per kind (:meth:`prepare`)."""

    def __init__(self, embed: Callable[[list[str], str], Any]) -> None:
        self.embed = embed
        self.query: dict[str, np.ndarray] = {}
        self.chunk: dict[str, np.ndarray] = {}

    def prepare(self, queries: list[str], chunks: dict[str, str]) -> None:
        """Embeds the queries and the passages of ``chunks`` ({chunk id: text})."""
        queries = sorted(set(queries) - set(self.query))
        if queries:
            self.query.update(zip(queries, self.embed(queries, "query")))
        todo = {cid: passages(t) for cid, t in chunks.items() if cid not in self.chunk}
        flat = [p for ps in todo.values() for p in ps]
        if flat:
            emb, at = np.asarray(self.embed(flat, "passage")), 0
            for cid, ps in todo.items():
                self.chunk[cid] = emb[at : at + len(ps)]
                at += len(ps)

    def closeness(self, query: str, chunk_id: str) -> float:
        """Cosine of the query with the chunk's closest passage (both prepared)."""
        return float((self.chunk[chunk_id] @ self.query[query]).max())


def meaning_query(question: Question) -> str:
    """What a chunk that answers is compared with: the question and its reference answer."""
    return f"{question.question} {question.reference or ''}".strip()
