"""``rag-eval judge-check --escalate``: the cascade of two judges measured on labelled cases.

Three ways to decide each case, all out of fold where anything is fitted:
- the first judge alone: its cut-off fitted on the other folds decides every case;
- the second judge alone: every decision asked of it (its calibrated cut-off where one is saved
  for it, else the word it wrote);
- the cascade: the first judge decides where it is sure (outside the band fitted, with its
  cut-off, on the other folds), and only its uncertain decisions go to the second.
Each with its accuracy against the labels (Wilson interval), the cases left undecided, the
calls to each judge and their cost. The cascade's calls to the second judge are those it needs;
their cost is each judge's mean cost per call times that number.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from rag_eval.base_records import required
from rag_eval.calibration.cutoffs import blends_for, cutoffs_for, out_of_fold
from rag_eval.judges.escalation import Opinion, second_opinion
from rag_eval.judges.judge_check import Case, as_cases, cutoff_fitter, kind_of
from rag_eval.judges.registry import CASE_KINDS, JUDGES, judges_for
from rag_eval.judges.scored import ScoredJudges, correctness_variant, split_statements
from rag_eval.judges.statements import without_markers
from rag_eval.judges.uncertain import band_folds, bands_for
from rag_eval.judges.uncertain import target as target_of
from rag_eval.llm.session import LLMSession
from rag_eval.llm.settings import LLMConfig
from rag_eval.llm.usage import Usage
from rag_eval.stats import Estimate, wilson_interval


def _statements(judge: str) -> bool:
    return JUDGES[judge].checked.reading == "statements"


def _yes_is_positive(judge: str) -> bool:
    """Whether the judge's prompts ask so that "yes" is its positive label (statements: supported)."""
    spec = JUDGES[judge]
    return _statements(judge) or spec.yes_no[0] == spec.positive


@dataclass
class CascadeRow:
    """One way of deciding the cases of one judge."""

    judge: str
    way: str  # "first alone", "second alone", "cascade"
    accuracy: Estimate
    undecided: int
    calls_first: int
    calls_second: int
    cost: float

    def to_dict(self) -> dict:
        return asdict(self)


def _values(judge: str, case: Case, placeholders: tuple[str, ...]) -> list[dict[str, str]]:
    """The texts of each decision the judge takes on a case: its prompt's placeholders (the case's
    fields of those names), or one decision per statement of the answer for a statement judge
    (faithfulness)."""

    if not _statements(judge):
        fields = case.dump()
        return [{p: fields[p] for p in placeholders}]
    context = "\n\n".join(required(case.contexts, f"case {case.id}'s contexts"))
    answer = required(case.answer, f"case {case.id}'s answer")
    question = required(case.question, f"case {case.id}'s question")
    claims = [c for s in split_statements(answer) if (c := without_markers(s))]  # as the audit's judge has them
    return [{"context": context, "question": question, "statement": c} for c in claims]


def second_opinions(
    cases: Sequence[Case | dict], judges: list[str], llm_cfg: LLMConfig, cache_dir: Path, prompts_dir: Path | None
) -> tuple[dict[str, list[list[Opinion] | None]], dict]:
    """Every decision of every case asked of the second judge; and its usage."""
    session = LLMSession(cache_dir)
    rows = as_cases(cases)

    async def main():
        llm = session.llm(llm_cfg, "judge-check --escalate")
        second = ScoredJudges.load(llm, prompts_dir)
        second.cutoffs, second.calibrated = cutoffs_for(llm.identity, second, {})
        second.blends = blends_for(llm.identity, second)
        bands, _ = bands_for(llm.identity, second, "auto", judges=judges)

        async def one(judge: str, case: Case) -> list[Opinion]:
            variant = (
                correctness_variant(required(case.reference, f"case {case.id}'s reference"))
                if judge == "correctness"
                else judge
            )
            values = _values(judge, case, second.prompt_for(variant).placeholders)
            yes = _yes_is_positive(judge)
            return list(await asyncio.gather(*(second_opinion(second, bands, variant, yes, v) for v in values)))

        out: dict[str, list[list[Opinion] | None]] = {}
        try:
            for judge in judges:
                mine = [i for i, c in enumerate(rows) if judge in judges_for(c.judge)]
                got = await asyncio.gather(*(one(judge, rows[i]) for i in mine))
                out[judge] = [None] * len(rows)
                for i, ops in zip(mine, got):
                    out[judge][i] = ops
            return out, llm.usage.to_dict()
        finally:
            await session.aclose()

    try:
        return asyncio.run(main())
    finally:
        session.close()


def _per_call(usage: dict | Usage) -> float:
    """A model's mean cost per request (cache hits included: the cost of the first call)."""
    u = Usage.load(usage)
    return u.cost / max(u.calls + u.cache_hits, 1)


def _second_decision(ops: list[Opinion], threshold: float, single: bool) -> bool | None:
    if not ops or any(op.positive is None for op in ops):
        return None
    if single:
        return bool(ops[0].positive)
    return float(np.mean([op.positive for op in ops])) >= threshold


def measure(
    judge: str,
    cases: Sequence[Case | dict],
    first_preds: list,
    second_ops: list[list[Opinion] | None],
    usage_first: dict,
    usage_second: dict,
    *,
    threshold: float,
    folds: int,
    seed: int,
    target: float | None = None,
) -> list[CascadeRow]:
    """The three ways of deciding this judge's cases (see the module's docstring)."""

    rows = as_cases(cases)
    kind = kind_of(judge)
    ok = [i for i, c in enumerate(rows) if c.judge == kind and first_preds[i].error is None]
    positive = np.array([rows[i].label == CASE_KINDS[kind].positive for i in ok])
    probs = [np.array(first_preds[i].probs) for i in ok]
    variant = [first_preds[i].variant or judge for i in ok]
    decide, fit = cutoff_fitter(judge, probs, positive, variant, threshold)
    first, _ = out_of_fold(len(ok), positive, fit, lambda test, c: decide(list(test), c), folds=folds, seed=seed)
    targets = {v: target or target_of(v) for v in set(variant)}
    unc, dec, band_of = band_folds(
        probs, positive, variant, fit, targets=targets, threshold=threshold, folds=folds, seed=seed
    )
    single = not _statements(judge)
    second = [_second_decision(second_ops[i] or [], threshold, single) for i in ok]
    n_second_calls = sum(len(second_ops[i] or []) for i in ok)
    per_call = _per_call(usage_second)
    cascade: list[bool | None] = []
    calls_cascade = 0
    for n, i in enumerate(ok):
        if not unc[n]:
            cascade.append(bool(dec[n]))
            continue
        ops = second_ops[i] or []
        if single:
            calls_cascade += 1
            cascade.append(_second_decision(ops, threshold, True))
            continue
        # Only the statements in the band go to the second judge; the others keep the first's decision.
        low, high = band_of[n]
        votes: list[bool | None] = []
        for p, op in zip(probs[n], ops):
            if low <= p < high:
                calls_cascade += 1
                votes.append(op.positive)
            else:
                votes.append(bool(p >= high))
        lo = sum(v is True for v in votes) / len(votes)
        hi = sum(v is not False for v in votes) / len(votes)
        cascade.append(None if (lo >= threshold) != (hi >= threshold) else lo >= threshold)
    calls_first = sum(len(p) for p in probs)
    cost_first = _per_call(usage_first) * calls_first

    def row(way: str, decided: list[bool | None], c1: int, c2: int, cost: float) -> CascadeRow:
        got = [(d, p) for d, p in zip(decided, positive) if d is not None]
        right = sum(d == p for d, p in got)
        return CascadeRow(judge, way, wilson_interval(int(right), len(got)), len(decided) - len(got), c1, c2, cost)

    return [
        row("first alone", [bool(x) for x in first], calls_first, 0, cost_first),
        row("second alone", second, 0, n_second_calls, per_call * n_second_calls),
        row("cascade", cascade, calls_first, calls_cascade, cost_first + per_call * calls_cascade),
    ]
