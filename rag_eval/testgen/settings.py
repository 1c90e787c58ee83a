"""Test-set generation's settings (``testgen:``, ``rag-eval generate``)."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
    field_validator,
)

from rag_eval.config_base import Settings
from rag_eval.llm.settings import LLMConfig

QuestionKind = Literal["fact", "symbol", "paraphrase", "multi", "unanswerable"]


def _default_mix() -> dict[QuestionKind, float]:
    return {"fact": 0.35, "symbol": 0.2, "paraphrase": 0.2, "multi": 0.1, "unanswerable": 0.15}


class TestGenConfig(Settings):
    """``rag-eval generate``: a test set generated from the corpus, every label verified."""

    n: int = Field(50, ge=1, description="questions to keep")
    seed: int = Field(0, description="seed of the draw of chunks the questions are written from")
    mix: dict[QuestionKind, float] = Field(
        default_factory=_default_mix,
        description="share of each question kind",
    )
    llm: LLMConfig = LLMConfig(max_tokens=320)
    min_chunk_chars: int = Field(200, ge=1, description="chunks shorter than this are not drawn")
    max_passage_chars: int = Field(1500, ge=200, description="the passage shown to the model is cut to this")
    min_quote_words: int = Field(5, ge=1, description="shorter evidence quotes are dropped (too generic)")
    retriever: str | None = Field(
        None, description="unanswerable check: the retriever whose top chunks must not answer (default: the first)"
    )
    check_top: int = Field(3, ge=1, description="unanswerable check: how many top chunks the judge reads")
    prompts_dir: str | None = Field(None, description="folder of the generator's prompts; default: the shipped ones")

    @field_validator("mix")
    @classmethod
    def _positive_mix(cls, mix: dict[str, float]) -> dict[str, float]:
        if not mix or any(v < 0 for v in mix.values()) or sum(mix.values()) <= 0:
            raise ValueError("mix needs non-negative shares with a positive sum, e.g. {fact: 0.5, unanswerable: 0.5}")
        return mix
