"""Mapping what another framework returned (a node, a document, a passage of a service) to a
chunk of the corpus: by its id, else by its text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_eval.data.testset import normalise
from rag_eval.types import Corpus

MIN_CONTAINED_CHARS = 40  # a shorter text could sit inside many chunks by chance


class TextMatcher:
    """Finds the chunk a returned text is: the same text (whitespace aside), or, for a text of at
    least ``MIN_CONTAINED_CHARS``, the one chunk that contains it (a passage the system cut)."""

    def __init__(self, corpus: Corpus):
        self.corpus = corpus
        self.texts = [normalise(c.text) for c in corpus.chunks]
        self.exact: dict[str, int] = {}
        for i, c in enumerate(corpus.chunks):
            self.exact.setdefault(self.texts[i], i)
            self.exact.setdefault(normalise(c.passage), i)

    def find(self, text: str | None) -> int | None:
        if not text:
            return None
        t = normalise(text)
        if t in self.exact:
            return self.exact[t]
        if len(t) < MIN_CONTAINED_CHARS:
            return None
        holders = [i for i, chunk in enumerate(self.texts) if t in chunk]
        return holders[0] if len(holders) == 1 else None


def chunk_of(corpus: Corpus, matcher: TextMatcher, cid: str | None, text: str | None) -> int | None:
    """The corpus index of a returned item: its id when the corpus has it, else its text; None if neither."""
    if cid is not None and str(cid) in corpus.index:
        return corpus.index[str(cid)]
    return matcher.find(text)


@dataclass
class Passage:
    """One passage the system says it used: its chunk id and/or its text, and its score if given."""

    id: str | None
    text: str | None
    score: float | None = None

    def to_dict(self) -> dict:
        return {"id": self.id, "text": self.text, "score": self.score}


def node_passage(item: Any, id_key: str | None) -> Passage:
    """A LlamaIndex ``NodeWithScore`` (or node) as a passage: id from metadata[id_key] or the node id."""
    node = getattr(item, "node", item)
    meta = getattr(node, "metadata", None) or {}
    cid = meta.get(id_key) if id_key else getattr(node, "node_id", None)
    text = node.get_content() if hasattr(node, "get_content") else getattr(node, "text", None)
    score = getattr(item, "score", None)
    return Passage(None if cid is None else str(cid), text, float(score) if score is not None else None)


def document_passage(doc: Any, id_key: str | None) -> Passage:
    """A Haystack ``Document`` as a passage: id from meta[id_key] or the document id."""
    meta = getattr(doc, "meta", None) or {}
    cid = meta.get(id_key) if id_key else getattr(doc, "id", None)
    score = getattr(doc, "score", None)
    return Passage(
        None if cid is None else str(cid), getattr(doc, "content", None), float(score) if score is not None else None
    )
