"""Reciprocal-rank fusion of other retrievers (Cormack, Clarke & Büttcher 2009)."""

from __future__ import annotations

import numpy as np

from rag_eval.retrieval.base import Rankings


def rrf_scores(parts: list[Rankings], n_chunks: int, rrf_k: float, weights: list[float] | None = None) -> np.ndarray:
    """Each retriever adds weight / (rrf_k + rank) for every chunk it ranked; shape (n_q, n_chunks)."""
    weights = weights or [1.0] * len(parts)
    n_q = len(parts[0])
    fused = np.zeros((n_q, n_chunks))
    for w, part in zip(weights, parts):
        if part.full is not None:
            fused += w / (rrf_k + part.rank_matrix())
        else:
            for q in range(n_q):
                idx = part.top[q][part.top[q] >= 0]
                fused[q, idx] += w / (rrf_k + np.arange(1, len(idx) + 1))
    return fused


def fuse(
    parts: list[Rankings], n_chunks: int, depth: int, rrf_k: float, weights: list[float] | None = None
) -> Rankings:
    """Rankings by fused score; chunks no part returned score 0 and fall back to corpus order."""
    full = rrf_scores(parts, n_chunks, rrf_k, weights)
    if all(p.full is not None for p in parts):
        return Rankings.from_full(full, depth)
    ranked = Rankings.from_full(full, depth)
    # Chunks that no retriever returned are not ranked at all.
    mask = np.take_along_axis(full, ranked.top, axis=1) > 0
    return Rankings(np.where(mask, ranked.top, -1), np.where(mask, ranked.scores, np.nan), None)
