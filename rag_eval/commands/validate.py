"""``rag-eval validate``: the config, corpus and test set checked; no retrieval."""

from __future__ import annotations

import argparse
from typing import Any

from rag_eval import api
from rag_eval.commands.common import add_command
from rag_eval.errors import DataError


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        "validate",
        "check the config, the corpus and the test set's labels; no retrieval",
        "Check the config, load the corpus and resolve every label of the test set, and make every check run "
        "makes before its first model call (the system's URL and secrets, prompt files, judge prompts, labels "
        "and answers files, API keys); list every problem with its file and line, and how many chunks each "
        "evidence quote matches. Exit 2 on any problem. --try asks the system one question and shows the "
        "request, the raw reply and what was parsed from it.",
    )
    p.add_argument(
        "--try",
        dest="try_question",
        metavar="QUESTION",
        help="also ask the configured system this question once and show the filled request, the raw reply "
        "and what was parsed from it (answer, passages, ids)",
    )
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    checked = api.validate(args.config, try_question=args.try_question)
    if checked.trial_text is not None:
        print(checked.trial_text)
    if checked.trial_problem is not None:
        raise DataError(checked.trial_problem)
    questions = checked.inputs.questions
    n_ans = sum(q.answerable for q in questions)
    print(
        f"{args.config}: ok. Corpus: {len(checked.inputs.corpus)} chunks ({checked.inputs.corpus.source}). "
        f"Test set: {len(questions)} questions, {n_ans} answerable, {len(questions) - n_ans} unanswerable."
    )
    counts = [n for q in questions for n in q.quote_matches.values()]
    if counts:
        print(
            f"Evidence quotes: {len(counts)}, matching {min(counts)} to {max(counts)} chunks each "
            f"(median {sorted(counts)[len(counts) // 2]})."
        )
    for f in checked.generic:
        print(f"warning: {f.message} ({', '.join(f.questions[:8])}). Fix: {f.fix}")
    for f in checked.split:
        print(f"note: {f.message}")
    cfg = checked.config
    if cfg.generation is None and cfg.system is None and (cfg.judges is not None or cfg.gates):
        left = api.unchecked_by_retrieval(cfg)
        if cfg.judges is not None or left:
            print(
                "note: no generation or system section: rag-eval run refuses this config; rag-eval retrieval runs "
                "it" + (f", leaving {len(left)} gates unchecked ({', '.join(left)})" if left else "")
            )
    return 0
