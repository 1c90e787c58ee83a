"""``rag-eval history``: a system's runs over time."""

from __future__ import annotations

import argparse
from typing import Any

from rag_eval import api
from rag_eval.commands.common import add_command


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        "history",
        "a system's runs over time: headline figures with intervals, and where the config or corpus changed",
        "List the finished run folders under RUNS_DIR (of one config with --config) in time order with their "
        "headline figures and intervals, marking the runs whose config, corpus or test set changed; write a "
        "self-contained HTML page plotting each headline figure across the runs.",
        config=False,
    )
    p.add_argument("runs_dir", help="the folder holding run folders (report.out of the config, e.g. runs/)")
    p.add_argument("--config", metavar="NAME", help="only the runs of this config name")
    p.add_argument("--html", metavar="PATH", help="the HTML page to write (default: RUNS_DIR/history.html)")
    p.add_argument("--json", metavar="PATH", help="also write the history as JSON")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    hist = api.history(args.runs_dir, config=args.config, html=args.html, json_out=args.json)
    print(str(hist))
    print(f"wrote {hist.written[0]}")
    if args.json:
        print(f"wrote {args.json}")
    return 0
