"""Quality gates: named figures of summary.json compared with thresholds (exit status 1 on failure).

One gate applies without being configured: ``failures.not_judged_share <= 0`` (``DEFAULT_GATES``),
so that a run whose answers could not be judged because their model calls failed does not pass;
a ``gates`` entry of that figure replaces it (e.g. ``"<= 0.1"`` allows a tenth)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval.base_records import Figure
from rag_eval.errors import ConfigError, Problem, did_you_mean
from rag_eval.judges.judge_records import JudgedFigure
from rag_eval.judges.registry import figures as judge_figures
from rag_eval.report.diff_records import DiffData
from rag_eval.report.failures import CallFailures
from rag_eval.report.report_records import Report
from rag_eval.report.settings import OPS, parse_rule
from rag_eval.retrievers.retrieval_records import QuestionRecord
from rag_eval.rundir import read_jsonl


@dataclass
class GateResult:
    figure: str
    rule: str
    value: float | None
    passed: bool
    message: str
    skipped: bool = False  # a diff gate without a baseline run: reported, not failed
    shown: str | None = None  # the figure as the summaries show it, where the value alone is not enough
    detail: str | None = None  # a failure's description, where describe_failure cannot find it


def lookup(summary: dict[str, Any], figure: str) -> float | None:
    """The value of ``retrieval.hybrid.hit@5``-style paths; an estimate object gives its ``value``."""
    node: Any = summary
    for part in _split(figure):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(part)
        node = node[part]
    value = Figure.load(node).value if isinstance(node, dict) else node
    return None if value is None else float(value)


def _split(figure: str) -> list[str]:
    # Metric names hold dots only inside '@k' forms never; split on dots.
    return figure.split(".")


# The share of a run's answers left without a verdict because their model calls failed.
FAILURE_GATE = "failures.not_judged_share"
# Gates every run with answers gets unless its config sets the figure's own.
DEFAULT_GATES = {FAILURE_GATE: "<= 0"}


def unknown_figures(
    gates: dict[str, str],
    retrievers: list[str],
    metrics: list[str],
    prompts: list[str] | None,
    where: Callable[[str], str],
    judged: list[str] | None = None,
) -> list[Problem]:
    """The gates (``diff.`` ones too) naming a figure no run of this config can have: a retriever
    that is not configured, a retrieval metric it does not measure (``metrics``: ``retrieval.metrics``,
    else every metric at every ``retrieval.k``), a prompt that is not in ``generation.prompts``
    (``prompts``: None where the answers' prompts are not the config's), a judged figure no judge or
    criterion has (``judged``: every figure name a judge can give; None: not checked). Known before
    anything runs, so a typo costs no audit. ``where``: a gate's place for a message."""
    problems = []
    for figure in gates:
        parts = _split(figure.removeprefix("diff."))
        if len(parts) < 3:
            continue
        stage, name, metric = parts[0], parts[1], parts[2]
        if stage == "retrieval" and name not in retrievers:
            what, fix = f"no retriever '{name}' is configured; {did_you_mean(name, retrievers)}", "name a retriever"
        elif stage == "retrieval" and metric not in metrics:
            what = f"'{metric}' is not measured; {did_you_mean(metric, metrics)}"
            fix = "name a measured metric, or measure it (retrieval.k, retrieval.metrics)"
        elif stage in ("generation", "attribution") and prompts is not None and name not in prompts:
            what, fix = f"no prompt '{name}' is in generation.prompts; {did_you_mean(name, prompts)}", "name a prompt"
        elif stage == "generation" and judged is not None and metric not in judged:
            what = f"no judge or criterion gives a figure '{metric}'; {did_you_mean(metric, judged)}"
            fix = "name a judged figure (summary.json's generation.<prompt> lists them)"
        else:
            continue
        problems.append(Problem(where(figure), f"the gate's figure '{figure}' cannot exist: {what}", fix))
    return problems


def check_gates(
    gates: dict[str, str], summary: dict, where: str = "gates", diff: dict | None = None
) -> list[GateResult]:
    """Every gate's result; a figure that is not in the summary is a config error naming close ones.
    ``diff.<figure>`` gates are decided on the diff against a baseline run (``diff``: its JSON).
    A summary with answers (its ``failures``) also gets ``DEFAULT_GATES`` where ``gates`` does not
    set their figures."""
    results = []
    found = summary.get("failures")
    failures = CallFailures.load(found) if isinstance(found, dict) else None
    defaults = {f: r for f, r in DEFAULT_GATES.items() if f not in gates and failures is not None}
    for figure, rule in {**gates, **defaults}.items():
        op, threshold = parse_rule(rule, f"{where}.{figure}")
        if figure.startswith("diff."):
            results.append(check_diff_gate(figure, op, threshold, diff, where))
            continue
        if figure == FAILURE_GATE and failures is not None:
            results.append(check_failure_gate(op, threshold, failures, figure in defaults))
            continue
        try:
            value = lookup(summary, figure)
        except KeyError as exc:
            raise ConfigError(
                Problem(
                    f"{where}.{figure}",
                    f"the summary has no figure '{figure}' ('{exc.args[0]}' is missing)",
                    "figures are retrieval.<retriever>.<metric>, "
                    "generation.<prompt>.<metric>, attribution.<prompt>.<outcome>",
                )
            ) from None
        passed = value is not None and OPS[op](value, threshold)
        shown = "no value" if value is None else f"{value:.4g}"
        on, too_few = _decided_on(summary, figure, value)
        passed = passed and not too_few
        results.append(
            GateResult(
                figure,
                f"{op} {threshold:g}",
                value,
                passed,
                f"{'pass' if passed else 'FAIL'}: {figure} = {shown}{on} (needs {op} {threshold:g})",
            )
        )
    return results


def _decided_on(summary: dict, figure: str, value: float | None) -> tuple[str, bool]:
    """For a judged figure with answers left uncertain: how many it was decided on, for the gate's
    line, and whether fewer were decided than left uncertain, which no gate passes (user trial 4
    F22: a gate passed on 1 decided answer of 6, where with none decided it failed)."""
    try:
        node: Any = summary
        for part in _split(figure):
            node = node[part]
    except (KeyError, TypeError):
        return "", False
    if value is None or not isinstance(node, dict) or "n_uncertain" not in node:
        return "", False
    fig = JudgedFigure.load(node)
    n, uncertain = fig.n or 0, fig.n_uncertain or 0
    if not uncertain:
        return "", False
    return f" on {n} decided answer{'s' * (n != 1)}, {uncertain} uncertain", uncertain > n


def check_failure_gate(op: str, threshold: float, failures: CallFailures, default: bool) -> GateResult:
    """The gate on the share of answers not judged because their calls failed; a failure names how
    many, the first error, and how to allow some."""
    rule = f"{op} {threshold:g}"
    value = float(failures.not_judged_share)
    passed = OPS[op](value, threshold)
    how = "; the default gate" if default else ""
    message = f"{'pass' if passed else 'FAIL'}: {FAILURE_GATE} = {value:.4g} (needs {rule}{how})"
    detail = "\n".join(
        [
            f"{FAILURE_GATE} = {value:.4g}, needs {rule}",
            f"    {failures.not_judged} of {failures.answers_total} answers not judged: their calls failed "
            f"({failures.answers} answers: the model's or the system's, {failures.judgements} judgements)",
            f"    first error: {failures.first_error}",
            (
                "    add the missing answers to the answers file (the first error names a line to add) and run again"
                if "(generation.answers)" in (failures.first_error or "")
                else "    fix the endpoint (or its timeout_s / max_retries) and run again (answered calls come from "
                "the cache)"
            )
            + f', or allow a share with gates: {{{FAILURE_GATE}: "<= 0.1"}}',
        ]
    )
    return GateResult(FAILURE_GATE, rule, value, passed, message, detail=detail)


DIFF_BOUND = {">=": "ci_low", ">": "ci_low", "<=": "ci_high", "<": "ci_high", "==": "diff"}


def check_diff_gate(figure: str, op: str, threshold: float, diff: DiffData | dict | None, where: str) -> GateResult:
    """A gate on the difference new − base of a figure, decided on its interval: ``>=`` / ``>`` on the
    lower bound (non-inferiority: even the worst plausible difference clears the margin), ``<=`` /
    ``<`` on the upper bound, ``==`` on the point estimate."""
    rule = f"{op} {threshold:g}"
    name = figure.removeprefix("diff.")
    if diff is None:
        return GateResult(figure, rule, None, True, f"skip: {figure} (needs a baseline: --baseline RUN_DIR)", True)
    d = DiffData.load(diff)
    entry = d.figures.get(name)
    if entry is None:
        raise ConfigError(
            Problem(
                f"{where}.{figure}",
                f"the diff against {d.base} has no figure '{name}'",
                did_you_mean(name, list(d.figures)) if d.figures else "the two runs share no figure",
            )
        )
    bound = DIFF_BOUND[op]
    value = getattr(entry, bound)
    passed = value is not None and OPS[op](value, threshold)
    shown = (
        "nothing compared"
        if entry.diff is None
        else f"{entry.diff:+.4g} [{d.confidence:.0%} CI {entry.ci_low:+.3f}, {entry.ci_high:+.3f}; n={entry.n}]"
    )
    decided = {"ci_low": "lower bound", "ci_high": "upper bound", "diff": "difference"}[bound]
    message = f"{'pass' if passed else 'FAIL'}: {figure} = {shown} ({decided} needs {rule})"
    detail = "\n".join(
        [f"{figure} = {shown}, {decided} needs {rule}; base {d.base}", f"    {entry.verdict}"]
        + [f"    {line}" for line in d.moved_lines(name)]
    )
    return GateResult(figure, rule, value, passed, message, shown=shown, detail=detail)


def questions_behind(figure: str, report: Report | dict, run_dir: Path | None = None, limit: int = 10) -> list[str]:
    """The questions that pull a figure down: those below 1 on a retrieval metric (from the run's
    retrieval.jsonl; else the retriever's misses), the answers a judge did not pass (lowest scores
    first), or the questions with an outcome; as ``id: why`` lines."""
    report = Report.load(report)
    parts = _split(figure)
    out: list[str] = []
    records = run_dir / "retrieval.jsonl" if run_dir else None
    if parts[0] == "retrieval" and len(parts) >= 3 and records and records.exists():
        metric = parts[2]
        rows = [QuestionRecord.load(r) for r in read_jsonl(records)]
        low = [
            (r.metrics[metric], r)
            for r in rows
            if r.retriever == parts[1] and r.metrics and r.metrics.get(metric, 1) < 1
        ]
        for value, r in sorted(low, key=lambda vr: vr[0]):
            rank = r.first_relevant_rank or "not retrieved"
            out.append(f"{r.question_id}: {metric} {value:.2f}, first relevant chunk at rank {rank}")
    elif parts[0] == "retrieval" and len(parts) >= 2:
        for m in report.retrieval.misses.get(parts[1], []) if report.retrieval else []:
            out.append(f"{m.question_id}: first relevant chunk at rank {m.rank or 'not retrieved'} ({m.question})")
    elif parts[0] == "attribution" and len(parts) >= 3:
        for row in report.rows():
            if row.prompt == parts[1] and row.outcome == parts[2]:
                out.append(f"{row.question_id}: {row.why}")
    elif parts[0] == "generation" and len(parts) >= 3 and report.judges is not None:
        judges = report.judges
        found = [(spec, f) for spec, f in judge_figures(judges.metrics) if f.name == parts[2]]
        if found:
            spec, fig = found[0]
            judged = [
                r for r in judges.records if r.judge == spec.name and r.prompt == parts[1] and r.status == "judged"
            ]
            if fig.binary:
                bad = [(str(j.verdict), j) for j in judged if (j.verdict == fig.verdict) == (fig.better == "lower")]
            else:
                # By the figure's value (a detail such as citation_precision, else the score), lowest
                # first; records with equal values keep their order (records do not compare).
                values = [(v, j) for j in judged if (v := fig.value(j)) is not None and v < 1]
                bad = [(f"{v:.2f}", j) for v, j in sorted(values, key=lambda vj: vj[0])]
            for shown, j in bad:
                out.append(f"{j.question_id}: {shown}: {j.reason or ''}".rstrip(": "))
    return out[:limit] + ([f"... and {len(out) - limit} more"] if len(out) > limit else [])


def describe_failure(result: GateResult, summary: dict, report: Report | dict, run_dir: Path | None = None) -> str:
    """A failed gate with its interval and the questions behind it, for test and CI output."""
    if result.detail is not None:
        return result.detail
    try:
        node = summary
        for part in _split(result.figure):
            node = node[part]
    except (KeyError, TypeError):
        node = None
    fig = Figure.load(node) if isinstance(node, dict) else None
    ci = ""
    if fig is not None and fig.ci_low is not None:
        ci = f" [95% CI {fig.ci_low:.3f}, {fig.ci_high:.3f}; n={fig.n}]"
    lines = [
        f"{result.figure} = {'no value' if result.value is None else f'{result.value:.4g}'}{ci}, needs {result.rule}"
    ]
    if result.value is None and isinstance(node, dict):
        lines.append(f"    {_why_no_value(result.figure, node)}")
    elif isinstance(node, dict) and "n_uncertain" in node:
        judged = JudgedFigure.load(node)
        left = judged.n_uncertain + judged.n_not_judged
        if left:
            # A figure of a few decided answers reads as one of all of them unless it says so.
            lines.append(
                f"    decided on {judged.n or 0} of {(judged.n or 0) + left} answers: {judged.n_uncertain} "
                f"uncertain, {judged.n_not_judged} not judged"
            )
            if judged.n_uncertain > (judged.n or 0):
                lines.append(
                    "    a figure resting on fewer answers than were left uncertain passes no gate: label them "
                    "(rag-eval label RUN_DIR, then rag-eval report RUN_DIR --labels FILE --adapt), or escalate them "
                    "to a stronger judge (judges.escalate)"
                )
    lines += [f"    {q}" for q in questions_behind(result.figure, report, run_dir)]
    return "\n".join(lines)


def _why_no_value(figure: str, node: dict) -> str:
    """Why a figure has no value: a judged figure's answers each left uncertain or not judged; any
    other figure counts nothing (n = 0)."""
    stage = _split(figure)[0]
    if stage != "generation" or "n_uncertain" not in node:
        counted = {"retrieval": "question", "attribution": "answer"}.get(stage, "item")
        return f"no {counted} counts towards this figure (n = {Figure.load(node).n or 0})"
    fig = JudgedFigure.load(node)
    if fig.n_uncertain and not fig.n_not_judged:
        return (
            f"no answer was decided: all {fig.n_uncertain} were left uncertain (their probabilities fell in the "
            "band of uncertain decisions, or near the cut-off; before labels a criterion's band is wide). Label "
            "them (rag-eval label RUN_DIR, then rag-eval report RUN_DIR --labels FILE --adapt); where labels "
            "already calibrated it, the judge model reads these answers too poorly to decide them: a stronger "
            "judge (judges.escalate) is the way"
        )
    if fig.n_not_judged or fig.n_uncertain:
        return (
            f"no answer was decided: {fig.n_uncertain} uncertain, {fig.n_not_judged} not judged (their model "
            "calls failed: the failures line says why; a rerun redoes them)"
        )
    return "no answer this figure applies to was judged"
