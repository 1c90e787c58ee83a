"""Test helpers for rankings: whole-matrix rankings and every chunk's rank (the product builds
rankings through a scorer, ``Rankings.from_scorer``; tests and benchmarks compare against these)."""

from __future__ import annotations

import numpy as np

from rag_eval.retrievers.rankings import Rankings, top_k


def from_full(full: np.ndarray, depth: int) -> Rankings:
    """Rankings from the whole (questions x chunks) score matrix, NaN scores ranked last."""
    full = np.where(np.isnan(full), -np.inf, full)
    order = top_k(full, depth)
    return Rankings(order, np.take_along_axis(full, order, axis=1), full)


def rank_matrix(rankings: Rankings) -> np.ndarray:
    """1-based rank of every chunk per question, shape ``(n_questions, n_chunks)``."""
    return rankings.rank_rows(np.arange(len(rankings)))
