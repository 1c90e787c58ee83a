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


def test_an_endpoint_without_logprobs_is_named_and_never_calibrated(tmp_path, capsys, monkeypatch):
    """User trial 3 F10: an OpenAI-compatible judge that returns no logprobs gives verdicts read from
    the text (P 0 or 1): judge-check says so and --save refuses it (exit 2, nothing saved); an audit's
    report says so beside the judge instead of advising a judge-check --save that cannot help."""
    from rag_eval.calibration.cutoffs import user_path

    from ..scripted_server import ScriptedServer, structured_reply

    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    cases = tmp_path / "cases.jsonl"
    rows = [
        {
            "id": f"c{i}",
            "judge": "refusal",
            "source": "mine",
            "question": f"Which port does service {i} use?",
            "answer": "Port 80." if i % 2 else "The documents do not say.",
            "label": "answered" if i % 2 else "refused",
        }
        for i in range(12)
    ]
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with ScriptedServer(lambda n, body: "no-logprobs", reply=structured_reply) as s:
        args = ["judge-check", "--llm", "openai", "--model", "plain", "--base-url", s.base_url, "--cases", str(cases)]
        assert main(["--quiet", *args, "--judges", "refusal"]) == 0
        out = capsys.readouterr().out
        assert "12 verdicts were read from the text: the endpoint returned no logprobs" in out
        assert main(["--quiet", *args, "--judges", "refusal", "--save"]) == 2
        err = capsys.readouterr().err
        assert "the endpoint returned no logprobs for 12 verdicts of refusal" in err and "use an endpoint" in err
    assert not user_path().exists()


def test_a_case_with_a_wrong_label_or_judge_says_which_and_what_it_could_be(tmp_path):
    """User trial 4 F5: a label 'maybe' was reported as "missing: label", a misspelt judge without a
    did-you-mean."""
    from rag_eval.judges.judge_check import load_cases

    rows = [
        {"judge": "refusal", "question": "q", "answer": "a", "label": "maybe"},
        {"judge": "refusall", "question": "q", "answer": "a", "label": "refused"},
        {"judge": "refusal", "question": "q", "answer": "a"},
        {"judge": "refusal", "question": "q", "label": "refused"},
    ]
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_cases(path)
    text = str(err.value)
    assert "cases.jsonl:1" in text and "label 'maybe' is not one of refused, answered" in text
    assert "cases.jsonl:2" in text and "did you mean 'refusal'?" in text
    assert "cases.jsonl:3" in text and "missing: label" in text
    assert "cases.jsonl:4" in text and "missing: answer" in text
