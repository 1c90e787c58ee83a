"""Reciprocal-rank fusion of other retrievers (Cormack, Clarke & Büttcher 2009)."""

from __future__ import annotations

import numpy as np

from rag_eval.retrievers.rankings import Rankings, RetrieverContext, relevant_indices
from rag_eval.retrievers.settings import HybridConfig
from rag_eval.types import Corpus, Question


def _rrf_rows(parts: list[Rankings], rows: np.ndarray, n_chunks: int, rrf_k: float, weights: list[float]) -> np.ndarray:
    """Fused scores of every chunk for these questions: each retriever adds weight / (rrf_k + rank)
    for every chunk it ranked (all of them when it scores the whole corpus)."""
    fused = np.zeros((len(rows), n_chunks))
    for w, part in zip(weights, parts):
        if part.exhaustive:
            fused += w / (rrf_k + part.rank_rows(rows))
        else:
            for j, q in enumerate(rows):
                idx = part.top[q][part.top[q] >= 0]
                fused[j, idx] += w / (rrf_k + np.arange(1, len(idx) + 1))
    return fused


def fuse(
    parts: list[Rankings],
    n_chunks: int,
    depth: int,
    rrf_k: float,
    weights: list[float] | None = None,
    wanted: list[list[int]] | None = None,
) -> Rankings:
    """Rankings by fused score; chunks no part returned score 0 and fall back to corpus order.

    When every part scores the whole corpus the fusion does too, question block by question block
    (exact ranks, bounded memory); otherwise chunks that no retriever returned are not ranked.
    """
    weights = weights or [1.0] * len(parts)

    def scorer(rows: np.ndarray) -> np.ndarray:
        return _rrf_rows(parts, rows, n_chunks, rrf_k, weights)

    ranked = Rankings.from_scorer(scorer, len(parts[0]), n_chunks, depth, wanted)
    if all(p.exhaustive for p in parts):
        return ranked
    mask = ranked.scores > 0
    return Rankings(np.where(mask, ranked.top, -1), np.where(mask, ranked.scores, np.nan), None)


class HybridRetriever:
    """The fusion of the retrievers ``cfg.of`` names, whose rankings are made before it
    (``context.rankings``)."""

    def __init__(
        self, corpus: Corpus, cfg: HybridConfig, name: str = "hybrid", context: RetrieverContext | None = None
    ):
        self.corpus, self.cfg, self.name = corpus, cfg, name
        rankings = (context or RetrieverContext()).rankings
        self.parts = [rankings[p] for p in cfg.of]

    def rank(self, questions: list[Question], depth: int) -> Rankings:
        wanted = relevant_indices(self.corpus, questions)
        return fuse(self.parts, len(self.corpus), depth, self.cfg.rrf_k, self.cfg.weights, wanted)
