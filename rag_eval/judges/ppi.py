"""Prediction-powered inference (Angelopoulos et al., Science 2023; PPI++, arXiv:2311.01453):
a judged mean corrected by the judge's error measured on a human-labelled subset, with an
interval that carries the judge's uncertainty. Plain functions over numpy arrays; the estimators
are ppi_py's."""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import norm


@dataclass
class PPIEstimate:
    """A figure from human labels and judge predictions together."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n_labels: int
    n_unlabelled: int
    method: str  # "ppi++" (power-tuned), "ppi", or "human only" (nothing left unlabelled)

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
    from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate  # noqa: PLC0415

    y, yhat, yu = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabelled))
    n, big_n = len(y), len(yu)
    if n == 0:
        return PPIEstimate(None, None, None, 0, big_n, "no labels")
    alpha = 1 - confidence
    if big_n == 0 or n < 2:
        if n < 2:
            return PPIEstimate(float(np.average(y, weights=w)), None, None, n, big_n, "human only")
        lo, hi = classical_mean_ci(y, w=w, alpha=alpha)
        value, method = float(np.average(y, weights=w)), "human only"
    else:
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
    return PPIEstimate(value, lo, hi, n, big_n, method)


def human_mean(
    y: np.ndarray, *, confidence: float = 0.95, w: np.ndarray | None = None, bounded: bool = True
) -> PPIEstimate:
    """The labels alone: their (weighted) mean with a CLT interval; ``bounded`` clips to [0, 1]."""
    from ppi_py import classical_mean_ci  # noqa: PLC0415

    y = np.asarray(y, dtype=float)
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
