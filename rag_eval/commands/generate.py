"""``rag-eval generate``: a test set written from the corpus by the model, every label verified."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rag_eval import api, progress
from rag_eval.commands.common import add_command
from rag_eval.errors import ConfigError, Problem
from rag_eval.report.report_records import LintFinding
from rag_eval.testgen.question_writer import GenerationReport


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        "generate",
        "generate a test set from the corpus; every evidence quote verified (embedded model by default)",
        "Draw chunks of the config's corpus (seeded, spread over documents), have the model (testgen.llm) write "
        "a question, a reference and an evidence quote for each, keep only questions whose quote is in the chunk, "
        "whose wording is not copied, whose reference the quote supports; unanswerable questions are kept when no "
        "top chunk answers them. Writes a JSONL test set (OUT) and its report beside it (questions.jsonl: questions.report.json).",
    )
    p.add_argument("--n", type=int, help="questions to keep (default: testgen.n, 50)")
    p.add_argument("--out", default="questions.generated.jsonl", help="the test set to write (JSONL)")
    p.add_argument("--seed", type=int, help="seed of the chunk draw (default: testgen.seed)")
    p.add_argument(
        "--mix", help="kinds and shares, e.g. fact=0.35,symbol=0.2,paraphrase=0.2,multi=0.1,unanswerable=0.15"
    )
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the LLM response cache")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    given = {"n": args.n, "seed": args.seed, "mix": parse_mix(args.mix) if args.mix else None}
    overrides: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    report = GenerationReport.load(
        api.generate(args.config, out=args.out, progress=progress.shown(), use_cache=not args.no_cache, **overrides)
    )
    print(
        f"{report.kept} questions kept of {report.drawn} drafted ({report.asked} asked) in "
        f"{report.seconds:.0f} s ({report.seconds_per_kept or 0:.1f} s per kept question), model {report.model}"
    )
    if report.kept < report.asked:
        print(
            f"fewer than the {report.asked} asked: the drafts of 4 rounds (or every passage and kind) were used up, and "
            "the rest were dropped by the checks below; ask for more (--n), or another --seed, for more"
        )
    print("kinds: " + ", ".join(f"{k} {n}" for k, n in report.kinds.items()))
    if report.quotes:
        print("evidence quotes of answerable drafts: " + ", ".join(f"{k} {n}" for k, n in report.quotes.items()))
    if report.dropped:
        print("dropped: " + ", ".join(f"{why} {n}" for why, n in report.dropped.items()))
    for f in map(LintFinding.load, report.lint):
        print(f"lint [{f.severity}] {f.code}: {f.message}")
    if report.lint_error:
        print(f"lint: {report.lint_error}")
    print(f"wrote {args.out} and {Path(args.out).with_suffix('.report.json')}")
    return 0 if report.kept else 1


def parse_mix(text: str) -> dict[str, float]:
    """``--mix fact=0.5,paraphrase=0.3``: kind -> share."""
    mix = {}
    for part in text.split(","):
        kind, _, share = part.partition("=")
        try:
            mix[kind.strip()] = float(share)
        except ValueError:
            raise ConfigError(
                Problem("--mix", f"'{part}' is not KIND=SHARE", "e.g. --mix fact=0.5,paraphrase=0.3,unanswerable=0.2")
            ) from None
    return mix
