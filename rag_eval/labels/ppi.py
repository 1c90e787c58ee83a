"""Prediction-powered inference (Angelopoulos et al., Science 2023; PPI++, arXiv:2311.01453):
a judged mean corrected by the judge's error measured on a human-labelled subset, with an
interval that carries the judge's uncertainty. Plain functions over numpy arrays; the estimators
are ppi_py's.

Small samples and the boundary. ppi_py's intervals are normal (CLT) intervals with a plug-in
variance. From a handful of labels that variance is unreliable, and at the boundary it is zero:
six labels all "no" give the labels-only mean 0 with variance 0, and PPI++ tunes the judge's
weight to cov(label, judge) / var(judge) = 0, falling back to the same zero-width interval
(``0.00 [0.00, 0.00] n=6``, however uncertain the judge). So:

- the labels alone (binary labels, a share) get Clopper–Pearson's exact interval
  (:func:`rag_eval.stats.exact_interval`): never zero-width, and at least the nominal coverage at
  every n and every true share (n = 1 included), where Wald's undercovers badly near 0 and 1;
- a prediction-powered share keeps ppi_py's PPI++ point estimate and interval, widened to contain
  the labels' exact interval whenever the normal approximation is not to be trusted: fewer than
  ``SMALL_N`` labels, or fewer than ``MIN_EACH`` labels on either side (the classical "n p >= 5"
  condition; all labels one value is the extreme case). Widening can only raise coverage, so the
  figure never covers less than PPI++ does, and in those cases never less than the exact interval
  does (at least nominal). Above them, PPI++ alone, which is then narrower than the labels when the
  judge predicts them. A PPI++ score-type interval (the variance taken at each candidate share, as
  Wilson's) would also avoid the zero width, but with the judge's weight itself estimated from the
  same few labels it carries no guarantee at n = 1..10; the exact interval does.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy.stats import norm

from rag_eval.stats import exact_share

SMALL_N = 30  # fewer labels than this: a prediction-powered share is widened to the exact interval
MIN_EACH = 5  # fewer labels than this on either side (yes / no): the same


@dataclass
class PPIEstimate:
    """A figure from human labels and judge predictions together."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n_labels: int
    n_unlabelled: int
    # "ppi++" (power-tuned), "ppi", either with ", widened to the labels' exact interval" (few
    # labels, or few on one side), or "human only" (nothing left unlabelled, or one label)
    method: str

    def to_dict(self) -> dict:
        return asdict(self)


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


def ppi_mean(
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_unlabelled: np.ndarray,
    *,
    confidence: float = 0.95,
    w: np.ndarray | None = None,
    w_unlabelled: np.ndarray | None = None,
    power_tuned: bool = True,
    bounded: bool = True,
) -> PPIEstimate:
    """The mean of ``y`` (human labels) over labelled and unlabelled items, from the labels ``y``
    and the judge's ``yhat`` on the labelled items and ``yhat_unlabelled`` on the rest.

    ``power_tuned`` (PPI++) weighs the judge by how well it predicts the labels, so the interval is
    never wider than the labels alone give (asymptotically); ``bounded`` clips to [0, 1]."""
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate  # noqa: PLC0415

    y, yhat, yu = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabelled))
    n, big_n = len(y), len(yu)
    if n == 0:
        return PPIEstimate(None, None, None, 0, big_n, "no labels")
    labels_only = human_mean(y, confidence=confidence, w=w, bounded=bounded)
    if big_n == 0 or n < 2:  # nothing to predict, or no variance to estimate: the labels alone
        return replace(labels_only, n_unlabelled=big_n)
    alpha = 1 - confidence
    for lam, name in ([(None, "ppi++")] if power_tuned else []) + [(1.0, "ppi")]:
        method = name
        # The power-tuning weight is 0/0 when the judge's predictions do not vary; plain PPI then.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            value = float(np.ravel(ppi_mean_pointestimate(y, yhat, yu, lam=lam, w=w, w_unlabeled=w_unlabelled))[0])
            lo, hi = ppi_mean_ci(y, yhat, yu, alpha=alpha, lam=lam, w=w, w_unlabeled=w_unlabelled)
        if np.isfinite([value, np.ravel(lo)[0], np.ravel(hi)[0]]).all():
            break
    lo, hi = float(np.ravel(lo)[0]), float(np.ravel(hi)[0])
    if bounded:
        value, lo, hi = _clip(value), _clip(lo), _clip(hi)
    est = PPIEstimate(value, lo, hi, n, big_n, method)
    return at_least_exact(est, y, labels_only, w=w) if bounded else est


def _binary(y: np.ndarray) -> bool:
    return bool(len(y)) and bool(np.isin(y, (0.0, 1.0)).all())


def needs_exact(y: np.ndarray, w: np.ndarray | None = None) -> bool:
    """The normal approximation is not to be trusted for a share from these binary labels: fewer
    than ``SMALL_N`` of them, or fewer than ``MIN_EACH`` (weighted, on the effective sample size)
    on either side."""
    y = np.asarray(y, dtype=float)
    if len(y) < SMALL_N:
        return True
    if w is None or np.ptp(np.asarray(w, float)) == 0:
        yes, n_eff = float(y.sum()), float(len(y))
    else:
        w = np.asarray(w, dtype=float)
        n_eff = float(w.sum() ** 2 / (w**2).sum())
        yes = float((y * w).sum() / w.sum()) * n_eff
    return min(yes, n_eff - yes) < MIN_EACH


def at_least_exact(
    est: PPIEstimate, y: np.ndarray, labels_only: PPIEstimate, *, w: np.ndarray | None = None
) -> PPIEstimate:
    """A prediction-powered share, its interval widened to contain the labels' exact interval when
    :func:`needs_exact` (the module's docstring says why); other figures (a score) unchanged. Only
    for shares: a caller with a difference (unbounded) does not call it."""
    y = np.asarray(y, dtype=float)
    if not _binary(y) or labels_only.ci_low is None or labels_only.ci_high is None:
        return est
    if est.value is None or not needs_exact(y, w):
        return est
    lo = labels_only.ci_low if est.ci_low is None else min(est.ci_low, labels_only.ci_low)
    hi = labels_only.ci_high if est.ci_high is None else max(est.ci_high, labels_only.ci_high)
    if (lo, hi) == (est.ci_low, est.ci_high):
        return est
    return replace(est, ci_low=lo, ci_high=hi, method=f"{est.method}, widened to the labels' exact interval")


def human_mean(
    y: np.ndarray, *, confidence: float = 0.95, w: np.ndarray | None = None, bounded: bool = True
) -> PPIEstimate:
    """The labels alone: their (weighted) mean. A share (binary labels, ``bounded``) gets
    Clopper–Pearson's exact interval (on Kish's effective sample size under weights), so 0/n and
    n/n are never zero-width and one label has an interval; anything else (a difference of labels,
    a score) a CLT interval, and none from one value."""
    from ppi_py import classical_mean_ci  # noqa: PLC0415

    y = np.asarray(y, dtype=float)
    if bounded and _binary(y):
        e = exact_share(y, w, confidence=confidence)
        return PPIEstimate(e.value, e.ci_low, e.ci_high, len(y), 0, "human only")
    if len(y) < 2:
        return PPIEstimate(float(y.mean()) if len(y) else None, None, None, len(y), 0, "human only")
    lo, hi = classical_mean_ci(y, w=w, alpha=1 - confidence)
    value, lo, hi = float(np.average(y, weights=w)), float(np.ravel(lo)[0]), float(np.ravel(hi)[0])
    if bounded:
        value, lo, hi = _clip(value), _clip(lo), _clip(hi)
    return PPIEstimate(value, lo, hi, len(y), 0, "human only")


def labels_needed(agreement: float, half_width: float, confidence: float = 0.95) -> int:
    """Labels for a PPI interval of about ``±half_width`` on a share, with a judge that agrees with
    people on ``agreement`` of binary decisions and many unlabelled items: the variance of
    (label − judge) is at most the disagreement rate, so n ≈ z² (1 − agreement) / half_width²."""
    z = norm.ppf(1 - (1 - confidence) / 2)
    disagreement = min(max(1 - agreement, 0.0), 1.0)
    # A perfect judge still needs a few labels to show it is one.
    return max(10, math.ceil(z * z * max(disagreement, 0.01) / half_width**2))
