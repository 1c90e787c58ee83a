"""Active labelling: label the answers where the judge is least sure, and keep the figures unbiased.

Active statistical inference (Zrnic & Candès, ICML 2024): each question is drawn for labelling
with a known probability ``pi`` (systematic sampling in a random order: exactly N questions) that
grows with how unsure its judges' deciding
decisions are (never below ``MIX`` times the uniform rate, so never zero); every judged figure is
then estimated from the judge's verdict on every answer, plus each label's correction weighted by
``1 / pi``:

    theta = mean_i( lam * yhat_i + xi_i / pi_i * (y_i - lam * yhat_i) )

which is unbiased for any judge (E[xi_i] = pi_i), with a CLT interval from the terms' spread (as
if drawn independently, which a fixed-size draw in random order only makes more precise);
``lam`` (power tuning, clipped to [0, 1]) minimises the estimated variance. With ``pi`` constant
this is the plain prediction-powered estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence, Set
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy.stats import norm

from rag_eval.judges.judgement import Judgement
from rag_eval.judges.registry import of_role
from rag_eval.labels.label_records import JudgedReport, ReportFile
from rag_eval.labels.ppi import PPIEstimate, human_mean

# The share of each inclusion probability that is uniform: a floor that keeps every pi > 0 and
# the estimate's variance bounded when the judge's uncertainty misleads.
MIX = 0.2
# The uncertainty of a decision without a probability (a Ragas score, a failed judge).
UNKNOWN = 0.25
# Judges whose verdicts decide the attribution outcome count fully; the others half.
OTHER_WEIGHT = 0.5


class Decision(BaseModel):
    """What the draw reads of one judgement given as its dict (a ``judgements.jsonl`` line, or
    part of one): missing keys are None."""

    model_config = ConfigDict(extra="ignore")

    judge: Any = None
    question_id: Any = None
    status: Any = None
    probability: Any = None
    cutoff: Any = None
    score: Any = None


def decision_of(record: dict | Judgement | Decision) -> Judgement | Decision:
    """A judgement as the draw reads it: the record itself, or its dict read once."""
    return record if isinstance(record, Judgement | Decision) else Decision.model_validate(record)


def decision_uncertainty(record: dict | Judgement | Decision) -> float | None:
    """How unsure one decision is, 0 (sure) to 0.5 (at its cut-off): the probability of the wrong
    verdict if the judge's probability were calibrated around its cut-off,
    1 / (1 + exp(|logit p - logit cut-off|)); 0.5 for an uncertain record; None where the judge
    did not apply."""
    r = decision_of(record)
    status = r.status
    if status == "skipped":
        return None
    if status == "uncertain":
        return 0.5
    p, cut = r.probability, r.cutoff
    if status != "judged" or p is None:
        score = r.score
        if status == "judged" and score is not None:
            return float(min(score, 1 - score)) if 0 <= score <= 1 else UNKNOWN
        return UNKNOWN
    cut = 0.5 if cut is None else cut

    def logit(x: float) -> float:
        x = min(max(float(x), 1e-9), 1 - 1e-9)
        return math.log(x) - math.log1p(-x)

    return 1.0 / (1.0 + math.exp(abs(logit(p) - logit(cut))))


def question_scores(
    records: Sequence[dict | Judgement], deciding: Set[str], unanswerable: Set[str] = frozenset()
) -> dict[str, float]:
    """Each question's chance of a wrong deciding verdict: the most unsure decision among its
    answers (a judge that does not decide the outcome counts half). The draw's probabilities grow
    with its square root (the standard deviation of the label's correction). Only the refusal
    judge decides the outcome of a question in ``unanswerable``."""
    out: dict[str, float] = {}
    refusal = of_role("refusal")
    for r in map(decision_of, records):
        u = decision_uncertainty(r)
        if u is None:
            continue
        judge, qid = r.judge, r.question_id
        decides = judge in refusal if qid in unanswerable else judge in deciding
        u *= 1.0 if decides else OTHER_WEIGHT
        out[qid] = max(out.get(qid, 0.0), u)
    return out


def inclusion_probabilities(scores: np.ndarray, n: float, mix: float = MIX) -> np.ndarray:
    """Probabilities summing to ``n`` (at most 1 each), a mix of ``scores``' shares and the uniform
    ``n / N``: pi_i = n ((1 - mix) s_i / sum s + mix / N); what is capped at 1 goes to the rest."""
    s = np.asarray(scores, float)
    big_n = len(s)
    if big_n == 0:
        return s
    n = min(float(n), big_n)
    s = np.where(s > 0, s, 0.0)
    base = s / s.sum() if s.sum() > 0 else np.full(big_n, 1 / big_n)
    shape = (1 - mix) * base + mix / big_n
    pi = np.zeros(big_n)
    free = np.ones(big_n, bool)
    left = n
    for _ in range(big_n):
        pi[free] = left * shape[free] / shape[free].sum()
        over = free & (pi >= 1)
        if not over.any():
            break
        pi[over] = 1.0
        free &= ~over
        left = n - (~free).sum()
        if left <= 0 or not free.any():
            break
    return np.clip(pi, 0, 1)


def systematic_draw(pi: np.ndarray, seed: int | Sequence[int] = 0) -> np.ndarray:
    """Exactly ``round(sum(pi))`` items, each drawn with its probability ``pi_i``: systematic
    sampling in a seeded random order (Madow's method; an item with pi = 1 is always drawn). ``seed``:
    an integer, or several (numpy's ``SeedSequence``: ``[seed, k]`` gives draws independent of ``seed``'s)."""
    pi = np.asarray(pi, float)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pi))
    c = np.cumsum(pi[order])
    u = rng.random()
    prev = np.concatenate([[0.0], c[:-1]])
    hit = np.floor(c - u + 1e-12) > np.floor(prev - u + 1e-12)
    chosen = np.zeros(len(pi), bool)
    chosen[order[hit]] = True
    return chosen


def active_mean(
    y: np.ndarray,
    yhat: np.ndarray,
    pi: np.ndarray,
    yhat_unlabelled: np.ndarray,
    *,
    confidence: float = 0.95,
    w: np.ndarray | None = None,
    w_unlabelled: np.ndarray | None = None,
    power_tuned: bool = True,
    bounded: bool = True,
) -> PPIEstimate:
    """The mean of the labels over every item, from the labelled items (labels ``y``, judge
    ``yhat``, inclusion probabilities ``pi``) and the judge's ``yhat_unlabelled`` on the rest,
    weighting each label's correction by ``1 / pi``. ``w``: the audit's weights of the items."""
    y, yh, pi, yu = (np.asarray(a, float) for a in (y, yhat, pi, yhat_unlabelled))
    n, m = len(y), len(yu)
    if n == 0:
        return PPIEstimate(None, None, None, 0, m, "no labels")
    if m == 0:  # every item labelled: the figure is the labels' own
        return human_mean(y, confidence=confidence, w=w, bounded=bounded)
    big_n = n + m
    w_all = np.concatenate(
        [
            np.ones(n) if w is None else np.asarray(w, float),
            np.ones(m) if w_unlabelled is None else np.asarray(w_unlabelled, float),
        ]
    )
    w_all = w_all * big_n / w_all.sum()
    xi_over_pi = np.concatenate([1.0 / pi, np.zeros(m)])
    yhat_all = np.concatenate([yh, yu])
    y_all = np.concatenate([y, np.zeros(m)])
    a = w_all * yhat_all * (1 - xi_over_pi)  # the judge's part
    b = w_all * y_all * xi_over_pi  # the labels' part
    lam = 1.0
    if power_tuned and np.var(a) > 0:
        lam = float(np.clip(-np.cov(a, b)[0, 1] / np.var(a, ddof=1), 0.0, 1.0))
    terms = lam * a + b
    value = float(terms.mean())
    se = float(terms.std(ddof=1) / math.sqrt(big_n)) if big_n > 1 else float("nan")
    z = norm.ppf(1 - (1 - confidence) / 2)
    lo, hi = value - z * se, value + z * se
    if bounded:
        value, lo, hi = (float(min(1.0, max(0.0, x))) for x in (value, lo, hi))
    return PPIEstimate(value, lo, hi, n, m, "active" + (f" (lambda {lam:.2f})" if power_tuned else ""))


def labels_for_width(
    errors: Sequence[float | None] | np.ndarray,
    half_width: float,
    *,
    uniform_variance: float | None = None,
    confidence: float = 0.95,
) -> tuple[int, int]:
    """(uniform, active) labels for an interval of about ``±half_width`` on a share over these
    items, where ``errors`` is each item's chance that the judge's verdict is wrong
    (``decision_uncertainty``): uniform labels need z² E[e] / h² (``uniform_variance`` replaces
    E[e] where the judge's agreement was measured); active ones z² E[e / pi~] / h² with pi~ the
    active draw's probabilities relative to uniform, scaled alike."""
    e = np.clip(np.asarray(errors, float), 0.0, 0.5)
    z = norm.ppf(1 - (1 - confidence) / 2)
    if len(e) == 0:
        return 0, 0
    mean_e = float(e.mean())
    var_u = max(uniform_variance if uniform_variance is not None else mean_e, 0.01)
    s = np.sqrt(e)
    # The active draw's probabilities relative to the uniform rate (before any is capped at 1).
    rel = (1 - MIX) * s / s.mean() + MIX if s.mean() > 0 else np.ones(len(e))
    gain = float(np.mean(e / rel) / mean_e) if mean_e > 0 else 1.0
    n_u = max(10, math.ceil(z * z * var_u / half_width**2))
    n_a = max(10, math.ceil(n_u * min(gain, 1.0)))
    return n_u, min(n_a, n_u)


def draw_scores(report: JudgedReport | dict, question_ids: Sequence[str]) -> dict[str, float]:
    """Each question's score in the active draw (sorted by id): the square root of its chance of a
    wrong deciding verdict (``question_scores``; ``UNKNOWN`` where none is known)."""
    typed = ReportFile.load(report) if isinstance(report, dict) else report
    judges = typed.judges
    faithfulness = judges.faithfulness_judge if judges else None
    deciding = {*of_role("refusal"), *of_role("correctness"), *([faithfulness] if faithfulness is not None else [])}
    unanswerable = {r.question_id for r in typed.rows() if not r.answerable}
    err = question_scores(judges.records if judges else [], deciding, unanswerable)
    return {q: math.sqrt(err.get(q, UNKNOWN)) for q in sorted(set(question_ids))}


def question_probabilities(report: JudgedReport | dict, question_ids: Sequence[str], n: int) -> dict[str, float]:
    """Each question's inclusion probability in an active draw of ``n`` questions (all, if fewer):
    its ``draw_scores`` share mixed with the uniform rate. It does not depend on the seed, only on
    the report's verdicts and ``n``."""
    return probabilities_of(draw_scores(report, question_ids), n)


def probabilities_of(scores: dict[str, float], n: int) -> dict[str, float]:
    """``inclusion_probabilities`` of the questions' ``draw_scores`` for a draw of ``n``."""
    pi = inclusion_probabilities(np.array(list(scores.values())), min(n, len(scores)))
    return {q: float(p) for q, p in zip(scores, pi)}


def draw_questions(
    report: JudgedReport | dict, question_ids: list[str], n: int, seed: int | Sequence[int] = 0
) -> tuple[set[str], dict[str, float]]:
    """The questions to label (exactly ``n``, or all) and each question's inclusion probability
    (``question_probabilities``), drawn by systematic sampling seeded with ``seed``."""
    probabilities = question_probabilities(report, question_ids, n)
    ids = list(probabilities)
    chosen = systematic_draw(np.array([probabilities[q] for q in ids]), seed)
    return {q for q, c in zip(ids, chosen) if c}, probabilities
