"""``rag-eval lint``: test-set health findings."""

from __future__ import annotations

import argparse
from typing import Any

from rag_eval import api
from rag_eval.commands.common import add_command


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        "lint",
        "test-set health: copied wording, missing hard cases, suspect labels, size",
        "Test-set health findings with the questions concerned and what to do; exit 1 on a finding at or "
        "above lint.fail_on.",
    )
    p.add_argument("--test-set", metavar="PATH", help="use this test set instead of the config's test_set")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    findings = api.lint(args.config, test_set_file=args.test_set)
    for f in findings:
        print(f"[{f.severity}] {f.code}: {f.message}")
        if f.questions:
            more = f" (+{len(f.questions) - 12} more)" if len(f.questions) > 12 else ""
            print(f"    questions: {', '.join(f.questions[:12])}{more}")
        if f.fix:
            print(f"    fix: {f.fix}")
    failed = findings.failed
    print(f"lint: {len(findings)} findings; " + (f"failing (lint.fail_on: {findings.fail_on})" if failed else "ok"))
    return 1 if failed else 0
