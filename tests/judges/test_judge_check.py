"""judge-check's HaluEval cases: what an item becomes, and a span past the file's end said plainly."""

import json

import pytest

from rag_eval.cli import main
from rag_eval.errors import DataError
from rag_eval.judges.judge_check import halueval_cases

ITEM = {
    "knowledge": "Arthur's Magazine was an American literary periodical. It was published in Philadelphia in the 19th century.",
    "question": "Where was Arthur's Magazine published?",
    "right_answer": "Philadelphia",
    "hallucinated_answer": "Boston",
}


def _file(tmp_path, n):
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps(ITEM) + "\n" for _ in range(n)), encoding="utf-8")
    return path


def test_an_item_gives_faithfulness_and_correctness_cases(tmp_path):
    cases = halueval_cases(_file(tmp_path, 3), 1, 2)
    assert [(c["id"], c["judge"], c["label"]) for c in cases] == [
        ("h1-f1", "faithfulness", "faithful"),
        ("h1-f0", "faithfulness", "unfaithful"),
        ("h1-c1", "correctness", "correct"),
        ("h1-c0", "correctness", "incorrect"),
    ]
    assert cases[2]["answer"] == "It was published in Philadelphia in the 19th century."


def test_a_span_past_the_end_is_an_error_naming_the_file_and_its_size(tmp_path, capsys):
    path = _file(tmp_path, 3)
    with pytest.raises(DataError, match=r"the file has 3 items \(0-2\)"):
        halueval_cases(path, 3, 10)
    # Through the CLI: nothing is asked of a model, the error says what to give instead.
    assert main(["judge-check", "--cases", "--halueval", f"{path}:400-440"]) != 0
    err = capsys.readouterr().err
    assert f"{path}:400-440" in err and "no HaluEval item in this span" in err and f"{path}:0-3" in err


def test_a_case_given_with_a_numeric_id_reads_as_its_text():
    from rag_eval.judges.judge_check import as_cases

    case = as_cases([{"id": 7, "judge": "refusal", "label": "refused", "source": 2024, "question": "q"}])[0]
    assert (case.id, case.source) == ("7", "2024")
