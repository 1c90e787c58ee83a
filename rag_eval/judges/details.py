"""What a judgement's ``details`` hold, typed per kind of judge: a verdict judge's (its raw reply,
the prompt variant it asked, the evidence of its reason), a statement judge's (each statement of the
answer or reference, with its probability or Ragas' verdict), a context judge's (each context's
probability of being useful), Ragas' context metrics' (their verdicts and classifications), and
others' (a criterion's rubric, the citations judge, a judge of your own). Every kind also holds
what the stages after judging add: the uncertain band and the leaning, the escalation, the
adaptation, whether its reasons were deferred.

``details_of`` reads the dict a ``judgements.jsonl`` line holds (old run folders included: the kind
is told by the keys present, no tag is written); the typed record keeps unknown keys and writes back
exactly the keys it had (``base_records.Model``), so files and reports are unchanged.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Tag, TypeAdapter

from rag_eval.base_records import Model, Num

DetailsKind = Literal["verdict", "statements", "contexts", "ragas", "other"]


class DetailsBase(Model):
    """What every kind's details may hold: what the stages after judging added."""

    calibrated: bool | None = None  # decided at a cut-off fitted on labelled cases
    variant: str | None = None  # the prompt (cut-off name) a judge of several prompts asked
    band: list[Num] | None = None  # the uncertain band of its cut-off
    leaning: str | None = None  # an uncertain verdict: what the judge leaned to
    leaning_score: Num | None = None
    uncertain_statements: list[int] | None = None  # the statements whose decision is in the band
    score_range: list[Num] | None = None  # the share of supported statements, its lowest and highest
    escalation: dict[str, Any] | None = None  # how a second judge decided (escalation.py)
    adapted: dict[str, Any] | None = None  # re-decided by judges adapted to the corpus
    reasons_deferred: bool | None = None  # the reason is asked only for the answers a reader is shown
    model_said: Any = None  # the model's own words after its verdict (one, or one per statement or context)
    left_uncertain: str | None = None  # why a decided verdict was left uncertain (a close call, a restated reference)


class VerdictDetails(DetailsBase):
    """A yes/no verdict judge's (refusal, correctness, a criterion): the reply and the reason's evidence."""

    raw: str | None = None
    evidence: dict[str, Any] | None = None


class Statement(Model):
    """One statement of the answer (faithfulness) or of the reference (context recall): scored by
    probability (``p_supported``, ``supported``) or by Ragas (``verdict`` 1/0)."""

    statement: str = ""
    p_supported: Num | None = None
    supported: bool | None = None
    verdict: int | None = None
    reason: str | None = None
    evidence: dict[str, Any] | None = None


class StatementsDetails(DetailsBase):
    """A statement judge's: each statement and how it was decided."""

    statements: list[Statement] = []

    @property
    def probabilities(self) -> list[Num]:
        """Each statement's P(supported), in order (a probability-scored judge's)."""
        return [s.p_supported for s in self.statements if s.p_supported is not None]


class ContextsDetails(DetailsBase):
    """A context judge's (context precision): each context's P(useful) and the reason's evidence."""

    p_useful: list[Num] = []
    contexts: list[dict[str, Any]] = []


class RagasDetails(DetailsBase):
    """Ragas' context metrics': context precision's verdict per context, context recall's
    classification per reference statement."""

    verdicts: list[int] | None = None
    classifications: list[dict[str, Any]] | None = None


class OtherDetails(DetailsBase):
    """Any other judge's (a criterion's rubric, the citations judge, a judge of your own): its keys as written."""


def kind_of(details: Any) -> DetailsKind:
    """The kind of judge a ``details`` dict (or record) came from, by the keys it holds."""
    if isinstance(details, DetailsBase):
        keys = set(details.model_fields_set) | set(details.model_extra or {})
    else:
        keys = set(details or {})
    if "statements" in keys:
        return "statements"
    if "p_useful" in keys:
        return "contexts"
    if "verdicts" in keys or "classifications" in keys:
        return "ragas"
    if "raw" in keys or "evidence" in keys:
        return "verdict"
    return "other"


Details = Annotated[
    Annotated[VerdictDetails, Tag("verdict")]
    | Annotated[StatementsDetails, Tag("statements")]
    | Annotated[ContextsDetails, Tag("contexts")]
    | Annotated[RagasDetails, Tag("ragas")]
    | Annotated[OtherDetails, Tag("other")],
    Discriminator(kind_of),
]

_DETAILS: TypeAdapter[Details] = TypeAdapter(Details)


def details_of(details: dict[str, Any] | None) -> Details:
    """The typed details of a judgement's ``details`` dict."""
    return _DETAILS.validate_python(details or {})
