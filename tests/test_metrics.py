"""Rank metrics: hand-worked cases, invariants, and agreement with ranx on seeded random runs."""

import math

import numpy as np
import pytest

from rag_eval.metrics import (
    average_precision,
    default_metrics,
    hit_at_k,
    ndcg_at_k,
    parse_metric,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    relevance_data,
)


def test_hand_worked_binary_case():
    # q0: relevant at ranks 2 and 4 of 5; two relevant labels in all.
    # q1: nothing relevant retrieved; one relevant label.
    data = relevance_data([["a", "b", "c", "d", "e"], ["x", "y"]], [{"b": 1, "d": 1}, {"z": 1}], depth=5)
    assert hit_at_k(data.relevance, 1).tolist() == [0.0, 0.0]
    assert hit_at_k(data.relevance, 2).tolist() == [1.0, 0.0]
    assert reciprocal_rank(data.relevance).tolist() == [0.5, 0.0]
    assert precision_at_k(data.relevance, 5).tolist() == [0.4, 0.0]
    # precision divides by k even when fewer chunks were returned (q1 returned 2).
    assert precision_at_k(data.relevance, 4).tolist() == [0.5, 0.0]
    assert recall_at_k(data.relevance, data.n_relevant, 2).tolist() == [0.5, 0.0]
    assert average_precision(data.relevance, data.n_relevant).tolist() == [pytest.approx((1 / 2 + 2 / 4) / 2), 0.0]
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3)
    assert ndcg_at_k(data.relevance, data.ideal, 5)[0] == pytest.approx(dcg / idcg)
    assert ndcg_at_k(data.relevance, data.ideal, 5)[1] == 0.0


def test_graded_ndcg_uses_linear_gains_and_ideal_from_labels():
    # Labels: a=3, b=1, c=2 (c never retrieved). Ranking: b, a.
    data = relevance_data([["b", "a", "x"]], [{"a": 3, "b": 1, "c": 2}], depth=3)
    dcg = 1 / math.log2(2) + 3 / math.log2(3)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(data.relevance, data.ideal, 3)[0] == pytest.approx(dcg / idcg)
    # A perfect ranking scores 1.
    perfect = relevance_data([["a", "c", "b"]], [{"a": 3, "b": 1, "c": 2}], depth=3)
    assert ndcg_at_k(perfect.relevance, perfect.ideal, 3)[0] == pytest.approx(1.0)


def test_zero_grade_labels_are_not_relevant():
    data = relevance_data([["a", "b"]], [{"a": 0, "b": 1}], depth=2)
    assert reciprocal_rank(data.relevance)[0] == 0.5
    assert data.n_relevant[0] == 1


def test_k_must_be_positive():
    rel = np.zeros((1, 3))
    with pytest.raises(ValueError, match="k must be a positive integer. Got 0 instead."):
        hit_at_k(rel, 0)


@pytest.mark.parametrize("name", ["hit@0", "ndcg", "mrr@x", "ndgc@10", "bleu"])
def test_parse_metric_rejects_bad_names(name):
    with pytest.raises(ValueError):
        parse_metric(name)


def test_parse_metric_suggests_a_known_name():
    with pytest.raises(ValueError, match="did you mean 'ndcg@K'"):
        parse_metric("ndgc@10")


def test_every_default_metric_is_in_range_and_aligned():
    rng = np.random.default_rng(1)
    ranked = [[f"d{j}" for j in rng.permutation(30)[:10]] for _ in range(25)]
    qrels = [{f"d{j}": int(rng.integers(1, 4)) for j in rng.choice(30, 3, replace=False)} for _ in range(25)]
    data = relevance_data(ranked, qrels, depth=10)
    for name in default_metrics([1, 3, 10]):
        values = parse_metric(name).compute(data)
        assert values.shape == (25,)
        assert ((values >= 0) & (values <= 1)).all(), name


def _random_case(seed: int, n_q: int = 40, n_docs: int = 60, depth: int = 20):
    rng = np.random.default_rng(seed)
    run, qrels, ranked, labels = {}, {}, [], []
    for q in range(n_q):
        n_ret = int(rng.integers(0, depth + 1))
        docs = [f"d{j}" for j in rng.permutation(n_docs)[:n_ret]]
        # Distinct, decreasing scores: the order is unambiguous for both implementations.
        run[f"q{q:03d}"] = {d: float(depth - i) + 0.5 for i, d in enumerate(docs)} or {"d_none": 0.1}
        ranked.append(docs or ["d_none"])
        rel = {f"d{j}": int(rng.integers(1, 4)) for j in rng.choice(n_docs, int(rng.integers(1, 6)), replace=False)}
        qrels[f"q{q:03d}"] = rel
        labels.append(rel)
    return run, qrels, ranked, labels


@pytest.mark.slow  # ranx compiles its metrics with numba: 143 s on a fresh install, 16 s from numba's cache
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_ranx(seed):
    import ranx  # a dev dependency: its absence is a failure, never a skip

    run, qrels, ranked, labels = _random_case(seed)
    data = relevance_data(ranked, labels, depth=20)
    pairs = {
        "hit_rate@1": "hit@1",
        "hit_rate@5": "hit@5",
        "hit_rate@10": "hit@10",
        "mrr": "mrr",
        "mrr@5": "mrr@5",
        "map": "map",
        "ndcg@3": "ndcg@3",
        "ndcg@10": "ndcg@10",
        "precision@5": "precision@5",
        "precision@10": "precision@10",
        "recall@5": "recall@5",
        "recall@20": "recall@20",
    }
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), list(pairs), return_mean=False, make_comparable=True)
    for ranx_name, ours in pairs.items():
        np.testing.assert_allclose(parse_metric(ours).compute(data), theirs[ranx_name], atol=1e-9, err_msg=ours)
