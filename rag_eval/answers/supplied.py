"""Answers a system already produced, supplied as rows: question, contexts (texts), answer and an
optional reference, with Ragas' column names accepted; read into the records of an audit (the
contexts as a corpus, the rows as questions, one answer record per row)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from rag_eval.data.records import Record
from rag_eval.data.testset import stable_id
from rag_eval.errors import DataError, Problem
from rag_eval.types import Chunk, Corpus, Question

# Each field and the column names that may hold it (rag-eval's, Ragas 0.2+, Ragas 0.1).
COLUMNS = {
    "id": ("id", "question_id"),
    "question": ("question", "user_input"),
    "contexts": ("contexts", "retrieved_contexts"),
    "answer": ("answer", "response"),
    "reference": ("reference", "ground_truth", "ground_truths", "reference_answer"),
    "answerable": ("answerable",),
}


@dataclass
class SuppliedAnswer:
    """One answer to judge, with the row it came from."""

    id: str
    question: str
    contexts: list[str]
    answer: str
    reference: str | None
    answerable: bool
    where: str


def _field(d: dict, name: str) -> Any:
    for col in COLUMNS[name]:
        if col in d and d[col] is not None:
            return d[col]
    return None


def parse_rows(records: list[Record]) -> list[SuppliedAnswer]:
    """Every row as a SuppliedAnswer; raises DataError listing every bad row."""
    out: list[SuppliedAnswer] = []
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for rec in records:
        d, where = rec.data, rec.where
        question, answer, contexts = _field(d, "question"), _field(d, "answer"), _field(d, "contexts")
        if not isinstance(question, str) or not question.strip():
            problems.append(Problem(where, "no question", "give each row a question (or user_input)"))
            continue
        if not isinstance(answer, str):
            problems.append(Problem(where, "no answer (a string)", "give each row an answer (or response)"))
            continue
        if isinstance(contexts, str):
            contexts = [contexts]
        if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
            problems.append(
                Problem(
                    where,
                    "contexts must be a list of passage texts",
                    "give the texts the answer was generated from as contexts (or retrieved_contexts)",
                )
            )
            continue
        reference = _field(d, "reference")
        if isinstance(reference, list):  # Ragas 0.1's ground_truths
            reference = " ".join(str(r) for r in reference)
        answerable = _field(d, "answerable")
        if answerable is not None and not isinstance(answerable, bool):
            problems.append(Problem(where, f"answerable must be true or false, got {answerable!r}", "fix the value"))
            continue

        qid = str(_field(d, "id")) if _field(d, "id") not in (None, "") else stable_id(question)
        if qid in seen:
            problems.append(
                Problem(where, f"duplicate question id '{qid}' (first at {seen[qid]})", "give each row its own id")
            )
            continue
        seen[qid] = where
        out.append(
            SuppliedAnswer(
                qid, question, contexts, answer, reference or None, True if answerable is None else answerable, where
            )
        )
    if problems:
        raise DataError(problems)
    return out


def context_id(text: str) -> str:
    """A context's id: a hash of its text, so the same passage is one chunk wherever it appears."""
    return "ctx-" + hashlib.sha1(text.encode()).hexdigest()[:12]


def as_audit_inputs(rows: list[SuppliedAnswer]) -> tuple[Corpus, list[Question], list[dict]]:
    """The contexts as a corpus, the rows as questions, and one generation record per row."""
    chunks: dict[str, Chunk] = {}
    questions, generations = [], []
    for r in rows:
        ids = []
        for text in r.contexts:
            cid = context_id(text)
            chunks.setdefault(cid, Chunk(cid, text))
            ids.append(cid)
        questions.append(Question(r.id, r.question, {}, r.answerable, r.reference, r.where))
        generations.append(
            {
                "question_id": r.id,
                "prompt": "system",
                "prompt_hash": None,
                "retriever": "supplied",
                "contexts": ids,
                "answer": r.answer,
                "model": "supplied",
                "error": None,
            }
        )
    return Corpus(list(chunks.values()), source="contexts (given)"), questions, generations
