"""Does a chunk answer a question? Its evidence quote or its reference answer found in the chunk.

Used by the miss diagnosis (a retrieved chunk that answers the question makes the label suspect)
and by the test-set lint (the chunk to add to the label). Two kinds of evidence, the stronger
first:

- the evidence quote occurs in the chunk after normalisation: markup, case, punctuation and
  whitespace are ignored (the label itself matches quotes exactly, so a chunk that differs from
  the quote only in those is missed by the label);
- one passage of the chunk (``WINDOW`` consecutive words, about a paragraph) holds the reference
  answer: at least ``min_share`` of the reference's content words, ``margin`` more than the best
  passage of the labelled chunk, and the chunk names every symbol the reference names
  (``attrs.evolve``, ``__slots__``). Words are counted within a passage, not the whole chunk,
  because a long chunk holds most words of any reference on its topic without answering it.

Words alone cannot tell a chunk that answers from one on the same topic, so the diagnosis adds
meaning where an embedding model is at hand (:class:`MeaningMatch`): a retrieved chunk holding at
least ``min_share`` of the reference's words answers the question when its best passage is at
least as close to the question and its reference answer as the labelled chunk's best passage.
"""

from __future__ import annotations

import re

import numpy as np

from rag_eval.data.testset import strip_markup
from rag_eval.text import content_tokens, coverage, exact_tokens, tokens
from rag_eval.types import Question

WINDOW = 60  # words of one passage
MEANING_WINDOW, MEANING_STEP = 40, 20  # words of one passage compared by meaning, and the stride
_NON_WORD = re.compile(r"[^a-z0-9]+")


def loose(text: str) -> str:
    """Text reduced to lower-case words separated by single spaces (markup and punctuation gone)."""
    return " ".join(_NON_WORD.sub(" ", strip_markup(text).lower()).split())


def symbols(text: str) -> list[set[str]]:
    """The word sets of the symbols a text names (``str.zfill()`` -> {"str", "zfill"})."""
    out = [set(tokens(t)) for t in exact_tokens(text)]
    return [s for s in out if s]


def passage_share(words: set[str], toks: list[str], window: int = WINDOW) -> float:
    """The largest share of ``words`` that one run of ``window`` consecutive tokens holds."""
    if not words:
        return 0.0
    step = max(1, window // 3)
    return max(coverage(words, set(toks[i : i + window])) for i in range(0, max(1, len(toks) - window + step), step))


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
    if len(ref) < 3:
        return None
    toks = tokens(chunk_text)
    share = passage_share(ref, toks)
    if share < min_share:
        return None
    label_share = max((passage_share(ref, tokens(t)) for t in label_texts), default=0.0)
    named = symbols(question.reference or "")
    if share >= label_share + margin and all(s <= set(toks) for s in named):
        return {
            "by": "reference answer",
            "reference_share": round(share, 2),
            "label_share": round(label_share, 2),
            "symbols": [" ".join(sorted(s)) for s in named],
        }
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

    def __init__(self, embed):
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
