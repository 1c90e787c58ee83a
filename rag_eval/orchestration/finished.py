"""Run folders read back as the typed records they hold (``rag_eval.read_run``): the status, the
saved config, summary and report, and the per-question records (retrieval, answers, judgements);
diff, history, judge noise and report re-rendering read them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from rag_eval.answers.answer_records import Answer
from rag_eval.attribution.records import AttributionRow
from rag_eval.errors import DataError, Problem
from rag_eval.judges.judgement import Judgement
from rag_eval.report.assemble import summary as summary_of
from rag_eval.report.report_records import Report, Summary
from rag_eval.retrievers.retrieval_records import QuestionRecord
from rag_eval.rundir import RunStatus, read_jsonl, read_report_json, read_status


@dataclass(frozen=True)
class QuestionInfo:
    """A question as a run saw it: its text and whether it is answerable."""

    question: str
    answerable: bool


@dataclass
class Run:
    """A run folder, read: its status, saved config, summary and report, and the records of every
    question (``retrieval.jsonl``, ``generation.jsonl``, ``judgements.jsonl``), typed."""

    path: Path
    status: RunStatus | None
    config: dict[str, Any]  # config.yaml as saved (a config of another version may no longer validate)
    summary: Summary
    report: Report
    retrieval: list[QuestionRecord]
    answers: list[Answer]
    judgements: list[Judgement]

    @property
    def name(self) -> str:
        return self.summary.name or self.path.name

    @property
    def finished(self) -> bool:
        """Finished, or written before status.json existed (a folder with a summary)."""
        return self.status is None or self.status.finished

    @property
    def fingerprint(self) -> str | None:
        return self.report.corpus.fingerprint if self.report.corpus else None

    @property
    def judges(self) -> list[str]:
        return list(self.report.judges.metrics) if self.report.judges else []

    @cached_property
    def by_retriever(self) -> dict[str, dict[str, QuestionRecord]]:
        """retriever -> question id -> its retrieval record."""
        out: dict[str, dict[str, QuestionRecord]] = {}
        for r in self.retrieval:
            out.setdefault(r.retriever, {})[r.question_id] = r
        return out

    @cached_property
    def rows(self) -> dict[str, dict[str, AttributionRow]]:
        """prompt -> question id -> its attribution row."""
        out: dict[str, dict[str, AttributionRow]] = {}
        for row in self.report.rows():
            out.setdefault(row.prompt, {})[row.question_id] = row
        return out

    @cached_property
    def judged(self) -> dict[tuple[str, str, str], Judgement]:
        """(judge, prompt, question id) -> its judgement."""
        return {(j.judge, j.prompt, j.question_id): j for j in self.judgements}

    @cached_property
    def questions(self) -> dict[str, QuestionInfo]:
        """question id -> its text and whether it is answerable (retrieval records first, then rows)."""
        out: dict[str, QuestionInfo] = {}
        for r in self.retrieval:
            out.setdefault(r.question_id, QuestionInfo(r.question, r.answerable))
        for row in self.report.rows():
            known = out.get(row.question_id)
            if known is None:
                out[row.question_id] = QuestionInfo(row.question, row.answerable)
            elif not known.question:
                out[row.question_id] = QuestionInfo(row.question, known.answerable)
        return out


def read_run(path: str | Path, role: str = "run") -> Run:
    """The typed records of a run folder (old folders, written before some records existed, read
    with those left empty; summary.json, where missing, from the report); a folder without
    report.json is a DataError naming why (the reason a failed run recorded)."""
    path = Path(path).resolve()
    report = Report.load(read_report_json(path, f"the {role}"))
    try:
        summary = Summary.load(json.loads((path / "summary.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        summary = Summary.load(summary_of(report))
    try:
        config = yaml.safe_load((path / "config.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        config = {}
    return Run(
        path=path,
        status=read_status(path),
        config=config if isinstance(config, dict) else {},
        summary=summary,
        report=report,
        retrieval=[QuestionRecord.load(r) for r in read_jsonl(path / "retrieval.jsonl")],
        answers=[Answer.load(a) for a in read_jsonl(path / "generation.jsonl")],
        judgements=[Judgement.from_dict(j) for j in read_jsonl(path / "judgements.jsonl")],
    )


def read_finished_run(path: str | Path, role: str = "run") -> Run:
    """A finished run folder, read; one that failed or did not finish is a DataError naming why."""
    status = read_status(Path(path).resolve())
    if status is not None and not status.finished:
        raise DataError(
            Problem(
                str(Path(path).resolve()),
                f"the {role} run {status.unfinished_why()}",
                f"finish it with rag-eval run CONFIG --resume {Path(path).resolve()}, or give a finished run",
            )
        )
    return read_run(path, role)
