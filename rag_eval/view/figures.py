"""The figures the run and labelling pages show with the labels given so far: each judged figure
with a human label column, the judge alone and prediction-powered (``labels/ppi.py``,
``labels/active.py`` through ``labels/human.py``), and the labels still needed for ±0.05 and
±0.10. One function, ``label_figures``, so other label-driven figures join it in one place."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rag_eval.base_records import Figure
from rag_eval.errors import DataError
from rag_eval.judges.judge_records import LabelledEstimate
from rag_eval.judges.registry import criteria_registered
from rag_eval.labels.columns import criteria_of
from rag_eval.labels.columns import run_columns as run_label_columns
from rag_eval.labels.human import LabelsRow, apply_labels, known_answers, labelled_line, read_labels, weights_of
from rag_eval.orchestration.adapt import adapt_run
from rag_eval.report.report_records import Report
from rag_eval.report.triage import WIDTHS, labels_plan
from rag_eval.view.labels_file import as_shown, label_counts, labels_path, read_rows


@dataclass
class FigureLine:
    """One judged figure of one prompt: the judge alone, with the labels, and labels still needed."""

    prompt: str
    figure: str
    label: str
    judged: Figure | None
    ppi: LabelledEstimate | None
    human: LabelledEstimate | None
    labelled: int
    answers: int
    still_needed: dict[str, int]  # interval half-width ("0.05", "0.1") -> labels still to give
    agreement: float | None = None


@dataclass
class LabelFigures:
    """The report with the labels applied (the report itself when there are none), the figure
    lines, and a problem with the labels file if it cannot be read."""

    report: Report
    lines: list[FigureLine] = field(default_factory=list)
    labelled_answers: int = 0
    problem: str | None = None
    per_column: dict[str, int] = field(default_factory=dict)  # answers with yes or no under each column

    @property
    def counted(self) -> str:
        """``3 answers labelled: correct 3, faithful 2, refused 1``."""
        return labelled_line(self.labelled_answers, self.per_column)


def _unequal(rows: list[dict[str, str]]) -> bool:
    """Whether the labels were drawn with unequal probabilities (the active draw)."""
    ps = {p for p in (LabelsRow.of(r).inclusion_probability for r in rows) if p}
    return len(ps) > 1


def label_figures(run_dir: Path, report: Report, confidence: float = 0.95, adapt: bool = False) -> LabelFigures:
    """The run's labels file applied to its report as ``rag-eval report RUN_DIR --labels`` applies
    it, and per judged figure the labels still needed for each interval width (an active draw's
    count when the labels were drawn with unequal probabilities, a uniform draw's otherwise).
    ``adapt``: as ``--labels F --adapt`` applies them (the judges adapted with the labels, the
    figures cross-fitted; nothing saved for later audits from the page)."""
    path = labels_path(run_dir)
    rows = read_rows(path)
    # Counted as the labelling page shows them: a criterion's column too, a stale row nowhere.
    labelled, per_column = label_counts(as_shown(rows, known_answers(run_dir)), run_label_columns(report))
    out = LabelFigures(report=report, labelled_answers=labelled, per_column=per_column)
    if labelled:
        try:
            labels = read_labels(path, known_answers(run_dir), criteria_of(report))
            if adapt:
                out.report = adapt_run(
                    report,
                    labels,
                    run_dir=run_dir,
                    weights=weights_of(run_dir),
                    confidence=confidence,
                    source=str(path),
                    save=False,
                )
            else:
                out.report = apply_labels(report, labels, weights_of(run_dir), confidence, str(path))
        except DataError as exc:
            out.problem = exc.render()
    kind = "active" if _unequal(rows) else "uniform"
    lab = out.report.labels
    with criteria_registered(criteria_of(report)):  # the criteria's figures are judged figures with labels too
        plans = labels_plan(report)
    for plan in plans:
        got = lab.figures.get(plan.prompt, {}).get(plan.figure) if lab else None
        n = got.ppi.n_labels if got and got.ppi else 0
        judged = report.judges.figures.get(plan.prompt, {}).get(plan.figure) if report.judges else None
        out.lines.append(
            FigureLine(
                prompt=plan.prompt,
                figure=plan.figure,
                label=plan.label,
                judged=judged,
                ppi=got.ppi if got else None,
                human=got.human if got else None,
                labelled=n,
                answers=plan.answers,
                still_needed={
                    f"{w:g}": max(0, min(plan.labels_needed[f"{w:g}"][kind], plan.answers) - n) for w in WIDTHS
                },
                agreement=got.agreement_on_labelled if got else None,
            )
        )
    return out


def figures_json(figs: LabelFigures) -> dict:
    """The figure lines for the page's script (after each label)."""
    return {
        "labelled": figs.labelled_answers,
        "per_column": figs.per_column,
        "counted": figs.counted,
        "problem": figs.problem,
        "lines": [
            {
                "prompt": f.prompt,
                "figure": f.figure,
                "label": f.label,
                "judged": f.judged.model_dump() if f.judged else None,
                "ppi": f.ppi.model_dump() if f.ppi else None,
                "labelled": f.labelled,
                "answers": f.answers,
                "still_needed": f.still_needed,
            }
            for f in figs.lines
        ],
    }
