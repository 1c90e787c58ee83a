"""One outcome per question and prompt: where did the answer go wrong?

For an answerable question, in this order: ``retrieval_miss`` (no relevant chunk in the top k
given to the generator); then, with the answer in hand, ``refused`` (declined although the answer
was there), ``incorrect`` (the correctness judge did not say correct), ``unfaithful``
(faithfulness under the threshold), else ``ok``. For an unanswerable question:
``correct_refusal`` or ``answered_unanswerable``. ``not_judged`` where a judge whose verdict
decides the outcome failed, or the answer itself failed; ``uncertain`` where such a judge's
decision lay in the band around its cut-off (see ``judges/uncertain.py``).

Which judge decides each step is its ``role`` in the judge registry: among the judges with a
record for the answer, the one of highest precedence (faithfulness: the one the config names).
"""

from __future__ import annotations

from rag_eval.judges.registry import JUDGES, decider
from rag_eval.types import Question

OUTCOMES = (
    "ok",
    "retrieval_miss",
    "refused",
    "incorrect",
    "unfaithful",
    "correct_refusal",
    "answered_unanswerable",
    "not_judged",
    "uncertain",
)
RETRIEVAL_FAILURES = ("retrieval_miss",)
GENERATION_FAILURES = ("refused", "incorrect", "unfaithful", "answered_unanswerable")


def attribute(
    question: Question,
    retrieved: bool,
    generation: dict | None,
    judgements: dict[str, dict],
    *,
    faithfulness_threshold: float,
    faithfulness_judge: str | None = "faithfulness",
) -> tuple[str, str]:
    """(outcome, why) for one question and prompt; ``judgements`` maps judge name to its record;
    ``faithfulness_judge`` names the faithfulness figure that decides ``unfaithful``."""

    def verdict(name: str) -> tuple[str | None, dict | None]:
        j = judgements.get(name)
        if j is None or j["status"] == "skipped":
            return None, None
        return (j["verdict"] if j["status"] == "judged" else j["status"]), j

    if question.answerable and not retrieved:
        return "retrieval_miss", "no relevant chunk in the contexts given to the generator"
    if generation is None or generation.get("error") is not None:
        return "not_judged", f"no answer: {(generation or {}).get('error') or 'not generated'}"
    rname = decider("refusal", judgements)
    refusal, rj = verdict(rname) if rname else (None, None)
    if refusal == "not_judged":
        return "not_judged", f"{rname} judge failed: {rj['error']}"
    if refusal == "uncertain":
        return "uncertain", _unsure(rname, rj)
    refused = rname is not None and refusal == JUDGES[rname].positive
    if not question.answerable:
        if refusal is None:
            return "not_judged", "the refusal judge is not configured"
        return (
            ("correct_refusal", rj["reason"] or "declined")
            if refused
            else ("answered_unanswerable", rj["reason"] or "answered a question the documents cannot answer")
        )
    if refused:
        return "refused", rj["reason"] or "declined although the answer was retrieved"
    cname = decider("correctness", judgements)
    correctness, cj = verdict(cname) if cname else (None, None)
    if correctness == "not_judged":
        return "not_judged", f"{cname} judge failed: {cj['error']}"
    if correctness == "uncertain":
        return "uncertain", _unsure(cname, cj)
    correct = cname is not None and correctness == JUDGES[cname].positive
    if correctness is not None and not correct:  # partial (earlier releases) counts as not correct
        return "incorrect", f"{correctness}: {cj['reason']}"
    faith = judgements.get(faithfulness_judge) if faithfulness_judge else None
    if faith is not None and faith["status"] == "not_judged":
        return "not_judged", f"{faithfulness_judge} judge failed: {faith['error']}"
    if faith is not None and faith["status"] == "uncertain":
        return "uncertain", _unsure(faithfulness_judge, faith)
    if faith is not None and faith["status"] == "judged" and faith["score"] < faithfulness_threshold:
        return (
            "unfaithful",
            f"{faithfulness_judge} {faith['score']:.2f} < {faithfulness_threshold}: {faith['reason']}",
        )
    return "ok", "retrieved, answered" + (", judged correct" if correct else "")


def _unsure(name: str, j: dict) -> str:
    """Why an outcome is uncertain: the judge, its probability and its band."""
    d = j.get("details") or {}
    band = d.get("band") or ["?", "?"]
    if d.get("score_range") is not None:
        lo, hi = d["score_range"]
        what = f"its share of supported statements lies between {lo:.2f} and {hi:.2f}"
    else:
        what = f"P {j.get('probability'):.2f}" if j.get("probability") is not None else "its probability"
    return f"{name} uncertain: {what}, within its band [{band[0]}, {band[1]}); label it or escalate it"
