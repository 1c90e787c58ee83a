"""What every retriever returns: per-question rankings of corpus chunks.

Ties are broken by corpus order: of two chunks with the same score, the one that comes first in
the corpus ranks higher (a stable sort on descending score).

A retriever that scores the whole corpus hands over a *scorer* (question rows -> their scores for
every chunk). Small problems keep the whole (questions x chunks) matrix; large ones are scored in
blocks of questions, so memory stays bounded by ``BLOCK_CELLS`` scores whatever the corpus size,
and ranks beyond the top ``depth`` stay exact (computed from the block while it is at hand for the
chunks the questions are labelled with, and recomputed from the scorer for any other).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rag_eval.types import Corpus, Question

if TYPE_CHECKING:
    from scipy import sparse

# Up to this many scores the whole matrix is kept (128 MiB of float64); above it, blocks.
FULL_CELLS = 2**24
# Scores held at once when scoring in blocks (256 MiB of float64). Larger blocks mean fewer passes
# over a memory-mapped embedding matrix: at 10^6 chunks, 32 questions a pass.
BLOCK_CELLS = 2**25

# A question labelled with more chunks than this gets all its ranks from one sort of its scores.
RANK_ALL_FROM = 32

Scorer = Callable[[np.ndarray], np.ndarray]  # question row indices -> (len(rows), n_chunks) scores
# question row indices -> their scores as CSR rows, every chunk a row does not list scoring 0
SparseScorer = Callable[[np.ndarray], "sparse.csr_matrix"]
SPARSE_BLOCK = 64  # questions a sparse scorer is asked for at once (small blocks stay in the CPU's caches)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` columns of a stable descending sort of each row (ties in column order),
    from a partition instead of a full sort: the same indices, about 25x faster on 10^5 columns (0.47 against 11.8 ms a row, measured)."""
    n, m = scores.shape
    k = min(k, m)
    if k == 0 or m <= 4 * k:
        return np.argsort(-scores, axis=1, kind="stable")[:, :k]
    out = np.empty((n, k), dtype=np.int64)
    # The k-th largest score of each row (one copy of the block, where negating first made two).
    kth = np.partition(scores, m - k, axis=1)[:, m - k]
    for i in range(n):
        cand = np.flatnonzero(scores[i] >= kth[i])
        out[i] = cand[np.lexsort((cand, -scores[i, cand]))][:k]
    return out


def exact_rank(row: np.ndarray, idx: int) -> int:
    """1-based rank of column ``idx`` in a row of scores, ties in column order."""
    s = row[idx]
    return int(1 + (row > s).sum() + (row[:idx] == s).sum())


def _sparse_rank(cols: np.ndarray, vals: np.ndarray, idx: int, n: int) -> int:
    """:func:`exact_rank` of column ``idx`` in a row of ``n`` columns given by its listed scores
    (each column at most once, no NaN; every other column scores 0)."""
    at = np.flatnonzero(cols == idx)
    s = vals[at[0]] if len(at) else 0.0
    rank = 1 + np.count_nonzero(vals > s) + np.count_nonzero((vals == s) & (cols < idx))
    if s < 0:  # every unlisted column (0) ranks above it
        rank += n - len(cols)
    elif s == 0:  # the unlisted columns before it tie with it and come first
        rank += idx - np.count_nonzero(cols < idx)
    return int(rank)


def ranks_of_rows(scores: np.ndarray) -> np.ndarray:
    """1-based rank of every column of each row, ties in column order (float, for fusion)."""
    order = np.argsort(-scores, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, order.shape[1] + 1)[None, :], axis=1)
    return ranks.astype(float)


def _clean(scores: np.ndarray) -> np.ndarray:
    nan = np.isnan(scores)
    return np.where(nan, -np.inf, scores) if nan.any() else scores


def _sparse_top(cols: np.ndarray, vals: np.ndarray, k: int) -> np.ndarray | None:
    """Positions in ``cols``/``vals`` (one row's listed scores; every other chunk scores 0) of the
    row's top ``k`` in stable descending order (ties in column order); None when fewer than ``k``
    listed scores are positive (zeros and negatives then rank by column among the unlisted chunks)."""
    pos = np.flatnonzero(vals > 0)
    if len(pos) < k:
        return None
    if len(pos) > k:
        kth = np.partition(vals[pos], len(pos) - k)[len(pos) - k]
        pos = pos[vals[pos] >= kth]
    return pos[np.lexsort((cols[pos], -vals[pos]))][:k]


def relevant_indices(corpus: Corpus, questions: list[Question]) -> list[list[int]]:
    """Corpus indices of each question's relevant chunks (the ranks the metrics need)."""
    return [[corpus.index[c] for c, g in q.qrels.items() if g > 0 and c in corpus.index] for q in questions]


@dataclass
class Rankings:
    """Top-``depth`` chunk indices and scores per question.

    ``top`` is ``(n_questions, depth)`` of corpus indices, -1 where the retriever returned fewer;
    ``scores`` matches it (NaN padding). When the retriever scores the whole corpus, ``full`` holds
    every score (small problems) or ``scorer`` recomputes any question's scores (large ones); either
    gives exact ranks beyond ``depth``. ``known`` caches exact ranks by (question, chunk).
    """

    top: np.ndarray
    scores: np.ndarray
    full: np.ndarray | None = None
    scorer: Scorer | None = None
    known: dict[tuple[int, int], int] = field(default_factory=dict)
    notes: dict = field(default_factory=dict)  # how the rankings were made, when that matters (ANN recall)

    @classmethod
    def from_scorer(
        cls,
        scorer: Scorer,
        n_questions: int,
        n_chunks: int,
        depth: int,
        wanted: list[list[int]] | None = None,
        *,
        full_cells: int | None = None,
        block_cells: int | None = None,
        progress: Callable | None = None,
    ) -> Rankings:
        """Rankings from a scorer: the whole matrix when it is small, else blocks of questions
        with the exact ranks of ``wanted`` chunks (per question) kept from each block (limits
        default to ``FULL_CELLS`` and ``BLOCK_CELLS``)."""
        full_cells = FULL_CELLS if full_cells is None else full_cells
        block_cells = BLOCK_CELLS if block_cells is None else block_cells
        # Blocks of at most 256 questions: a block that stays in the CPU's caches is faster to select from.
        per = max(1, min(256, block_cells // max(1, n_chunks)))
        blocks = [np.arange(s, min(n_questions, s + per)) for s in range(0, n_questions, per)]
        blocks = progress(blocks) if progress else blocks
        keep = n_questions * n_chunks <= full_cells
        width = min(depth, n_chunks)
        top = np.full((n_questions, width), -1, dtype=np.int64)
        scores = np.full((n_questions, width), np.nan)
        known: dict[tuple[int, int], int] = {}
        kept = []
        for rows in blocks:
            block = _clean(scorer(rows))
            order = top_k(block, width)
            top[rows], scores[rows] = order, np.take_along_axis(block, order, axis=1)
            if keep:
                kept.append(block)
                continue
            for j, q in enumerate(rows):
                want = wanted[q] if wanted else ()
                if len(want) > RANK_ALL_FROM:
                    # A label matching many chunks (a generic quote): one sort of the row ranks them all.
                    ranks = ranks_of_rows(block[j : j + 1])[0]
                    known.update({(int(q), idx): int(ranks[idx]) for idx in want})
                    continue
                for idx in want:
                    known[(int(q), idx)] = exact_rank(block[j], idx)
        if keep:
            return cls(top, scores, np.vstack(kept) if kept else np.zeros((0, n_chunks)))
        return cls(top, scores, None, scorer, known)

    @classmethod
    def from_sparse(
        cls,
        sparse_scorer: SparseScorer,
        scorer: Scorer,
        n_questions: int,
        n_chunks: int,
        depth: int,
        wanted: list[list[int]] | None = None,
        *,
        full_cells: int | None = None,
        block: int = SPARSE_BLOCK,
        progress: Callable | None = None,
    ) -> Rankings:
        """Rankings from a scorer whose rows are mostly zeros (BM25: a chunk with none of the
        question's words scores 0), read as CSR rows from ``sparse_scorer``, ``block`` questions at a
        time (each chunk listed at most once in a row, as a product makes them): a row with at least ``depth`` positive scores gets its top, and the exact ranks of its
        ``wanted`` chunks, from its listed scores alone (every unlisted chunk scores 0, below them); any
        other row, a row with a NaN, and a row with more than ``RANK_ALL_FROM`` wanted chunks is made
        dense and ranked as :meth:`from_scorer` ranks it. The same top, scores and ranks as ``from_scorer(scorer, ...)``,
        without a dense block per question block; ``scorer`` (the same scores, dense) serves later
        ranks. Small problems keep the whole matrix (``from_scorer``)."""
        full_cells = FULL_CELLS if full_cells is None else full_cells
        if n_questions * n_chunks <= full_cells:
            return cls.from_scorer(scorer, n_questions, n_chunks, depth, wanted, progress=progress)
        blocks = [np.arange(s, min(n_questions, s + block)) for s in range(0, n_questions, block)]
        blocks = progress(blocks) if progress else blocks
        width = min(depth, n_chunks)
        top = np.full((n_questions, width), -1, dtype=np.int64)
        scores = np.full((n_questions, width), np.nan)
        known: dict[tuple[int, int], int] = {}
        for rows in blocks:
            m = sparse_scorer(rows)
            for j, q in enumerate(rows.tolist()):
                cols = m.indices[m.indptr[j] : m.indptr[j + 1]]
                vals = m.data[m.indptr[j] : m.indptr[j + 1]]
                want = wanted[q] if wanted else []
                picked = None if np.isnan(vals).any() else _sparse_top(cols, vals, width)
                if picked is not None:
                    top[q], scores[q] = cols[picked], vals[picked]
                    if len(want) <= RANK_ALL_FROM:
                        known.update({(q, idx): _sparse_rank(cols, vals, idx, n_chunks) for idx in want})
                        continue
                dense = np.zeros(n_chunks)
                dense[cols] += vals  # as a CSR row is made dense (todense adds into zeros)
                dense = _clean(dense)
                if picked is None:
                    order = top_k(dense[None], width)[0]
                    top[q], scores[q] = order, dense[order]
                if len(want) > RANK_ALL_FROM:
                    all_ranks = ranks_of_rows(dense[None])[0]
                    known.update({(q, idx): int(all_ranks[idx]) for idx in want})
                else:
                    known.update({(q, idx): exact_rank(dense, idx) for idx in want})
        return cls(top, scores, None, scorer, known)

    @classmethod
    def from_lists(cls, lists: list[list[tuple[int, float]]], depth: int) -> Rankings:
        """From per-question (corpus index, score) pairs in any order; repeats keep their best score."""
        n = len(lists)
        top = np.full((n, depth), -1, dtype=np.int64)
        scores = np.full((n, depth), np.nan)
        for i, pairs in enumerate(lists):
            best: dict[int, float] = {}
            for idx, s in pairs:
                if idx not in best or s > best[idx]:
                    best[idx] = s
            ranked = sorted(best.items(), key=lambda p: (-p[1], p[0]))[:depth]
            for j, (idx, s) in enumerate(ranked):
                top[i, j], scores[i, j] = idx, s
        return cls(top, scores, None)

    def __len__(self) -> int:
        return len(self.top)

    @property
    def exhaustive(self) -> bool:
        """Every chunk has a score (ranks are exact at any depth)."""
        return self.full is not None or self.scorer is not None

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """Every chunk's score for these questions (exhaustive rankings only)."""
        if self.full is not None:
            return self.full[rows]
        if self.scorer is None:
            raise ValueError("these rankings do not score every chunk")
        return _clean(self.scorer(np.asarray(rows)))

    def rank_of(self, q: int, idx: int) -> int | None:
        """1-based rank of chunk ``idx`` for question ``q``; None if the retriever did not return it."""
        if self.full is not None:
            return exact_rank(self.full[q], idx)
        if (q, idx) in self.known:
            return self.known[(q, idx)]
        if self.scorer is not None:
            self.known[(q, idx)] = exact_rank(self.rows(np.array([q]))[0], idx)
            return self.known[(q, idx)]
        hits = np.flatnonzero(self.top[q] == idx)
        return int(hits[0]) + 1 if len(hits) else None

    def rank_rows(self, rows: np.ndarray) -> np.ndarray:
        """1-based rank of every chunk for these questions, shape ``(len(rows), n_chunks)``."""
        return ranks_of_rows(self.rows(rows))

    def ids(self, corpus: Corpus, q: int) -> list[str]:
        return [corpus.chunks[i].id for i in self.top[q] if i >= 0]


class Retriever(Protocol):
    """Ranks the corpus for each question; built as ``Class(corpus, cfg, name, context)``."""

    def rank(self, questions: list[Question], depth: int) -> Rankings: ...


@dataclass
class RetrieverContext:
    """What every kind of retriever is built with beyond its corpus, config and name."""

    cache_dir: Path | None = None  # on-disk caches (the BM25 index, embeddings); None: none / the default
    engine: Any = None  # rag_eval.engine, where embeddings run (None: here)
    # The rankings made so far, by retriever name: a hybrid's parts, a re-ranker's base, the
    # deployed system's own (given before the build).
    rankings: dict[str, Rankings] = field(default_factory=dict)
    resolve_path: Callable[[str], Path] = Path  # an input path of the config, relative to its folder
    where: Callable[[str], str] = lambda dotted: f"<config>: {dotted}"  # a config key, for error messages
