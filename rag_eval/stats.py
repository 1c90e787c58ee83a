"""Statistics over per-question arrays: intervals, paired tests, multiple-comparison correction.

Conventions: every random procedure takes a seed and builds its own ``numpy.random.Generator``
(numpy's global state is never touched); percentile bootstrap intervals; Wilson intervals for
proportions over questions; Clopper–Pearson exact intervals for proportions from a handful of
human labels (never zero-width at 0/n or n/n, at least the nominal coverage at every n); exact
two-sided sign test with ties dropped (for paired binary outcomes this is the exact McNemar test);
permutation p-values with the +1 correction (exact enumeration when there are at most 16 non-zero
differences); Holm's step-down correction across comparisons.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats as sps

EXACT_PERMUTATION_MAX = 16


@dataclass(frozen=True)
class Estimate:
    """A figure with its interval and the number of questions behind it."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int

    def to_dict(self) -> dict:
        return asdict(self)


def bootstrap_mean(
    values: np.ndarray,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    weights: np.ndarray | None = None,
) -> Estimate:
    """Mean with a percentile bootstrap interval; NaN never enters (it is an error to pass one).
    Where every value is the same and lies in [0, 1] (all misses, all hits), the interval is the
    exact one of a proportion of n, never zero-width.

    ``weights`` (sampling weights, e.g. stratum size over stratum sample size) give the weighted
    mean, resampled the same way; equal weights give exactly the unweighted figures.
    """
    values = np.asarray(values, dtype=float)
    if np.isnan(values).any():
        raise ValueError("bootstrap_mean got NaN values; drop not-judged items before aggregating")
    n = len(values)
    if n == 0:
        return Estimate(None, None, None, 0)
    w = None if weights is None or np.ptp(np.asarray(weights, float)) == 0 else np.asarray(weights, float)
    rng = np.random.default_rng(seed)
    block = max(1, 4_000_000 // n)  # bounds memory for large test sets
    draws = []
    for start in range(0, n_resamples, block):
        idx = rng.integers(0, n, size=(min(block, n_resamples - start), n))
        draws.append(values[idx].mean(axis=1) if w is None else (values[idx] * w[idx]).sum(1) / w[idx].sum(1))
    means = np.concatenate(draws)
    lo, hi = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    point = values.mean() if w is None else (values * w).sum() / w.sum()
    if hi - lo <= 1e-12 and values.min() >= 0.0 and values.max() <= 1.0:
        # Identical values resample to one mean: the percentile interval has zero width, as if n
        # values settled the figure. A mean of values in [0, 1] then gets the exact interval of a
        # proportion of its size (a 0/1 variable spreads the most a [0, 1] one can).
        n_eff = float(n) if w is None else float(w.sum() ** 2 / (w**2).sum())
        lo, hi = exact_interval(float(point) * n_eff, n_eff, confidence=confidence)
    return Estimate(float(point), float(lo), float(hi), n)


def weighted_share(hits: np.ndarray, weights: np.ndarray | None = None, *, confidence: float = 0.95) -> Estimate:
    """A proportion under sampling weights: the weighted share with a Wilson interval on Kish's
    effective sample size (sum w)^2 / sum w^2. Equal weights give exactly :func:`wilson_interval`."""
    hits = np.asarray(hits, dtype=float)
    n = len(hits)
    if weights is None or n == 0 or np.ptp(np.asarray(weights, float)) == 0:
        return wilson_interval(int(hits.sum()), n, confidence=confidence)
    w = np.asarray(weights, dtype=float)
    p = float((hits * w).sum() / w.sum())
    n_eff = float(w.sum() ** 2 / (w**2).sum())
    est = _wilson(p, n_eff, confidence)
    return Estimate(p, est[0], est[1], n)


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> Estimate:
    """A proportion with its Wilson score interval."""
    if n == 0:
        return Estimate(None, None, None, 0)
    p = successes / n
    lo, hi = _wilson(p, n, confidence)
    return Estimate(p, lo, hi, n)


def exact_interval(successes: float, n: float, *, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper–Pearson's exact interval for a proportion from ``successes`` of ``n``: the beta
    quantiles (scipy's), which is what inverting two one-sided binomial tests gives. Real-valued
    counts are allowed (a weighted share on an effective sample size). 0/n gives
    ``[0, 1 - (alpha/2)^(1/n)]``, n/n its mirror; never zero-width."""
    alpha = 1 - confidence
    lo = 0.0 if successes <= 0 else float(sps.beta.ppf(alpha / 2, successes, n - successes + 1))
    hi = 1.0 if successes >= n else float(sps.beta.ppf(1 - alpha / 2, successes + 1, n - successes))
    return lo, hi


def exact_share(hits: np.ndarray, weights: np.ndarray | None = None, *, confidence: float = 0.95) -> Estimate:
    """A proportion of binary ``hits`` with its Clopper–Pearson interval; under sampling weights,
    the weighted share on Kish's effective sample size (sum w)^2 / sum w^2 (equal weights give the
    plain count)."""
    hits = np.asarray(hits, dtype=float)
    n = len(hits)
    if n == 0:
        return Estimate(None, None, None, 0)
    if weights is None or np.ptp(np.asarray(weights, float)) == 0:
        p, n_eff = float(hits.mean()), float(n)
    else:
        w = np.asarray(weights, dtype=float)
        p, n_eff = float((hits * w).sum() / w.sum()), float(w.sum() ** 2 / (w**2).sum())
    lo, hi = exact_interval(p * n_eff, n_eff, confidence=confidence)
    return Estimate(p, lo, hi, n)


def _wilson(p: float, n: float, confidence: float) -> tuple[float, float]:
    z = sps.norm.ppf((1 + confidence) / 2)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At p = 0 (or 1) the bound is exactly 0 (or 1); the subtraction leaves a rounding error (5.6e-17).
    lo = 0.0 if p <= 0 else max(0.0, centre - half)
    hi = 1.0 if p >= 1 else min(1.0, centre + half)
    return lo, hi


def sign_test(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int, float]:
    """Wins of a over b, losses, ties, and the exact two-sided sign-test p-value (ties dropped)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    ties = len(d) - wins - losses
    if wins + losses == 0:
        return wins, losses, ties, 1.0
    return wins, losses, ties, float(sps.binomtest(wins, wins + losses, 0.5).pvalue)


def permutation_test(a: np.ndarray, b: np.ndarray, *, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided paired permutation (sign-flip) test of the mean difference."""
    d = np.asarray(a, float) - np.asarray(b, float)
    nz = d[d != 0]
    if len(nz) == 0:
        return 1.0
    observed = abs(nz.sum())
    tol = 1e-12 * max(1.0, observed)
    if len(nz) <= EXACT_PERMUTATION_MAX:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(nz))))
        return float((np.abs(signs @ nz) >= observed - tol).mean())
    rng = np.random.default_rng(seed)
    signs = rng.choice((1.0, -1.0), size=(n_resamples, len(nz)))
    extreme = int((np.abs(signs @ nz) >= observed - tol).sum())
    return (extreme + 1) / (n_resamples + 1)


def paired_bootstrap_diff(
    a: np.ndarray, b: np.ndarray, *, n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> Estimate:
    """Mean of a - b with a percentile bootstrap interval, resampling questions. Where every
    question's difference is the same d in [-1, 1] (two runs that agree everywhere: d = 0), the
    bootstrap has nothing to resample; the interval is then d widened on both sides by the exact
    bound on the share of questions that could differ unseen, 1 - (alpha/2)^(1/n) (clipped to
    [-1, 1]): never zero-width, and never one that rules out either direction for no reason."""
    d = np.asarray(a, float) - np.asarray(b, float)
    if len(d) and not np.isnan(d).any() and np.ptp(d) == 0 and -1.0 <= d[0] <= 1.0:
        u = exact_interval(0, len(d), confidence=confidence)[1]
        return Estimate(float(d[0]), max(-1.0, float(d[0]) - u), min(1.0, float(d[0]) + u), len(d))
    return bootstrap_mean(d, n_resamples=n_resamples, confidence=confidence, seed=seed)


def newcombe_paired_diff(a: np.ndarray, b: np.ndarray, *, confidence: float = 0.95) -> Estimate:
    """Mean of a - b for paired 0/1 outcomes with Newcombe's hybrid score interval for a difference
    of paired proportions (Newcombe 1998, Statistics in Medicine 17:2635, method 10): each margin's
    Wilson interval, combined with the correlation of the pairs. Unlike a bootstrap of the
    differences it does not collapse when few pairs differ, and it moves monotonically with them:
    two runs that agree everywhere get an interval on both sides of 0 that narrows as n grows, and one
    question worse only moves it down."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    n = len(a)
    if n == 0:
        return Estimate(None, None, None, 0)
    both = float(np.sum((a == 1) & (b == 1)))
    only_a = float(np.sum((a == 1) & (b == 0)))
    only_b = float(np.sum((a == 0) & (b == 1)))
    neither = n - both - only_a - only_b
    p1, p2 = (both + only_a) / n, (both + only_b) / n
    l1, u1 = _wilson(p1, n, confidence)
    l2, u2 = _wilson(p2, n, confidence)
    denominator = (both + only_a) * (neither + only_b) * (both + only_b) * (neither + only_a)
    phi = 0.0 if denominator == 0 else (both * neither - only_a * only_b) / math.sqrt(denominator)
    theta = p1 - p2
    low = theta - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = theta + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return Estimate(theta, max(-1.0, low), min(1.0, high), n)


def holm(p_values: list[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input order."""
    m = len(p_values)
    order = np.argsort(p_values, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return [float(x) for x in adjusted]


def detectable_difference(sd_diff: float, n: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest mean paired difference a two-sided test at ``alpha`` detects with ``power``."""
    if n == 0:
        return math.inf
    return (sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)) * sd_diff / math.sqrt(n)


def questions_needed(sd_diff: float, diff: float, *, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Questions a paired test needs to detect ``diff`` with ``power``; None when diff is 0."""
    if diff == 0 or sd_diff == 0:
        return None
    return math.ceil(((sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)) * sd_diff / abs(diff)) ** 2)


@dataclass
class Comparison:
    """A paired comparison of two systems on one metric, question by question."""

    a: str
    b: str
    metric: str
    wins: int
    losses: int
    ties: int
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    test: str
    p_sign: float
    p_permutation: float
    detectable: float | None
    p_holm: float = 1.0
    needed: int | None = None
    verdict: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def compare_paired(
    a: np.ndarray,
    b: np.ndarray,
    *,
    names: tuple[str, str],
    metric: str,
    binary: bool,
    n_resamples: int = 10_000,
    bootstrap_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    alpha: float = 0.05,
) -> Comparison:
    """Sign test, permutation test (``n_resamples``) and the interval of a - b: Newcombe's for 0/1
    outcomes (``newcombe_paired_diff``), a bootstrap (``bootstrap_resamples``) otherwise. The p-value
    reported is the sign test's (exact McNemar) for binary outcomes and the permutation test's
    otherwise."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    wins, losses, ties, p_sign = sign_test(a, b)
    p_perm = permutation_test(a, b, n_resamples=n_resamples, seed=seed)
    binary_values = binary and bool(np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all())
    diff = (
        newcombe_paired_diff(a, b, confidence=confidence)
        if binary_values
        else paired_bootstrap_diff(a, b, n_resamples=bootstrap_resamples, confidence=confidence, seed=seed)
    )
    detectable, needed = _power_figures(a, b, binary=binary, diff=diff.value or 0.0, alpha=alpha)
    return Comparison(
        names[0],
        names[1],
        metric,
        wins,
        losses,
        ties,
        diff.value or 0.0,
        diff.ci_low or 0.0,
        diff.ci_high or 0.0,
        p_sign if binary else p_perm,
        "sign" if binary else "permutation",
        p_sign,
        p_perm,
        detectable,
        needed=needed,
    )


def apply_holm(comparisons: list[Comparison], *, alpha: float = 0.05) -> None:
    """Fill p_holm and the verdict of every comparison, correcting across all of them."""
    for c, p in zip(comparisons, holm([c.p_value for c in comparisons])):
        c.p_holm = p
        c.verdict = verdict(c, alpha=alpha)


def format_p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}" if p < 0.01 else f"p = {p:.2f}"


def verdict(c: Comparison, *, alpha: float = 0.05) -> str:
    """The comparison in words, e.g. "better on 15, worse on 8, same on 17; p = 0.21: not settled ..."."""
    n = c.wins + c.losses + c.ties
    counts = f"better on {c.wins}, worse on {c.losses}, same on {c.ties}; {format_p(c.p_holm)}"
    if c.wins == 0 and c.losses == 0:
        bound = f" seen; {n} questions bound one unseen to ±{c.ci_high:.3f}" if c.ci_high is not None and n else ""
        return f"{c.a} and {c.b} agree on all {n} questions ({c.metric}): no difference{bound}"
    if c.p_holm < alpha and c.diff != 0:
        if c.diff > 0:
            return f"{c.a} beats {c.b} on {c.metric}: {counts}"
        flipped = f"better on {c.losses}, worse on {c.wins}, same on {c.ties}; {format_p(c.p_holm)}"
        return f"{c.b} beats {c.a} on {c.metric}: {flipped}"
    tail = f"; about {c.needed} questions would detect a difference of {abs(c.diff):.3f}" if c.needed else ""
    if c.needed and c.needed <= n:  # enough questions for one test of this difference, yet not settled
        if c.p_holm is not None and c.p_value is not None and c.p_holm > c.p_value:
            tail = (
                f"; alone it would be settled (p = {c.p_value:.3f} before the Holm correction): {n} questions give 80% "
                f"power for one test of {abs(c.diff):.3f}, not for all the comparisons together"
            )
        else:
            tail = (
                f"; {n} questions would usually (80% power) settle a true difference of {abs(c.diff):.3f}: the "
                "true difference is likely smaller than observed"
            )
    # Every figure compared lies in [0, 1]: a difference over 1 cannot happen, so none is detectable.
    shown = (
        f"{c.detectable:.3f}"
        if c.detectable is not None and c.detectable <= 1
        else "none: too few questions for any difference"
    )
    return (
        f"{c.a} vs {c.b} on {c.metric}: {counts}: not settled by {n} questions "
        f"(smallest detectable difference {shown}{tail})"
    )


def _power_figures(
    a: np.ndarray, b: np.ndarray, *, binary: bool, diff: float, alpha: float
) -> tuple[float | None, int | None]:
    """(smallest detectable difference at 80% power, questions needed to detect ``diff``).

    Binary outcomes use the exact power of the sign test with the observed share of discordant
    questions (or, when none differ, that of independent errors); scores use the normal
    approximation with the observed standard deviation of the differences.
    """
    n = len(a)
    if binary:
        rate = float((a.mean() + b.mean()) / 2) if n else 0.0
        psi = float((a != b).mean()) if n and (a != b).any() else independent_discordance(rate)
        detectable = detectable_hit_difference(n, rate, alpha=alpha, discordance=psi) if psi > 0 else None
        needed = (
            questions_for_hit_difference(abs(diff), rate, alpha=alpha, discordance=psi)
            if diff and psi > 0 and abs(diff) <= psi
            else None
        )
        return detectable, needed
    d = a - b
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    if sd == 0:  # nothing differed: assume independent outcomes for a conservative figure
        sd = float(math.sqrt(a.var() + b.var())) or 0.5
    return detectable_difference(sd, n, alpha=alpha), questions_needed(sd, diff, alpha=alpha)


def sign_test_power(n: int, discordance: float, diff: float, *, alpha: float = 0.05) -> float:
    """Exact power of the two-sided sign (McNemar) test on ``n`` paired binary outcomes.

    Model: each question is discordant with probability ``discordance``; a discordant question
    favours the better system with probability 1/2 + diff / (2 * discordance), so the two
    systems' success rates differ by ``diff``.
    """
    if n == 0 or discordance <= 0 or diff <= 0:
        return 0.0
    pi = min(1.0, 0.5 + diff / (2 * discordance))
    d = np.arange(n + 1)
    # Largest c with P(W <= c | D, 1/2) <= alpha/2: reject when min(W, D - W) <= c.
    c = sps.binom.ppf(alpha / 2, d, 0.5)
    c = np.where(sps.binom.cdf(c, d, 0.5) > alpha / 2, c - 1, c)
    reject = np.where(c >= 0, sps.binom.cdf(c, d, pi) + sps.binom.sf(d - c - 1, d, pi), 0.0)
    return float((sps.binom.pmf(d, n, discordance) * reject).sum())


def independent_discordance(hit_rate: float) -> float:
    """Chance that two systems with this hit rate disagree on a question if they err independently."""
    return 2 * hit_rate * (1 - hit_rate)


def detectable_hit_difference(
    n: int, hit_rate: float, *, alpha: float = 0.05, power: float = 0.8, discordance: float | None = None
) -> float | None:
    """Smallest difference in a hit rate that a paired sign test on ``n`` questions detects with
    ``power``; None when no difference up to the discordance is detectable.

    The discordance (share of questions the two systems disagree on) defaults to that of two
    systems at ``hit_rate`` that err independently.
    """
    psi = discordance if discordance is not None else independent_discordance(hit_rate)
    if psi <= 0 or sign_test_power(n, psi, psi, alpha=alpha) < power:
        return None
    lo, hi = 0.0, psi
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if sign_test_power(n, psi, mid, alpha=alpha) >= power else (mid, hi)
    return hi


def questions_for_hit_difference(
    diff: float,
    hit_rate: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    discordance: float | None = None,
    limit: int = 1_000_000,
) -> int | None:
    """Fewest questions for which a paired sign test detects ``diff`` in a hit rate with ``power``."""
    psi = discordance if discordance is not None else independent_discordance(hit_rate)
    if psi <= 0 or diff <= 0 or diff > psi:
        return None
    # Start from the normal approximation (Connor 1987), then search the exact power around it.
    z_a, z_b = sps.norm.ppf(1 - alpha / 2), sps.norm.ppf(power)
    guess = max(2, int(((z_a * math.sqrt(psi) + z_b * math.sqrt(psi - diff**2)) / diff) ** 2))
    lo, hi = max(1, guess // 2), min(limit, guess * 2 + 10)
    while sign_test_power(hi, psi, diff, alpha=alpha) < power and hi < limit:
        lo, hi = hi, min(limit, hi * 2)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if sign_test_power(mid, psi, diff, alpha=alpha) >= power else (mid + 1, hi)
    return lo


def cohen_kappa(labels: list, predictions: list) -> float:
    """Cohen's kappa: agreement beyond chance between two labellings of the same items.

    NaN when chance agreement is 1 (both labellings use one and the same class): kappa is
    undefined there, and calling it perfect agreement would flatter a judge that says one thing.
    """
    if not labels:
        return float("nan")
    cats = sorted(set(labels) | set(predictions))
    n = len(labels)
    po = sum(a == b for a, b in zip(labels, predictions)) / n
    pe = sum((labels.count(c) / n) * (predictions.count(c) / n) for c in cats)
    return float("nan") if pe >= 1 - 1e-12 else (po - pe) / (1 - pe)


def bootstrap_kappa(
    labels: list, predictions: list, *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> Estimate:
    """Cohen's kappa with a percentile bootstrap interval over items."""
    n = len(labels)
    if n == 0:
        return Estimate(None, None, None, 0)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_resamples):
        idx = rng.integers(0, n, n)
        k = cohen_kappa([labels[i] for i in idx], [predictions[i] for i in idx])
        if not math.isnan(k):
            draws.append(k)
    if not draws:
        return Estimate(None, None, None, n)
    lo, hi = np.quantile(draws, [(1 - confidence) / 2, (1 + confidence) / 2])
    k = cohen_kappa(labels, predictions)
    if hi - lo <= 1e-12 and k == 1.0 and n < 30:
        # Every resample of a few items agreed perfectly: [1, 1] would claim a certainty so few items
        # cannot give, so none is given (with many, the bootstrap's bound stands). (A judge saying one thing has kappa 0
        # on every resample by construction: that interval stands.)
        return Estimate(k, None, None, n)
    return Estimate(None if math.isnan(k) else k, float(lo), float(hi), n)
