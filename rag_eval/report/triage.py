"""Where the cheapest truth lies: the uncertain verdicts (label or escalate these first), what the
escalation to a second judge did and cost, and how many labels each judged figure needs for a
given interval width (uniform and active draws) and how many escalations would decide its
uncertain share."""

from __future__ import annotations

import html as html_lib
from dataclasses import dataclass

from rag_eval.base_records import Figure, required
from rag_eval.judges.judge_records import UncertainDetails
from rag_eval.judges.registry import figures
from rag_eval.labels.active import decision_uncertainty, labels_for_width
from rag_eval.labels.human import figure_records
from rag_eval.report.formatting import _table, fmt, text
from rag_eval.report.report_records import Report

WIDTHS = (0.05, 0.10)


def _fmt(est: Figure | None) -> str:
    return fmt(est, 2)


@dataclass
class UncertainVerdict:
    """An uncertain verdict still standing, with how unsure it is (0.5: at its cut-off)."""

    question_id: str
    prompt: str
    judge: str
    question: str
    probability: float | None
    band: list[float] | None
    leaning: str | float | None
    escalation: str | None
    priority: float


@dataclass
class LabelsPlan:
    """One judged figure with a human label: its answers, the uncertain ones, the escalations that
    would decide them, and the labels a uniform and an active draw need per interval width."""

    prompt: str
    figure: str
    label: str
    answers: int
    uncertain: int
    escalations: int
    agreement: float | None
    labels_needed: dict[str, dict[str, int]]
    width: float

    @property
    def active_need(self) -> int:
        """Labels an active draw needs for the chosen width."""
        return self.labels_needed[f"{self.width:g}"]["active"]

    def needed(self, width: str) -> str:
        """``uniform / active`` labels, or "all N" where a draw would need every answer (labelling all
        of them gives the figure itself)."""
        got = self.labels_needed[width]
        return " / ".join(
            f"all {self.answers}" if got[k] >= self.answers else str(got[k]) for k in ("uniform", "active")
        )


def uncertain_answers(report: Report) -> list[UncertainVerdict]:
    """Every uncertain verdict still standing, the most unsure first (closest to its cut-off)."""
    questions = {r.question_id: r.question for r in report.rows()}
    rows = []
    for r in report.judges.records if report.judges else []:
        if r.status != "uncertain":
            continue
        d = UncertainDetails.load(r.details or {})
        rows.append(
            UncertainVerdict(
                question_id=r.question_id,
                prompt=r.prompt,
                judge=r.judge,
                question=questions.get(r.question_id, ""),
                probability=r.probability,
                band=d.band,
                leaning=d.leans_to,
                escalation=d.escalation_note,
                priority=_priority(r.to_dict()) if r.probability is not None else 0.5,
            )
        )
    return sorted(rows, key=lambda x: (-x.priority, x.question_id, x.prompt, x.judge))


def _priority(record: dict) -> float:
    """How unsure an uncertain verdict is once decided at its cut-off (0.5 where that is unknown)."""
    u = decision_uncertainty({**record, "status": "judged"})
    return 0.5 if u is None else u


def labels_plan(report: Report | dict, chosen_width: float = 0.10) -> list[LabelsPlan]:
    """Per prompt and judged figure with a human label: judged and uncertain answers, the labels a
    uniform and an active draw need for ±0.05, ±0.10 and ``chosen_width``, and the escalations
    (decisions sent to a second judge) that would decide its uncertain answers."""
    report = Report.load(report)
    j = report.judges
    if j is None:
        return []
    answerable = {r.question_id: r.answerable for r in report.rows()}
    out = []
    for prompt in sorted({r.prompt for r in j.records}):
        for spec, fig in figures(j.metrics):
            if spec.human_label is None or not spec.labelled(fig):
                continue
            rows = figure_records(j.records, spec.name, prompt, fig.subset, answerable)
            if not rows:
                continue
            errors = [decision_uncertainty(r.to_dict()) for r in rows]
            cal = j.calibration.get(spec.name)
            accuracy = cal.agreement.accuracy if cal is not None and cal.agreement is not None else None
            measured = 1 - accuracy if accuracy is not None else None
            need = {}
            for w in sorted({*WIDTHS, chosen_width}):
                n_u, n_a = labels_for_width(errors, w, uniform_variance=measured)
                need[f"{w:g}"] = {"uniform": n_u, "active": n_a}
            unsure = [r for r in rows if r.status == "uncertain"]
            out.append(
                LabelsPlan(
                    prompt=prompt,
                    figure=fig.name,
                    label=spec.human_label,
                    answers=len(rows),
                    uncertain=len(unsure),
                    escalations=sum(UncertainDetails.load(r.details or {}).decisions for r in unsure),
                    agreement=accuracy,
                    labels_needed=need,
                    width=chosen_width,
                )
            )
    return out


def escalation_lines(report: Report) -> list[str]:
    """What the escalation did and cost, and each figure with and without it (Markdown)."""
    e = report.judges.escalation if report.judges else None
    if not e:
        return []
    u = e.usage
    budget = f", {e.over_budget} not sent (max_calls {e.max_calls})" if e.over_budget else ""
    calibrated = [v for v, ok in e.calibrated.items() if ok]
    how = (
        f"its calibrated cut-off for {', '.join(calibrated)}, its text verdict for the rest"
        if calibrated
        else "its text verdict (no calibration saved for this model)"
    )
    out = [
        "",
        "### Escalated to a second judge",
        "",
        f"{e.escalated} of {e.uncertain} uncertain verdicts were asked again of `{e.model}` "
        f"({e.calls} decisions; {u.calls} calls, {u.cache_hits} from cache, "
        f"{u.prompt_tokens} + {u.completion_tokens} tokens, cost {u.cost:.4f})"
        f"{budget}; {e.decided} decided by it, deciding by {how}.",
        "",
    ]
    rows = []
    for prompt, figs in required(report.judges, "the report's judges section").figures.items():
        before = e.figures_without.get(prompt, {})
        for name, est in figs.items():
            b = before.get(name)
            rows.append(
                [
                    prompt,
                    name,
                    f"{_fmt(b)} n={b.n} unc={b.n_uncertain}" if b else "–",
                    f"{_fmt(est)} n={est.n} unc={est.n_uncertain}",
                ]
            )
    now = report.attribution.shares if report.attribution else {}
    for prompt, shares in e.outcomes_without.items():
        if "uncertain" in shares:
            current = now.get(prompt, {}).get("uncertain")
            rows.append(
                [
                    prompt,
                    "outcome uncertain",
                    f"{shares['uncertain'].count} ({_fmt(shares['uncertain'])})",
                    f"{current.count if current else 0} ({_fmt(current)})",
                ]
            )
    out += _table(["prompt", "figure", "first judge alone", "with escalation"], rows)
    return out


def triage_markdown(report: Report | dict) -> list[str]:
    """The report's section on uncertain verdicts, escalation and labels needed (Markdown)."""
    report = Report.load(report)
    if report.judges is None:
        return []
    unsure = uncertain_answers(report)
    plan = labels_plan(report)
    esc = escalation_lines(report)
    if not unsure and not esc and not plan:
        return []
    out = ["", "## Uncertain verdicts, escalation and labels needed", ""]
    if unsure:
        out += [
            f"### Label these first: {len(unsure)} uncertain verdicts",
            "",
            "Decisions whose probability lies in the band around the judge's cut-off: counted apart (`unc`), "
            "never in a mean or share. `rag-eval label RUN_DIR` favours them in its draw (each with its "
            "inclusion probability, so a draw of a few questions may leave one out); `judges.escalate` asks a "
            "second judge.",
            "",
        ]
        out += _table(
            ["question", "id", "prompt", "judge", "P", "band", "leans to", "escalation"],
            [
                [
                    text(u.question, 80),
                    u.question_id,
                    u.prompt,
                    u.judge,
                    f"{u.probability:.3f}" if u.probability is not None else "–",
                    f"[{u.band[0]:.3f}, {u.band[1]:.3f})" if u.band else "–",
                    str(u.leaning if not isinstance(u.leaning, float) else f"score {u.leaning:.2f}"),
                    u.escalation or "–",
                ]
                for u in unsure[:50]
            ],
        )
        if len(unsure) > 50:
            out.append(f"\n... and {len(unsure) - 50} more (report.json, judges.records with status uncertain).")
    out += esc
    if plan:
        out += [
            "",
            "### Labels needed for a prediction-powered interval",
            "",
            "Labelled answers for an interval of ±0.05 and ±0.10 on each judged figure: a plain random draw "
            "(`--uniform`; from the judge's measured agreement where known, else its probabilities) and the "
            "active draw of `rag-eval label` (from how unsure the judge is on each answer of this run; it assumes "
            "the judge's probabilities rank its errors). `escalations`: decisions a second judge would be asked "
            "to decide the uncertain ones. `all N`: only labelling every answer gets there (the figure is then the labels' own).",
            "",
        ]
        out += _table(
            [
                "prompt",
                "figure",
                "answers",
                "uncertain",
                "escalations",
                "±0.05 uniform / active",
                "±0.10 uniform / active",
            ],
            [
                [
                    p.prompt,
                    p.figure,
                    str(p.answers),
                    str(p.uncertain),
                    str(p.escalations),
                    p.needed("0.05"),
                    p.needed("0.1"),
                ]
                for p in plan
            ],
        )
    return out


def triage_html(report: Report | dict) -> list[str]:
    """The same section as HTML."""
    lines = triage_markdown(report)
    if not lines:
        return []
    out: list[str] = []
    table: list[str] = []

    def flush():
        if table:
            head = [c.strip() for c in table[0].strip("|").split("|")]
            body = [[c.strip() for c in row.strip("|").split(" | ")] for row in table[2:]]
            out.append(
                "<table><thead><tr>"
                + "".join(f"<th>{html_lib.escape(h)}</th>" for h in head)
                + "</tr></thead><tbody>"
                + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in body)
                + "</tbody></table>"
            )
            table.clear()

    for line in lines:
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("## "):
            out.append(f"<h2>{html_lib.escape(line[3:])}</h2>")
        elif line.startswith("### "):
            out.append(f"<h3>{html_lib.escape(line[4:])}</h3>")
        elif line.strip():
            out.append(f"<p>{html_lib.escape(line).replace('`', '')}</p>")
    flush()
    return out
