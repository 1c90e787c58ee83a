"""Judging answers a system already produced: rows of question, contexts (texts), answer and an
optional reference, with Ragas' column names accepted. No retrieval labels exist, so a retrieval
miss is decided by the context-recall judge (the reference is not in the contexts)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval.answers.answer_records import Answer
from rag_eval.cache_dirs import cache_root
from rag_eval.config import AuditConfig
from rag_eval.data.records import Record
from rag_eval.data.testset import stable_id
from rag_eval.engine import make_engine
from rag_eval.errors import DataError, Problem
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.judging import run_judging
from rag_eval.llm.session import LLMSession
from rag_eval.report.assemble import Retrieved, add_judging, supplied_report
from rag_eval.report.files import write_report
from rag_eval.report.report_records import Report
from rag_eval.rundir import write_json, write_text
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
    out, problems, seen = [], [], {}
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


def retrieved_by_recall(recall: str | None, judgements: list[Judgement]) -> Retrieved:
    """With no retrieval labels, a question's contexts missed when the context-recall judge
    ``recall`` found the reference absent from them (score under 0.5); why, with its reason."""
    verdicts = {j.question_id: j for j in judgements if j.judge == recall}

    def retrieved(q: Question) -> tuple[bool, str | None]:
        rj = verdicts.get(q.id)
        if rj and rj.status == "judged" and rj.score is not None and rj.score < 0.5:
            return False, f"{recall} {rj.score:.2f} < 0.5: the contexts do not hold the reference ({rj.reason or ''})"
        return True, None

    return retrieved


def judge_supplied(cfg: AuditConfig, rows: list[SuppliedAnswer], run_dir: Path, use_cache: bool = True) -> Report:
    """Judges and attribution for supplied answers, written to ``run_dir``; returns the report.
    With no retrieval labels, a retrieval miss is the context-recall judge finding the reference
    missing from the contexts."""
    corpus, questions, generations = as_audit_inputs(rows)
    write_text(run_dir / "generation.jsonl", "".join(json.dumps(g, ensure_ascii=False) + "\n" for g in generations))
    session = LLMSession(
        cache_root(cfg.cache_folder), use_cache=use_cache, log_dir=run_dir, engine=make_engine(cfg.engine)
    )
    try:
        judgements, info = run_judging(cfg, corpus, questions, generations, session, run_dir)
    finally:
        write_json(run_dir / "llm_usage.json", session.usage())
        session.close()
    recall = cfg.judges.deciding("retrieval")
    report = supplied_report(cfg, len(rows), recall)
    answers = [Answer.load(g) for g in generations]
    add_judging(report, cfg, questions, answers, judgements, retrieved_by_recall(recall, judgements), reuse=info)
    write_report(run_dir, report)
    return report
