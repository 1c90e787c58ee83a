"""Prompts compared on identical retrieved contexts, question by question, with paired statistics.

Per pair of prompts and per metric (every figure of the judge registry that depends on the
answer), on the questions both prompts have a judged value for:
- ``correctness``: judged correct (1) or not (0), answerable questions with a reference;
- ``refusal_accuracy``: refused (1) or not, unanswerable questions;
- ``no_needless_refusal``: answered (1) or refused (0), answerable questions;
- ``faithfulness`` (Ragas) and ``faithfulness_yesno``: scores (continuous);
- ``ok``: the attribution outcome is ``ok`` or ``correct_refusal`` (1) or not.
Binary metrics use the exact sign test on discordant questions (McNemar); faithfulness the
paired permutation test; all with a paired bootstrap interval of the difference and Holm's
correction across metrics and pairs.
"""

from __future__ import annotations

import itertools

import numpy as np

from rag_eval.answers.answer_records import Answer
from rag_eval.attribution.records import AttributionRow
from rag_eval.base_records import PairedComparison
from rag_eval.config import AuditConfig
from rag_eval.errors import DataError, Problem
from rag_eval.judges.registry import figures
from rag_eval.report.report_records import ComparisonSection, Disagreement, PromptAnswer, Report
from rag_eval.stats import Comparison, apply_holm, compare_paired


def check_same_contexts(generations: list[Answer | dict]) -> None:
    """Every prompt must have seen the same contexts for the same question."""
    seen: dict[str, tuple[str, list[str]]] = {}
    for g in map(Answer.load, generations):
        first = seen.setdefault(g.question_id, (g.prompt, g.contexts))
        if first[1] != g.contexts:
            raise DataError(
                Problem(
                    f"question '{g.question_id}'",
                    f"prompts '{first[0]}' and '{g.prompt}' were given different contexts",
                    "a comparison needs one retrieval for every prompt; rerun rag-eval compare",
                )
            )


def compared_metrics(judges: list[str], answer_independent: bool = False) -> list[tuple[str, bool]]:
    """(name, binary) of every compared metric: each judge's figures that depend on the answer
    (higher is better: ``needless_refusal`` becomes ``no_needless_refusal``), then ``ok``.
    ``answer_independent``: also the figures of judges that read only the contexts (they differ
    between runs, never between prompts of one run)."""
    out = [
        (f.comparison_name, f.binary)
        for spec, f in figures(judges)
        if answer_independent or not spec.answer_independent
    ]
    return out + [("ok", True)]


def per_question_values(
    report: Report | dict, answerable: dict[str, bool], judges: list[str], answer_independent: bool = False
) -> dict[str, dict[str, dict[str, float]]]:
    """``{metric: {prompt: {question_id: value}}}`` from the judgements and outcomes of a run."""
    report = Report.load(report)
    values: dict[str, dict[str, dict[str, float]]] = {m: {} for m, _ in compared_metrics(judges, answer_independent)}
    figs = [(spec, f) for spec, f in figures(judges) if answer_independent or not spec.answer_independent]
    for j in report.judges.records if report.judges else []:
        if j.status != "judged":
            continue
        for spec, f in figs:
            if spec.name != j.judge or (
                f.subset != "all" and answerable.get(j.question_id) is not (f.subset == "answerable")
            ):
                continue
            if (value := f.value(j)) is None:
                continue
            values[f.comparison_name].setdefault(j.prompt, {})[j.question_id] = (
                1.0 - value if f.better == "lower" else value
            )
    for row in report.rows():
        if row.outcome not in ("not_judged", "uncertain"):
            values["ok"].setdefault(row.prompt, {})[row.question_id] = float(row.outcome in ("ok", "correct_refusal"))
    return values


def compare_prompts(cfg: AuditConfig, report: Report, answerable: dict[str, bool]) -> list[Comparison]:
    """Every metric for every pair of prompts, Holm-corrected together."""
    st, jc, g = cfg.stats, cfg.judges, cfg.generation
    assert jc is not None and g is not None  # compare runs with prompts and judges (checked before)
    values = per_question_values(report, answerable, jc.metrics)
    prompts = list(g.prompts)
    comparisons = []
    for metric, binary in compared_metrics(jc.metrics):
        for a, b in itertools.combinations(prompts, 2):
            va, vb = values[metric].get(a, {}), values[metric].get(b, {})
            common = sorted(set(va) & set(vb))
            if not common:
                continue
            comparisons.append(
                compare_paired(
                    np.array([va[q] for q in common]),
                    np.array([vb[q] for q in common]),
                    names=(a, b),
                    metric=metric,
                    binary=binary,
                    n_resamples=st.permutation_resamples,
                    bootstrap_resamples=st.bootstrap_resamples,
                    confidence=st.confidence,
                    seed=st.seed,
                    alpha=st.alpha,
                )
            )
    apply_holm(comparisons, alpha=st.alpha)
    return comparisons


def disagreements(report: Report) -> list[Disagreement]:
    """Questions whose outcome differs between prompts, with every prompt's answer and judges."""
    by_q: dict[str, list[AttributionRow]] = {}
    for r in report.rows():
        by_q.setdefault(r.question_id, []).append(r)
    return [
        Disagreement(
            question_id=q,
            question=rs[0].question,
            answers={
                r.prompt: PromptAnswer(outcome=r.outcome, answer=r.answer, why=r.why, judges=r.judges) for r in rs
            },
        )
        for q, rs in by_q.items()
        if len({r.outcome for r in rs}) > 1
    ]


def comparison_section(cfg: AuditConfig, report: Report, answerable: dict[str, bool]) -> ComparisonSection:
    """Every pair of prompts compared on every metric, and the questions where they disagree."""
    comps = compare_prompts(cfg, report, answerable)
    return ComparisonSection(
        comparisons=[PairedComparison.load(c.to_dict()) for c in comps], disagreements=disagreements(report)
    )
