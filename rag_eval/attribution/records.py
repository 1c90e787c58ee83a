"""What attribution hands the report: one outcome per question and prompt with why, the share of
each outcome, and the split of failures between retrieval and generation."""

from __future__ import annotations

from rag_eval.base_records import Figure, Model, Num
from rag_eval.judges.judge_records import LabelledEstimate


class Quote(Model):
    """A quote of a judge's reason, checked verbatim (whitespace-normalised) against the answer,
    the contexts and the reference (``judges/evidence.py``)."""

    text: str = ""
    found_in: str | None = None  # "answer", "context 2", "reference"
    verified: bool = False
    copies_prompt: bool = False
    too_short: bool = False  # found, but one plain word: not evidence
    excerpt: str | None = None  # the stretch of the source around the quote
    span: list[int] | None = None  # the quote's place in ``excerpt``


class ReasonEvidence(Model):
    """How the shown reason was made and the quotes it rests on."""

    shown: str | None = None
    quotes: list[Quote] = []


class EvidencePart(Model):
    """One statement (or context) of a judge that decides part by part, with its quotes."""

    text: str = ""
    decided: str | None = None
    quotes: list[Quote] = []


class JudgeBrief(Model):
    """A judge's verdict on the answer, as the attribution row shows it, with its evidence."""

    status: str = ""
    score: Num | None = None
    verdict: str | None = None
    reason: str | None = None
    error: str | None = None
    probability: Num | None = None
    model_said: str | list[str | None] | None = None
    evidence: ReasonEvidence | None = None
    parts: list[EvidencePart] = []

    def all_quotes(self) -> list[Quote]:
        """Its own quotes and its parts'."""
        return list(self.evidence.quotes if self.evidence else []) + [q for p in self.parts for q in p.quotes]

    def shown(self) -> str:
        """The verdict, else the score, else the status."""
        return self.verdict or (f"{self.score:.2f}" if self.score is not None else self.status)


class ContextMark(Model):
    """A context given to the generator, and whether it is a relevant chunk."""

    id: str = ""
    relevant: bool = False


class AttributionRow(Model):
    """One question and prompt: its outcome and why, the answer and the judges that decided."""

    question_id: str = ""
    question: str = ""
    prompt: str = ""
    outcome: str = ""
    why: str = ""
    answerable: bool = True
    reference: str | None = None
    contexts: list[ContextMark] = []
    answer: str | None = None
    judges: dict[str, JudgeBrief] = {}
    # The user's criteria this answer failed, shown beside its outcome (``attribution.failed_criteria``).
    failed_criteria: list[str] = []

    @property
    def failed(self) -> bool:
        """A failure a reader should look at (not ok, not a correct refusal, not undecided)."""
        return self.outcome not in ("ok", "correct_refusal", "uncertain")


class OutcomeShare(Figure):
    """The share of one outcome among a prompt's questions (weighted under a sample), and how many."""

    count: int = 0
    ppi: LabelledEstimate | None = None
    human: LabelledEstimate | None = None


class FailureSplit(Model):
    """A prompt's failures split between retrieval and generation."""

    retrieval: int = 0
    generation: int = 0
    failures: int = 0
    not_judged: int = 0
    uncertain: int = 0
    questions: int = 0


class AttributionSection(Model):
    """Attribution in the report."""

    outcomes: list[str] = []
    shares: dict[str, dict[str, OutcomeShare]] = {}
    split: dict[str, FailureSplit] = {}
    rows: list[AttributionRow] = []
    faithfulness_threshold: Num | None = None
    faithfulness_judge: str | None = None

    def present(self) -> list[str]:
        """The outcomes that occur for some prompt, in their order."""
        return [o for o in self.outcomes if any(sh[o].count for sh in self.shares.values())]
