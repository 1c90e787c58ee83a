"""The one-screen summary printed at the end of a run."""

from __future__ import annotations

from rag_eval.judges.judge_records import JudgedFigure
from rag_eval.report.formatting import fmt
from rag_eval.report.report_records import Summary

HEADLINE = ("hit@1", "hit@5", "hit@10", "mrr", "ndcg@10")


def one_screen(summary: Summary | dict) -> str:
    """Retrieval headline figures, judged figures and outcome shares, one line each; then, where
    answers or judgements failed, how many and the first error."""
    summary = Summary.load(summary)
    lines = []
    for name, figs in summary.retrieval.items():
        heads = [m for m in HEADLINE if m in figs]
        lines.append(f"{name:<10}" + "  ".join(f"{m} {fmt(figs[m], 2)}" for m in heads))
    for prompt, judged in summary.generation.items():
        lines.append(
            f"[{prompt}] "
            + "  ".join(
                f"{m} {fmt(e, 2)} (n={e.n}, not judged {e.n_not_judged}{_uncertain(e)})" for m, e in judged.items()
            )
        )
    for prompt, shares in summary.attribution.items():
        split = summary.failure_split.get(prompt)
        parts = [f"{o} {e.count}" for o, e in shares.items() if e.count]
        lines.append(
            f"[{prompt}] outcomes: "
            + ", ".join(parts)
            + (f"; failures: {split.retrieval} retrieval, {split.generation} generation" if split else "")
        )
    if summary.failures is not None and summary.failures.any:
        lines.append(summary.failures.line())
    return "\n".join(lines)


def _uncertain(e: JudgedFigure) -> str:
    return f", uncertain {e.n_uncertain}" if e.n_uncertain else ""
