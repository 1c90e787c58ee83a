"""``rag-eval run``: the whole audit, written to a run folder; then the gates."""

from __future__ import annotations

import argparse
from typing import Any

from rag_eval import api, progress
from rag_eval.commands.common import add_command, ci_options, finish, gates_of


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        "run",
        "the whole audit: retrieval, generation, judges, report",
        "Retrieval, generation, judges, attribution and the report, written to a run folder as each record "
        "completes; then the gates (exit 1 when one fails).",
    )
    p.add_argument("--out", help="folder for run folders (default: report.out in the config)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the LLM response cache")
    p.add_argument(
        "--resume",
        nargs="?",
        const="newest",
        metavar="RUN_DIR",
        help="continue the newest unfinished run of this config (or RUN_DIR), reusing finished records",
    )
    ci_options(p)
    p.add_argument("--test-set", metavar="PATH", help="use this test set instead of the config's test_set")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    result = api.audit(
        args.config,
        test_set_file=args.test_set,
        out=args.out,
        use_cache=not args.no_cache,
        resume=True if args.resume == "newest" else args.resume,
        progress=progress.shown(),
        baseline=args.baseline,
        gates=gates_of(args, "audit"),
    )
    return finish(result)
