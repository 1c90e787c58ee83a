"""What an answer's words show for a user's criterion (``calibration/criterion_evidence.py``)."""

import math

import pytest

from rag_eval.calibration.criterion_evidence import FEATURES, criterion_features

QUESTION = "How do I retry a call until it succeeds?"
CONTEXT = "[api.md#retry] Retrying\nUse the retry decorator to retry a function until it returns without raising."
ANSWER = (
    "Use the `retry` decorator: it will retry a function until it returns without raising. See `stop_after_attempt`."
)


def test_the_answer_alone_gives_its_code_names_and_length():
    f = criterion_features(("answer",), ANSWER)
    assert set(f) == {"names", "length"}
    # `retry`, `stop_after_attempt`: two code names; 16 word tokens.
    assert f["names"] == pytest.approx(math.log1p(2), abs=1e-6)
    assert f["length"] == pytest.approx(math.log1p(16), abs=1e-6)


def test_each_input_the_criterion_sees_adds_its_features():
    f = criterion_features(("question", "answer", "contexts", "reference"), ANSWER, QUESTION, [CONTEXT], "Use retry.")
    assert set(f) == set(FEATURES)
    # The answer's content words (stemmed, once each; "use" is a stopword): retry, decorator,
    # function, return, raising, see, stop_after_attempt -> "retry" is the question's: 1 of 7.
    assert f["from_question"] == pytest.approx(1 / 7, abs=1e-6)
    # Word 4-grams of the answer (13) found in the context: "use the retry decorator" and the five
    # of "retry a function until it returns without raising"; not "the retry decorator it": 6 of 13.
    assert f["copied"] == pytest.approx(6 / 13, abs=1e-6)
    # The longest run copied in order: "retry a function until it returns without raising" (8 words).
    assert f["longest_copied"] == pytest.approx(math.log1p(8), abs=1e-6)
    # "retry" of the reference "Use retry.": 1 of 7.
    assert f["from_reference"] == pytest.approx(1 / 7, abs=1e-6)
    # Of the code names `retry` and `stop_after_attempt`, the question holds "retry": one new name.
    assert f["new_names"] == pytest.approx(math.log1p(1), abs=1e-6)


def test_new_names_count_only_the_code_names_the_question_did_not_bring():
    """An answer that only repeats the question's names names nothing new: what tells "names the
    function to use" from an answer that explains the names it was asked about."""
    question = "What does dotenv_values do with a line that has no equals sign, unlike load_dotenv?"
    repeats = "In `dotenv_values` the key maps to `None`; `load_dotenv` skips the line."
    brings = "Call `dotenv_values` with `interpolate` set, or `find_dotenv` first."
    # `dotenv_values`, `None`, `load_dotenv`: only `None` is not in the question.
    assert criterion_features(("question", "answer"), repeats, question)["new_names"] == pytest.approx(math.log1p(1))
    # `dotenv_values` (asked), `interpolate`, `find_dotenv`: two new of three.
    f = criterion_features(("question", "answer"), brings, question)
    assert f["new_names"] == pytest.approx(math.log1p(2)) and f["names"] == pytest.approx(math.log1p(3))


def test_words_in_another_order_are_not_copied():
    shuffled = "[a] A\nraising without returns it until function a retry"
    f = criterion_features(("answer", "contexts"), ANSWER, contexts=[shuffled])
    # Every word of the run is there, none four in a row: nothing copied, runs of one word.
    assert f["copied"] == 0.0 and f["longest_copied"] == pytest.approx(math.log1p(1), abs=1e-6)


def test_an_empty_answer_has_zeros_not_errors():
    f = criterion_features(("question", "answer", "contexts"), "", QUESTION, [CONTEXT])
    assert f == {
        "names": 0.0,
        "length": 0.0,
        "from_question": 0.0,
        "new_names": 0.0,
        "copied": 0.0,
        "longest_copied": 0.0,
    }
