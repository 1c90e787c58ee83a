"""What the commands share: the command's parser with its common options, the CI options of the
audit commands, and the end of an audit's output (the one-screen summary and the gates)."""

from __future__ import annotations

import argparse
from typing import Any

from rag_eval import api
from rag_eval.base_records import required
from rag_eval.report.gates import GateResult, describe_failure
from rag_eval.report.screen import one_screen
from rag_eval.system.replies import failure_lines

CONFIG_HELP = (
    "the audit's YAML file (a starter one: the README's \"Five minutes on your own documents\"); its paths are "
    "relative to its own folder"
)


def add_command(sub: Any, name: str, summary: str, description: str, *, config: bool = True) -> argparse.ArgumentParser:
    """The command's parser: its help line and description, ``-q`` also after the command, and the
    config argument first unless ``config`` is False."""
    # SUPPRESS keeps a top-level -q from being reset by the command's own default.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    p = sub.add_parser(name, help=summary, description=description, parents=[common])
    if config:
        p.add_argument("config", help=CONFIG_HELP)
    return p


def gates_of(args: argparse.Namespace, suite: str) -> api.Gates:
    """The gates an audit command checks after its run, with the CI files its options ask for
    (``suite``: the JUnit suite's name)."""
    return api.Gates(suite, junit_xml=args.junit_xml, summary_md=args.summary_md)


def ci_options(p: argparse.ArgumentParser) -> None:
    """--baseline, --junit-xml and --summary-md of the audit commands."""
    p.add_argument(
        "--baseline",
        metavar="RUN_DIR",
        help="a finished run to diff against: diff.json and diff.md in the new run, and diff.<figure> gates "
        "(decided on the interval of the difference)",
    )
    p.add_argument("--junit-xml", metavar="PATH", help="write the gates as a JUnit XML file (one test case per gate)")
    p.add_argument(
        "--summary-md",
        metavar="PATH",
        help="write a Markdown summary of gates and figures (also appended to $GITHUB_STEP_SUMMARY when set)",
    )


def print_failures(result: api.Result) -> None:
    """The questions a deployed system failed, with each reason (the first 5, then a count)."""
    system = result.report.system
    if system is None or not system.failed:
        return
    print(f"{len(system.failed)} of {system.questions} questions failed (not judged; gate: system.failed):")
    failed = [(f.question_id, f.error or "no error recorded") for f in system.failed]
    print("\n".join(failure_lines(required(result.audit_config, "the run's config"), failed)))


def finish(result: api.Result) -> int:
    """The one-screen summary, what opening the run folder did (a resume), the failed questions
    of a deployed system, then the gates the API call checked (exit 1 when one fails)."""
    print(one_screen(result.summary))
    status = result.status
    if status is not None and status.opened and status.opened.startswith(("--resume", "resumed")):
        print(status.opened)
    print_failures(result)
    print(f"run folder: {result.run_dir} (report.md, report.html, summary.json)")
    if result.diff is not None:
        print(str(result.diff))
        print(f"diff against the baseline: {result.run_dir}/diff.md and diff.json")
    results = gate_results(result)
    for r in results:
        print(f"gate {r.message}")
        if not r.passed:
            print("\n".join(describe_failure(r, result.summary_json, result.report, result.run_dir).splitlines()[1:]))
    return 0 if all(r.passed for r in results) else 1


def gate_results(result: api.Result) -> list[GateResult]:
    """The gates the API call checked; what kept them from being checked is raised now, after
    what the run printed (as when the command checked them itself)."""
    if result.gate_problem is not None:
        raise result.gate_problem
    return required(result.gate_results, "the gates checked by the API call")
