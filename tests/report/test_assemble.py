"""The one report builder: supplied answers and the config's audit get the same attribution
section (outcomes, shares, the failure split with ``failures``) and summary.json parts."""

import json

from rag_eval.answers.answer_records import Answer
from rag_eval.config import config_from_dict
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.judging import judged_figures
from rag_eval.report.assemble import add_judging, retrieved_by_recall, summary, supplied_report
from rag_eval.report.files import write_report
from rag_eval.report.report_records import Report
from rag_eval.types import Question

from ..conftest import ROOT

METRICS = ["refusal", "correctness", "context_recall_yesno"]


def _supplied(tmp_path):
    cfg = config_from_dict(
        {
            "name": "answers",
            "corpus": {"source": "given"},
            "test_set": {"source": "given"},
            "retrieval": {"retrievers": {"supplied": {"type": "bm25"}}},
            "generation": {
                "retriever": "supplied",
                "answers": "answers.jsonl",
            },  # the generator's llm stays the default: the judge's
            "judges": {"metrics": METRICS},
        },
        tmp_path,
    )
    questions = [
        Question("q1", "What is a set?", {}, True, "An unordered collection."),
        Question("q2", "What shape is the orbit?", {}, True, "Elliptical."),
        Question("q3", "Who wrote the tutorial?", {}, False),
    ]
    answers = [
        Answer(question_id=q.id, prompt="system", contexts=[f"ctx-{q.id}"], answer="An answer.", model="supplied")
        for q in questions
    ]
    judgements = [
        Judgement("refusal", q.id, "system", "judged", verdict="answered", reason="it answers") for q in questions
    ]
    judgements += [
        Judgement("correctness", "q1", "system", "judged", verdict="correct", score=1.0, reason="same"),
        Judgement("correctness", "q2", "system", "judged", verdict="correct", score=1.0, reason="same"),
        Judgement("context_recall_yesno", "q1", "system", "judged", score=1.0, reason="found"),
        Judgement("context_recall_yesno", "q2", "system", "judged", score=0.0, reason="not in the passage"),
    ]
    report = supplied_report(cfg, len(answers), "context_recall_yesno")
    return add_judging(
        report,
        cfg,
        questions,
        answers,
        judgements,
        retrieved_by_recall("context_recall_yesno", judgements),
        figures=judged_figures(cfg, questions, judgements),
    )


def test_supplied_answers_get_the_audit_s_attribution_section(tmp_path):
    report = _supplied(tmp_path)
    rows = {r.question_id: r for r in report.attribution.rows}
    assert {q: r.outcome for q, r in rows.items()} == {
        "q1": "ok",
        "q2": "retrieval_miss",
        "q3": "answered_unanswerable",
    }
    assert rows["q2"].why == (
        "context_recall_yesno 0.00 < 0.5: the contexts do not hold the reference (not in the passage)"
    )
    split = report.attribution.split["system"]
    assert (split.retrieval, split.generation, split.failures, split.questions) == (1, 1, 2, 3)
    assert report.attribution.shares["system"]["ok"].count == 1
    assert abs(report.attribution.shares["system"]["ok"].value - 1 / 3) < 1e-12
    # The same keys as the split of an audit's report (the supplied builder once lacked failures).
    audit = json.loads((ROOT / "tests/data/old_runs/compare-labelled/report.json").read_text())
    assert set(split.dump()) == set(audit["attribution"]["split"]["a"])
    assert set(rows["q1"].dump()) == set(audit["attribution"]["rows"][0])
    assert set(report.judges.figures["system"]) == {
        "refusal_accuracy",
        "needless_refusal",
        "correctness",
        "context_recall_yesno",
    }


def test_supplied_report_files_and_summary(tmp_path):
    report = _supplied(tmp_path)
    # User trial 2 M8: the judge model wrote none of these answers: no "grades its own answers".
    assert report.judges.same_model is False
    write_report(tmp_path, report)
    # Every run has its page: the judged answers and where they fail, with no retrieval section.
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "answers judged without retrieval labels" in page and "Where it fails" in page
    assert "<h2>Retrieval" not in page
    s = json.loads((tmp_path / "summary.json").read_text())
    assert list(s) == ["name", "created", "supplied", "generation", "attribution", "failure_split"]
    assert s["failure_split"]["system"]["failures"] == 2
    assert s["generation"]["system"]["correctness"]["value"] == 1.0
    assert s == summary(Report.load(json.loads((tmp_path / "report.json").read_text())))
