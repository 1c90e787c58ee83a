"""Approximate dense search: a FAISS HNSW index over the cached embeddings (``index: hnsw``).

Approximate search may miss chunks that exact search ranks high, so every run measures it: the
recall@10 of the HNSW lists against exact search on a sample of the questions is printed and kept
with the rankings (``Rankings.notes``). The index is cached on disk beside the embeddings.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from rag_eval.errors import ConfigError, Problem
from rag_eval.progress import say
from rag_eval.retrievers.rankings import Rankings

RECALL_SAMPLE = 64  # questions on which an approximate index is checked against exact search


def _faiss():
    try:
        import faiss  # noqa: PLC0415
    except ImportError:
        raise ConfigError(
            Problem(
                "retrieval (index: hnsw)",
                "approximate dense search needs FAISS, which is not installed",
                "pip install faiss-cpu (or pip install 'rag-eval[scale]'), or use index: exact",
            )
        ) from None
    return faiss


def build_hnsw(passages: np.ndarray, m: int, ef_construction: int = 80, batch: int = 65536):
    """An inner-product HNSW index over ``passages``, added in batches."""
    faiss = _faiss()
    index = faiss.IndexHNSWFlat(passages.shape[1], m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = ef_construction
    for s in range(0, len(passages), batch):
        index.add(np.ascontiguousarray(passages[s : s + batch], dtype=np.float32))
    return index


def search(index, queries: np.ndarray, depth: int, ef_search: int) -> tuple[np.ndarray, np.ndarray]:
    """(indices, scores) of the approximate top ``depth``; -1 / NaN where fewer were found."""
    index.hnsw.efSearch = max(ef_search, depth)
    scores, top = index.search(np.ascontiguousarray(queries, dtype=np.float32), depth)
    scores = np.where(top >= 0, scores, np.nan).astype(float)
    return top.astype(np.int64), scores


def recall_at(approx: np.ndarray, exact: np.ndarray, k: int) -> float:
    """Mean share of each row's exact top ``k`` that the approximate top ``k`` holds."""
    k = min(k, exact.shape[1], approx.shape[1])
    if k == 0 or len(exact) == 0:
        return float("nan")
    return float(np.mean([len(set(a[:k]) & set(e[:k])) / k for a, e in zip(approx, exact)]))


def hnsw_rankings(retriever, passages: np.ndarray, queries: np.ndarray, depth: int) -> Rankings:
    """Rankings from an HNSW index (cached on disk), with recall@10 against exact search noted."""
    faiss = _faiss()
    cfg = retriever.cfg
    key = hashlib.sha256(f"{retriever.fingerprint}|{len(passages)}|{cfg.hnsw_m}".encode())
    key.update(np.ascontiguousarray(passages[:: max(1, len(passages) // 1024)]).tobytes())
    path = Path(retriever.cache_dir) / f"hnsw-{key.hexdigest()[:24]}.faiss"
    if path.exists():
        index = faiss.read_index(str(path))
    else:
        say(f"{retriever.name}: building an HNSW index over {len(passages)} chunks")
        index = build_hnsw(passages, cfg.hnsw_m)
        path.parent.mkdir(parents=True, exist_ok=True)
        faiss.write_index(index, str(path) + ".tmp")
        Path(str(path) + ".tmp").replace(path)
    top, scores = search(index, queries, depth, cfg.ef_search)
    sample = np.random.default_rng(0).permutation(len(queries))[:RECALL_SAMPLE]
    picked = queries[sample]
    exact = Rankings.from_scorer(lambda rows: picked[rows] @ passages.T, len(sample), len(passages), 10).top
    recall = recall_at(top[sample], exact, 10)
    say(f"{retriever.name}: HNSW recall@10 against exact search {recall:.3f} on {len(sample)} questions")
    return Rankings(top, scores, notes={"index": "hnsw", "recall@10_vs_exact": recall, "recall_sample": len(sample)})
