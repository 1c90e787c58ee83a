"""``rag-eval view``: the local web app over a folder of runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rag_eval.commands.common import add_command
from rag_eval.view.serve import DEFAULT_HOST, DEFAULT_PORT, serve


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        "view",
        "browse runs, compare two, and label answers in the browser (a local web app)",
        "Serve a local web app over RUNS_DIR: the runs with their headline figures and status, a run's report "
        "and questions (filtered by outcome, judge, verdict, uncertain), two runs side by side with the "
        "questions that moved, and labelling one answer at a time (keyboard: y / n / s), each label written at "
        "once to RUN_DIR/labels/labels.csv with the prediction-powered figures updated. Run folders are only "
        "read; only labels files are written.",
        config=False,
    )
    p.add_argument("runs_dir", nargs="?", default="runs", help="the folder holding run folders (default: runs)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
    p.add_argument(
        "--adapt",
        action="store_true",
        help="show each run's figures with its judges adapted to its corpus by the labels given so far "
        "(cross-fitted, as rag-eval report --labels F --adapt; nothing saved)",
    )
    p.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}, this machine only; another address prints a warning)",
    )
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    return serve(Path(args.runs_dir), host=args.host, port=args.port, adapt=args.adapt)
