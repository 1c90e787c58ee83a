"""What the retrieval stage hands the report: figures per retriever, comparisons, and the misses
with their diagnosed causes (the ``retrieval`` section of report.json)."""

from __future__ import annotations

from typing import Any

from rag_eval.base_records import Figure, Model, PairedComparison


class OtherCause(Model):
    """Another cause that fits a miss (or one its simulated fix did not confirm): ``{cause, rule,
    evidence, decided}`` as ``diagnosis.Diagnosis`` writes it."""

    cause: str = ""
    rule: str = ""
    evidence: dict[str, Any] = {}
    decided: str = ""


class Cause(Model):
    """A miss's diagnosed cause (``diagnosis.Diagnosis`` as written): the rule that found it, its
    evidence, how it was decided, and the other causes that fit."""

    cause: str = "unclear"
    rule: str = ""
    evidence: dict[str, Any] = {}
    decided: str = ""
    also: list[OtherCause] = []
    dropped: list[OtherCause] = []

    def notes(self) -> str:
        """How the cause was decided, and the other causes that fit (with their evidence)."""
        out = f"; {self.decided}" if self.decided else ""
        for a in self.also:
            out += f"; also {a.cause}: {a.rule}" + (f" ({a.decided})" if a.decided else "")
        return out


class Miss(Model):
    """An answerable question with no relevant chunk in the retriever's top ``miss_k``."""

    question_id: str = ""
    question: str = ""
    rank: int | None = None
    relevant: list[str] = []
    top: list[str] = []
    diagnosis: Cause | None = None


class SimulatedFix(Model):
    """A change tried on every answerable question before it is advised."""

    retriever: str = ""
    change: str = ""
    config: dict[str, Any] = {}
    fixes: list[str] = []
    causes: list[str] = []
    net: int = 0
    summary: str = ""


class RetrievalSection(Model):
    """The retrieval stage in the report."""

    simulated_fixes: list[SimulatedFix] = []
    # How approximate rankings were made and what they cost (HNSW: recall@10 against exact search).
    index_notes: dict[str, dict[str, Any]] = {}
    rank_histogram: dict[str, dict[str, int]] = {}
    metrics: list[str] = []
    table: list[str] = []
    miss_k: int = 0
    retrievers: dict[str, dict[str, Figure]] = {}
    comparisons: list[PairedComparison] = []
    misses: dict[str, list[Miss]] = {}


class RetrievedChunk(Model):
    id: str = ""
    score: float = 0.0
    # Graded relevance: a quote cut by a chunk boundary grades each chunk by its share (0.43).
    grade: int | float = 0


class QuestionRecord(Model):
    """One question and retriever (a line of retrieval.jsonl): the rank of the first relevant
    chunk, the chunks retrieved, the metrics (answerable questions only) and a miss's cause."""

    question_id: str = ""
    question: str = ""
    retriever: str = ""
    answerable: bool = True
    labels: Any = None
    first_relevant_rank: int | None = None
    miss: bool = False
    relevant: dict[str, int | float] = {}
    retrieved: list[RetrievedChunk] = []
    diagnosis: Cause | None = None
    metrics: dict[str, float] | None = None
