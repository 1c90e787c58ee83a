"""Attribution: one outcome per question and prompt, in the order of design section 6."""

import pytest

from rag_eval.answers.answer_records import Answer
from rag_eval.attribution import JudgeBrief, attribute
from rag_eval.judges.judgement import Judgement
from rag_eval.types import Question

ANS = Question("a", "q?", {"c": 1}, True, reference="r")
UNANS = Question("u", "q?", {}, False)
GEN = Answer(question_id="a", prompt="p", answer="an answer")


def j(status="judged", verdict=None, score=None, reason="because", error=None):
    return Judgement("x", "a", "p", status, score=score, verdict=verdict, reason=reason, error=error)


def ok_judges(**over):
    base = {"refusal": j(verdict="answered"), "correctness": j(verdict="correct"), "faithfulness": j(score=1.0)}
    return {**base, **over}


@pytest.mark.parametrize(
    ("question", "retrieved", "gen", "judges", "expected"),
    [
        (ANS, False, GEN, ok_judges(), "retrieval_miss"),
        (ANS, True, GEN, ok_judges(), "ok"),
        (ANS, True, GEN, ok_judges(refusal=j(verdict="refused")), "refused"),
        (ANS, True, GEN, ok_judges(correctness=j(verdict="incorrect")), "incorrect"),
        (ANS, True, GEN, ok_judges(correctness=j(verdict="partial")), "incorrect"),
        (ANS, True, GEN, ok_judges(faithfulness=j(score=0.2)), "unfaithful"),
        (ANS, True, GEN, ok_judges(faithfulness=j(score=0.5)), "ok"),
        (ANS, True, GEN, ok_judges(correctness=j("not_judged", error="timeout")), "not_judged"),
        (ANS, True, GEN, ok_judges(refusal=j("not_judged", error="timeout")), "not_judged"),
        (ANS, True, GEN, ok_judges(faithfulness=j("not_judged", error="bad json")), "not_judged"),
        (ANS, True, Answer(question_id="a", prompt="p", error="HTTP 500"), {}, "not_judged"),
        (UNANS, False, GEN, {"refusal": j(verdict="refused")}, "correct_refusal"),
        (UNANS, False, GEN, {"refusal": j(verdict="answered")}, "answered_unanswerable"),
        (UNANS, False, GEN, {"refusal": j("not_judged", error="x")}, "not_judged"),
    ],
)
def test_outcomes(question, retrieved, gen, judges, expected):
    outcome, why = attribute(question, retrieved, gen, judges, faithfulness_threshold=0.5)
    assert outcome == expected
    assert why


def test_retrieval_miss_comes_first_even_when_the_answer_is_right():
    assert attribute(ANS, False, GEN, ok_judges(), faithfulness_threshold=0.5)[0] == "retrieval_miss"


def test_skipped_faithfulness_does_not_block_ok():
    judges = ok_judges(faithfulness=j("skipped", reason="refusal"))
    assert attribute(ANS, True, GEN, judges, faithfulness_threshold=0.5)[0] == "ok"


def test_a_report_rows_judge_briefs_decide_as_the_judgements_do():
    """Labels re-attribute from the report's rows: a JudgeBrief is read like a Judgement."""
    briefs = {
        name: JudgeBrief(**{k: getattr(v, k) for k in ("status", "score", "verdict", "reason", "error")})
        for name, v in ok_judges(faithfulness=j(score=0.2)).items()
    }
    assert attribute(ANS, True, GEN, briefs, faithfulness_threshold=0.5) == attribute(
        ANS, True, GEN, ok_judges(faithfulness=j(score=0.2)), faithfulness_threshold=0.5
    )
    assert attribute(ANS, True, GEN, briefs, faithfulness_threshold=0.5)[0] == "unfaithful"


def test_an_uncertain_outcome_says_why_a_close_call_or_its_band_rounded():
    """User trial 3 L8: "within its band [0.749445, 0.83141)" was the close-call margin of a judge
    whose band the same report called empty, with unrounded edges."""
    from rag_eval.attribution.outcomes import _unsure

    close = Judgement(
        "correctness",
        "q1",
        "base",
        "uncertain",
        probability=0.807,
        details={"band": [0.749445, 0.83141], "left_uncertain": "P 0.807 is within the server's numeric noise"},
    )
    assert _unsure("correctness", close) == (
        "correctness uncertain: P 0.807 is within the server's numeric noise; label it or escalate it"
    )
    banded = Judgement("correctness", "q1", "base", "uncertain", probability=0.9, details={"band": [0.85, 0.95]})
    assert _unsure("correctness", banded) == (
        "correctness uncertain: P 0.90, within its band [0.850, 0.950); label it or escalate it"
    )


def test_an_uncertain_verdict_leaves_the_outcome_uncertain_only_where_it_could_change_it():
    """User trial 4 F6: correctness uncertain, but faithfulness (or the citations judge) decided a
    failure: the answer failed at generation whichever way correctness goes; counted as uncertain, the
    failure split undercounted generation failures."""

    def unsure(p=0.61):
        return Judgement("x", "a", "p", "uncertain", probability=p, details={"band": [0.5, 0.7], "leaning": "correct"})

    def outcome(question, judges):
        return attribute(question, True, GEN, judges, faithfulness_threshold=0.5)

    got, why = outcome(ANS, ok_judges(correctness=unsure(), faithfulness=j(score=0.2, reason="2 of 5 supported")))
    assert got == "unfaithful" and why.endswith(
        "a generation failure whichever way the uncertain correctness verdict (P 0.61) goes"
    )
    # Nothing failing after it: the uncertain correctness decides whether the question failed at all.
    assert outcome(ANS, ok_judges(correctness=unsure()))[0] == "uncertain"
    # An uncertain refusal of an answerable question: a refusal fails too, so a later decided failure stands.
    assert outcome(ANS, ok_judges(refusal=unsure(), correctness=j(verdict="incorrect")))[0] == "incorrect"
    assert outcome(ANS, ok_judges(refusal=unsure()))[0] == "uncertain"
    # Unanswerable: declined or not is the whole outcome.
    assert outcome(UNANS, {"refusal": unsure(), "correctness": j(verdict="incorrect")})[0] == "uncertain"
    # Faithfulness uncertain, the citations judge decided a claim no given passage supports.
    cites = Judgement("x", "a", "p", "judged", verdict="unsupported", reason="no passage supports claim 1")
    got, _ = outcome(ANS, ok_judges(faithfulness=unsure(), citations=cites))
    assert got == "unfaithful"
    # Two uncertain steps with nothing decided after: uncertain, naming the first.
    got, why = outcome(ANS, ok_judges(correctness=unsure(), faithfulness=unsure(0.4)))
    assert got == "uncertain" and why.startswith("correctness uncertain")


def test_a_failed_counting_criterion_after_an_uncertain_verdict_is_a_failure():
    """Review 55 M1: correctness uncertain and a counts_as_failure criterion judged fail was
    'uncertain', though either way the answer fails (incorrect, or failed_criterion)."""
    from rag_eval.judges.registry import Criterion, set_criteria

    set_criteria({"no_advice": Criterion(question="Does it give legal advice?", passes="no", counts_as_failure=True)})
    try:
        unsure = Judgement("x", "a", "p", "uncertain", probability=0.6, details={"band": [0.5, 0.7]})
        fail = Judgement("no_advice", "a", "p", "judged", verdict="fail", reason="it advises")
        got, why = attribute(ANS, True, GEN, ok_judges(correctness=unsure, no_advice=fail), faithfulness_threshold=0.5)
        assert got == "failed_criterion" and why.startswith("no_advice failed: it advises; a generation failure")
        passed = Judgement("no_advice", "a", "p", "judged", verdict="pass")
        assert (
            attribute(ANS, True, GEN, ok_judges(correctness=unsure, no_advice=passed), faithfulness_threshold=0.5)[0]
            == "uncertain"
        )
    finally:
        set_criteria({})
