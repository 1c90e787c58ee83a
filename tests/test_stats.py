"""Statistics: known answers, reproducibility, and the conventions of design §9."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from rag_eval.stats import (
    apply_holm,
    bootstrap_mean,
    compare_paired,
    detectable_difference,
    exact_interval,
    exact_share,
    holm,
    permutation_test,
    sign_test,
    wilson_interval,
)


def test_bootstrap_is_seeded_and_brackets_the_mean():
    x = np.random.default_rng(0).random(50)
    a = bootstrap_mean(x, seed=3)
    b = bootstrap_mean(x, seed=3)
    assert a == b
    assert a.ci_low < a.value < a.ci_high
    assert a.n == 50
    assert a.value == pytest.approx(x.mean())


def test_bootstrap_refuses_nan():
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_mean(np.array([1.0, np.nan]))


def test_bootstrap_of_all_hits_or_all_misses_is_never_zero_width():
    # Every resample of identical values has the same mean; a [0, 1] figure then gets the exact
    # interval of a proportion of n (checked against scipy's beta quantiles directly).
    e = bootstrap_mean(np.ones(10))
    assert (e.value, e.ci_high) == (1.0, 1.0)
    assert e.ci_low == pytest.approx(sps.beta.ppf(0.025, 10, 1)) == pytest.approx(0.025 ** (1 / 10))
    z = bootstrap_mean(np.zeros(6))
    assert (z.value, z.ci_low) == (0.0, 0.0)
    assert z.ci_high == pytest.approx(1 - 0.025 ** (1 / 6))  # 0.459, where the bootstrap said 0.0
    half = bootstrap_mean(np.full(8, 0.5))
    assert (half.ci_low, half.ci_high) == pytest.approx((sps.beta.ppf(0.025, 4, 5), sps.beta.ppf(0.975, 5, 4)))
    # Outside [0, 1] there is no bounded scale to appeal to: the bootstrap's own interval stays.
    c = bootstrap_mean(np.full(5, 2.0))
    assert (c.value, c.ci_low, c.ci_high) == (2.0, 2.0, 2.0)


def test_wilson_matches_the_formula():
    e = wilson_interval(8, 10)
    # Wilson 95% for 8/10 (z = 1.95996): [0.4902, 0.9433]
    assert e.ci_low == pytest.approx(0.4902, abs=1e-4)
    assert e.ci_high == pytest.approx(0.9433, abs=1e-4)
    assert wilson_interval(0, 0).value is None
    # None of n and all of n: the bound at the edge is exactly 0 and 1, not a rounding error (5.6e-17).
    for n in (1, 3, 7, 10, 41, 100):
        assert wilson_interval(0, n).ci_low == 0.0 and wilson_interval(n, n).ci_high == 1.0
        assert wilson_interval(0, n).ci_high == pytest.approx(1 - wilson_interval(n, n).ci_low)


def test_sign_test_ten_of_ten_discordant():
    a = np.array([1.0] * 10 + [1.0] * 5)
    b = np.array([0.0] * 10 + [1.0] * 5)
    wins, losses, ties, p = sign_test(a, b)
    assert (wins, losses, ties) == (10, 0, 5)
    assert p == pytest.approx(2 / 2**10)


def test_identical_systems_give_p_one_everywhere():
    x = np.random.default_rng(0).random(30)
    assert sign_test(x, x)[3] == 1.0
    assert permutation_test(x, x) == 1.0
    c = compare_paired(x, x, names=("a", "b"), metric="mrr", binary=False)
    apply_holm([c])
    assert c.p_holm == 1.0
    assert "no difference" in c.verdict


def test_a_difference_of_runs_that_agree_everywhere_is_bounded_on_both_sides():
    """Two runs with the same figure on every question: the difference is 0 with an interval
    symmetric about it, as wide as the exact bound on the share that could differ unseen (0 of n:
    1 - (alpha/2)^(1/n)), never the one-sided [0, u] of a proportion (the trial's H3: a `<=` gate
    then failed on an unchanged system). All +1 and all -1 keep to [-1, 1]."""
    from rag_eval.stats import paired_bootstrap_diff

    x = np.array([1, 0, 1, 1, 0, 1, 1, 1], dtype=float)
    u = 1 - 0.025 ** (1 / 8)
    est = paired_bootstrap_diff(x, x)
    assert (est.value, est.ci_low, est.ci_high, est.n) == (0.0, pytest.approx(-u), pytest.approx(u), 8)
    up = paired_bootstrap_diff(np.ones(8), np.zeros(8))
    assert (up.value, up.ci_low, up.ci_high) == (1.0, pytest.approx(1 - u), 1.0)
    down = paired_bootstrap_diff(np.zeros(8), np.ones(8))
    assert (down.value, down.ci_low, down.ci_high) == (-1.0, -1.0, pytest.approx(u - 1))
    # Differences that vary are the bootstrap's, as before.
    mixed = paired_bootstrap_diff(np.array([1.0, 0, 1, 0]), np.array([0.0, 0, 1, 1]))
    assert mixed.value == 0.0 and mixed.ci_low < 0 < mixed.ci_high


def test_exact_permutation_matches_enumeration():
    d = np.array([0.3, 0.1, -0.2, 0.4, 0.25, 0.0])
    p = permutation_test(d, np.zeros_like(d))
    # Exact: 5 non-zero differences, 32 sign patterns; count |sum| >= observed.
    nz = d[d != 0]
    count = 0
    for mask in range(32):
        signs = np.array([1 if mask >> i & 1 else -1 for i in range(5)])
        count += abs((signs * nz).sum()) >= abs(nz.sum()) - 1e-12
    assert p == pytest.approx(count / 32)


def test_sampled_permutation_has_plus_one_correction_and_is_seeded():
    rng = np.random.default_rng(5)
    a, b = rng.random(40), rng.random(40)
    p1 = permutation_test(a, b, n_resamples=999, seed=1)
    assert p1 == permutation_test(a, b, n_resamples=999, seed=1)
    assert p1 * 1000 == pytest.approx(round(p1 * 1000))
    # Agrees with scipy's own sign-flip permutation test to sampling error.
    ref = sps.permutation_test((a - b,), np.mean, permutation_type="samples", n_resamples=9999, random_state=0).pvalue
    assert p1 == pytest.approx(ref, abs=0.05)


def test_holm_known_values():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5]


def test_strong_winner_is_called_better():
    a = np.array([1.0] * 10 + [0.0] * 20)
    b = np.zeros(30)
    c = compare_paired(a, b, names=("strict", "baseline"), metric="hit@5", binary=True)
    apply_holm([c])
    assert c.p_value == pytest.approx(0.001953125)
    assert c.verdict.startswith("strict beats baseline on hit@5: better on 10, worse on 0, same on 20")


def test_loser_first_is_reported_from_the_winners_side():
    a = np.zeros(30)
    b = np.array([1.0] * 10 + [0.0] * 20)
    c = compare_paired(a, b, names=("x", "y"), metric="hit@5", binary=True)
    apply_holm([c])
    assert c.verdict.startswith("y beats x on hit@5: better on 10, worse on 0")


def test_unsettled_verdict_names_the_questions_needed():
    a = np.array([1.0] * 3 + [0.0] * 2 + [1.0] * 35)
    b = np.array([0.0] * 3 + [1.0] * 2 + [1.0] * 35)
    c = compare_paired(a, b, names=("a", "b"), metric="hit@5", binary=True)
    apply_holm([c])
    assert "not settled by 40 questions" in c.verdict
    assert "questions would detect a difference of 0.025" in c.verdict


def test_an_unsettled_verdict_never_says_fewer_questions_than_it_had_would_detect_it():
    """14 questions, enough for one test of this difference (13 needed), but Holm-corrected
    across three comparisons the difference is not settled: the verdict says why."""
    b = np.full(14, 0.5)
    d = np.array([0.4, -0.1, 0.3, 0.2, -0.2, 0.5, 0.1, 0.0, 0.3, 0.2, -0.1, 0.4, 0.1, 0.2])
    c = compare_paired(b + d / d.mean() * 0.05, b, names=("a", "b"), metric="correctness", binary=False)
    same = [compare_paired(b, b, names=("x", "y"), metric="m", binary=False) for _ in range(2)]
    apply_holm([c, *same])
    assert c.needed == 13 and c.p_value < 0.05 < c.p_holm
    assert "not settled by 14 questions" in c.verdict
    assert "questions would detect" not in c.verdict
    assert "before the Holm correction" in c.verdict and "not for all the comparisons together" in c.verdict


def test_a_detectable_difference_beyond_the_scores_range_is_none():
    """User trial 3 L3: "smallest detectable difference 1.401" on a score in [0, 1] (2 questions)."""
    c = compare_paired(
        np.array([1.0, 0.0]), np.array([0.0, 0.5]), names=("a", "b"), metric="faithfulness", binary=False
    )
    apply_holm([c])
    assert c.detectable is not None and c.detectable > 1
    assert "(smallest detectable difference none: too few questions for any difference" in c.verdict


def test_detectable_difference_formula():
    # (1.95996 + 0.84162) * 0.5 / sqrt(100)
    assert detectable_difference(0.5, 100) == pytest.approx(0.140079, abs=1e-5)
    assert math.isinf(detectable_difference(0.5, 0))


def test_weighted_share_equals_wilson_with_equal_weights_and_uses_effective_n():
    from rag_eval.stats import weighted_share

    hits = np.array([1, 0, 1, 1, 0], dtype=float)
    assert weighted_share(hits, np.ones(5)) == wilson_interval(3, 5)
    w = np.array([3.0, 3.0, 1.0, 1.0, 1.0])
    est = weighted_share(hits, w)
    assert est.value == pytest.approx((3 + 1 + 1) / 9)
    n_eff = w.sum() ** 2 / (w**2).sum()
    ref = wilson_interval(round(est.value * 1000), 1000)  # sanity: narrower with more items
    assert est.ci_high - est.ci_low > ref.ci_high - ref.ci_low
    z = 1.959963984540054
    p = est.value
    centre = (p + z * z / (2 * n_eff)) / (1 + z * z / n_eff)
    assert (est.ci_low + est.ci_high) / 2 == pytest.approx(centre)


def test_weighted_bootstrap_mean_equals_unweighted_with_equal_weights():
    x = np.random.default_rng(3).random(30)
    assert bootstrap_mean(x, weights=np.full(30, 2.0)) == bootstrap_mean(x)
    est = bootstrap_mean(np.array([0.0, 1.0]), weights=np.array([3.0, 1.0]))
    assert est.value == 0.25


def test_kappa_is_undefined_not_perfect_when_both_say_one_thing():
    import math

    from rag_eval.stats import bootstrap_kappa, cohen_kappa

    assert math.isnan(cohen_kappa(["a", "a"], ["a", "a"]))
    est = bootstrap_kappa(["a", "b", "a", "b"], ["a", "b", "a", "b"], n_resamples=500)
    # Perfect on 4 items: every resample is perfect too, and [1, 1] would be no interval (trial 4 F17).
    assert est.value == 1.0 and est.ci_low is None and est.ci_high is None
    # A judge that always says "a": resamples without a "b" label are undefined (left out), not
    # perfect agreement; every other resample gives kappa 0, so the whole interval is 0.
    est = bootstrap_kappa(["a", "a", "a", "a", "b"], ["a"] * 5, n_resamples=2000)
    assert est.value == 0.0 and est.ci_low == 0.0 and est.ci_high == 0.0


@pytest.mark.parametrize("n", range(1, 11))
def test_exact_interval_is_clopper_pearson_at_every_small_n(n):
    """Every k of n = 1..10 matches scipy's exact binomial interval; 0/n and n/n are not zero-width."""
    for k in range(n + 1):
        ci = sps.binomtest(k, n).proportion_ci(0.95, method="exact")
        assert exact_interval(k, n) == pytest.approx((ci.low, ci.high))
    assert exact_interval(0, n) == pytest.approx((0.0, 1 - 0.025 ** (1 / n)))
    assert exact_interval(n, n) == pytest.approx((0.025 ** (1 / n), 1.0))


def test_exact_share_under_weights_uses_the_effective_sample_size():
    hits = np.array([1, 0, 0, 0.0])
    assert exact_share(hits).ci_high == pytest.approx(exact_interval(1, 4)[1])
    w = np.array([3, 1, 1, 1.0])  # weighted share 0.5 on n_eff = 36 / 12 = 3
    est = exact_share(hits, w)
    assert est.value == 0.5 and est.n == 4
    assert (est.ci_low, est.ci_high) == pytest.approx(exact_interval(1.5, 3.0))
    assert exact_share(np.array([])).value is None


def test_newcombe_paired_interval_is_monotone_two_sided_and_covers():
    """findings-52 H2: the interval of a difference of paired 0/1 outcomes. Two runs that agree get
    one on both sides of 0; one question worse moves only its lower end down, one better only its
    upper end up (a bootstrap gave [-0.045, 0] to one worse and a wider [-0.054, 0.054] to none);
    it narrows with n; and its coverage, simulated on correlated pairs, is near 95%."""
    from rag_eval.stats import newcombe_paired_diff

    base = np.array([1.0] * 50 + [0.0] * 17)
    same = newcombe_paired_diff(base, base)
    assert same.value == 0 and same.ci_low == pytest.approx(-same.ci_high) and same.ci_high > 0
    worse, better = base.copy(), base.copy()
    worse[0], better[-1] = 0.0, 1.0
    w, b = newcombe_paired_diff(worse, base), newcombe_paired_diff(better, base)
    assert w.ci_low < same.ci_low and w.ci_high < same.ci_high and w.ci_low < 0 < w.ci_high
    assert b.ci_high > same.ci_high and b.ci_low > same.ci_low
    bigger = newcombe_paired_diff(np.tile(base, 3), np.tile(base, 3))
    assert 0 < bigger.ci_high < same.ci_high
    rng = np.random.default_rng(0)
    for pa, pb, shared in [(0.7, 0.7, 0.5), (0.8, 0.7, 0.3)]:
        covered = 0
        for _ in range(1000):
            u = rng.random(60)
            v = np.where(rng.random(60) < shared, u, rng.random(60))
            e = newcombe_paired_diff((u < pa).astype(float), (v < pb).astype(float))
            covered += e.ci_low <= pa - pb <= e.ci_high
        assert 0.92 <= covered / 1000 <= 0.99
    # compare_paired uses it for binary figures; a score keeps the bootstrap.
    c = compare_paired(worse, base, names=("new", "base"), metric="hit@1", binary=True)
    assert (c.ci_low, c.ci_high) == (pytest.approx(w.ci_low), pytest.approx(w.ci_high))
