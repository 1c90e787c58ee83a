"""``rag-eval compare``: every prompt on the same retrieved contexts, compared question by question."""

from __future__ import annotations

import argparse
from typing import Any

from rag_eval import api, progress
from rag_eval.base_records import PairedComparison
from rag_eval.commands.common import add_command, ci_options, finish, gates_of


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        "compare",
        "compare prompts on the same retrieved contexts, with paired statistics",
        "Every prompt of generation.prompts on identical contexts, judged, then compared question by question "
        "(exact sign test or permutation test, Holm-corrected across metrics and pairs).",
    )
    p.add_argument("--out", help="folder for run folders (default: report.out in the config)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the LLM response cache")
    p.add_argument(
        "--stop-when-settled",
        action="store_true",
        help="judge the questions in a seeded random order, a batch at a time, and stop once an always-valid "
        "sequential test settles every prompt pair's difference of the outcome ok",
    )
    p.add_argument("--batch", type=int, default=10, help="questions per look with --stop-when-settled (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the question order with --stop-when-settled")
    ci_options(p)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    result = api.compare(
        args.config,
        out=args.out,
        use_cache=not args.no_cache,
        progress=progress.shown(),
        stop_when_settled=args.stop_when_settled,
        batch=args.batch,
        seed=args.seed,
        baseline=args.baseline,
        gates=gates_of(args, "compare"),
    )
    comparison = result.report.comparison
    seq = comparison.sequential if comparison else None
    if seq:
        print(
            f"stopped {'when settled' if seq.settled else 'at the end, not settled'}: {seq.questions_used} of "
            f"{seq.questions_total} questions, about {seq.calls_saved_estimate} model calls saved"
        )
    for pairs in result.summary.comparison.values():
        for c in pairs.values():
            print(f"- {PairedComparison.load(c).verdict}")
    return finish(result)
