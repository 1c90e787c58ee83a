"""``rag-eval diff``: two finished runs compared question by question."""

from __future__ import annotations

import argparse
from typing import Any

from rag_eval import api
from rag_eval.commands.common import add_command
from rag_eval.errors import ConfigError, Problem


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        "diff",
        "two finished runs compared question by question: paired tests per figure, the questions that moved",
        "Match the questions of two run folders by id; for every figure both have (retrieval metrics per "
        "retriever, judged figures and outcome shares per prompt) the paired difference new - base with its "
        "bootstrap interval, the exact sign test (binary) or permutation test (scores), Holm-corrected, and the "
        "verdict; then the questions that moved, worst regression first, with both runs' evidence. Runs over "
        "different chunkings compare the questions labelled by evidence quotes; the others are listed with why.",
        config=False,
    )
    p.add_argument("base", help="the baseline run folder (e.g. the main branch's last audit)")
    p.add_argument("new", help="the run folder to compare with it")
    p.add_argument("--json", metavar="PATH", help="write the diff as JSON (figures, moved questions, not compared)")
    p.add_argument("--md", metavar="PATH", help="write the diff as Markdown, with both runs' evidence per question")
    p.add_argument(
        "--pair",
        action="append",
        metavar="BASE=NEW",
        help="compare a retriever or prompt of the base run with one named differently in the new run (repeatable)",
    )
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    result = api.diff(args.base, args.new, pairs=parse_pairs(args.pair or []), json_out=args.json, md_out=args.md)
    print(str(result))
    if args.json:
        print(f"wrote {args.json}")
    if args.md:
        print(f"wrote {args.md}")
    return 0


def parse_pairs(items: list[str]) -> dict[str, str]:
    """``--pair BASE=NEW`` options: base name -> new name."""
    pairs = {}
    for item in items:
        base, sep, new = item.partition("=")
        if not sep or not base.strip() or not new.strip():
            raise ConfigError(
                Problem(
                    f"--pair {item}", "a pair is BASE_NAME=NEW_NAME", "e.g. --pair bm25=hybrid (a retriever or prompt)"
                )
            )
        pairs[base.strip()] = new.strip()
    return pairs
