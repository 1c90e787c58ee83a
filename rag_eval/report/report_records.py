"""The report data (report.json): the header and one section per stage, each typed by the stage
that made it. Markdown, HTML, summary.json, gates, labels and ``Result`` read these attributes.

report.json keeps the shape it had when it was a dict (``dump()`` writes the keys that were set),
and every run folder written before reads back with ``Report.load``: a section it lacks is None.
"""

from __future__ import annotations

from typing import Any

from rag_eval.answers.answer_records import GenerationSection
from rag_eval.attribution.records import AttributionRow, AttributionSection, FailureSplit, JudgeBrief, OutcomeShare
from rag_eval.base_records import Figure, Model, Num, PairedComparison, StageReuse
from rag_eval.judges.judge_records import Figures, JudgesSection
from rag_eval.labels.label_records import LabelsSection
from rag_eval.llm.usage import Usage
from rag_eval.report.failures import CallFailures
from rag_eval.retrievers.retrieval_records import RetrievalSection
from rag_eval.system.system_records import SystemSection, TracesSection


class CorpusInfo(Model):
    source: str = ""
    chunks: int = 0
    fingerprint: str | None = None


class TestSetInfo(Model):
    path: str = ""
    questions: int = 0
    answerable: int = 0
    unanswerable: int = 0


class LintFinding(Model):
    """A test-set health finding (``lint.Finding`` as written)."""

    code: str = ""
    severity: str = ""
    message: str = ""
    fix: str = ""
    questions: list[str] = []
    data: dict[str, Any] = {}


class PromptAnswer(Model):
    """One prompt's answer to a question where the prompts disagree."""

    outcome: str = ""
    answer: str | None = None
    why: str = ""
    judges: dict[str, JudgeBrief] = {}


class Disagreement(Model):
    """A question whose outcome differs between prompts."""

    question_id: str = ""
    question: str = ""
    answers: dict[str, PromptAnswer] = {}


class PairEvalue(Model):
    """Two prompts at one look of a sequential comparison: wins, losses and the e-value of ``ok``."""

    a: str = ""
    b: str = ""
    wins: int = 0
    losses: int = 0
    e_value: Num = 1.0


class Look(Model):
    """One look of a sequential comparison: the questions judged so far and each pair's e-value."""

    questions: int = 0
    pairs: list[PairEvalue] = []
    settled: bool = False


class SequentialStop(Model):
    """``--stop-when-settled``: the always-valid test, where it stopped, and the calls it saved."""

    test: str = ""
    alpha: Num = 0.05
    threshold: Num = 0.0
    seed: int | None = None
    batch: int = 0
    questions_used: int = 0
    questions_total: int = 0
    settled: bool = False
    calls: int = 0
    calls_saved_estimate: int = 0
    looks: list[Look] = []


class ComparisonSection(Model):
    """Prompts compared on the same contexts (``rag-eval compare``)."""

    comparisons: list[PairedComparison] = []
    disagreements: list[Disagreement] = []
    sequential: SequentialStop | None = None


class AdaptedJudge(Model):
    """One judge prompt adapted to the run's corpus: what moved, on how many labels."""

    judge: str = ""
    variant: str = ""
    labels: int = 0
    positives: int = 0
    how: str = ""
    shift: Num = 0.0
    cutoff_before: Num | None = None
    cutoff_after: Num | None = None
    band_before: list[Num] | None = None
    band_after: list[Num] | None = None
    blend_before: str | None = None
    blend_after: str | None = None
    criterion: bool = False  # a user's criterion: labels may weigh word features for it
    not_saved: str | None = None  # why this variant's adaptation was not kept for later audits
    changed: int = 0  # verdicts of the run that the adaptation changed (decided or uncertain)
    uncertain_before: int = 0
    uncertain_after: int = 0
    decisions: int = 0  # the run's decisions of this judge prompt
    # Its labelled answers, each decided by the fold judge adapted without that label (cross-fitted):
    # how often the adapted judge decides and is right on answers it was not fitted to.
    held_out: int = 0
    held_out_decided: int = 0
    held_out_right: int = 0
    # The run was decided by an adaptation saved before (perhaps from these labels). A built-in
    # judge's new adaptation and its fold judges start again from the shipped judge, so no label is
    # counted twice (a criterion always refits from the model's P).
    from_saved: bool = False
    # Labelled answers of the corpus's saved adaptation fitted again beside this file's (those not
    # labelled here); and whether a saved adaptation kept none to fit (saved before they were kept).
    earlier_labels: int = 0
    earlier_unknown: bool = False

    def mostly_uncertain(self) -> bool:
        """Whether the adapted judge leaves most of the run's decisions uncertain (all of them, not
        the labelled ones: an active draw favours the unsure answers)."""
        return bool(self.decisions) and self.uncertain_after > self.decisions / 2

    def held_out_text(self) -> str:
        """'r of d decided right, u of n uncertain' on its labels, cross-fitted; '' without any."""
        if not self.held_out:
            return ""
        unsure = self.held_out - self.held_out_decided
        text = f"{self.held_out_right} of {self.held_out_decided} decided right, {unsure} of {self.held_out} uncertain"
        if self.earlier_labels:
            text += f" (with {self.earlier_labels} labels of other answers kept from the saved adaptation)"
        elif self.earlier_unknown:
            text += " (the saved adaptation kept no labelled answers: its labels are not fitted again)"
        return text


class AdaptationSection(Model):
    """The run's verdicts adapted to its corpus with its own labels (``rag-eval report --labels F
    --adapt``): which labels did what, and how the figures stayed honest (cross-fitted)."""

    labels_file: str = ""
    answers_labelled: int = 0
    how: str = ""
    folds: int = 0
    judges: list[AdaptedJudge] = []
    saved: str | None = None  # where the adaptation was kept for later audits of this corpus
    corpus: str | None = None
    note: str = ""


class SuppliedInfo(Model):
    """Answers judged without retrieval labels: how a retrieval miss was decided."""

    answers: int = 0
    retrieval_decided_by: str | None = None
    note: str = ""


class Report(Model):
    """The whole report; summary.json and every rendering come from it."""

    name: str = ""
    created: str = ""
    rag_eval_version: str | None = None
    corpus: CorpusInfo | None = None
    test_set: TestSetInfo | None = None
    lint: list[LintFinding] = []
    supplied: SuppliedInfo | None = None
    system: SystemSection | None = None
    traces: TracesSection | None = None
    retrieval: RetrievalSection | None = None
    config_path: str | None = None
    resume: dict[str, StageReuse] | None = None
    generation: GenerationSection | None = None
    judges: JudgesSection | None = None
    attribution: AttributionSection | None = None
    comparison: ComparisonSection | None = None
    labels: LabelsSection | None = None
    adaptation: AdaptationSection | None = None
    failures: CallFailures | None = None  # what failed in the run (set once it is judged)

    def rows(self) -> list[AttributionRow]:
        """Attribution's rows (none before attribution ran)."""
        return self.attribution.rows if self.attribution else []


class Summary(Model):
    """summary.json: every figure by its dotted name (``retrieval.<retriever>.<metric>``,
    ``generation.<prompt>.<figure>``, ``attribution.<prompt>.<outcome>``, ``failure_split.<prompt>``,
    ``comparison.<metric>.<A>_vs_<B>``); each part present when its stage ran."""

    name: str = ""
    created: str = ""
    rag_eval_version: str | None = None
    corpus: CorpusInfo | None = None
    test_set: TestSetInfo | None = None
    retrieval: dict[str, dict[str, Figure]] = {}
    retrieval_comparison: dict[str, dict[str, dict[str, Any]]] = {}
    retrieval_misses: dict[str, dict[str, int]] = {}
    diagnosis: dict[str, dict[str, int]] = {}
    simulated_fixes: list[dict[str, Any]] = []
    lint: dict[str, dict[str, Any]] = {}
    supplied: SuppliedInfo | None = None
    generation: Figures = {}
    comparison: dict[str, dict[str, dict[str, Any]]] = {}
    attribution: dict[str, dict[str, OutcomeShare]] = {}
    failure_split: dict[str, FailureSplit] = {}
    generation_counts: dict[str, dict[str, int]] = {}
    llm_usage: list[Usage] = []
    system: dict[str, int] | None = None
    traces: dict[str, Any] | None = None
    labels: LabelsSection | None = None
    failures: CallFailures | None = None
