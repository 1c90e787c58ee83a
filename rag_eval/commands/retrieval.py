"""``rag-eval retrieval``: the retrieval stage alone (no LLM)."""

from __future__ import annotations

import argparse
from typing import Any

from rag_eval import api, progress
from rag_eval.base_records import PairedComparison
from rag_eval.commands.common import add_command, ci_options, finish, gates_of
from rag_eval.config import load_config


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        "retrieval",
        "run the retrieval stage only (no LLM)",
        "Rank every question with every retriever; metrics with bootstrap intervals, paired comparisons "
        "(p-values Holm-corrected across comparisons), misses with their probable causes.",
    )
    p.add_argument("--out", help="folder for run folders (default: report.out in the config)")
    ci_options(p)
    p.add_argument("--test-set", metavar="PATH", help="use this test set instead of the config's test_set")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    result = api.retrieval(
        args.config,
        test_set_file=args.test_set,
        out=args.out,
        progress=progress.shown(),
        baseline=args.baseline,
        gates=gates_of(args, "retrieval"),
    )
    left = api.unchecked_by_retrieval(load_config(args.config))
    if left:
        print(f"not checked by the retrieval stage (rag-eval run checks them): {len(left)} gates: {', '.join(left)}")
    comparisons = result.summary.retrieval_comparison
    n = sum(len(pairs) for pairs in comparisons.values())
    if n:
        print(
            f"Paired comparisons (p-values Holm-corrected across all {n}; the 95% intervals of the differences "
            "are per comparison, not adjusted):"
        )
    for pairs in comparisons.values():
        for pair in pairs.values():
            print(f"- {PairedComparison.load(pair).verdict}")
    return finish(result)
