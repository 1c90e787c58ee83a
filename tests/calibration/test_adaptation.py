"""Judges adapted to a corpus from a few labels (rag_eval/calibration/adaptation.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rag_eval.calibration.adaptation import (
    Decider,
    Item,
    adapt,
    answer_logodds,
    cross_fitted,
    cross_ppi_mean,
    fit_shift,
    fit_weights,
)
from rag_eval.calibration.lexical import Blend
from rag_eval.judges.uncertain import case_status
from rag_eval.labels.active import inclusion_probabilities, systematic_draw


def _sig(z):
    return 1 / (1 + np.exp(-np.asarray(z, float)))


def test_no_labels_keep_the_shipped_decider():
    shipped = Decider(Blend(-1.0, 2.0, {"w": 1.0}), 0.6, (0.5, 0.7))
    assert adapt(shipped, [Item((0.3,), ({"w": 0.0},))]) is shipped  # an unlabelled item teaches nothing


def test_the_shift_moves_little_with_a_few_labels_and_more_with_many():
    # The judge says 0.73 (log-odds 1) to answers that people call wrong half the time: the
    # corpus needs the scores moved down by 1.
    rng = np.random.default_rng(0)
    shifts = []
    for n in (5, 20, 200):
        z = np.ones(n)
        y = rng.random(n) < 0.5
        y[: n // 2], y[n // 2 :] = True, False
        shifts.append(fit_shift(z, y, prior_sd=1.0))
    assert all(s < 0 for s in shifts)
    assert abs(shifts[0]) < abs(shifts[1]) < abs(shifts[2])
    assert shifts[2] == pytest.approx(-1.0, abs=0.02)  # many labels: the data's -1
    # No prior: the maximum likelihood, the data's -1, even from a few labels.
    assert fit_shift(np.ones(4), np.array([1, 0, 1, 0], bool), prior_sd=1e6) == pytest.approx(-1.0, abs=1e-4)


def test_refitted_weights_without_a_prior_are_scikit_learns_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    n = 300
    p = _sig(rng.normal(size=n))
    f = rng.normal(size=n)
    y = rng.random(n) < _sig(0.5 + 1.2 * np.log(p / (1 - p)) - 0.8 * f)
    blend = fit_weights(Blend(0.0, 1.0, {"f": 0.0}), list(p), [{"f": float(v)} for v in f], list(y), prior_sd=1e4)
    ref = LogisticRegression(C=1e12, tol=1e-10, max_iter=10_000).fit(np.column_stack([np.log(p / (1 - p)), f]), y)
    assert blend.intercept == pytest.approx(float(ref.intercept_[0]), abs=1e-3)
    assert blend.model == pytest.approx(float(ref.coef_[0, 0]), abs=1e-3)
    assert blend.weights["f"] == pytest.approx(float(ref.coef_[0, 1]), abs=1e-3)
    # A strong prior keeps the shipped blend.
    held = fit_weights(Blend(0.2, 0.9, {"f": 0.3}), list(p), [{"f": float(v)} for v in f], list(y), prior_sd=1e-4)
    assert (held.intercept, held.model, held.weights["f"]) == pytest.approx((0.2, 0.9, 0.3), abs=1e-3)


@pytest.mark.parametrize("threshold", [1.0, 0.5, 0.75])
def test_a_statement_judges_decision_and_band_are_the_audits(threshold):
    """``Decider.decide`` on statements decides as ``uncertain.case_status`` does in an audit."""
    rng = np.random.default_rng(2)
    low, high, cut = 0.3, 0.6, 0.6
    d = Decider(None, cut, (low, high), threshold)
    for _ in range(500):
        ps = tuple(float(x) for x in rng.random(rng.integers(1, 6)))
        unsure, pos = d.decide(Item(ps))
        ref_unsure, ref_pos = case_status(list(ps), low, high, threshold)
        assert unsure == ref_unsure
        at_cut = np.mean(np.array(ps) >= cut) >= threshold
        assert pos == at_cut
        if not unsure:
            assert pos == ref_pos


def test_many_verdicts_are_decided_as_one_at_a_time():
    rng = np.random.default_rng(5)
    d = Decider(Blend(-0.5, 1.3, {"a": 0.7, "b": -1.1}), 0.45, (0.3, 0.6))
    p, a, b = rng.random(300), rng.random(300), rng.integers(0, 2, 300).astype(float)
    unsure, pos = d.decide_verdicts(p, {"a": a, "b": b})
    one = [d.decide(Item((float(p[i]),), ({"a": float(a[i]), "b": float(b[i])},))) for i in range(300)]
    assert unsure.tolist() == [u for u, _ in one] and pos.tolist() == [q for _, q in one]


def test_answer_logodds_of_a_verdict_is_its_probabilitys():
    assert answer_logodds([0.8], None) == pytest.approx(math.log(4))
    assert answer_logodds([0.9, 0.2, 0.6], 1.0) == pytest.approx(math.log(0.25))  # the lowest statement


def test_adapting_a_miscalibrated_judge_moves_its_cutoff_and_band_together():
    rng = np.random.default_rng(3)
    z = rng.normal(1.0, 1.0, 40)
    y = rng.random(40) < _sig(z - 1.5)  # the judge is 1.5 too high on this corpus
    shipped = Decider(None, 0.5, (0.4, 0.6))
    items = [Item((float(_sig(v)),), positive=bool(t)) for v, t in zip(z, y, strict=True)]
    a = adapt(shipped, items, "cutoff")
    assert a.cutoff > 0.6 and a.labels == 40 and a.how == "cutoff"
    width = lambda b: math.log(b[1] / (1 - b[1])) - math.log(b[0] / (1 - b[0]))  # noqa: E731
    assert width(a.band) == pytest.approx(width(shipped.band))
    assert Decider.from_dict(a.to_dict()).to_dict() == a.to_dict()
    # Accuracy on new answers of the same corpus rises.
    z2 = rng.normal(1.0, 1.0, 2000)
    y2 = rng.random(2000) < _sig(z2 - 1.5)
    new = [Item((float(_sig(v)),)) for v in z2]
    acc = lambda d: np.mean([d.decide(i)[1] == t for i, t in zip(new, y2, strict=True)])  # noqa: E731
    assert acc(a) > acc(shipped) + 0.05


def _coverage_run(seed: int, active: bool) -> bool:
    rng = np.random.default_rng(seed)
    big_n, n = 240, 30
    x = rng.normal(size=big_n)
    y = (rng.random(big_n) < _sig(1.5 * x + 0.3)).astype(float)
    z = x + 1.0 + rng.normal(0, 0.7, big_n)  # the judge's log-odds: shifted by a corpus effect
    shipped = Decider(None, 0.5, (0.4, 0.6))
    items = [Item((float(_sig(v)),)) for v in z]
    if active:
        u = 1 / (1 + np.exp(np.abs(z)))
        pi = inclusion_probabilities(np.sqrt(u), n)
        chosen = systematic_draw(pi, seed)
    else:
        pi = np.full(big_n, n / big_n)
        chosen = np.zeros(big_n, bool)
        chosen[rng.choice(big_n, n, replace=False)] = True
    lab = np.flatnonzero(chosen)
    unl = np.flatnonzero(~chosen)
    labelled = [Item(items[i].p_model, positive=bool(y[i])) for i in lab]
    deciders, fold = cross_fitted(shipped, labelled, "both", folds=5, seed=seed)
    # A decision as the figure counts it: the verdict at the cut-off (uncertain ones by leaning).
    h = np.array([float(deciders[f].decide(items[i])[1]) for i, f in zip(lab, fold, strict=True)])
    u_hat = np.column_stack([d.decide_verdicts(_sig(z[unl]))[1] for d in deciders]).astype(float)
    est = cross_ppi_mean(y[lab], h, u_hat, pi[lab])
    return est.ci_low <= y.mean() <= est.ci_high


@pytest.mark.parametrize("active", [False, True])
def test_cross_fitted_intervals_cover_the_truth(active):
    """300 seeded corpora whose truth is known: the cross-fitted prediction-powered interval of the
    share of positive answers covers the corpus' true share at least 93% of the time, though the
    same labels tuned the judge."""
    covered = sum(_coverage_run(seed, active) for seed in range(300))
    assert covered / 300 >= 0.93, covered


def test_cross_ppi_without_judge_error_is_the_judges_share():
    y = np.array([1, 0, 1, 1.0])
    est = cross_ppi_mean(y, y, np.array([1, 0, 0, 1, 1, 0.0]))
    assert est.value == pytest.approx(0.6)
    assert est.n_labels == 4 and est.n_unlabelled == 6


def test_the_default_priors_move_a_judge_little_even_against_every_label():
    # What the guide says: 30 labels all against a correctness judge move a 0.50 cut-off to about
    # 0.52 with the shipped priors; weaker priors move it past the answers' probability.
    shipped = Decider(None, 0.5, (0.4, 0.6), None)
    against = [Item((0.8,), ({},), False) for _ in range(30)]
    default = adapt(shipped, against, "cutoff", judge="correctness")
    assert 0.5 < default.cutoff < 0.53
    assert default.decide(Item((0.8,), ({},))) == (False, True)  # still decided positive
    weak = adapt(shipped, against, "cutoff", prior_cutoff=2.0)
    assert weak.cutoff > 0.8 and weak.decide(Item((0.8,), ({},)))[1] is False
