"""Gate results for CI systems: a JUnit XML file (one test case per gate) and a Markdown summary."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from rag_eval.report.gates import GateResult, describe_failure
from rag_eval.report.markdown import fmt
from rag_eval.report.report_records import Summary
from rag_eval.report.screen import HEADLINE


def junit_xml(results: list[GateResult], summary: dict, report: dict, suite: str, run_dir: Path | None = None) -> str:
    """A JUnit XML document: one test case per gate, failed gates with their interval and questions."""
    failures = [r for r in results if not r.passed]
    skipped = str(sum(r.skipped for r in results))
    root = ET.Element("testsuites", tests=str(len(results)), failures=str(len(failures)))
    ts = ET.SubElement(
        root,
        "testsuite",
        name=f"rag-eval {suite}",
        tests=str(len(results)),
        failures=str(len(failures)),
        skipped=skipped,
    )
    for r in results:
        case = ET.SubElement(ts, "testcase", classname=f"rag-eval.{suite}", name=f"{r.figure} {r.rule}")
        if r.skipped:
            ET.SubElement(case, "skipped", message=r.message)
        elif not r.passed:
            fail = ET.SubElement(case, "failure", message=r.message)
            fail.text = describe_failure(r, summary, report, run_dir)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def summary_markdown(
    results: list[GateResult], summary: dict, report: dict, run_dir: Path, extra: str | None = None
) -> str:
    """A short Markdown summary: the gates, then the headline figures with intervals (then ``extra``,
    e.g. the diff against a baseline run)."""
    typed = Summary.load(summary)
    lines = [f"## rag-eval: {typed.name}", ""]
    if results:
        passed = sum(r.passed and not r.skipped for r in results)
        skipped = sum(r.skipped for r in results)
        lines += [
            f"**Gates: {passed} of {len(results)} passed**" + (f" ({skipped} skipped)" if skipped else ""),
            "",
            "| gate | value | rule | |",
            "|---|---|---|---|",
        ]
        for r in results:
            node = _node(summary, r.figure)
            shown = r.shown or (
                fmt(node, 3) if isinstance(node, dict) else ("–" if r.value is None else f"{r.value:.3f}")
            )
            skipped_why = (
                "not checked by this stage" if r.value is None and "not checked" in r.message else "no baseline"
            )
            state = f"skipped ({skipped_why})" if r.skipped else "pass" if r.passed else "**FAIL**"
            lines.append(f"| `{r.figure}` | {shown} | {r.rule} | {state} |")
        for r in results:
            if not r.passed:
                lines += ["", "```", describe_failure(r, summary, report, run_dir), "```"]
        lines.append("")
    for name, figs in typed.retrieval.items():
        heads = [m for m in HEADLINE if m in figs]
        lines.append(f"- retrieval **{name}**: " + ", ".join(f"{m} {fmt(figs[m], 2)}" for m in heads))
    for prompt, judged in typed.generation.items():
        lines.append(f"- prompt **{prompt}**: " + ", ".join(f"{m} {fmt(e, 2)}" for m, e in judged.items()))
    lines += ["", f"Run folder: `{run_dir}`", ""]
    if extra:
        lines += [extra]
    return "\n".join(lines)


def _node(summary: dict[str, Any], figure: str) -> Any:
    node: Any = summary
    for part in figure.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def write_ci_outputs(
    results: list[GateResult],
    summary: dict,
    report: dict,
    run_dir: Path,
    suite: str,
    junit: str | None = None,
    summary_md: str | None = None,
    extra: str | None = None,
) -> None:
    """The files asked for, and the Markdown summary appended to ``$GITHUB_STEP_SUMMARY`` when set."""
    if junit:
        Path(junit).write_text(junit_xml(results, summary, report, suite, run_dir), encoding="utf-8")
    md = summary_markdown(results, summary, report, run_dir, extra)
    if summary_md:
        Path(summary_md).write_text(md, encoding="utf-8")
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        with open(step, "a", encoding="utf-8") as fh:
            fh.write(md)
