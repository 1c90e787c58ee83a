"""One outcome per question and prompt: where did the answer go wrong?

For an answerable question, in this order: ``retrieval_miss`` (no relevant chunk in the top k
given to the generator); then, with the answer in hand, ``refused`` (declined although the answer
was there), ``incorrect`` (the correctness judge did not say correct), ``unfaithful``
(faithfulness under the threshold), ``miscited`` (a claim's citations do not support it though a
given passage does) and ``uncited`` (a claim with no citation, supported by a given passage), both
from the ``citations`` judge where it runs, else ``ok``. One wrong sentence is one failure: a claim
no given passage supports is ``unfaithful`` whatever its citations (the citations judge's
``unsupported`` decides ``unfaithful`` where no faithfulness judge runs, and where one judged the
answer faithful, the claim counts as ``miscited``, or ``uncited`` without a citation); a miscited
claim is not also counted uncited. For an unanswerable question:
``correct_refusal`` or ``answered_unanswerable``. ``not_judged`` where a judge whose verdict
decides the outcome failed, or the answer itself failed; ``uncertain`` where such a judge's
decision lay in the band around its cut-off (see ``judges/uncertain.py``) and could change whether
the answer failed: a failure a later judge decided stands, since either way of the uncertain one
fails at generation.

The user's own criteria (``judges.criteria``) do not change these outcomes: a failed criterion is a
flag beside the outcome (``failed_criteria``). Only a criterion declared ``counts_as_failure``
decides one: an answer that would be ``ok`` or ``correct_refusal`` and fails it is
``failed_criterion`` (a generation failure); ``uncertain`` or ``not_judged`` where that criterion's
decision is.

Which judge decides each step is its ``role`` in the judge registry: among the judges with a
record for the answer, the one of highest precedence (faithfulness: the one the config names).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from rag_eval.answers.answer_records import Answer
from rag_eval.attribution.records import JudgeBrief
from rag_eval.base_records import Model
from rag_eval.judges.details import details_of
from rag_eval.judges.registry import JUDGES, decider
from rag_eval.types import Question

OUTCOMES = (
    "ok",
    "retrieval_miss",
    "refused",
    "incorrect",
    "unfaithful",
    "miscited",
    "uncited",
    "correct_refusal",
    "answered_unanswerable",
    "failed_criterion",
    "not_judged",
    "uncertain",
)
RETRIEVAL_FAILURES = ("retrieval_miss",)
GENERATION_FAILURES = (
    "refused",
    "incorrect",
    "unfaithful",
    "miscited",
    "uncited",
    "answered_unanswerable",
    "failed_criterion",
)
# The outcomes where nothing went wrong: a criterion declared ``counts_as_failure`` that fails turns
# them into ``failed_criterion``.
GOOD = ("ok", "correct_refusal")
# The threshold of a report that recorded none: written before the setting existed, under the
# majority rule of those versions (the config's default is ``judges.registry.FAITHFUL_SHARE``).
UNRECORDED_FAITHFULNESS_THRESHOLD = 0.5


class _CitedSentence(Model):
    """What an outcome reads of one sentence the citations judge decided: its kind and citations."""

    kind: Any = None
    cited: Any = None


class _CitationsDetails(Model):
    """What an outcome reads of the citations judge's details: each sentence."""

    sentences: list[_CitedSentence] | None = None


# A judge's record read as not run: the chain goes on without it (``_builtin``'s ``unsure``).
_SKIPPED = JudgeBrief(status="skipped")


class Verdict(Protocol):
    """What attribution reads of a judge's record: a ``Judgement``, or a report row's ``JudgeBrief``."""

    @property
    def status(self) -> str: ...
    @property
    def score(self) -> float | None: ...
    @property
    def verdict(self) -> str | None: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def probability(self) -> float | None: ...


def attribute(
    question: Question,
    retrieved: bool,
    generation: Answer | None,
    judgements: Mapping[str, Verdict],
    *,
    faithfulness_threshold: float,
    faithfulness_judge: str | None = "faithfulness",
) -> tuple[str, str]:
    """(outcome, why) for one question and prompt; ``judgements`` maps judge name to its record;
    ``faithfulness_judge`` names the faithfulness figure that decides ``unfaithful``."""
    outcome, why = _builtin(
        question,
        retrieved,
        generation,
        judgements,
        faithfulness_threshold=faithfulness_threshold,
        faithfulness_judge=faithfulness_judge,
    )
    if outcome == "uncertain":
        # Either way the uncertain verdict goes, a failed counts_as_failure criterion fails the answer
        # at generation (review 55 M1, as F6 within the built-in judges).
        for name, j in judgements.items():
            spec = JUDGES.get(name)
            criterion = spec.criterion if spec is not None else None
            if criterion is not None and criterion.counts_as_failure and j.status == "judged" and j.verdict == "fail":
                return "failed_criterion", (
                    f"{name} failed: {j.reason or criterion.question}; a generation failure whichever way "
                    f"the uncertain verdict goes ({why})"
                )
    if outcome not in GOOD:
        return outcome, why
    for name, j in judgements.items():
        spec = JUDGES.get(name)
        if spec is None or spec.criterion is None or not spec.criterion.counts_as_failure or j.status == "skipped":
            continue
        if j.status == "not_judged":
            return "not_judged", f"{name} judge failed: {j.error}"
        if j.status == "uncertain":
            return "uncertain", _unsure(name, j)
        if j.verdict == "fail":
            return "failed_criterion", f"{name} failed: {j.reason or spec.criterion.question}"
    return outcome, why


def failed_criteria(judgements: Mapping[str, Verdict]) -> list[str]:
    """The criteria this answer failed that show beside its outcome (not the ``gate_only`` ones)."""
    return [
        name
        for name, j in judgements.items()
        if (spec := JUDGES.get(name)) is not None
        and spec.criterion is not None
        and not spec.criterion.gate_only
        and j.status == "judged"
        and j.verdict == "fail"
    ]


def _builtin(
    question: Question,
    retrieved: bool,
    generation: Answer | None,
    judgements: Mapping[str, Verdict],
    *,
    faithfulness_threshold: float,
    faithfulness_judge: str | None,
) -> tuple[str, str]:
    """The outcome the built-in judges decide (``attribute`` without the criteria)."""

    def considered(name: str | None) -> Verdict | None:
        j = judgements.get(name) if name else None
        return None if j is None or j.status == "skipped" else j

    def unsure(name: str | None, j: Verdict) -> tuple[str, str]:
        """``uncertain``, unless the answer fails later in the chain whichever way ``name`` goes (a
        judge after it decided a failure): a failure of the generation stage either way, shown as
        the failure that was decided (user trial 4 F6)."""
        without = {**judgements, name: _SKIPPED} if name else judgements
        rest, why = _builtin(
            question,
            retrieved,
            generation,
            without,
            faithfulness_threshold=faithfulness_threshold,
            faithfulness_judge=faithfulness_judge,
        )
        if rest in GENERATION_FAILURES:
            p = f" (P {j.probability:.2f})" if j.probability is not None else ""
            return rest, f"{why}; a generation failure whichever way the uncertain {name} verdict{p} goes"
        return "uncertain", _unsure(name, j)

    if question.answerable and not retrieved:
        return "retrieval_miss", "no relevant chunk in the contexts given to the generator"
    if generation is None or generation.error is not None:
        return "not_judged", f"no answer: {(generation.error if generation else None) or 'not generated'}"
    rname = decider("refusal", judgements)
    rj = considered(rname)
    if rj is not None and rj.status == "not_judged":
        return "not_judged", f"{rname} judge failed: {rj.error}"
    if rj is not None and rj.status == "uncertain":
        # Unanswerable: declined or not is the whole outcome. Answerable: a refusal fails too.
        return unsure(rname, rj) if question.answerable else ("uncertain", _unsure(rname, rj))
    refused = rj is not None and rname is not None and rj.status == "judged" and rj.verdict == JUDGES[rname].positive
    if not question.answerable:
        if rj is None or rj.verdict is None:
            return "not_judged", "the refusal judge is not configured"
        return (
            ("correct_refusal", rj.reason or "declined")
            if refused
            else ("answered_unanswerable", rj.reason or "answered a question the documents cannot answer")
        )
    if refused and rj is not None:
        return "refused", rj.reason or "declined although the answer was retrieved"
    cname = decider("correctness", judgements)
    cj = considered(cname)
    if cj is not None and cj.status == "not_judged":
        return "not_judged", f"{cname} judge failed: {cj.error}"
    if cj is not None and cj.status == "uncertain":
        return unsure(cname, cj)
    correct = cj is not None and cname is not None and cj.status == "judged" and cj.verdict == JUDGES[cname].positive
    if cj is not None and cj.verdict is not None and not correct:  # partial (earlier releases): not correct
        return "incorrect", f"{cj.verdict}: {cj.reason}"
    faith = judgements.get(faithfulness_judge) if faithfulness_judge else None
    if faith is not None and faith.status == "not_judged":
        return "not_judged", f"{faithfulness_judge} judge failed: {faith.error}"
    if faith is not None and faith.status == "uncertain":
        return unsure(faithfulness_judge, faith)
    if (
        faith is not None
        and faith.status == "judged"
        and faith.score is not None
        and faith.score < faithfulness_threshold
    ):
        return (
            "unfaithful",
            f"{faithfulness_judge} {faith.score:.2f} < {faithfulness_threshold}: {faith.reason}",
        )
    cited = _citations(judgements, considered, faithful=faith is not None and faith.status == "judged")
    if cited is not None:
        return cited
    return "ok", "retrieved, answered" + (", judged correct" if correct else "")


def _citations(
    judgements: Mapping[str, Verdict], considered: Callable[[str | None], Verdict | None], *, faithful: bool
) -> tuple[str, str] | None:
    """``miscited``, ``uncited`` (or ``unfaithful`` where no faithfulness judge ran) from the
    citations judge; None where it did not run or found every claim supported by its citations."""
    name = decider("citations", judgements)
    j = considered(name)
    if j is None or name is None:
        return None
    if j.status == "not_judged":
        return "not_judged", f"{name} judge failed: {j.error}"
    if j.status == "uncertain":
        return "uncertain", f"{name} uncertain: {j.reason}; label it or escalate it"
    if j.verdict == "unsupported":
        if not faithful:
            return "unfaithful", f"{name}: {j.reason}"
        # The faithfulness judge found support the citations judge did not: the citation is what failed.
        rows = _CitationsDetails.load(getattr(j, "details", None) or {}).sentences or []
        bad = [r for r in rows if r.kind in ("unsupported", "miscited")]
        return ("miscited" if any(r.cited for r in bad) else "uncited"), f"{name}: {j.reason}"
    if j.verdict in ("miscited", "uncited"):
        return j.verdict, f"{name}: {j.reason}"
    return None


def _unsure(name: str | None, j: Verdict | None) -> str:
    """Why an outcome is uncertain: the judge, its probability and its band."""
    d = details_of(getattr(j, "details", None) or {})
    band: list[Any] = d.band or ["?", "?"]
    if d.score_range is not None:
        lo, hi = d.score_range
        what = f"its share of supported statements lies between {lo:.2f} and {hi:.2f}"
    else:
        probability = j.probability if j is not None else None
        what = f"P {probability:.2f}" if probability is not None else "its probability"
    if d.left_uncertain:
        # Not the band's doing: a close call to the cut-off, or a rule (user trial 3 L8).
        return f"{name} uncertain: {d.left_uncertain}; label it or escalate it"
    edges = ", ".join(f"{b:.3f}" if isinstance(b, int | float) else str(b) for b in band[:2])
    return f"{name} uncertain: {what}, within its band [{edges}); label it or escalate it"
