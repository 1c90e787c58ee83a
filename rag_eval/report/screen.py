"""The one-screen summary printed at the end of a run."""

from __future__ import annotations

from rag_eval.report.markdown import fmt


def one_screen(summary: dict) -> str:
    """Retrieval headline figures, judged figures and outcome shares, one line each."""
    lines = []
    for name, figs in summary.get("retrieval", {}).items():
        heads = [m for m in ("hit@1", "hit@5", "hit@10", "mrr", "ndcg@10") if m in figs]
        lines.append(f"{name:<10}" + "  ".join(f"{m} {fmt(figs[m], 2)}" for m in heads))
    for prompt, figs in summary.get("generation", {}).items():
        lines.append(
            f"[{prompt}] "
            + "  ".join(
                f"{m} {fmt(e, 2)} (n={e['n']}, not judged {e['n_not_judged']}{_uncertain(e)})" for m, e in figs.items()
            )
        )
    for prompt, shares in summary.get("attribution", {}).items():
        split = summary.get("failure_split", {}).get(prompt, {})
        parts = [f"{o} {e['count']}" for o, e in shares.items() if e["count"]]
        lines.append(
            f"[{prompt}] outcomes: "
            + ", ".join(parts)
            + (
                f"; failures: {split.get('retrieval', 0)} retrieval, {split.get('generation', 0)} generation"
                if split
                else ""
            )
        )
    return "\n".join(lines)


def _uncertain(e: dict) -> str:
    return f", uncertain {e['n_uncertain']}" if e.get("n_uncertain") else ""
