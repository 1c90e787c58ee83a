"""Every judge, declared once: its inputs, when it applies, its labels or score, its calls per
answer, the figures it aggregates to, how those are compared, and its role in attribution.

The judging stage, aggregation, attribution, ``compare``, ``judge-check`` and the cost estimate
loop over this registry; adding a judge is one entry here, one method and one prompt file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Subset = Literal["all", "answerable", "unanswerable"]


@dataclass(frozen=True)
class Figure:
    """One aggregate of a judge: the mean of its score, or the share of a verdict, over a subset of
    the questions. ``better`` says which direction is good (for comparisons)."""

    name: str
    subset: Subset = "all"
    verdict: str | None = None  # the share of this verdict; None: the mean of the score
    better: Literal["higher", "lower"] = "higher"

    @property
    def binary(self) -> bool:
        return self.verdict is not None

    @property
    def comparison_name(self) -> str:
        """The name of the paired comparison, where higher is always better."""
        return self.name if self.better == "higher" else f"no_{self.name}"


@dataclass(frozen=True)
class JudgeSpec:
    """A judge: what it reads, when it applies, what it returns and what it is used for."""

    name: str
    needs: tuple[str, ...]  # of: question, answer, contexts, reference
    figures: tuple[Figure, ...]
    labels: tuple[str, ...] = ()  # verdict judges: the verdicts, positive first; score judges: ()
    family: Literal["ragas", "scored"] = "scored"
    answer_independent: bool = False  # judged once per question, shared by every prompt
    answerable_only: bool = False
    skip_refusals: bool = False  # a refusal makes no claim to check
    role: Literal["refusal", "correctness", "faithfulness", "context"] = "context"
    calls: Callable[[int, int], int] = lambda top_k, statements: 1  # (top k, statements) -> calls
    # The short requests more per answer for a quoted reason (judges.reasons: quote), at most.
    reason_calls: Callable[[int, int], int] = lambda top_k, statements: 0
    description: str = ""
    human_label: str | None = None  # the column of a labels file a person fills for this judge (yes/no)

    def applies(self, answerable: bool, has_reference: bool, refused: bool | None) -> str | None:
        """None when the judge applies to this answer, else why it is skipped."""
        if self.answerable_only and not answerable:
            return "unanswerable question"
        if "reference" in self.needs and not has_reference:
            return "no reference answer"
        if self.skip_refusals and refused:
            return "the answer is a refusal"
        return None


JUDGES: dict[str, JudgeSpec] = {
    j.name: j
    for j in (
        JudgeSpec(
            "refusal",
            ("question", "answer"),
            (
                Figure("refusal_accuracy", "unanswerable", "refused"),
                Figure("needless_refusal", "answerable", "refused", better="lower"),
            ),
            labels=("refused", "answered"),
            role="refusal",
            reason_calls=lambda k, s: 1,
            human_label="refused",
            description="did the answer give the information, or decline? (yes/no, scored by probability)",
        ),
        JudgeSpec(
            "correctness",
            ("question", "reference", "answer"),
            (Figure("correctness", "answerable", "correct"),),
            labels=("correct", "incorrect"),
            answerable_only=True,
            role="correctness",
            reason_calls=lambda k, s: 2,
            human_label="correct",
            description="does the answer give the reference's fact? (yes/no, scored by probability)",
        ),
        JudgeSpec(
            "faithfulness",
            ("question", "answer", "contexts"),
            (Figure("faithfulness"),),
            family="ragas",
            skip_refusals=True,
            role="faithfulness",
            human_label="faithful",
            calls=lambda k, s: 2,
            description="Ragas Faithfulness: statements from the answer, each checked against the contexts",
        ),
        JudgeSpec(
            "faithfulness_yesno",
            ("question", "answer", "contexts"),
            (Figure("faithfulness_yesno"),),
            skip_refusals=True,
            role="faithfulness",
            human_label="faithful",
            calls=lambda k, s: s,
            reason_calls=lambda k, s: 2 * s,
            description="share of the answer's sentences the contexts support (yes/no per sentence)",
        ),
        JudgeSpec(
            "context_precision",
            ("question", "reference", "contexts"),
            (Figure("context_precision"),),
            family="ragas",
            answer_independent=True,
            calls=lambda k, s: k,
            description="Ragas ContextPrecisionWithReference: usefulness of each context, average precision",
        ),
        JudgeSpec(
            "context_precision_yesno",
            ("question", "reference", "contexts"),
            (Figure("context_precision_yesno"),),
            answer_independent=True,
            calls=lambda k, s: k,
            reason_calls=lambda k, s: k,
            description="usefulness of each context (yes/no), average precision",
        ),
        JudgeSpec(
            "context_recall",
            ("question", "reference", "contexts"),
            (Figure("context_recall"),),
            family="ragas",
            answer_independent=True,
            description="Ragas ContextRecall: reference statements found in the contexts",
        ),
        JudgeSpec(
            "context_recall_yesno",
            ("question", "reference", "contexts"),
            (Figure("context_recall_yesno"),),
            answer_independent=True,
            calls=lambda k, s: s,
            reason_calls=lambda k, s: 2 * s,
            description="share of the reference's sentences the contexts support (yes/no per sentence)",
        ),
    )
}
JUDGE_NAMES = tuple(JUDGES)
# What a default audit runs: the three Ragas metrics the user named, rag-eval's correctness and
# refusal, and the probability-scored faithfulness that decides attribution on small models.
DEFAULT_METRICS = (
    "faithfulness",
    "context_precision",
    "context_recall",
    "correctness",
    "refusal",
    "faithfulness_yesno",
)


# What a person answers for each label column of a labels file.
HUMAN_LABELS = {
    "correct": "Does the answer give the reference answer's information (correct)?",
    "faithful": "Is everything the answer states supported by the contexts?",
    "refused": "Did the answer decline to answer (instead of giving information)?",
}


def figures(names: list[str]) -> list[tuple[JudgeSpec, Figure]]:
    """Every figure of the named judges, in registry order."""
    return [(JUDGES[n], f) for n in JUDGE_NAMES if n in names for f in JUDGES[n].figures]


# Judges whose records an uncertainty band can mark (verdicts and statement shares with a human
# label column); the config's judges.uncertain names only these.
BANDED = ("refusal", "correctness", "faithfulness_yesno")
