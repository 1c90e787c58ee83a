"""Word-level evidence beside the model's yes/no: which words of a claim the contexts lack, which
words of the reference the answer lacks, and a fitted blend of that evidence with the model's
probability.

Measured on real RAG answers (``benchmarks/real_answers/real_judges.py``), the embedded 1.5B model's "is this
statement supported by the context?" probability separates faithful from unfaithful answers no
better than chance (AUC 0.58 on the tuning part), while the share of a statement's words that the
contexts contain separates them well (0.80 tuning, 0.95 on the held-out structlog part); the
correctness probability gains in the same way from the reference's words and names found in the
answer, and the refusal probability from whether the answer opens with a bare Yes or No, talks about
the documents, and says anything the question did not. A :class:`Blend` is a logistic model over the model's log-odds and these shares, fitted on
labelled answers and saved with the judge's cut-off; its probability is what the cut-off decides,
and the words behind it are quoted in the reason, so a reader can check them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.optimize import minimize

from rag_eval.base_records import Model, Num
from rag_eval.words import POLAR, content_words, names, negations, stem, stems


def _has_name(name: str, lowered: str) -> bool:
    return name.split(".")[-1].lower() in lowered


@dataclass(frozen=True)
class Support:
    """How much of one claim the contexts contain, word by word."""

    word_share: float  # content words of the claim found in some context
    name_share: float  # code names of the claim found in some context (1.0 when it names none)
    missing: tuple[str, ...]  # the claim's content words found in no context, in order
    n_words: int = 0  # the claim's content words

    def features(self) -> dict[str, float]:
        return {"word_share": self.word_share, "name_share": self.name_share}


def support(claim: str, contexts: list[str]) -> Support:
    """The words of ``claim`` that ``contexts`` contain."""
    joined = "\n".join(contexts)
    have, lowered = stems(joined), joined.lower()
    words = content_words(claim)
    missing = tuple(w for w in words if stem(w) not in have)
    claim_names = names(claim)
    name_share = float(np.mean([_has_name(n, lowered) for n in claim_names])) if claim_names else 1.0
    share = 1.0 - len(missing) / len(words) if words else 1.0
    return Support(round(share, 6), round(name_share, 6), missing, len(words))


@dataclass(frozen=True)
class CitedSupport:
    """How much of one cited sentence its cited passages contain, and how much more one other
    given passage contains (a citation moved to the wrong passage leaves its words in another)."""

    word_share: float  # content words of the sentence found in the cited passages
    name_share: float  # code names of the sentence found in the cited passages (1.0 when it names none)
    elsewhere_gap: float  # the best other given passage's word share above the cited passages' (0 if none)
    missing: tuple[str, ...]  # the sentence's content words the cited passages lack, in order
    better_passage: int | None = None  # the position of that other passage, where its share is higher
    n_words: int = 0

    def features(self) -> dict[str, float]:
        return {"word_share": self.word_share, "name_share": self.name_share, "elsewhere_gap": self.elsewhere_gap}


def cited_support(claim: str, passages: list[str], cited: list[int]) -> CitedSupport:
    """The words of ``claim`` that the passages at positions ``cited`` contain, against the best of
    the other passages taken one at a time."""
    mine = support(claim, [passages[i] for i in cited if i < len(passages)])
    others = [(support(claim, [t]).word_share, i) for i, t in enumerate(passages) if i not in cited]
    best, where = max(others, default=(0.0, None))
    gap = max(0.0, best - mine.word_share)
    return CitedSupport(
        mine.word_share, mine.name_share, round(gap, 6), mine.missing, where if gap > 0 else None, mine.n_words
    )


@dataclass(frozen=True)
class Coverage:
    """How much of a reference answer a candidate answer states, word by word."""

    word_recall: float  # content words of the reference found in the answer
    name_recall: float  # code names of the reference found in the answer (1.0 when it names none)
    names_reference: bool  # whether the reference names any code name
    conflict: bool  # the reference opens with Yes/No and the answer with the other
    missing: tuple[str, ...]  # the reference's names (else content words) the answer lacks
    polarity: tuple[str | None, str | None] = (None, None)

    def features(self) -> dict[str, float]:
        return {
            "word_recall": self.word_recall,
            "name_recall": self.name_recall,
            "names_reference": float(self.names_reference),
            "conflict": float(self.conflict),
        }


def _polarity(text: str) -> str | None:
    m = POLAR.match(text or "")
    return m.group(1).lower() if m else None


def coverage(reference: str, answer: str) -> Coverage:
    """The words and names of ``reference`` that ``answer`` contains, and a yes/no conflict."""
    have, lowered = stems(answer), (answer or "").lower()
    words = content_words(reference)
    missing_words = [w for w in words if stem(w) not in have]
    ref_names = names(reference)
    missing_names = [n for n in ref_names if not _has_name(n, lowered)]
    pr, pa = _polarity(reference), _polarity(answer)
    return Coverage(
        word_recall=round(1.0 - len(missing_words) / len(words), 6) if words else 1.0,
        name_recall=round(1.0 - len(missing_names) / len(ref_names), 6) if ref_names else 1.0,
        names_reference=bool(ref_names),
        conflict=bool(pr and pa and pr != pa),
        missing=tuple(missing_names or missing_words),
        polarity=(pr, pa),
    )


def restates(reference: str, question: str, answer: str) -> bool:
    """Whether ``answer`` says the reference and nothing else: every content word and name of a
    reference of at least two content words, no content word beyond the reference's and the
    question's, as many negations, and no yes/no the other way. Such an answer is almost never
    wrong, whatever a judge says of it."""
    if len(content_words(reference)) < 2:
        return False
    cov = coverage(reference, answer)
    if cov.word_recall < 1.0 or cov.name_recall < 1.0 or cov.conflict:
        return False
    known = stems(reference) | stems(question)
    if any(stem(w) not in known for w in content_words(answer)):
        return False
    return negations(answer) == negations(reference)


# A bare Yes or No opening the answer ("No.", "Yes, since 3.7 ..."): it takes a side, so it answers.
# "No restart command appears ..." or "No information ..." opens with a noun phrase and is not one.
_BAREPOLAR = re.compile(r"^\W*(yes|no)\s*(?:[,.;:!\u2014\u2013-]|$)", re.IGNORECASE)
# Words that talk about the material given, and what it says or lacks, instead of the subject asked about.
_SOURCE_WORDS = """document documents documentation docs context contexts passage passages excerpt excerpts
    text texts source sources page pages material section sections article articles manual guide notes
    reference provided given supplied retrieved information mention mentioned answer question say says
    said give gives state states stated cover covers covered contain contains include includes specify
    specified find found know determine"""
_SOURCE_TALK = frozenset(stem(w) for w in _SOURCE_WORDS.split())


@dataclass(frozen=True)
class Declining:
    """Whether an answer takes a side, talks about its sources, and says anything beyond the question."""

    polar: str | None  # "yes" / "no" where the answer opens with a bare Yes or No
    source_words: tuple[str, ...]  # its words about the material given ("documents", "context")
    new_words: tuple[str, ...]  # its content words neither in the question nor about the material

    def features(self) -> dict[str, float]:
        return {
            "polar": float(self.polar is not None),
            "source_talk": float(bool(self.source_words)),
            "new_words": round(math.log1p(len(self.new_words)), 6),
        }


def declining(question: str, answer: str) -> Declining:
    """The words of ``answer`` that tell a refusal from an answer (``question`` gives the words that
    are only repeated)."""
    asked = {stem(w) for w in content_words(question)}
    m = _BAREPOLAR.match(answer or "")
    words = content_words(answer)
    return Declining(
        polar=m.group(1).lower() if m else None,
        source_words=tuple(w for w in words if stem(w) in _SOURCE_TALK),
        new_words=tuple(w for w in words if stem(w) not in asked and stem(w) not in _SOURCE_TALK),
    )


def logit(p: float) -> float:
    p = min(max(float(p), 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


class SavedBlend(Model):
    """A blend as a file keeps it (``Blend.to_dict``: calibrations, adaptations, reports); the
    weights, the cases it was fitted on and their number default as older files lacked them."""

    intercept: Num
    model: Num
    weights: dict[str, Num] | None = None
    fitted_on: str | None = ""
    n: Num = 0


class Blend(BaseModel):
    """P(positive) = sigmoid(intercept + model * logit(P from the model) + sum of weight * feature).
    Pydantic (frozen): saved in the calibration files (``to_dict``/``from_dict``)."""

    model_config = ConfigDict(frozen=True)

    intercept: float
    model: float  # the weight of the model's log-odds
    weights: dict[str, float] = Field(default_factory=dict)
    fitted_on: str = ""
    n: int = 0

    def __init__(
        self, intercept: float, model: float, weights: dict[str, float] | None = None, fitted_on: str = "", n: int = 0
    ) -> None:
        super().__init__(
            intercept=intercept, model=model, weights={} if weights is None else weights, fitted_on=fitted_on, n=n
        )

    def p(self, p_model: float, features: dict[str, float]) -> float:
        z = self.intercept + self.model * logit(p_model)
        z += sum(w * features[name] for name, w in self.weights.items())
        # Stable either side: a blend fitted on labels a feature separates can reach any log-odds.
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))

    def to_dict(self) -> dict:
        return {
            "intercept": round(self.intercept, 6),
            "model": round(self.model, 6),
            "weights": {k: round(v, 6) for k, v in self.weights.items()},
            "fitted_on": self.fitted_on,
            "n": self.n,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any] | SavedBlend) -> Blend:
        saved = SavedBlend.load(d)
        return cls(
            float(saved.intercept),
            float(saved.model),
            {k: float(v) for k, v in (saved.weights or {}).items()},
            str(saved.fitted_on),
            int(saved.n),
        )

    def describe(self) -> str:
        parts = [f"{self.model:+.2f} x model log-odds"] + [f"{w:+.2f} x {k}" for k, w in self.weights.items()]
        return f"logistic({self.intercept:+.2f} " + " ".join(parts) + ")"


def fit_blend(
    p_model: list[float],
    features: list[dict[str, float]],
    positive: list[bool],
    *,
    l2: float = 1.0,
    fitted_on: str = "",
) -> Blend:
    """The L2-regularised logistic blend of the model's log-odds and ``features`` that best
    predicts ``positive`` (the same penalty as scikit-learn's ``LogisticRegression(C=1/l2)``: on
    the weights, not the intercept)."""
    if not features:
        raise ValueError("fit_blend needs at least one labelled case")
    names_ = sorted(features[0])
    x = np.column_stack([[logit(p) for p in p_model]] + [[f[k] for f in features] for k in names_])
    y = np.asarray(positive, float)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = theta[0] + x @ theta[1:]
        # log(1 + e^z) - y z, computed without overflow.
        value = np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * l2 * np.sum(theta[1:] ** 2)
        r = 1.0 / (1.0 + np.exp(-z)) - y
        grad = np.concatenate([[r.sum()], x.T @ r + l2 * theta[1:]])
        return float(value), grad

    theta = minimize(loss, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B").x
    return Blend(
        float(theta[0]), float(theta[1]), dict(zip(names_, map(float, theta[2:]), strict=True)), fitted_on, len(y)
    )
