"""Method v3's rule for a user's criterion, frozen for the criteria study (commit 2f29a18's
``calibration/adaptation.py``): the labels choose the one word feature that separates them beyond
chance with Bonferroni's correction (at least four labels of each verdict) and weigh it beside the
model's log-odds under a prior of sd 10; the band at the aim 0.85. ``criteria_study.py analyse
--rule v3`` measures it on the parts judged after it was replaced by v4, so both are compared on
the same answers and labels. Kept here, not in the package: the product runs v4."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_eval.calibration.adaptation import (
    MIN_SLOPE,
    Decider,
    Item,
    _auc,
    auc_p_value,
    fit_weights,
)
from rag_eval.calibration.adaptation import adapt_criterion as package_adapt_criterion
from rag_eval.calibration.lexical import Blend

AIM = 0.85
FEATURE_PRIOR = 10.0
MIN_PER_CLASS = 4
FEATURE_ALPHA = 0.05


def choose_feature(items: Sequence[Item]) -> str | None:
    """The word feature the labelled one-decision ``items`` are best told apart by (|AUC - 0.5|
    largest), among those every item has, if chance would rarely do as well (``FEATURE_ALPHA``,
    Bonferroni over the features tried); None where none does or either verdict has fewer than
    ``MIN_PER_CLASS`` labels."""
    y = [bool(it.positive) for it in items]
    n_pos, n_neg = sum(y), len(y) - sum(y)
    if min(n_pos, n_neg) < MIN_PER_CLASS:
        return None
    shared = sorted(set.intersection(*(set(it.features[0]) for it in items)))
    best, separation = None, 0.0
    for name in shared:
        values = [float(it.features[0][name]) for it in items]
        if max(values) == min(values):
            continue
        gap = abs(_auc(values, y) - 0.5)
        if gap > separation:
            best, separation = name, gap
    if best is None or auc_p_value(0.5 + separation, n_pos, n_neg) >= FEATURE_ALPHA / len(shared):
        return None
    return best


def adapt_criterion(shipped: Decider, items: Sequence[Item], how: str = "both", *, target: float = AIM) -> Decider:
    """v3's criterion adaptation: where the labels find a word feature that separates them
    (``choose_feature``; not for ``cutoff``), the blend of the model's log-odds and that feature
    (``_with_feature``); else the package's map of the model's log-odds alone, which v4 kept as it was
    (the items given without word features, so that v4 weighs none)."""
    feature = choose_feature(items) if how != "cutoff" and all(len(it.p_model) == 1 for it in items) else None
    if feature is not None:
        return _with_feature(shipped, items, feature, how, target)
    bare = [Item(it.p_model, tuple({} for _ in it.p_model), it.positive) for it in items]
    return package_adapt_criterion(shipped, bare, how, target=target)


def _with_feature(shipped: Decider, items: Sequence[Item], feature: str, how: str, target: float) -> Decider:
    """``adapt_criterion`` with the word ``feature`` in the map (standardised on the labels for the
    prior, saved on its own scale)."""
    values = np.array([float(it.features[0][feature]) for it in items])
    mu, sd = float(values.mean()), float(values.std()) or 1.0
    p_model = [float(it.p_model[0]) for it in items]
    standardised = [{feature: (v - mu) / sd} for v in values]
    y = [bool(it.positive) for it in items]
    fitted = fit_weights(Blend(0.0, 1.0, {feature: 0.0}), p_model, standardised, y, FEATURE_PRIOR)
    if fitted.model < MIN_SLOPE:
        # The model never counts against its own word: its weight held at the floor, as without a feature.
        fitted = fit_weights(Blend(0.0, 1.0, {feature: 0.0}), p_model, standardised, y, FEATURE_PRIOR, MIN_SLOPE)
    w = fitted.weights[feature] / sd
    blend = Blend(
        fitted.intercept - w * mu,
        fitted.model,
        {feature: w},
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
                "feature": feature,
                "feature_auc": round(_auc(list(values), y), 4),
                "blend": blend.describe(),
                "target": target,
            },
            "aim": target,
        }
    )
