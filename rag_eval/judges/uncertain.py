"""Uncertain is a verdict: a probability-scored decision near its cut-off is not decided.

A band ``[low, high)`` around a judge's cut-off (on the probability the cut-off applies to) marks
its decisions as ``uncertain``: P >= high decides positive, P < low negative, anything between is
recorded with ``status: "uncertain"``, its probability, and the verdict the cut-off alone would
have given (``details.leaning``). Uncertain decisions are counted beside ``not_judged`` and kept
out of means and shares; they go to a stronger judge (``judges.escalate``) or to a person first.

For a judge that decides statement by statement (``faithfulness_yesno``), a statement in the band
is uncertain, and the answer is uncertain when those statements could move its share of
supported statements across the attribution threshold.

The band is fitted with the calibration (``rag-eval judge-check --save``) on labelled cases: the
narrowest share of cases left uncertain such that the decided ones agree with the labels on at
least the target (the judge's ``band_target`` in the registry); it is saved beside the cut-off with the cases' probabilities.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_eval.base_records import Model
from rag_eval.calibration import cutoffs as calibration
from rag_eval.calibration.cutoffs import fold_assignment, key
from rag_eval.calibration.lexical import restates
from rag_eval.judges.details import StatementsDetails
from rag_eval.judges.judge_records import BandOutOfFold
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.registry import band_targets, banded, variants

# The agreement of decided verdicts a fitted band aims at where a judge declares none.
DEFAULT_TARGET = 0.90
# A band never leaves more than this share of the labelled cases undecided.
MAX_UNCERTAIN_SHARE = 0.5
MAX_CANDIDATES = 60


def target(name: str) -> float:
    """The agreement the band of a cut-off (a judge or a variant) aims at (issue 28's targets)."""
    return band_targets().get(name, DEFAULT_TARGET)


@dataclass(frozen=True)
class Band:
    """``[low, high)`` around a cut-off; decisions inside are uncertain."""

    low: float
    high: float
    source: str  # "fitted on ... (target 0.95)" or "judges.uncertain"

    def holds(self, p: float) -> bool:
        return self.low <= p < self.high

    def to_dict(self) -> dict:
        return {"low": self.low, "high": self.high, "source": self.source}


def share_range(probs: Sequence[float] | np.ndarray, low: float, high: float) -> tuple[float, float]:
    """(least, most) share of supported statements when every statement in the band could go
    either way."""
    ps = np.asarray(probs, float)
    return float(np.mean(ps >= high)), float(np.mean(ps >= low))


def case_status(probs: Sequence[float] | np.ndarray, low: float, high: float, threshold: float) -> tuple[bool, bool]:
    """(uncertain, decided positive) for one case: one probability (a verdict) or several (one per
    statement, positive when the share supported reaches ``threshold``)."""
    lo, hi = share_range(probs, low, high)
    return (lo >= threshold) != (hi >= threshold), lo >= threshold


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, float), 1e-12, 1 - 1e-12)
    return np.log(p) - np.log1p(-p)


def _edges(values: np.ndarray, cutoff: float, side: str) -> list[float]:
    """Candidate band edges on one side of the cut-off: the cut-off itself, then every edge that
    leaves one more distinct probability of that side inside the band (midpoints in log-odds), at
    most MAX_CANDIDATES of them."""
    z = np.unique(_logit(values))
    zc = float(_logit(np.array([cutoff]))[0])
    if side == "low":
        below = z[z < zc]
        # An edge between two values below the cut-off puts the upper one in the band.
        mids = (np.concatenate([below, [zc]])[:-1] + np.concatenate([below, [zc]])[1:]) / 2 if len(below) else []
        mids = np.concatenate([mids, [below[0] - 1.0]]) if len(below) else np.array([])
    else:
        above = z[z >= zc]
        mids = np.concatenate([(above[:-1] + above[1:]) / 2, [above[-1] + 1.0]]) if len(above) else np.array([])
    mids = np.unique(np.asarray(mids, float))
    if len(mids) > MAX_CANDIDATES:
        mids = mids[np.linspace(0, len(mids) - 1, MAX_CANDIDATES).round().astype(int)]
    return [cutoff] + [float(1 / (1 + np.exp(-m))) for m in mids]


@dataclass(frozen=True)
class BandFit:
    """A fitted band and how it does on the cases it was fitted on."""

    low: float
    high: float
    decided_accuracy: float | None
    uncertain_share: float
    reached: bool  # the decided verdicts reach the target


def _shares(cases: list[np.ndarray], edges: list[float]) -> np.ndarray:
    """cases x edges: the share of each case's probabilities at or above each edge."""
    width = max(len(c) for c in cases)
    m = np.full((len(cases), width), np.nan)
    for i, c in enumerate(cases):
        m[i, : len(c)] = c
    counts = (m[:, :, None] >= np.asarray(edges)[None, None, :]).sum(axis=1)
    return counts / np.array([len(c) for c in cases])[:, None]


def fit_band(
    probs: Sequence[Sequence[float] | np.ndarray],
    positive: Sequence[bool] | np.ndarray,
    cutoff: float,
    *,
    target: float = DEFAULT_TARGET,
    threshold: float = 0.5,
    max_share: float = MAX_UNCERTAIN_SHARE,
) -> BandFit:
    """The band around ``cutoff`` that leaves the fewest cases uncertain while the decided ones
    agree with ``positive`` on at least ``target``; ties go to the narrowest band in log-odds.
    Where no band within ``max_share`` reaches the target, the one with the best agreement there
    (``reached`` False). Each case is a list of probabilities (one for a verdict judge; one per
    statement, decided positive when the share at or above the cut-off reaches ``threshold``)."""
    cases = [np.asarray(p, float) for p in probs]
    pos = np.asarray(positive, bool)
    if not cases:
        return BandFit(cutoff, cutoff, None, 0.0, False)
    flat = np.concatenate(cases)
    lows, highs = _edges(flat, cutoff, "low"), _edges(flat, cutoff, "high")
    # A case is uncertain when its share with the band's statements unsupported (at ``high``) and
    # supported (at ``low``) fall on either side of the threshold.
    at_low = _shares(cases, lows) >= threshold  # cases x lows
    at_high = _shares(cases, highs) >= threshold  # cases x highs
    unc = at_low[:, :, None] != at_high[:, None, :]  # cases x lows x highs
    right = (at_high == pos[:, None])[:, None, :]  # the decision where decided is at_high's
    n_dec = (~unc).sum(axis=0)
    share = unc.mean(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = np.where(n_dec > 0, (right & ~unc).sum(axis=0) / np.maximum(n_dec, 1), np.nan)
    zl, zh = _logit(np.array(lows)), _logit(np.array(highs))
    width = zh[None, :] - zl[:, None]
    ok = share <= max_share + 1e-12
    reached = ok & (np.nan_to_num(acc, nan=-1) >= target - 1e-12)
    if reached.any():
        # Fewest uncertain, then the narrowest.
        order = np.lexsort((width[reached], share[reached]))
        li, hi = np.argwhere(reached)[order[0]]
    else:
        cand = np.argwhere(ok)
        a = np.nan_to_num(acc[ok], nan=-1)
        order = np.lexsort((width[ok], share[ok], -a))
        li, hi = cand[order[0]]
    value = acc[li, hi]
    return BandFit(
        float(f"{lows[li]:.6g}"),
        float(f"{highs[hi]:.6g}"),
        None if np.isnan(value) else float(value),
        float(share[li, hi]),
        bool(reached.any()),
    )


def band_folds(
    probs: Sequence[Sequence[float] | np.ndarray],
    positive: Sequence[bool] | np.ndarray,
    variants: Sequence[str],
    fit_cutoffs,
    *,
    targets: dict[str, float],
    threshold: float = 0.5,
    folds: int = 5,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, list[tuple[float, float]]]:
    """(uncertain, decided positive, band) of each case, decided by a cut-off and a band both
    fitted on the other folds (the folds of ``calibration.out_of_fold``). ``fit_cutoffs(train
    indices) -> {variant: cutoff}``."""
    pos = np.asarray(positive, bool)
    fold_of = fold_assignment(pos, folds, seed)
    unc = np.zeros(len(pos), bool)
    dec = np.zeros(len(pos), bool)
    band_of: list[tuple[float, float]] = [(0.5, 0.5)] * len(pos)
    for f in range(folds):
        test, train = np.flatnonzero(fold_of == f), np.flatnonzero(fold_of != f)
        if len(test) == 0:
            continue
        cuts = fit_cutoffs(train)
        for v in sorted(set(variants)):
            tr = [i for i in train.tolist() if variants[i] == v]
            target = targets.get(v, DEFAULT_TARGET)
            band = fit_band([probs[i] for i in tr], pos[tr], cuts[v], target=target, threshold=threshold)
            for i in (i for i in test.tolist() if variants[i] == v):
                unc[i], dec[i] = case_status(probs[i], band.low, band.high, threshold)
                band_of[i] = (band.low, band.high)
    return unc, dec, band_of


def _short_out_of_fold(figures: dict | None, target: float) -> str:
    """Where the band's decided verdicts agreed with the labels less often out of fold than the
    target the band was fitted to in sample: how often (the band is then too narrow); else empty."""
    acc = BandOutOfFold.load(figures or {}).decided_accuracy
    if acc is None or float(acc) >= target - 1e-9:
        return ""
    return (
        f"; out of fold its decided verdicts agreed on {float(acc):.2f}, under the target: "
        "the band is narrower than the cases warrant, so some decided verdicts are close calls"
    )


def bands_out_of_fold(probs, positive, variants, fit_cutoffs, **kw) -> dict:
    """Decided agreement and uncertain share out of fold (see ``band_folds``)."""
    pos = np.asarray(positive, bool)
    unc, dec, _ = band_folds(probs, pos, variants, fit_cutoffs, **kw)
    n_dec = int((~unc).sum())
    return {
        "decided_accuracy": float(np.mean(dec[~unc] == pos[~unc])) if n_dec else None,
        "uncertain_share": float(unc.mean()) if len(pos) else 0.0,
        "n_decided": n_dec,
        "n": len(pos),
    }


def mark(j: Judgement, bands: dict[str, Band], threshold: float) -> Judgement:
    """The judgement as ``uncertain`` where its probability (or, for a statement judge, its share
    of supported statements) falls in the band of its cut-off; else unchanged."""
    if j.status != "judged" or j.judge not in banded():
        return j
    details = j.typed_details
    variant = details.variant or j.judge
    band = bands.get(variant)
    if band is None:
        return j
    if isinstance(details, StatementsDetails):
        ps = details.probabilities
        unsure, _ = case_status(ps, band.low, band.high, threshold)
        lo, hi = share_range(ps, band.low, band.high)
        extra = {
            "score_range": [lo, hi],
            "uncertain_statements": [i for i, p in enumerate(ps) if band.holds(p)],
        }
    else:
        if j.probability is None:
            return j
        unsure, extra = band.holds(j.probability), {}
    if not unsure:
        return j.model_copy(update={"details": {**j.details, "band": [band.low, band.high]}})
    return j.model_copy(
        update={
            "status": "uncertain",
            "verdict": None,
            "score": None,
            "reason": would_decide(j.reason),  # its band left it uncertain (review 55 M12)
            "details": {
                **j.details,
                **extra,
                "band": [band.low, band.high],
                "leaning": j.verdict,
                "leaning_score": j.score,
            },
        }
    )


# How far the embedded server's numerics alone move a verdict's log-odds: the same judge requests sent
# in three orders (each meeting another prompt-cache state) differed by up to 0.21 (p99 0.18) in 100
# of judge-check's requests (benchmarks/verdict_noise); this is a little more. A verdict decided
# nearer its cut-off than this could be decided the other way by the next run of the same audit: it
# is left uncertain. Where a blend decides, the model's noise reaches the decided log-odds times the
# blend's weight on them (``mark_close_call``'s ``scale``).
NUMERIC_NOISE_LOGIT = 0.25


LEFT_UNCERTAIN = "left_uncertain"  # the details key saying why a decided verdict was left uncertain
_NOTE = "; left uncertain: "


def without_uncertain_note(reason: str | None) -> str | None:
    """A reason without the note ``_uncertain`` added, its "would decide" as it was (a verdict
    decided again gets its own)."""
    if not reason:
        return reason
    return _WOULD.sub(r"\1 decided ", reason.split(_NOTE)[0])


# A plain-words reason ("the calibrated cut-off 0.84 decided incorrect, ...") of a verdict then left
# uncertain says what the cut-off alone would decide, not that it decided. Only that clause: a
# model's own words are left as written (review 55 L7).
_DECIDED = re.compile(r"(cut-off \d+\.\d+) decided ")
_WOULD = re.compile(r"(cut-off \d+\.\d+) would decide ")


def would_decide(reason: str | None) -> str | None:
    """``reason`` with its cut-off's "decided" as "would decide" (the verdict is left uncertain)."""
    return _DECIDED.sub(r"\1 would decide ", reason) if reason else reason


def _uncertain(j: Judgement, band: list[float] | None, why: str) -> Judgement:
    """``j`` left uncertain (its leaning kept, as ``mark`` leaves a verdict in the band), ``why`` said
    after its reason."""
    # The band shown beside an uncertain verdict: the one it fell in (None: not a band's doing).
    details = {**j.details, "leaning": j.verdict, "leaning_score": j.score, LEFT_UNCERTAIN: why, "band": band}
    said = would_decide(j.reason)
    reason = f"{said}{_NOTE}{why}" if said else _NOTE.removeprefix("; ") + why
    return j.model_copy(
        update={"status": "uncertain", "verdict": None, "score": None, "details": details, "reason": reason}
    )


def within_noise(p: float, cutoff: float, scale: float = 1.0) -> bool:
    """Whether ``p`` lies within ``NUMERIC_NOISE_LOGIT`` (times ``scale``) of ``cutoff`` in log-odds."""
    if not (0 < p < 1 and 0 < cutoff < 1):
        return False
    return abs(float(_logit(np.array(p))) - float(_logit(np.array(cutoff)))) < NUMERIC_NOISE_LOGIT * abs(scale)


def mark_close_call(j: Judgement, scale: float = 1.0) -> Judgement:
    """A verdict of one probability decided within ``NUMERIC_NOISE_LOGIT`` of its cut-off (times
    ``scale``: a blend's weight on the model's log-odds, where a blend decides), whatever band the
    cut-off has (a fitted band may be empty), as ``uncertain``; else unchanged."""
    if j.status != "judged" or j.probability is None or not isinstance(j.cutoff, int | float):
        return j
    if isinstance(j.typed_details, StatementsDetails) or not 0 < j.cutoff < 1:
        return j
    if not within_noise(j.probability, j.cutoff, scale):
        return j
    cut, margin = float(_logit(np.array(j.cutoff))), NUMERIC_NOISE_LOGIT * abs(scale)
    low, high = (float(1 / (1 + np.exp(-(cut + d)))) for d in (-margin, margin))
    current = j.typed_details.band
    band = [min(low, float(current[0])), max(high, float(current[1]))] if current else [low, high]
    return _uncertain(
        j,
        [round(band[0], 6), round(band[1], 6)],
        f"P {j.probability:.3f} is within the server's numeric noise of the cut-off {j.cutoff:.3f} "
        f"(±{margin:.2f} in log-odds): another run could decide it the other way",
    )


def mark_reference_restated(j: Judgement, reference: str | None, question: str, answer: str) -> Judgement:
    """A decided ``incorrect`` of an answer that says the reference and nothing else
    (``lexical.restates``: its words, names and negations, no word beyond it and the question) as
    ``uncertain``: the words and the judge disagree; else unchanged. Narrow on purpose: it moves
    verdicts one way only, so it fires only where a wrong answer is hardly possible."""
    if j.judge != "correctness" or j.status != "judged" or j.verdict != "incorrect" or not reference:
        return j
    if not restates(reference, question, answer):
        return j
    return _uncertain(
        j, None, "the answer says what the reference says and nothing more, which the judge called incorrect"
    )


class _Leaning(Model):
    leaning: Any = None
    leaning_score: Any = None


class _Leaned(Model):
    """A judgement record as ``leaning_value`` reads it: its status and what it leaned to."""

    status: Any = None
    details: _Leaning | None = None


def leaning_value(record: dict, verdict: str | None) -> float | None:
    """What the judge leaned to on an uncertain record: 1/0 for ``verdict``, or the share of
    supported statements at the cut-off; None for other records."""
    r = _Leaned.model_validate(record)
    if r.status != "uncertain":
        return None
    d = r.details or _Leaning()
    if verdict is not None:
        return float(d.leaning == verdict)
    return d.leaning_score


def bands_for(identity: str, scored, setting, *, judges: Sequence[str]) -> tuple[dict[str, Band], dict[str, str]]:
    """(band per cut-off name, a note per judge without one) for ``judges.uncertain``: ``off`` (no
    bands), ``auto`` (the band saved with this model's calibration of the current prompt), or
    ``{judge: [low, high]}`` (a judge's name sets every prompt variant of it)."""
    bands: dict[str, Band] = {}
    notes: dict[str, str] = {}
    mine = [j for j in judges if j in banded()]
    if setting == "off" or scored is None:
        return bands, {j: "judges.uncertain is off" for j in mine}
    if isinstance(setting, dict):
        for judge, (low, high) in setting.items():
            for name in [v for v in variants(judge) if v == judge or v not in setting] or [judge]:
                bands[name] = Band(float(low), float(high), "judges.uncertain")
        for j in mine:
            if not any(v in bands for v in variants(j)):
                notes[j] = "no band in judges.uncertain: every decision is taken at the cut-off"
        return bands, notes
    table = calibration.saved_calibrations()
    for j in mine:
        missing = []
        for v in variants(j):
            entry = table.get(key(identity, v, scored.prompt_hash(v)))
            if entry is None:
                missing.append(f"`{v}` has no calibration for this judge model and prompt")
            elif not entry.band:
                missing.append(f"`{v}`'s calibration was saved without a band")
            else:
                low, high = entry.band
                fitted_on = entry.fitted_on if entry.fitted_on is not None else "labelled cases"
                target = entry.band_target if entry.band_target is not None else DEFAULT_TARGET
                bands[v] = Band(
                    float(low),
                    float(high),
                    f"fitted on {', '.join(entry.sources or [fitted_on])} (target agreement {target:.2f}"
                    + _short_out_of_fold(entry.band_out_of_fold, target)
                    + ")",
                )
        if missing:
            notes[j] = (
                "; ".join(missing)
                + ": no band, every such decision is taken at the cut-off (run `rag-eval judge-check --save`"
                " to fit one, or set judges.uncertain)"
            )
    return bands, notes
