"""Rank metrics over a relevance matrix, following trec_eval's conventions.

Every function takes ``relevance``: an array of shape ``(n_questions, depth)`` holding, for each
question, the relevance grade of the chunk at each rank (0 = not relevant; rank 1 in column 0),
and returns one float per question. Aggregates are plain means of these arrays, which the
statistics module resamples. All metrics are ``*_score``-like: higher is better, range [0, 1].

Conventions (those of trec_eval and ranx):
- a chunk is relevant when its grade is > 0;
- precision@k divides by k even when fewer than k chunks were retrieved;
- nDCG@k uses linear gains (the grade) and log2(rank + 1) discounts; the ideal DCG comes from
  the labels (every judged chunk, sorted by grade), not from what was retrieved;
- MRR and MAP look at the whole ranking given (``depth``), unless a cut-off @k is named.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np

from rag_eval.errors import did_you_mean


def _check_k(k: int) -> None:
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer. Got {k!r} instead.")


def hit_at_k(relevance: np.ndarray, k: int) -> np.ndarray:
    """1.0 where at least one relevant chunk is in the top k, else 0.0."""
    _check_k(k)
    return (relevance[:, :k] > 0).any(axis=1).astype(float)


def reciprocal_rank(relevance: np.ndarray, k: int | None = None) -> np.ndarray:
    """1 / rank of the first relevant chunk (within the top k if given), 0.0 if none."""
    rel = relevance if k is None else relevance[:, :k]
    is_rel = rel > 0
    first = is_rel.argmax(axis=1)
    return np.where(is_rel.any(axis=1), 1.0 / (first + 1), 0.0)


def precision_at_k(relevance: np.ndarray, k: int) -> np.ndarray:
    """Share of the top k that is relevant (missing ranks count as not relevant)."""
    _check_k(k)
    return (relevance[:, :k] > 0).sum(axis=1) / k


def recall_at_k(relevance: np.ndarray, n_relevant: np.ndarray, k: int) -> np.ndarray:
    """Share of the labelled relevant chunks that are in the top k; 0.0 when none is labelled."""
    _check_k(k)
    found = (relevance[:, :k] > 0).sum(axis=1)
    return np.divide(found, n_relevant, out=np.zeros(len(found)), where=n_relevant > 0)


def _dcg(gains: np.ndarray) -> np.ndarray:
    discounts = 1.0 / np.log2(np.arange(2, gains.shape[1] + 2))
    return (gains * discounts).sum(axis=1)


def ndcg_at_k(relevance: np.ndarray, ideal: np.ndarray, k: int) -> np.ndarray:
    """Normalised discounted cumulative gain at k (Järvelin & Kekäläinen 2002, linear gains).

    ``ideal`` has shape ``(n_questions, m)``: each question's labelled grades sorted descending,
    zero-padded. A question with no relevant label scores 0.0 (ideal DCG of 0).
    """
    _check_k(k)
    dcg = _dcg(relevance[:, :k].astype(float))
    idcg = _dcg(ideal[:, :k].astype(float))
    return np.divide(dcg, idcg, out=np.zeros(len(dcg)), where=idcg > 0)


def average_precision(relevance: np.ndarray, n_relevant: np.ndarray, k: int | None = None) -> np.ndarray:
    """Mean of precision at the rank of each relevant chunk, over all labelled relevant chunks."""
    rel = (relevance if k is None else relevance[:, :k]) > 0
    ranks = np.arange(1, rel.shape[1] + 1)
    prec = np.cumsum(rel, axis=1) / ranks
    total = (prec * rel).sum(axis=1)
    return np.divide(total, n_relevant, out=np.zeros(len(total)), where=n_relevant > 0)


@dataclass(frozen=True)
class RelevanceData:
    """What every metric needs: grades by rank, count of relevant labels, ideal grades."""

    relevance: np.ndarray
    n_relevant: np.ndarray
    ideal: np.ndarray


@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric name such as ``ndcg@10``."""

    name: str
    base: str
    k: int | None
    binary: bool

    def compute(self, data: RelevanceData) -> np.ndarray:
        return _FUNCTIONS[self.base](data, self.k)


_FUNCTIONS: dict[str, Callable[[RelevanceData, int | None], np.ndarray]] = {
    # parse_metric gives a k to every metric of _NEEDS_K.
    "hit": lambda d, k: hit_at_k(d.relevance, cast(int, k)),
    "mrr": lambda d, k: reciprocal_rank(d.relevance, k),
    "ndcg": lambda d, k: ndcg_at_k(d.relevance, d.ideal, cast(int, k)),
    "precision": lambda d, k: precision_at_k(d.relevance, cast(int, k)),
    "recall": lambda d, k: recall_at_k(d.relevance, d.n_relevant, cast(int, k)),
    "map": lambda d, k: average_precision(d.relevance, d.n_relevant, k),
}
_NEEDS_K = {"hit", "ndcg", "precision", "recall"}
_BINARY = {"hit"}
KNOWN_METRICS = ("hit@K", "mrr", "ndcg@K", "precision@K", "recall@K", "map")


def parse_metric(name: str) -> MetricSpec:
    """Parse ``hit@5``, ``mrr``, ``mrr@10``, ``ndcg@10``, ``precision@5``, ``recall@5``, ``map``.

    Raises ValueError naming the known metrics (with a suggestion) for anything else.
    """
    m = re.fullmatch(r"([a-z_]+)(?:@(\d+))?", name.strip().lower())
    base, k = (m.group(1), int(m.group(2)) if m.group(2) else None) if m else (name, None)
    if base not in _FUNCTIONS:
        raise ValueError(f"'{name}' is not a known metric; " + did_you_mean(base, list(KNOWN_METRICS)))
    if base in _NEEDS_K and not k:
        raise ValueError(f"metric '{name}' needs a cut-off, e.g. '{base}@5' (k >= 1)")
    if k == 0:
        raise ValueError(f"metric '{name}': k must be at least 1")
    canonical = f"{base}@{k}" if k else base
    return MetricSpec(canonical, base, k, base in _BINARY)


def default_metrics(ks: list[int]) -> list[str]:
    """Every metric at every cut-off, in report order."""
    names = [f"hit@{k}" for k in ks] + ["mrr"]
    names += [f"ndcg@{k}" for k in ks] + [f"precision@{k}" for k in ks] + [f"recall@{k}" for k in ks]
    return names + ["map"]


def relevance_data(ranked: list[list[str]], qrels: list[dict[str, float]], depth: int) -> RelevanceData:
    """Build the relevance matrix from ranked chunk ids and per-question labels."""
    n = len(ranked)
    rel = np.zeros((n, depth), dtype=float)
    width = max((len(q) for q in qrels), default=0) or 1
    ideal = np.zeros((n, width), dtype=float)
    n_rel = np.zeros(n, dtype=float)
    for i, (ids, labels) in enumerate(zip(ranked, qrels)):
        for j, cid in enumerate(ids[:depth]):
            rel[i, j] = labels.get(cid, 0)
        grades = sorted((g for g in labels.values() if g > 0), reverse=True)
        ideal[i, : len(grades)] = grades
        n_rel[i] = len(grades)
    return RelevanceData(rel, n_rel, ideal)
