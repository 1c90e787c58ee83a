"""What people's labels add to a run's report (the ``labels`` section and the prediction-powered
figures in it), and what the labels stage reads of a report: the judges' and attribution's sections.

The labels stage sits below the report: it reads a report through ``JudgedReport`` (the report's
``Report`` record is one) and, where it opens a run's report.json itself, as ``ReportFile``."""

from __future__ import annotations

from typing import Protocol

from rag_eval.attribution.records import AttributionRow, AttributionSection
from rag_eval.base_records import Model, Num
from rag_eval.judges.judge_records import JudgesSection, LabelledEstimate


class LabelledFigure(Model):
    """A judged figure with human labels: the labels alone and combined with the judge."""

    ppi: LabelledEstimate | None = None
    human: LabelledEstimate | None = None
    label: str = ""
    agreement_on_labelled: Num | None = None  # on the labelled answers the judge decided; None: it decided none
    agreement_n: int | None = None  # how many that is (None: a report written before it was counted)


class LabelledDifference(Model):
    """A prompt difference on a labelled figure (first minus second), paired PPI."""

    metric: str = ""
    a: str = ""
    b: str = ""
    ppi: LabelledEstimate | None = None
    human: LabelledEstimate | None = None


class LabelsSection(Model):
    """What people labelled, and the prediction-powered figures from it."""

    source: str = ""
    answers_labelled: int = 0
    per_column: dict[str, int] = {}
    figures: dict[str, dict[str, LabelledFigure]] = {}
    outcomes: dict[str, dict[str, LabelledFigure]] = {}
    comparisons: list[LabelledDifference] = []


class JudgedReport(Protocol):
    """A run's report as labels read and extend it: the judges' and attribution's sections, and the
    labels section they add (``report.report_records.Report``, or a ``ReportFile``)."""

    judges: JudgesSection | None
    attribution: AttributionSection | None
    labels: LabelsSection | None

    def rows(self) -> list[AttributionRow]: ...


class ReportFile(Model):
    """A run's report.json as the labels stage opens it: the sections it reads typed, every other
    key kept as written."""

    judges: JudgesSection | None = None
    attribution: AttributionSection | None = None
    labels: LabelsSection | None = None

    def rows(self) -> list[AttributionRow]:
        """Attribution's rows (none before attribution ran)."""
        return self.attribution.rows if self.attribution else []
