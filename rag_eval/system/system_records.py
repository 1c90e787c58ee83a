"""What an audit of the system where it runs adds to the report: how the deployed system was
called and what failed (``system``), and which traces were read, audited and skipped (``traces``)."""

from __future__ import annotations

from typing import Any

from rag_eval.base_records import Model


class FailedQuestion(Model):
    """A question the system failed to answer (not_judged)."""

    question_id: str = ""
    question: str = ""
    error: str | None = None


class PassageCounts(Model):
    """How the passages the system returned were mapped onto the corpus."""

    passages: int = 0
    by_id: int = 0
    by_text: int = 0
    own_text: int = 0
    unknown_id: int = 0


class SystemSection(Model):
    """The deployed system (or the traced application): how it was called, what it answered."""

    type: str = ""
    endpoint: str | None = None
    retriever: str | None = None
    questions: int = 0
    answered: int = 0
    failed: list[FailedQuestion] = []
    passages: PassageCounts = PassageCounts()
    unknown_ids: list[dict[str, Any]] = []
    usage: dict[str, Any] = {}
    note: str = ""


class SkippedTrace(Model):
    """A trace left out of the audit, and why."""

    trace_id: str = ""
    question: str | None = None
    reason: str = ""
    detail: str | None = None


class SkippedLine(Model):
    """A part of a trace file that could not be read (a truncated or broken JSON line, or JSON that
    is no span): where (``file:line``), the reason and what the parser said."""

    file: str = ""
    line: int = 0
    reason: str = ""  # one of rag_eval.system.traces.LINE_SKIP_REASONS
    detail: str = ""


class LabelDraw(Model):
    """The traces drawn for people to label: how many, the seed, the files to fill in."""

    n: int = 0
    seed: int | None = None
    csv: str = ""
    html: str = ""


class TracesSection(Model):
    """Production traces: the files, how many were read, audited and skipped (by reason)."""

    files: list[str] = []
    read: int = 0
    audited: int = 0
    skipped: dict[str, int] = {}
    skipped_traces: list[SkippedTrace] = []
    skipped_lines: list[SkippedLine] = []
    labels: LabelDraw | None = None
