"""Records that flow between stages: chunks of the corpus and labelled questions."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Chunk:
    """One retrievable passage of the corpus."""

    id: str
    text: str
    title: str = ""
    doc_id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def passage(self) -> str:
        """The text a retriever indexes: title, a newline, then the text."""
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass
class Corpus:
    """The chunks in their original order; that order breaks score ties."""

    chunks: list[Chunk]
    source: str
    index: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.index = {c.id: i for i, c in enumerate(self.chunks)}

    def __len__(self) -> int:
        return len(self.chunks)

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.chunks]

    def fingerprint(self) -> str:
        """A hash of every chunk's id, title and text, for cache keys."""
        h = hashlib.sha256()
        # The same bytes as one update per part, a thousand chunks at a time (far fewer calls).
        for s in range(0, len(self.chunks), 1000):
            h.update("".join(f"{c.id}\0{c.title}\0{c.text}\0" for c in self.chunks[s : s + 1000]).encode())
        return h.hexdigest()


@dataclass
class Question:
    """A test-set question with its relevance labels resolved to chunk ids."""

    id: str
    question: str
    qrels: dict[str, float]  # chunk id -> grade (a whole number, or a share for a quote cut by a chunk boundary)
    answerable: bool
    reference: str | None = None
    where: str = ""
    evidence: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    quote_matches: dict[str, int] = field(default_factory=dict)  # evidence quote -> chunks it matches
    # A quote a chunk boundary cut -> the adjacent chunks it spans, each graded by its share of the quote.
    quote_spans: dict[str, dict[str, float]] = field(default_factory=dict)
