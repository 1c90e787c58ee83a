"""What the judging stage hands attribution and the report: the judged figures (aggregates with
intervals, the not-judged and uncertain counted beside them), the cut-offs used, and the
``judges`` section of report.json. One judge's verdict is ``judges.judgement.Judgement``."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rag_eval.base_records import Figure, Model, Num, StageReuse
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.registry import CRITERION_AIM, Criterion
from rag_eval.llm.usage import Usage


class OutcomeCount(Figure):
    """An outcome's share among a prompt's questions and how many (attribution's ``OutcomeShare``
    as the escalation section keeps it from before the second judge)."""

    count: int = 0


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


class FittedBand(Model):
    """A band judge-check fitted around one cut-off on all cases (``uncertain.BandFit`` with the
    target it aimed at), as ``JudgeScore.extra["bands"]`` holds it."""

    low: Num = 0.0
    high: Num = 0.0
    decided_accuracy: Num | None = None
    uncertain_share: Num = 0.0
    reached: bool = False
    target: Num = 0.0


class BandOutOfFold(Model):
    """How judge-check's bands did out of fold: decided agreement, uncertain share, decided of all."""

    decided_accuracy: Num | None = None
    uncertain_share: Num = 0.0
    n_decided: int = 0
    n: int = 0


class Calibration(Model):
    """A probability-scored judge's cut-offs in this run, whether they were calibrated for the
    judge model and prompt, its measured agreement with people, and its uncertain bands."""

    cutoff: Num | None = None
    cutoffs: dict[str, Num] = {}
    calibrated: bool = False
    agreement: Agreement | None = None
    bands: dict[str, BandRange] = {}
    band_note: str | None = None
    # A saved adaptation this run did not use, and why (a criterion's fitted by another method).
    adaptation_not_used: str | None = None
    # The saved blend of the model's P with word evidence that the cut-off decides on (``lexical.py``).
    blend: str | None = None
    # Each prompt variant's blend as numbers (``Blend.to_dict``): what an adaptation starts from.
    blends: dict[str, dict[str, Any]] = {}
    # The judge model's identity and each variant's prompt hash (what calibrations and
    # adaptations are saved under).
    identity: str = ""
    prompt_hashes: dict[str, str] = {}
    # Each prompt variant's adaptation to this corpus that decided this run (``judges/adapted.py``), if any.
    adapted: dict[str, dict[str, Any]] = {}


def judge_settings(calibration: dict[str, Calibration], records: list[Judgement]) -> dict[str, dict[str, str]]:
    """What decides each probability-scored judge of a run, in words to compare with another run's:
    ``{judge: {"model": ..., "prompts": ..., "cut-offs": ..., "bands": ...}}``; the model is the name
    its records give (the endpoint's address is not the model: the same server may be reached at
    another), a part left out where the run recorded none."""
    models: dict[str, Counter[str]] = {}
    for r in records:
        if r.model and not EscalationRecord.load(r.typed_details.escalation or {}).decided_by:
            models.setdefault(r.judge, Counter())[r.model] += 1
    out: dict[str, dict[str, str]] = {}
    for name, c in sorted(calibration.items()):
        cuts = c.cutoffs or ({name: c.cutoff} if c.cutoff is not None else {})
        parts = {
            "model": models[name].most_common(1)[0][0] if name in models else "",
            "prompts": ", ".join(f"{v} {h}" for v, h in sorted(c.prompt_hashes.items())),
            "cut-offs": ", ".join(f"{v} {float(x):.3f}" for v, x in sorted(cuts.items())),
            "bands": ", ".join(
                f"{v} [{float(b.low):.3f}, {float(b.high):.3f})" if b.high > b.low else f"{v} empty"
                for v, b in sorted(c.bands.items())
            ),
        }
        out[name] = {k: v for k, v in parts.items() if v}
    return out


def settings_changes(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> list[str]:
    """Each change between two runs' ``judge_settings``, e.g. ``correctness cut-offs: correctness
    0.564 -> correctness 0.220``; empty when every judge both runs have decided alike."""
    out = []
    for name in sorted(set(before) & set(after)):
        for part in ("model", "prompts", "cut-offs", "bands"):
            a, b = before[name].get(part), after[name].get(part)
            if a is not None and b is not None and a != b:
                out.append(f"{name} {part}: {a} -> {b}")
    return out


class JudgingInfo(StageReuse):
    """What the judging stage returns beside its verdicts: what a resumed run reused, the cut-offs
    used, and what the escalation did (``escalation.Escalation`` as a dict, None without one)."""

    calibration: dict[str, Calibration] = {}
    escalation: dict[str, Any] | None = None
    # judges.ragas_requests as it ran (``RagasJudges.settings``): guided or native, and what that sends.
    ragas_requests: dict[str, Any] | None = None
    # Each Ragas metric's measured agreement with people for this model and way of sending.
    ragas_agreement: dict[str, Agreement] = {}


# {prompt: {figure: JudgedFigure}}
Figures = dict[str, dict[str, JudgedFigure]]


class EscalationSection(Model):
    """What the escalation to a second judge did and cost (``escalation.Escalation`` as written),
    and the figures and outcome shares as the first judge alone left them."""

    model: str = ""
    identity: str = ""
    max_calls: int | None = None
    uncertain: int = 0
    escalated: int = 0
    decided: int = 0
    over_budget: int = 0
    calls: int = 0
    calibrated: dict[str, bool] = {}
    usage: Usage = Usage()
    figures_without: Figures = {}
    outcomes_without: dict[str, dict[str, OutcomeCount]] = {}


class SecondJudgement(Model):
    """The second judge's decision as an escalated verdict keeps it (``escalation.Opinion``)."""

    how: str | None = None


class EscalationRecord(Model):
    """What the escalation did to a judgement (its ``details.escalation``): who decided, why it was
    not sent or failed, the second judge's decision and the first judge's record."""

    decided_by: str | None = None
    not_sent: str | None = None
    error: str | None = None
    second: SecondJudgement | None = None
    first_record: dict[str, Any] | None = None


class UncertainDetails(Model):
    """What ``Judgement.details`` holds about an uncertain decision: its band, what the judge leaned
    to, the statements still undecided, and what the escalation did."""

    band: list[Num] | None = None
    leaning: str | None = None
    leaning_score: Num | None = None
    statements: list[Any] | None = None
    uncertain_statements: list[Any] | None = None
    escalation: dict[str, Any] | None = None

    @property
    def leans_to(self) -> str | Num | None:
        return self.leaning if self.leaning is not None else self.leaning_score

    @property
    def escalation_note(self) -> str | None:
        """Why the decision was not escalated, the error, or how the second judge decided."""
        e = EscalationRecord.model_validate(self.escalation or {})
        return e.not_sent or e.error or (e.second.how if e.second else None)

    @property
    def decisions(self) -> int:
        """Decisions a second judge would be asked: its undecided statements, else one."""
        return len(self.uncertain_statements or []) if "statements" in self.model_fields_set else 1


class CriterionSection(Model):
    """One of the user's criteria in the report: its definition, its figure per prompt (the share
    passing), a rubric's mean level, and how it decided (calibrated or not, and how many labels
    would calibrate it). The answers that failed it are the attribution rows whose judge failed it."""

    question: str = ""
    sees: list[str] = []
    applies: str = "answered"
    passes: str = "yes"
    levels: list[str] = []
    pass_level: int | None = None
    steps: list[str] = []
    gate_only: bool = False
    counts_as_failure: bool = False
    aim: float = CRITERION_AIM  # once labels calibrate it, decided where the calibrated judge is this sure
    figures: dict[str, JudgedFigure] = {}
    mean_level: dict[str, Figure] = {}  # a rubric: the probability-weighted mean level per prompt
    calibrated: bool = False
    calibration: str = ""  # in words: how its cut-off and band came about
    labels_needed: int | None = None  # labelled answers for ±0.10 on its figure where not calibrated

    def criterion(self) -> Criterion:
        """The criterion as the judge registry declares it (a finished run's, read back from its report)."""
        return Criterion(
            question=self.question,
            sees=tuple(self.sees),
            applies=self.applies,  # type: ignore[arg-type]  # written from the config's Literal
            passes=self.passes,  # type: ignore[arg-type]
            levels=tuple(self.levels),
            pass_level=self.pass_level,
            steps=tuple(self.steps),
            gate_only=self.gate_only,
            counts_as_failure=self.counts_as_failure,
            aim=self.aim,
        )


class JudgesSection(Model):
    """The judging stage in the report: which judges ran, their figures and every verdict."""

    metrics: list[str] = []
    faithfulness_judge: str | None = None
    faithfulness_threshold: Num | None = None
    calibration: dict[str, Calibration] = {}
    ragas_requests: dict[str, Any] | None = None
    ragas_agreement: dict[str, Agreement] = {}
    same_model: bool = False
    weighted: bool = False
    figures: Figures = {}
    records: list[Judgement] = []
    escalation: EscalationSection | None = None
    criteria: dict[str, CriterionSection] = {}

    def figure(self, prompt: str, name: str) -> JudgedFigure | None:
        return self.figures.get(prompt, {}).get(name)
