"""The record every judge returns."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from rag_eval.base_records import Num
from rag_eval.judges.details import Details, details_of

Status = Literal["judged", "not_judged", "skipped", "uncertain"]


class Judgement(BaseModel):
    """One judge's verdict on one answer: a score and/or verdict with its reason, or the error.
    Pydantic: a line of judgements.jsonl, written and read back (``to_dict``/``from_dict``); the
    numbers keep the type they were given (an int score stays one in the file)."""

    judge: str
    question_id: str
    prompt: str
    status: Status
    score: Num | None = None
    verdict: str | None = None
    reason: str | None = None
    error: str | None = None
    judge_prompt_hash: str | None = None
    model: str | None = None
    details: dict = Field(default_factory=dict)
    probability: Num | None = None  # P(the positive label) where the judge is scored by probability
    cutoff: Num | None = None  # the probability at and above which the verdict is positive
    method: str | None = None  # "logprobs", "text" (no logprobs from the endpoint) or None (Ragas)
    input_hash: str | None = None  # judge, its prompt, the model and every input: what resume compares

    def __init__(
        self,
        judge: str,
        question_id: str,
        prompt: str,
        status: Status,
        score: Num | None = None,
        verdict: str | None = None,
        reason: str | None = None,
        error: str | None = None,
        judge_prompt_hash: str | None = None,
        model: str | None = None,
        details: dict | None = None,
        **kw: Any,
    ) -> None:
        """Positional as the fields (as the dataclass it was): judge, question, prompt, status, ..."""
        super().__init__(
            judge=judge,
            question_id=question_id,
            prompt=prompt,
            status=status,
            score=score,
            verdict=verdict,
            reason=reason,
            error=error,
            judge_prompt_hash=judge_prompt_hash,
            model=model,
            details={} if details is None else details,
            **kw,
        )

    def model_post_init(self, context: Any, /) -> None:
        # Every field counts as set: a record that holds judgements and dumps with
        # exclude_unset (base_records.Model, report.json's judges.records) writes all of a
        # judgement's keys, as it did when Judgement was a dataclass.
        self.__pydantic_fields_set__.update(type(self).model_fields)

    @field_validator("details", mode="before")
    @classmethod
    def _no_details(cls, v: Any) -> Any:
        """A line written with ``details: null`` reads as no details, as the dataclass read it."""
        return {} if v is None else v

    @property
    def typed_details(self) -> Details:
        """``details`` as the typed record of its judge's kind (``judges/details.py``)."""
        return details_of(self.details)

    def to_dict(self) -> dict:
        return self.model_dump()

    @classmethod
    def from_dict(cls, d: dict) -> Judgement:
        """A line of judgements.jsonl: unknown keys ignored, missing ones defaulted."""
        return cls.model_validate(d)
