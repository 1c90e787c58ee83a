"""``rag-eval prompts``: the prompts rag-eval ships, listed, or one printed to copy and edit."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rag_eval import api
from rag_eval.commands.common import add_command
from rag_eval.resources import shipped_prompts


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        "prompts",
        "the prompts rag-eval ships: list them, or print one to copy and edit",
        "Without NAME, list every prompt file rag-eval sends (answer prompts, judges, test generation), by "
        "its path under prompts/. With NAME, print that prompt, e.g. `rag-eval prompts answer_strict.md > "
        "my_prompt.md`, to edit and name in a config (generation.prompts, judges.prompts_dir).",
        config=False,
    )
    p.add_argument("name", nargs="?", help="a shipped prompt, e.g. answer_strict.md or judges/refusal.md")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    if args.name is None:
        print("\n".join(shipped_prompts()))
        return 0
    sys.stdout.write(api.prompt_text(args.name))
    return 0
