"""Mapping what another framework returned (a node, a document, a passage of a service) to a
chunk of the corpus: by its id, else by its text."""

from __future__ import annotations

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
