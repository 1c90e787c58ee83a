"""The label columns of one run's labels file: the built-in ones (``correct``, ``faithful``,
``refused``) and one per criterion of the run (``judges.criteria``, read back from its report),
each with the question a person answers yes or no.

A criterion's column holds the person's answer to the criterion's own question, as the judge was
asked it: "Does the answer give legal advice?" is answered yes for an answer that gives legal
advice, although ``pass: no`` makes that a failure. A rubric's column asks whether the answer
reaches its pass level. Reading a labels file turns each criterion's answer into whether the answer
passes (``passes``), which is what the criterion's figure counts.
"""

from __future__ import annotations

from collections.abc import Mapping

from rag_eval.judges.registry import HUMAN_LABELS, JUDGES, OPTIONAL_LABELS, Criterion
from rag_eval.labels.label_records import JudgedReport


def criteria_of(report: JudgedReport | None) -> dict[str, Criterion]:
    """The run's criteria, read back from its report (none for a run without any)."""
    judges = report.judges if report is not None else None
    return {name: c.criterion() for name, c in (judges.criteria if judges else {}).items()}


def labelling_question(c: Criterion) -> str:
    """The question a person answers yes or no for a criterion: its own question; for a rubric,
    whether the answer reaches the pass level."""
    if not c.rubric:
        return c.question
    level = c.pass_level or 1
    return f"{c.question} Does it reach level {level} ({c.levels[level - 1]}) or above?"


def label_columns(criteria: Mapping[str, Criterion] | None = None) -> dict[str, str]:
    """Every label column of a labels file and its question: the built-in ones, then one per
    criterion, named as the criterion."""
    return {**HUMAN_LABELS, **{name: labelling_question(c) for name, c in (criteria or {}).items()}}


def run_columns(report: JudgedReport | None) -> dict[str, str]:
    """The label columns of one run: ``label_columns`` of its criteria, and the column of each
    optional built-in judge it ran (``citations_support`` where the citations judge ran)."""
    metrics = report.judges.metrics if report is not None and report.judges is not None else []
    extra = {col: q for judge, (col, q) in OPTIONAL_LABELS.items() if judge in metrics}
    columns = {**label_columns(criteria_of(report)), **extra}
    if metrics:
        # A built-in column no judge of the run reads (``faithful`` without a faithfulness judge) is a
        # question a person would answer for nothing (user trial 4 F16).
        read = {JUDGES[m].human_label for m in metrics if m in JUDGES}
        columns = {c: q for c, q in columns.items() if c not in HUMAN_LABELS or c in read}
    return columns


def optional_columns(names) -> dict[str, str]:
    """The optional built-in judges' columns among ``names`` (a labels file's header)."""
    return {col: q for col, q in OPTIONAL_LABELS.values() if col in names}


def passes(c: Criterion, answer: bool | None) -> bool | None:
    """Whether an answer passes a criterion, from a person's yes or no to its labelling question
    (None: not labelled)."""
    if answer is None:
        return None
    return answer if c.rubric or c.passes == "yes" else not answer
