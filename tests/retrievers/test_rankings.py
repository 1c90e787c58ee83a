"""Rankings scored in blocks of questions equal the whole-matrix rankings exactly: the top, the
scores, and the rank of any chunk at any depth; fusion in blocks equals fusion of whole matrices."""

import numpy as np

from rag_eval.retrievers import rankings as base
from rag_eval.retrievers.hybrid import fuse
from rag_eval.retrievers.rankings import Rankings, ranks_of_rows

from .rankings import from_full, rank_matrix


def _scores(seed: int, n_q: int, n: int) -> np.ndarray:
    # Rounded, so that many chunks tie and the corpus-order tie-break is exercised.
    return np.round(np.random.default_rng(seed).normal(size=(n_q, n)), 1)


def test_blocks_equal_the_whole_matrix_with_ties():
    full = _scores(0, 37, 500)
    wanted = [[int(i) for i in np.random.default_rng(q).choice(500, 3, replace=False)] for q in range(37)]
    calls = []

    def scorer(rows):
        calls.append(len(rows))
        return full[rows]

    whole = from_full(full, 20)
    blocks = Rankings.from_scorer(scorer, 37, 500, 20, wanted, full_cells=0, block_cells=5000)
    assert blocks.full is None and blocks.exhaustive
    assert calls == [10, 10, 10, 7]  # 5000 cells / 500 chunks = 10 questions a block
    np.testing.assert_array_equal(blocks.top, whole.top)
    np.testing.assert_array_equal(blocks.scores, whole.scores)
    ranks = ranks_of_rows(full)
    for q in range(37):
        for idx in wanted[q]:
            assert blocks.known[(q, idx)] == whole.rank_of(q, idx) == ranks[q, idx]
    calls.clear()
    # A chunk not asked for beforehand: recomputed from the scorer, still exact (rank 300-ish).
    worst = int(np.argsort(-full[5], kind="stable")[299])
    assert blocks.rank_of(5, worst) == whole.rank_of(5, worst) == 300
    assert calls == [1]
    np.testing.assert_array_equal(rank_matrix(blocks), rank_matrix(whole))


def test_small_problems_keep_the_whole_matrix():
    full = _scores(1, 4, 30)
    r = Rankings.from_scorer(lambda rows: full[rows], 4, 30, 10)
    assert r.full is not None
    np.testing.assert_array_equal(r.top, from_full(full, 10).top)


def test_fusion_in_blocks_equals_fusion_of_whole_matrices(monkeypatch):
    a, b = _scores(2, 23, 300), _scores(3, 23, 300)
    wanted = [[q, q + 100] for q in range(23)]
    whole = fuse([from_full(a, 50), from_full(b, 50)], 300, 50, 60, [1.0, 0.5])
    monkeypatch.setattr(base, "FULL_CELLS", 0)
    monkeypatch.setattr(base, "BLOCK_CELLS", 900)
    pa = Rankings.from_scorer(lambda rows: a[rows], 23, 300, 50)
    pb = Rankings.from_scorer(lambda rows: b[rows], 23, 300, 50)
    assert pa.full is None
    blocks = fuse([pa, pb], 300, 50, 60, [1.0, 0.5], wanted)
    assert blocks.full is None
    np.testing.assert_array_equal(blocks.top, whole.top)
    np.testing.assert_allclose(blocks.scores, whole.scores, rtol=0, atol=1e-15)
    for q in range(23):
        for idx in wanted[q]:
            assert blocks.rank_of(q, idx) == whole.rank_of(q, idx)
    # A part that returns only lists keeps the old rule: chunks nobody returned are not ranked.
    lists = Rankings(pa.top[:, :5].copy(), pa.scores[:, :5].copy())
    mixed = fuse([lists, pb], 300, 10, 60)
    assert (mixed.top >= 0).all()
    only = fuse([lists], 300, 10, 60)
    assert (only.top[:, 5:] == -1).all() and (only.top[:, :5] == pa.top[:, :5]).all()


def test_many_labelled_chunks_are_ranked_exactly_from_one_sort():
    """A question labelled with more chunks than RANK_ALL_FROM (a quote matching hundreds of chunks)
    gets their ranks from one sort of its row: the same ranks, ties in corpus order."""
    full = _scores(3, 9, 400)
    wanted = [list(range(0, 400, 2)) if q % 2 else [5, 7] for q in range(9)]
    blocks = Rankings.from_scorer(lambda rows: full[rows], 9, 400, 10, wanted, full_cells=0, block_cells=1200)
    ranks = ranks_of_rows(full)
    assert len(wanted[1]) > base.RANK_ALL_FROM
    for q in range(9):
        assert {idx: blocks.known[(q, idx)] for idx in wanted[q]} == {idx: int(ranks[q, idx]) for idx in wanted[q]}


def test_sparse_rows_rank_as_the_dense_matrix_does():
    """Rankings read from CSR rows (BM25: most chunks score 0) equal those of the dense matrix:
    top, scores and the exact rank of every wanted chunk, with ties, rows with fewer positive
    scores than the depth, negative scores, a NaN, chunks scoring 0 and many wanted chunks."""
    from scipy import sparse

    rng = np.random.default_rng(7)
    n_q, n = 40, 300
    full = np.round(rng.normal(1.0, 1.0, size=(n_q, n)), 1)
    full[rng.random((n_q, n)) < 0.6] = 0.0  # unlisted: 0
    full[3, :] = 0.0
    full[3, [10, 20]] = [2.0, -1.0]  # two listed scores only, one negative
    full[4, 7] = np.nan
    full[5, rng.random(n) < 0.9] = 0.0  # fewer positive scores than the depth
    wanted = [[int(i) for i in rng.choice(n, 4, replace=False)] for _ in range(n_q)]
    wanted[3] = [10, 20, 0, 299, 15]  # positive, negative, unlisted before and after them
    wanted[6] = list(range(0, n, 3))  # more than RANK_ALL_FROM
    csr = sparse.csr_matrix(full)  # NaN stays listed; zeros are not listed

    def dense(rows):
        return full[rows]

    calls = []

    def sparse_scorer(rows):
        calls.append(len(rows))
        return csr[rows]

    want = Rankings.from_scorer(dense, n_q, n, 20, wanted, full_cells=0, block_cells=1000)
    got = Rankings.from_sparse(sparse_scorer, dense, n_q, n, 20, wanted, full_cells=0, block=16)
    assert calls == [16, 16, 8] and got.full is None and got.exhaustive
    np.testing.assert_array_equal(got.top, want.top)
    np.testing.assert_array_equal(got.scores, want.scores)
    assert got.known == want.known
    ranks = ranks_of_rows(np.where(np.isnan(full), -np.inf, full))
    assert got.known[(3, 10)] == 1 and got.known[(3, 20)] == n and got.known[(3, 0)] == 2
    assert all(r == ranks[q, idx] for (q, idx), r in got.known.items())
    # Small problems keep the whole matrix, as from_scorer does.
    small = Rankings.from_sparse(sparse_scorer, dense, n_q, n, 20, wanted)
    assert small.full is not None
    np.testing.assert_array_equal(small.top, want.top)
