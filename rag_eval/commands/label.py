"""``rag-eval label``: a seeded sample of a run's answers drawn for people to label."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rag_eval import api
from rag_eval.commands.common import add_command
from rag_eval.labels.merge import design_path


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        "label",
        "draw a random sample of audited answers for people to label (CSV and an HTML page)",
        "Draw a seeded random sample of the run's questions (within the audit's strata, every prompt's answer), "
        "and write labels.csv and labels.html to fill in. Read them back with rag-eval report RUN_DIR --labels "
        "FILE or judges.labels in the config: every judged figure gets a prediction-powered estimate. A labels "
        "file that holds labels is never overwritten: the new draw is merged into it (every label kept, the new "
        "answers appended, each row's inclusion probability that of the union of the draws).",
        config=False,
    )
    p.add_argument("run_dir", help="a finished run folder")
    p.add_argument("--n", type=int, default=30, help="questions to draw (default 30)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="folder for labels.csv and labels.html (default: RUN_DIR/labels/)")
    p.add_argument(
        "--uniform",
        action="store_true",
        help="a plain random draw (default: favour uncertain and outcome-deciding verdicts, each answer's "
        "inclusion probability kept in labels.csv so the figures stay unbiased)",
    )
    p.add_argument(
        "--width",
        type=float,
        default=0.10,
        help="the interval half-width the labelling page tracks progress toward (default 0.10)",
    )
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    got = api.draw_labels(
        args.run_dir, n=args.n, seed=args.seed, active=not args.uniform, out=args.out, width=args.width
    )
    _print_draw(got, args)
    if got.max_chars is not None:
        print(
            f"{got.html} shows each context as the generator and the judges were given it (the first "
            f"{got.max_chars} characters; the rest folded, marked not seen by the model)."
        )
    print(f"Then: rag-eval report {Path(args.run_dir)} --labels {got.csv}")
    return 0


def _print_draw(got: api.DrawnLabels, args: argparse.Namespace) -> None:
    """What the draw added to the labels file, and what it kept."""
    merged, draw, csv_path = got.merged, got.draw, got.csv
    how = "a plain random draw" if args.uniform else "drawn favouring uncertain and outcome-deciding verdicts"
    if merged.same_draw:
        print(
            f"{csv_path} already holds this draw ({draw.n} questions, seed {args.seed}): nothing added; its "
            f"{merged.kept_labelled} labelled answers and {merged.kept_unlabelled} still to label kept as they were. "
            "Another --seed (or a larger --n) adds the answers of a new draw."
        )
    elif merged.backup is not None:
        print(
            f"kept {merged.kept_labelled} labelled answers and {merged.kept_unlabelled} still to label in {csv_path} "
            f"(labels and notes as they were), added {merged.added} new answers: a new draw ({draw.n} questions, "
            f"seed {args.seed}, {how}) drawn independently of the {len(merged.design.draws) - 1} before it; every "
            "row's inclusion probability is now that of the union of the draws "
            f"({design_path(csv_path).name}). The file as it was: {merged.backup}."
        )
    else:
        replaced = f" (replacing the {merged.replaced} unlabelled rows that were there)" if merged.replaced else ""
        print(
            f"{got.rows} answers to label ({got.questions} questions, seed {args.seed}, {how}): "
            f"{csv_path}{replaced} (fill in yes/no) or {got.html} (open in a browser; Save labels "
            "downloads labels.csv)."
        )
