"""Reciprocal-rank fusion of other retrievers (Cormack, Clarke & Büttcher 2009)."""

from __future__ import annotations

import numpy as np

from rag_eval.retrievers.rankings import Rankings


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
