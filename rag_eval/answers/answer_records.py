"""What the generation stage hands the judges and the report: one answer per question and
prompt (a line of generation.jsonl), and the stage's counts and model usage."""

from __future__ import annotations

from rag_eval.base_records import Model, Num
from rag_eval.llm.usage import Usage

# ``Answer.retriever`` of an answer whose contexts an answers file gave (the user's own system
# retrieved them): whether a relevant chunk was among them is read from those contexts.
OWN_CONTEXTS = "answers file"


class Answer(Model):
    """One generated (or supplied) answer on the contexts it was given; ``error`` where it failed.
    A sampled audit adds the question's ``stratum`` and ``weight``."""

    question_id: str
    prompt: str
    prompt_hash: str | None = None
    retriever: str | None = None
    contexts: list[str] = []
    answer: str | None = None
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: Num | None = None
    cached: bool | None = None
    finish_reason: str | None = None
    error: str | None = None
    input_hash: str | None = None
    stratum: str | None = None
    weight: Num | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


class PromptCounts(Model):
    """Answers of one prompt: answered, failed, and the prompt file's hash."""

    answered: int = 0
    failed: int = 0
    prompt_hash: str | None = None


class GenerationSection(Model):
    """The generation stage in the report."""

    retriever: str | None = None
    top_k: int | None = None
    questions: int = 0
    sampled: bool = False
    prompts: dict[str, PromptCounts] = {}
    usage: list[Usage] = []
    records: list[Answer] = []
