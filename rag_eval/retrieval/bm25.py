"""Keyword retrieval with rank-bm25's BM25Okapi."""

from __future__ import annotations

import re

import numpy as np

from rag_eval.config import Bm25Config
from rag_eval.progress import track
from rag_eval.retrieval.base import Rankings
from rag_eval.types import Corpus, Question


def make_tokenizer(pattern: str, lowercase: bool = True):
    """A function text -> tokens: every match of ``pattern``, after lower-casing if asked."""
    rx = re.compile(pattern)
    return (lambda text: rx.findall(text.lower())) if lowercase else rx.findall


class Bm25Retriever:
    """BM25Okapi over each chunk's title and text; scores every chunk for every question."""

    def __init__(self, corpus: Corpus, cfg: Bm25Config, name: str = "bm25"):
        from rank_bm25 import BM25Okapi

        self.name = name
        self.tokenize = make_tokenizer(cfg.tokenizer, cfg.lowercase)
        tokens = [self.tokenize(c.passage) for c in corpus.chunks]
        self.index = BM25Okapi(tokens, k1=cfg.k1, b=cfg.b, epsilon=cfg.epsilon)

    def rank(self, questions: list[Question], depth: int) -> Rankings:
        full = np.vstack(
            [self.index.get_scores(self.tokenize(q.question)) for q in track(questions, f"{self.name}: searching")]
        )
        return Rankings.from_full(full, depth)
