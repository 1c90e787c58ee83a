"""The record every judge returns."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Literal

Status = Literal["judged", "not_judged", "skipped"]


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

    def to_dict(self) -> dict:
        return asdict(self)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]
