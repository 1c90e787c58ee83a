"""What the judging stage hands attribution and the report: the judged figures (aggregates with
intervals, the not-judged and uncertain counted beside them), the cut-offs used, and the
``judges`` section of report.json. One judge's verdict is ``judges.base.Judgement``."""

from __future__ import annotations

from typing import Any

from rag_eval.judges.base import Judgement
from rag_eval.typed import Figure, Model, Num


class LabelledEstimate(Model):
    """A figure from human labels alone (``human``) or combined with the judge by prediction-
    powered inference (``ppi``)."""

    value: Num | None = None
    ci_low: Num | None = None
    ci_high: Num | None = None
    n_labels: int = 0
    n_unlabelled: int = 0
    method: str = ""


class JudgedFigure(Figure):
    """A judge's figure for one prompt (a mean score or a share of verdicts) over the judged
    answers; the not-judged and uncertain are excluded and counted. ``ppi`` and ``human`` are
    added where people labelled a sample of the answers."""

    n_not_judged: int = 0
    n_uncertain: int = 0
    ppi: LabelledEstimate | None = None
    human: LabelledEstimate | None = None


class Agreement(Model):
    """A judge's measured agreement with people: accuracy on ``n`` labelled cases, and where."""

    accuracy: Num | None = None
    n: int | None = None
    measured_on: str = ""


class BandRange(Model):
    """``[low, high)`` around a cut-off where decisions are uncertain (``uncertain.Band`` as written)."""

    low: Num = 0.0
    high: Num = 0.0
    source: str = ""


class Calibration(Model):
    """A probability-scored judge's cut-offs in this run, whether they were calibrated for the
    judge model and prompt, its measured agreement with people, and its uncertain bands."""

    cutoff: Num | None = None
    cutoffs: dict[str, Num] = {}
    calibrated: bool = False
    agreement: Agreement | None = None
    bands: dict[str, BandRange] = {}
    band_note: str | None = None


# {prompt: {figure: JudgedFigure}}
Figures = dict[str, dict[str, JudgedFigure]]


class JudgesSection(Model):
    """The judging stage in the report: which judges ran, their figures and every verdict."""

    metrics: list[str] = []
    faithfulness_judge: str | None = None
    faithfulness_threshold: Num | None = None
    calibration: dict[str, Calibration] = {}
    same_model: bool = False
    weighted: bool = False
    figures: Figures = {}
    records: list[Judgement] = []
    escalation: dict[str, Any] | None = None

    def figure(self, prompt: str, name: str) -> JudgedFigure | None:
        return self.figures.get(prompt, {}).get(name)
