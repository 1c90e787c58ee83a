"""Word evidence beside the model's yes/no: the words a claim's contexts lack, the reference's words
an answer lacks, the blend fitted like scikit-learn's logistic regression, and a judge with a
saved blend deciding on the blended probability with the missing words in its reason."""

import asyncio

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from rag_eval.calibration.lexical import (
    Blend,
    cited_support,
    content_words,
    coverage,
    declining,
    fit_blend,
    logit,
    names,
    stem,
    support,
)
from rag_eval.judges.judge_records import Agreement, Calibration, JudgesSection
from rag_eval.judges.scored import ScoredJudges, word_note
from rag_eval.llm.client import LLM
from rag_eval.llm.settings import LLMConfig
from rag_eval.report.markdown import calibration_lines

from ..scripted_server import ScriptedServer


def test_content_words_drop_stopwords_and_keep_numbers_and_names():
    assert content_words("Is the port 8443 used by the service? The service is.") == ["port", "8443", "service"]
    assert content_words("Define __instancecheck__ on the metaclass") == ["Define", "__instancecheck__", "metaclass"]
    assert stem("validators") == stem("validator") == "validator"
    assert stem("called") == "call" and stem("is") == "is"


def test_names_are_what_a_reader_would_type():
    text = "Use attrs.validate(inst), field(alias=...), __len__, my_var, getLogger or ReturnLogger; `cmp_using` too"
    assert names(text) == [
        "cmp_using",
        "attrs.validate",
        "field",
        "__len__",
        "my_var",
        "getLogger",
        "ReturnLogger",
    ]
    assert names("A plain sentence without code.") == []


def test_support_lists_the_claims_words_no_context_contains():
    s = support("The ReturnLogger keeps 42 lines in memory.", ["structlog.testing.ReturnLogger returns its lines."])
    assert s.missing == ("keeps", "42", "memory")
    assert s.word_share == pytest.approx(1 - 3 / 5)  # ReturnLogger, keeps, 42, lines, memory
    assert s.name_share == 1.0
    assert support("It is so.", ["x"]).word_share == 1.0  # nothing to check: no evidence against


def test_coverage_reads_names_words_and_a_yes_no_conflict():
    c = coverage("No, attrs never calls super(); it collects the attributes.", "Yes, the generated __init__ calls it.")
    assert c.conflict and c.polarity == ("no", "yes")
    assert c.missing == ("super",) and c.names_reference and c.name_recall == 0.0
    full = coverage("Use attrs.make_class(name, attrs).", "Call `make_class` from attrs.")
    assert full.name_recall == 1.0 and not full.conflict
    words = coverage("The power operator binds more tightly.", "Power binds tightly.")
    assert words.missing == ("operator",) and not words.names_reference
    assert words.word_recall == pytest.approx(3 / 4)


def test_declining_reads_a_bare_yes_or_no_talk_of_the_documents_and_new_words():
    q = "does a mapping pattern in match/case call __missing__ on a defaultdict?"
    side = declining(q, "No, a mapping pattern in a match/case statement does not call `__missing__` on a defaultdict.")
    assert side.polar == "no" and side.source_words == () and side.new_words == ("statement",)
    assert side.features() == {"polar": 1.0, "source_talk": 0.0, "new_words": pytest.approx(np.log(2))}
    refused = declining("What port does it use?", "The provided documents do not say which port.")
    assert refused.polar is None and refused.source_words == ("provided", "documents", "say")
    assert refused.new_words == ()  # "port" only repeats the question
    assert declining("Can a lambda hold statements?", "No.").polar == "no"
    # A noun phrase after "No" is not a side taken.
    assert declining("How do I restart it?", "No restart command appears in the documentation.").polar is None


def test_the_refusal_note_names_what_the_decided_side_rests_on():
    side = declining("does match/case call __missing__?", "No, a mapping pattern does not call `__missing__`.")
    assert (
        word_note(side, negative=True)
        == 'the answer opens with "No"; it states "mapping", "pattern" beyond the question'
    )
    # Only evidence for the decided side is named: a bare No is no evidence of declining.
    assert word_note(side, negative=False) == ""
    refused = declining("What port does it use?", "The documents do not give the port.")
    assert (
        word_note(refused, negative=False)
        == 'the answer speaks of the material given ("documents", "give"); it says nothing the question did not'
    )
    assert word_note(refused, negative=True) == ""


def test_fit_blend_equals_scikit_learns_logistic_regression():
    rng = np.random.default_rng(0)
    n = 200
    p_model = rng.uniform(0.05, 0.95, n)
    share = rng.uniform(0, 1, n)
    z = -1.0 + 0.8 * np.log(p_model / (1 - p_model)) + 2.5 * share
    y = rng.uniform(0, 1, n) < 1 / (1 + np.exp(-z))
    blend = fit_blend(list(p_model), [{"word_share": s} for s in share], list(y))
    ref = LogisticRegression(C=1.0, tol=1e-10, max_iter=1000).fit(
        np.column_stack([[logit(p) for p in p_model], share]), y
    )
    assert blend.intercept == pytest.approx(ref.intercept_[0], abs=1e-4)
    assert [blend.model, blend.weights["word_share"]] == pytest.approx(list(ref.coef_[0]), abs=1e-4)
    p = blend.p(0.7, {"word_share": 0.4})
    assert p == pytest.approx(ref.predict_proba([[logit(0.7), 0.4]])[0, 1], abs=1e-5)
    assert Blend.from_dict(blend.to_dict()).p(0.7, {"word_share": 0.4}) == pytest.approx(p, abs=1e-5)


def test_the_note_names_the_words_a_negative_decision_rests_on():
    c = coverage("No: use structlog.testing.ReturnLogger.", "Yes, a bound logger from get_logger().")
    assert (
        word_note(c, negative=True)
        == 'the reference says "No", the answer "Yes"; the answer lacks the reference\'s "structlog.testing.ReturnLogger"'
    )
    assert word_note(c, negative=False) == ""
    s = support("It keeps 42 lines.", ["It keeps lines."])
    assert word_note(s, negative=True) == 'no context contains "42"'


def _scored(server, blends):
    async def main(run):
        llm = LLM(
            LLMConfig(provider="openai", model="m", max_retries=0, timeout_s=5),
            base_url=server.base_url,
            model="m",
            cache=None,
        )
        try:
            scored = ScoredJudges.load(
                llm, None, {"correctness": 0.5, "correctness_short": 0.5, "faithfulness_yesno": 0.5}
            )
            scored.blends = blends
            scored.reasons = "model"
            return await run(scored)
        finally:
            await llm.aclose()

    return main


def test_a_saved_blend_decides_and_its_missing_words_are_the_reason():
    # The model says Yes at 0.8 to everything; the blend weighs the words: an answer lacking the
    # reference's name is incorrect, a statement with words no context has is not supported.
    question, reference = "Which logger returns what it gets?", "structlog.testing.ReturnLogger returns it."
    wrong = "A bound logger made by get_logger() returns it."
    corr = Blend(-2.0, 1.0, {"name_recall": 3.0, "word_recall": 0.0, "names_reference": 0.0, "conflict": -2.0})
    faith = Blend(-2.0, 0.5, {"word_share": 3.0, "name_share": 0.0})
    contexts = ["ReturnLogger returns what it gets, for tests."]

    async def run(scored):
        right = await scored.correctness("q1", "p", question, reference, "Use `ReturnLogger`; it returns what it gets.")
        bad = await scored.correctness("q2", "p", question, reference, wrong)
        f = await scored.faithfulness(
            "q3", "p", question, "ReturnLogger returns what it gets. It writes 42 files.", contexts
        )
        return right, bad, f

    with ScriptedServer(reply=lambda body: "Yes: it matches.", probability=lambda body: 0.8) as s:
        blended = asyncio.run(_scored(s, {"correctness_short": corr, "faithfulness_yesno": faith})(run))
        plain = asyncio.run(_scored(s, {})(run))
    right, bad, f = blended
    p_right = corr.p(0.8, coverage(reference, "Use `ReturnLogger`; it returns what it gets.").features())
    assert right.verdict == "correct" and right.probability == pytest.approx(p_right, abs=1e-6)
    assert bad.verdict == "incorrect" and bad.probability == pytest.approx(
        1 / (1 + np.exp(-(-2.0 + logit(0.8)))), abs=1e-6
    )
    assert bad.reason.endswith('the answer lacks the reference\'s "structlog.testing.ReturnLogger"')
    assert 'the model wrote "Yes" (P(correct) = 0.80 from the model, 0.35 with the word evidence)' in bad.reason
    words = bad.details["evidence"]["words"]
    assert words["p_model"] == pytest.approx(0.8, abs=1e-3) and words["missing"] == ["structlog.testing.ReturnLogger"]
    first, second = f.details["statements"]
    assert first["supported"] and not second["supported"] and f.score == 0.5
    assert second["reason"].endswith('no context contains "writes", "42", "files"')
    # Without a blend the same replies decide on the model's 0.8 alone: all correct and supported.
    assert [j.verdict for j in plain[:2]] == ["correct", "correct"] and plain[2].score == 1.0
    assert "words" not in plain[1].details["evidence"]


def test_a_refusal_blend_overturns_a_no_that_answers_and_says_why():
    # The pd-017: the model reads "No, ... does not call ..." as declining (P(refused) 0.77).
    question = "does a mapping pattern in match/case call __missing__ on a defaultdict?"
    answers = {
        "q1": "No, a mapping pattern in a match/case statement does not call `__missing__` on a defaultdict.",
        "q2": "The provided documents do not say.",
    }
    blend = Blend(-1.0, 2.64, {"new_words": -1.26, "polar": -1.7, "source_talk": 2.53})

    async def run(scored):
        scored.cutoffs["refusal"] = 0.56
        return [await scored.refusal(q, "p", question, a) for q, a in answers.items()]

    with ScriptedServer(reply=lambda body: "No: it declines.", probability=lambda body: 0.77) as s:
        answered, refused = asyncio.run(_scored(s, {"refusal": blend})(run))
        plain = asyncio.run(_scored(s, {})(run))
    features = declining(question, answers["q1"]).features()
    assert answered.verdict == "answered" and answered.probability == pytest.approx(blend.p(0.77, features), abs=1e-6)
    assert answered.reason.endswith('the answer opens with "No"; it states "statement" beyond the question')
    assert answered.details["model_said"] == "No" and answered.details["evidence"]["words"]["p_model"] == pytest.approx(
        0.77
    )
    assert refused.verdict == "refused" and refused.reason.endswith("it says nothing the question did not")
    # Without the blend the model's 0.77 decides both: refused.
    assert [j.verdict for j in plain] == ["refused", "refused"]


def test_the_report_says_how_a_blend_decides_and_how_far_a_ragas_metric_agrees():
    blend = Blend(-2.1, 0.88, {"word_recall": 0.95})
    j = JudgesSection(
        metrics=["faithfulness", "context_recall", "correctness"],
        calibration={"correctness": Calibration(cutoff=0.42, calibrated=True, blend=blend.describe())},
        ragas_agreement={"faithfulness": Agreement(accuracy=0.61, n=28, measured_on="real answers (reporting part)")},
    )
    text = "\n".join(calibration_lines(j))
    assert "blended with word evidence, logistic(-2.10 +0.88 x model log-odds +0.95 x word_recall)" in text
    assert (
        "`faithfulness` (Ragas): agrees with people on 0.61 of 28 labelled cases (real answers (reporting part))"
        in text
    )
    # Measured Ragas metrics leave the "not measured" list; context_recall has no human label there.
    assert "`faithfulness`" not in text.split("not measured")[0].split("\n")[-1]
    assert "`correctness`: agreement with people not measured" in text


def test_cited_support_measures_the_cited_passages_against_the_best_other_one():
    passages = [
        "Lists are mutable sequences, typically used to store collections.",
        "A set object is an unordered collection of distinct hashable objects.",
        "Tuples are immutable sequences.",
    ]
    # Cited where its words are: every content word found, nothing better elsewhere.
    right = cited_support("A set is an unordered collection of hashable objects.", passages, [1])
    assert right.word_share == 1.0 and right.elsewhere_gap == 0.0 and right.better_passage is None
    # The same sentence citing the lists passage: of set, unordered, collection, hashable, objects only
    # "collection" is there (1/5); passage 2 holds all five, so the gap is 0.8 and it is named.
    moved = cited_support("A set is an unordered collection of hashable objects.", passages, [0])
    assert moved.word_share == 0.2 and moved.elsewhere_gap == 0.8 and moved.better_passage == 1
    assert moved.missing == ("set", "unordered", "hashable", "objects")
    assert moved.features() == {"word_share": 0.2, "name_share": 1.0, "elsewhere_gap": 0.8}
    # Every passage cited: no other passage, no gap.
    assert cited_support("Tuples are immutable.", passages, [0, 1, 2]).elsewhere_gap == 0.0
