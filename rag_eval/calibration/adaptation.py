"""Judges adapted to the user's own documents from a few of their labels (issue 41).

A shipped judge decides from the model's probability blended with word evidence
(``lexical.Blend``), a cut-off and a band of uncertain decisions, all fitted on other corpora. On a
new corpus its errors move: the same blend may rate every answer of that corpus too high, or lean
on a word feature that means less there. A few labels of the corpus' own answers move it back,
with the shipped calibration as the prior, so that a few labels move it a little and many more:

- ``cutoff`` (a): the decision's log-odds shifted by ``delta``, the maximum a posteriori of a
  logistic model ``P(label) = sigmoid(z - t + delta)`` on the labelled answers' blended log-odds
  ``z`` around the shipped cut-off's ``t`` (even odds at the cut-off: a cut-off fitted for balanced
  accuracy is where the classes separate) with a normal prior ``delta ~ N(0, prior_cutoff**2)``;
  the cut-off and the band's edges move by ``-delta`` in log-odds (the band keeps its shipped
  width: a width that reaches 0.90 cannot be measured on 30 labels);
- ``weights`` (b): the blend's intercept and weights refitted by penalised logistic regression
  whose penalty pulls them to the shipped ones (``|theta - theta_shipped|**2 / (2 prior_weights**2)``);
  the cut-off and band stay the shipped ones on the refitted scale;
- ``both``: (b), then (a) on its scale.

A statement judge (faithfulness) decides an answer from its statements' probabilities: the answer
is positive when the share of statements at or above the cut-off reaches the threshold, so its
log-odds ``z`` here is that order statistic (the lowest statement at threshold 1.0); each statement
takes its answer's label where weights are refitted, as the shipped blend was fitted.

Plain functions over the records' numbers: no model call (the judgements keep the model's
probability and word evidence of every decision, so a run is re-decided from its files).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from rag_eval.base_records import Model, Num, required
from rag_eval.calibration.lexical import Blend
from rag_eval.judges.registry import JUDGES

HOW = ("cutoff", "weights", "both")
# Prior standard deviations, in log-odds: (cut-off shift, blend weights) per judge, chosen on the
# earlier corpora of benchmarks/real_answers/data before the blind part was measured
# (``python benchmarks/adapted_judges/adapted_judges.py choose``; docs/validation/adapted-judges.md).
# On the corpora measured so far (tenacity, tabulate, python-dotenv, tinytag) no prior that lets 10-30
# labels move a judge did better than the shipped judge on the corpus' other answers: the best were
# the strongest of the grid, so by default labels move the judges very little (30 labels all against
# a correctness judge move a 0.50 cut-off to about 0.52); weaker priors can be given per call.
PRIOR_CUTOFF = 1.0
PRIOR_WEIGHTS = 0.5
PRIORS: dict[str, tuple[float, float]] = {
    "refusal": (0.05, 0.02),
    "correctness": (0.05, 0.02),
    "faithfulness_yesno": (0.1, 0.02),
}


@dataclass(frozen=True)
class Priors:
    """How strongly an adaptation keeps the shipped cut-off and blend weights (normal priors' sd)."""

    prior_cutoff: float
    prior_weights: float


def priors_for(judge: str | None) -> Priors:
    """The prior strengths of one judge (a prompt variant's judge), else the defaults."""
    pc, pw = PRIORS.get(judge or "", (PRIOR_CUTOFF, PRIOR_WEIGHTS))
    return Priors(pc, pw)


def _logit(p: float) -> float:
    p = min(max(float(p), 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@dataclass(frozen=True)
class Item:
    """One answer as a judge decides it: the model's probability of the positive verdict per
    decision (one for a verdict judge, one per statement), the word evidence of each (empty where
    the judge has no blend), and the person's label where there is one."""

    p_model: tuple[float, ...]
    features: tuple[dict[str, float], ...] = ()
    positive: bool | None = None

    def __post_init__(self) -> None:
        if not self.features:
            object.__setattr__(self, "features", tuple({} for _ in self.p_model))


class Decider(BaseModel):
    """How one judge (one prompt variant) decides: the blend (None: the model's own probability),
    the cut-off, the band of uncertain decisions (None: none), and for a statement judge the share
    of statements that makes an answer positive. Pydantic (frozen): saved with the adaptations
    (``to_dict``/``from_dict``)."""

    model_config = ConfigDict(frozen=True)

    blend: Blend | None
    cutoff: float
    band: tuple[float, float] | None = None
    threshold: Num | None = None  # a statement judge's share (an int stays one); None: a verdict judge
    labels: int = 0  # labels this decider was adapted with (0: as shipped)
    how: str = "shipped"
    shift: float = 0.0  # (a)'s log-odds shift
    notes: dict = Field(default_factory=dict)
    aim: float | None = None  # a criterion's: how sure of a decision its band's edges are (None: not a criterion)
    method: int | None = None  # a criterion's: the CRITERION_METHOD that fitted it (None: not a criterion)

    def __init__(
        self,
        blend: Blend | None,
        cutoff: float,
        band: tuple[float, float] | None = None,
        threshold: Num | None = None,
        labels: int = 0,
        how: str = "shipped",
        shift: float = 0.0,
        notes: dict | None = None,
        aim: float | None = None,
        method: int | None = None,
    ) -> None:
        super().__init__(
            blend=blend,
            cutoff=cutoff,
            band=band,
            threshold=threshold,
            labels=labels,
            how=how,
            shift=shift,
            notes={} if notes is None else notes,
            aim=aim,
            method=method,
        )

    def probs(self, item: Item) -> list[float]:
        """The decided probability of each decision of ``item``."""
        if self.blend is None:
            return [float(p) for p in item.p_model]
        return [self.blend.p(p, f) for p, f in zip(item.p_model, item.features, strict=True)]

    def score(self, item: Item) -> float:
        """The answer's log-odds as decided (for a statement judge, the statement at the threshold)."""
        return answer_logodds(self.probs(item), self.threshold)

    def decide(self, item: Item) -> tuple[bool, bool]:
        """(uncertain, positive): positive at the cut-off; uncertain where the band's edges
        decide the answer differently."""
        z = self.score(item)
        positive = z >= _logit(self.cutoff)
        if self.band is None:
            return False, positive
        low, high = (_logit(x) for x in self.band)
        return (low <= z < high), positive

    def decide_verdicts(
        self, p_model: np.ndarray, features: Mapping[str, np.ndarray] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(uncertain, positive) of many one-decision answers at once: ``decide`` over arrays of the
        model's probability and each word feature."""
        p = np.clip(np.asarray(p_model, float), 1e-6, 1 - 1e-6)
        z = np.log(p / (1 - p))
        if self.blend is not None:
            z = self.blend.intercept + self.blend.model * z
            for name, w in self.blend.weights.items():
                z = z + w * np.asarray((features or {})[name], float)
        positive = z >= _logit(self.cutoff)
        if self.band is None:
            return np.zeros(len(z), bool), positive
        low, high = (_logit(x) for x in self.band)
        return (z >= low) & (z < high), positive

    def at_aim(self, aim: float) -> Decider:
        """A criterion's decider with its band moved to ``aim``: the calibrated judge is ``aim`` sure at
        the band's edges, on the same fitted scale (logit edges = logit cut-off +- half-width x
        logit(aim) / logit(its aim)). Unchanged where it is not a criterion's or its aim is that."""
        if self.aim is None or self.band is None or self.aim == aim:
            return self
        centre = _logit(self.cutoff)
        half = (_logit(self.band[1]) - _logit(self.band[0])) / 2 * _logit(aim) / _logit(self.aim)
        return self.model_copy(update={"band": (_sigmoid(centre - half), _sigmoid(centre + half)), "aim": aim})

    def to_dict(self) -> dict:
        return {
            "blend": self.blend.to_dict() if self.blend else None,
            "cutoff": round(self.cutoff, 6),
            "band": [round(x, 6) for x in self.band] if self.band else None,
            "threshold": self.threshold,
            "labels": self.labels,
            "how": self.how,
            "shift": round(self.shift, 6),
            "notes": self.notes,
            **({"aim": self.aim} if self.aim is not None else {}),
            **({"method": self.method} if self.method is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any] | SavedDecider) -> Decider:
        saved = SavedDecider.load(d)
        band = saved.band
        return cls(
            Blend.from_dict(saved.blend) if saved.blend else None,
            float(saved.cutoff),
            (float(band[0]), float(band[1])) if band else None,
            saved.threshold,
            int(saved.labels),
            str(saved.how),
            float(saved.shift),
            dict(saved.notes or {}),
            None if saved.aim is None else float(saved.aim),
            None if saved.method is None else int(saved.method),
        )


class SavedDecider(Model):
    """A decider as a file keeps it (``Decider.to_dict``, e.g. ``adaptations.json``); what older
    entries lacked defaults to the shipped decider's."""

    blend: dict[str, Any] | None = None
    cutoff: Num
    band: list[Num] | None = None
    threshold: Num | None = None
    labels: Num = 0
    how: str = "shipped"
    shift: Num = 0.0
    notes: dict[str, Any] | None = None
    aim: Num | None = None
    method: Num | None = None


def answer_logodds(probs: Sequence[float], threshold: float | None) -> float:
    """The log-odds that decides an answer: its one probability's, or for a statement judge the
    k-th highest statement's, k the fewest statements that reach the ``threshold`` share (an answer
    is positive exactly when that statement is at or above the cut-off)."""
    z = sorted((_logit(p) for p in probs), reverse=True)
    if not z:
        return 0.0
    if threshold is None:
        return z[0]
    k = max(1, math.ceil(threshold * len(z) - 1e-9))
    return z[min(k, len(z)) - 1]


def fit_shift(z: np.ndarray, positive: np.ndarray, prior_sd: float) -> float:
    """The maximum a posteriori ``delta`` of ``P(positive) = sigmoid(z + delta)`` under a normal
    prior ``N(0, prior_sd**2)`` (Newton's method on a concave objective)."""
    z, y = np.asarray(z, float), np.asarray(positive, float)
    if len(z) == 0 or prior_sd <= 0:
        return 0.0
    delta = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(z + delta)))
        grad = float(np.sum(y - p)) - delta / prior_sd**2
        hess = -float(np.sum(p * (1 - p))) - 1.0 / prior_sd**2
        step = grad / hess
        delta -= step
        if abs(step) < 1e-9:
            break
    return float(delta)


def fit_weights(
    shipped: Blend | None,
    p_model: list[float],
    features: list[dict[str, float]],
    positive: list[bool],
    prior_sd: float,
    fixed_model: float | None = None,
) -> Blend:
    """The blend refitted on labelled decisions, pulled to ``shipped`` (the model's own
    probability, ``sigmoid(logit p)``, when there is none) by a normal prior of ``prior_sd``;
    ``fixed_model``: the weight of the model's log-odds held at that value (not fitted)."""
    base = shipped or Blend(0.0, 1.0, {})
    names = sorted(base.weights)
    z_model = np.array([_logit(p) for p in p_model])
    columns: list = [[1.0] * len(p_model)] + ([z_model] if fixed_model is None else [])
    x = np.column_stack(columns + [[f[k] for f in features] for k in names])
    offset = z_model * fixed_model if fixed_model is not None else np.zeros(len(p_model))
    y = np.asarray(positive, float)
    theta0 = np.array(
        [base.intercept] + ([base.model] if fixed_model is None else []) + [base.weights[k] for k in names]
    )
    lam = 1.0 / prior_sd**2

    def loss(t: np.ndarray) -> float:
        z = x @ t + offset
        return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * lam * np.sum((t - theta0) ** 2))

    # Newton's method on the penalised log-likelihood (concave, a handful of parameters), each step
    # halved until the loss falls: labels a feature (nearly) separates under a weak prior otherwise
    # send a full step far past the optimum.
    theta = theta0.copy()
    for _ in range(200):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ theta + offset, -500, 500)))
        grad = x.T @ (p - y) + lam * (theta - theta0)
        hess = (x * (p * (1 - p))[:, None]).T @ x + lam * np.eye(len(theta))
        step = np.linalg.solve(hess, grad)
        now, t = loss(theta), 1.0
        while t > 1e-6 and loss(theta - t * step) > now:
            t /= 2
        if loss(theta - t * step) > now:
            break  # no step lowers the loss: at the optimum within rounding
        theta -= t * step
        if np.max(np.abs(t * step)) < 1e-10:
            break
    model, rest = (float(theta[1]), theta[2:]) if fixed_model is None else (float(fixed_model), theta[1:])
    return Blend(
        float(theta[0]),
        model,
        dict(zip(names, map(float, rest), strict=True)),
        fitted_on=f"adapted from: {base.fitted_on or 'the model alone'}",
        n=len(y),
    )


def adapt(
    shipped: Decider,
    labelled: Sequence[Item],
    how: str = "both",
    *,
    prior_cutoff: float | None = None,
    prior_weights: float | None = None,
    judge: str | None = None,
) -> Decider:
    """``shipped`` adapted to the labelled items (those with ``positive`` set), as ``how`` says;
    the priors given, else ``judge``'s (``priors_for``)."""
    defaults = priors_for(judge)
    prior_cutoff = defaults.prior_cutoff if prior_cutoff is None else prior_cutoff
    prior_weights = defaults.prior_weights if prior_weights is None else prior_weights
    if how not in HOW:
        raise ValueError(f"how must be one of {', '.join(HOW)}, not {how!r}")
    items = [i for i in labelled if i.positive is not None]
    if not items:
        return shipped
    spec = JUDGES.get(judge or "")
    if spec is not None and spec.criterion is not None:
        return adapt_criterion(shipped, items, how, target=required(spec.band_target, "a criterion's aim"))
    out = shipped
    if how in ("weights", "both"):
        ps, fs, ys = [], [], []
        for it in items:
            for p, f in zip(it.p_model, it.features, strict=True):
                ps.append(p)
                fs.append(f)
                ys.append(bool(it.positive))
        out = out.model_copy(update={"blend": fit_weights(shipped.blend, ps, fs, ys, prior_weights)})
    if how in ("cutoff", "both"):
        # Log-odds from the cut-off: the prior puts the even odds of a positive label at the shipped
        # cut-off (where a cut-off fitted for balanced accuracy separates the classes), and the
        # labels move that point.
        z = np.array([out.score(it) for it in items]) - _logit(out.cutoff)
        delta = fit_shift(z, np.array([bool(it.positive) for it in items]), prior_cutoff)
        cut = _sigmoid(_logit(out.cutoff) - delta)
        band = tuple(_sigmoid(_logit(x) - delta) for x in out.band) if out.band else None
        out = out.model_copy(update={"cutoff": cut, "band": band, "shift": delta})
    return out.model_copy(
        update={
            "labels": len(items),
            "how": how,
            "notes": {"prior_cutoff": prior_cutoff, "prior_weights": prior_weights},
        }
    )


# A criterion has no shipped calibration: nothing measured how the judge model reads the user's
# question, so its labels calibrate it against a weak prior, the uncalibrated judge (the model's own
# P(pass), cut at 0.5). The calibration is a logistic map of the model's log-odds z,
# P(pass) = sigmoid(a + b z), fitted by maximum a posteriori with a ~ N(0, s^2), b ~ N(1, s^2),
# s = CRITERION_PRIOR: one standard deviation of prior per unit of log-odds, so that 20 labels
# move the cut-off as far as they disagree with the model (a skewed judge whose P(pass) runs
# 0.6-0.97, the passing answers above 0.85: from 0.5 to about 0.84; tests/judges/test_criteria.py).
# How labels fit a criterion, saved with each fit (``Decider.method``): 4 weighs every separating word
# feature (``separating_features``, ``_with_features``). An adaptation saved by another method is not
# reused by an audit (its features and band meant something else): the user adapts again.
CRITERION_METHOD = 4
CRITERION_PRIOR = 1.0
MIN_SLOPE = 0.05  # a judge whose labels say it does not separate: nearly every decision uncertain
# Where both verdicts have labels (MIN_PER_CLASS each), the map also weighs the word features of the
# answer the criterion keeps (``criterion_evidence``) that separate the labels better than chance
# would one time in ten (FEATURE_ALPHA: the two-sided p-value of the feature's AUC, uncorrected),
# each standardised on the labels: sigmoid(a + b z + sum_k w_k f_k), fitted by maximum a posteriori
# with a ~ N(0, CRITERION_PRIOR), b ~ N(1, CRITERION_PRIOR) and every w_k ~ N(0, FEATURE_PRIOR): the
# labels decide how far each counts. Method v4 of benchmarks/criteria (chosen on its five labelled
# parts, measured on its fourth fresh part): it replaced weighing only the one feature that
# separated the labels beyond chance with Bonferroni's correction (v3), which on 20 labels kept none
# or a weak one in many draws; the looser test still keeps most features of pure noise out.
FEATURE_PRIOR = 3.0
FEATURE_ALPHA = 0.1
MIN_PER_CLASS = 2


def _auc(scores: Sequence[float], positive: Sequence[bool]) -> float:
    pos = [s for s, y in zip(scores, positive, strict=True) if y]
    neg = [s for s, y in zip(scores, positive, strict=True) if not y]
    if not pos or not neg:
        return 0.5
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def auc_p_value(auc: float, n_pos: int, n_neg: int) -> float:
    """The two-sided p-value of an AUC under no separation (Mann-Whitney U, normal approximation)."""
    sd = math.sqrt((n_pos + n_neg + 1) / (12 * n_pos * n_neg))
    return math.erfc(abs(auc - 0.5) / sd / math.sqrt(2))


def separating_features(items: Sequence[Item]) -> list[str]:
    """The word features every labelled one-decision item keeps whose AUC on the labels chance
    would reach less often than ``FEATURE_ALPHA`` (none: no blend)."""
    y = [bool(it.positive) for it in items]
    n_pos, n_neg = sum(y), len(y) - sum(y)
    if not items or min(n_pos, n_neg) < MIN_PER_CLASS:
        return []
    names = sorted(set.intersection(*(set(it.features[0]) for it in items)))
    out = []
    for k in names:
        values = [float(it.features[0][k]) for it in items]
        if max(values) > min(values) and auc_p_value(_auc(values, y), n_pos, n_neg) < FEATURE_ALPHA:
            out.append(k)
    return out


def adapt_criterion(shipped: Decider, items: Sequence[Item], how: str = "both", *, target: float) -> Decider:
    """``_fit_criterion``'s fit, stamped with the method that made it (``CRITERION_METHOD``)."""
    return _fit_criterion(shipped, items, how, target=target).model_copy(update={"method": CRITERION_METHOD})


def _fit_criterion(shipped: Decider, items: Sequence[Item], how: str = "both", *, target: float) -> Decider:
    """A criterion calibrated on its labelled items: the map ``sigmoid(a + b z)`` of the model's
    log-odds ``z`` to P(pass) (``how`` ``cutoff``: the intercept ``a`` alone, ``b`` = 1; else both),
    fitted with the weak prior ``CRITERION_PRIOR``; the cut-off where the map gives even odds, and the
    band where it gives the decided verdict less than ``target`` (each decision left decided is one
    the calibrated judge gets right with probability ``target`` or more). Both in the model's own
    P(pass), so they read like every other judge's cut-off and band. Where word features separate
    the labels (``separating_features``; not for ``cutoff``), the map weighs them too and the
    criterion decides on the blend (``Decider.blend``): cut-off 0.5, the band where the blend is less
    than ``target`` sure."""
    z = np.array([answer_logodds(it.p_model, None) for it in items])
    y = np.array([bool(it.positive) for it in items])
    one = all(len(it.p_model) == 1 for it in items)
    features = separating_features(items) if how != "cutoff" and one else []
    if features:
        return _with_features(shipped, items, features, how, target)
    if how == "cutoff":
        a, b = fit_shift(z, y, CRITERION_PRIOR), 1.0
    else:
        fitted = fit_weights(None, [_sigmoid(float(v)) for v in z], [{} for _ in z], list(y), CRITERION_PRIOR)
        a, b = fitted.intercept, fitted.model
    b = max(b, MIN_SLOPE)
    edge = _logit(target)
    cut = _sigmoid(-a / b)
    band = (_sigmoid((-edge - a) / b), _sigmoid((edge - a) / b))
    return shipped.model_copy(
        update={
            "blend": None,
            "cutoff": cut,
            "band": band,
            "labels": len(items),
            "how": how,
            "shift": -a / b,
            "notes": {"prior": CRITERION_PRIOR, "intercept": round(a, 6), "slope": round(b, 6), "target": target},
            "aim": target,
        }
    )


def _with_features(shipped: Decider, items: Sequence[Item], features: list[str], how: str, target: float) -> Decider:
    """``adapt_criterion`` with the word ``features`` in the map, each standardised on the labels for
    the prior and saved on its own scale."""
    values = np.array([[float(it.features[0][k]) for k in features] for it in items])
    mu, sd = values.mean(axis=0), values.std(axis=0)
    sd[sd == 0] = 1.0
    # fit_weights takes one prior for every parameter: a feature multiplied by FEATURE_PRIOR /
    # CRITERION_PRIOR under that prior is the feature under its own prior FEATURE_PRIOR.
    scale = FEATURE_PRIOR / CRITERION_PRIOR
    scaled = [{k: (v - m) / s * scale for k, v, m, s in zip(features, row, mu, sd, strict=True)} for row in values]
    p_model = [float(it.p_model[0]) for it in items]
    y = [bool(it.positive) for it in items]
    start = Blend(0.0, 1.0, dict.fromkeys(features, 0.0))
    fitted = fit_weights(start, p_model, scaled, y, CRITERION_PRIOR)
    if fitted.model < MIN_SLOPE:
        # The model never counts against its own word: its weight held at the floor, as without features.
        fitted = fit_weights(start, p_model, scaled, y, CRITERION_PRIOR, MIN_SLOPE)
    w = {k: fitted.weights[k] * scale / s for k, s in zip(features, sd, strict=True)}
    blend = Blend(
        fitted.intercept - sum(w[k] * m for k, m in zip(features, mu, strict=True)),
        fitted.model,
        w,
        fitted_on=f"{len(items)} labels of this criterion",
        n=len(items),
    )
    return shipped.model_copy(
        update={
            "blend": blend,
            "cutoff": 0.5,
            "band": (1 - target, target),
            "labels": len(items),
            "how": how,
            "shift": 0.0,
            "notes": {
                "prior": FEATURE_PRIOR,
                "features": features,
                "feature_auc": {k: round(_auc(list(values[:, i]), y), 4) for i, k in enumerate(features)},
                "blend": blend.describe(),
                "target": target,
            },
            "aim": target,
        }
    )


def cross_fitted(
    shipped: Decider,
    labelled: Sequence[Item],
    how: str = "both",
    *,
    folds: int = 5,
    seed: int = 0,
    prior_cutoff: float | None = None,
    prior_weights: float | None = None,
) -> tuple[list[Decider], np.ndarray]:
    """Cross-fitting (cross-prediction-powered inference, Zrnic & Candès 2024): the labelled items
    split into ``folds`` (seeded), one decider adapted on all folds but each; returns the deciders
    and each labelled item's fold, so a labelled item is predicted only by the decider that never
    saw its label, and an unlabelled one by every decider in turn."""
    n = len(labelled)
    k = max(1, min(folds, n))
    rng = np.random.default_rng(seed)
    fold = np.empty(n, int)
    fold[rng.permutation(n)] = np.arange(n) % k
    deciders = [
        adapt(
            shipped,
            [it for it, f in zip(labelled, fold, strict=True) if f != j],
            how,
            prior_cutoff=prior_cutoff,
            prior_weights=prior_weights,
        )
        for j in range(k)
    ]
    return deciders, fold


@dataclass(frozen=True)
class CrossEstimate:
    """A share estimated from adapted verdicts and the labels that adapted them, cross-fitted."""

    value: float
    ci_low: float
    ci_high: float
    n_labels: int
    n_unlabelled: int
    method: str = "cross-ppi"


def cross_ppi_mean(
    y: np.ndarray,
    yhat_out_of_fold: np.ndarray,
    yhat_unlabelled: np.ndarray,
    pi: np.ndarray | None = None,
    *,
    confidence: float = 0.95,
    w: np.ndarray | None = None,
    w_unlabelled: np.ndarray | None = None,
) -> CrossEstimate:
    """The mean of the labels over every item, from cross-fitted predictions (Zrnic & Candès,
    "Cross-prediction-powered inference", PNAS 2024): ``yhat_out_of_fold[i]`` predicts labelled item
    ``i`` by the decider that never saw its label; ``yhat_unlabelled`` (items x folds, or items)
    predicts the rest, averaged over the fold deciders. Each labelled item's correction is weighted
    by ``1 / pi`` (its inclusion probability; uniform when None), as in active inference, so the
    estimate stays unbiased for a draw that favoured uncertain answers:

        theta = mean over all items of ( f(X_i) + xi_i / pi_i * (Y_i - f(X_i)) )

    (weighted by ``w`` / ``w_unlabelled``, an audit's sampling weights, where given), with a CLT
    interval from the terms' spread. Clipped to [0, 1]."""
    from scipy.stats import norm  # noqa: PLC0415 - scipy.stats is slow to import

    y, h = np.asarray(y, float), np.asarray(yhat_out_of_fold, float)
    u = np.asarray(yhat_unlabelled, float)
    if u.ndim == 2:
        u = u.mean(axis=1)
    n, big_u = len(y), len(u)
    total = n + big_u
    if n == 0:
        raise ValueError("cross_ppi_mean needs at least one label")
    p = np.full(n, n / total) if pi is None else np.asarray(pi, float)
    # Labelled items' terms: f + (y - f) / pi; unlabelled: f. Their (weighted) mean over all items.
    terms = np.concatenate([h + (y - h) / p, u])
    wt = np.concatenate(
        [
            np.ones(n) if w is None else np.asarray(w, float),
            np.ones(big_u) if w_unlabelled is None else np.asarray(w_unlabelled, float),
        ]
    )
    value = float(np.sum(wt * terms) / wt.sum())
    if total > 1:
        se = float(np.sqrt(np.sum(wt**2 * (terms - value) ** 2) * total / (total - 1)) / wt.sum())
    else:
        se = float("inf")
    z = float(norm.ppf(1 - (1 - confidence) / 2))
    clip = lambda x: float(min(1.0, max(0.0, x)))  # noqa: E731
    return CrossEstimate(clip(value), clip(value - z * se), clip(value + z * se), n, big_u)
