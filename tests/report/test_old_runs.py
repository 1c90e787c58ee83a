"""Run folders written before the report was typed (``tests/data/old_runs``, written by the code at
724a6f0 with ``tests/data/old_runs/make_runs.py``) still load, and re-render to the same files. Their report.md
files hold two generic sentences as the report words them now (the retrieval figures' interval, the
prompt comparison's unadjusted intervals; reworded after a user trial); every other byte is 724a6f0's."""

import json
import shutil

import pytest

import rag_eval
from rag_eval.cli import main
from rag_eval.report.report_records import Report

from ..conftest import ROOT

OLD = ROOT / "tests" / "data" / "old_runs"
FOLDERS = ["compare-labelled", "retrieval", "demo-retrieval", "supplied"]


@pytest.mark.parametrize("name", FOLDERS)
def test_an_old_report_reads_back_to_the_same_json(name):
    raw = json.loads((OLD / name / "report.json").read_text(encoding="utf-8"))
    assert Report.load(raw).dump() == raw


@pytest.mark.parametrize("name", FOLDERS)
def test_an_old_run_folder_re_renders_to_the_same_files(name, tmp_path, capsys):
    run = tmp_path / name
    shutil.copytree(OLD / name, run)
    assert main(["report", str(run)]) == 0
    # Byte for byte: the same figures, keys, order and number formatting.
    assert (run / "summary.json").read_text(encoding="utf-8") == (OLD / name / "summary.json").read_text(
        encoding="utf-8"
    )
    if (OLD / name / "report.md").exists():
        assert (run / "report.md").read_text(encoding="utf-8") == (OLD / name / "report.md").read_text(encoding="utf-8")
    old = json.loads((OLD / name / "report.json").read_text(encoding="utf-8"))
    assert json.loads((run / "report.json").read_text(encoding="utf-8")) == old


def test_an_old_run_reads_as_typed_records():
    result = rag_eval.load_run(OLD / "compare-labelled")
    report = result.typed_report
    assert report.test_set.questions == 4 and report.test_set.unanswerable == 1
    assert report.generation.records[0].prompt_hash == result.generation_df().prompt_hash[0]
    assert {j.judge for j in report.judges.records} >= {"refusal", "correctness", "faithfulness_yesno"}
    correctness = report.judges.figures["a"]["correctness"]
    assert correctness.value == result.figure("generation.a.correctness")["value"]
    assert correctness.ppi is not None and correctness.ppi.n_labels == 2
    assert report.labels.answers_labelled == 3 and report.labels.per_column["refused"] == 3
    assert [c.metric for c in report.comparison.comparisons] == list(result.summary.comparison)
    split = report.attribution.split["b"]
    assert split.failures == split.retrieval + split.generation
    att = result.attribution_df()
    assert list(att.columns) == [
        "question_id",
        "question",
        "prompt",
        "outcome",
        "why",
        "answerable",
        "reference",
        "answer",
    ]
    assert set(att.outcome) == {r.outcome for r in report.attribution.rows}
    miss = Report.load(json.loads((OLD / "demo-retrieval" / "report.json").read_text())).retrieval.misses["hybrid"][0]
    assert miss.diagnosis.cause and miss.diagnosis.rule
