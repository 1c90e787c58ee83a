"""The record every judge returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from rag_eval.judges.details import Details, details_of

Status = Literal["judged", "not_judged", "skipped", "uncertain"]


@dataclass
class Judgement:
    """One judge's verdict on one answer: a score and/or verdict with its reason, or the error."""

    judge: str
    question_id: str
    prompt: str
    status: Status
    score: float | None = None
    verdict: str | None = None
    reason: str | None = None
    error: str | None = None
    judge_prompt_hash: str | None = None
    model: str | None = None
    details: dict = field(default_factory=dict)
    probability: float | None = None  # P(the positive label) where the judge is scored by probability
    cutoff: float | None = None  # the probability at and above which the verdict is positive
    method: str | None = None  # "logprobs", "text" (no logprobs from the endpoint) or None (Ragas)
    input_hash: str | None = None  # judge, its prompt, the model and every input: what resume compares

    @property
    def typed_details(self) -> Details:
        """``details`` as the typed record of its judge's kind (``judges/details.py``)."""
        return details_of(self.details)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Judgement:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})
