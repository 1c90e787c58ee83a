"""The answers stage's settings: the prompts answered on one retriever's contexts (``generation:``)."""

from __future__ import annotations

import re

from pydantic import (
    Field,
    field_validator,
)

from rag_eval.config_base import Settings
from rag_eval.llm.settings import LLMConfig


class CitationsConfig(Settings):
    """How the citations of answers are read (``rag_eval/judges/citations.py``), beside the common
    forms [1], [1, 3], [1-3], ¹, [^1], [doc2], [chunk id], (Source: title)."""

    pattern: str | None = Field(
        None,
        description="an answer's own citation form (a service's, a supplied answer's): a regular expression whose "
        "named group ref holds a context's number (as the prompt numbered them), chunk id or title, e.g. "
        "'【(?P<ref>\\d+)†[^】]*】'; read before the common forms",
    )

    @field_validator("pattern")
    @classmethod
    def _pattern_has_ref(cls, pattern: str | None) -> str | None:
        if pattern is None:
            return None
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        if "ref" not in compiled.groupindex:
            raise ValueError("the pattern needs a named group ref around what is cited, e.g. \\[(?P<ref>\\d+)\\]")
        return pattern


class GenerationConfig(Settings):
    """Answers from each prompt on one retriever's top-k contexts, identical for every prompt."""

    retriever: str = Field(
        description="the retriever (a name under retrieval.retrievers) whose top chunks every prompt answers from"
    )
    top_k: int = Field(
        5,
        ge=1,
        description="how many of its top chunks each answer gets as contexts; a question is retrieved or missed "
        "by whether a relevant chunk is among them",
    )
    prompts: dict[str, str] = Field(
        default_factory=lambda: {"baseline": "prompts/answer.md"},
        min_length=1,
        description="each prompt by the name the report gives it: a file with {question} and {contexts} "
        "(or {numbered_contexts}: numbered [1], [2] for citations, as prompts/answer_cite.md) "
        "(prompts/... finds the shipped ones from any folder); two or more are compared on the same contexts",
    )
    sample: int | None = Field(None, ge=1, description="generate and judge a stratified, seeded sample of questions")
    max_context_chars: int = Field(2000, ge=100, description="each context is cut to this many characters")
    answers: str | None = Field(None, description="the system's own answers: a JSONL file or package.module:function")
    citations: CitationsConfig | None = Field(None, description="how citations are read from the answers")
    llm: LLMConfig = LLMConfig()
