"""Auditing traces: judged like supplied answers without labels (figures with intervals, skipped
traces counted and named, a seeded sample to label); matched to a labelled test set, with retrieval
figures from the traced documents' ids."""

import csv
import json

import yaml

import rag_eval
from rag_eval.cli import main

from ..conftest import SMALL_CORPUS, write_jsonl
from ..scripted_server import ScriptedServer, judge_name, structured_reply
from .test_traces import PHOENIX

QUESTIONS = [
    {
        "id": "q1",
        "question": "Which sequence type can be changed in place?",
        "answer_in": "py/lists",
        "reference": "Lists.",
    },
    {"id": "q2", "question": "What is a set?", "evidence": "unordered collection of distinct hashable objects"},
    {"id": "q6", "question": "What maps hashable values?", "answer_in": "py/dicts"},
]


def judges(url: str) -> dict:
    return {
        "llm": {"provider": "openai", "model": "scripted", "base_url": url, "max_retries": 0},
        "metrics": ["refusal", "faithfulness_yesno"],
    }


def test_traces_judged_without_labels(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def reply(body):
        # Decorators are not in the traced documents: that answer is judged unsupported.
        if judge_name(body) == "supported" and "Decorators" in body["messages"][-1]["content"]:
            return "No: the context does not say this."
        return structured_reply(body)

    with ScriptedServer(reply=reply) as s:
        (tmp_path / "traces.yaml").write_text(yaml.safe_dump({"name": "prod", "judges": judges(s.base_url)}))
        assert main(["-q", "traces", str(PHOENIX), "--config", "traces.yaml", "--labels", "2"]) == 0
        printed = capsys.readouterr().out
        assert "6 read, 3 audited" in printed and "1 no_retriever_span" in printed
        run = next((tmp_path / "runs").iterdir())
        again = rag_eval.judge_traces([PHOENIX], config=tmp_path / "traces.yaml", labels=2, out=tmp_path / "again")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["traces"] == {
        "read": 6,
        "audited": 3,
        "skipped": {"no_retriever_span": 1, "no_answer": 1, "error_status": 1},
    }
    faith = summary["generation"]["system"]["faithfulness_yesno"]
    assert faith["n"] == 3 and faith["value"] == 2 / 3 and faith["ci_low"] < 2 / 3 < faith["ci_high"]
    assert summary["attribution"]["system"]["unfaithful"]["count"] == 1
    md = (run / "report.md").read_text()
    for trace, question in ((0xA3, "What maps hashable values?"), (0xA4, "Which sequences are immutable?")):
        assert f"{trace:032x}" in md and question in md
    # A seeded sample of two traces to label; the same seed draws the same traces.
    rows = list(csv.DictReader((run / "labels" / "labels.csv").open()))
    assert len(rows) == 2 and {r["question_id"] for r in rows} <= {f"{t:032x}" for t in (0xA1, 0xA2, 0xA6)}
    again_rows = list(csv.DictReader((again.run_dir / "labels" / "labels.csv").open()))
    assert [r["question_id"] for r in again_rows] == [r["question_id"] for r in rows]
    assert "unordered collection" in (run / "labels" / "labels.html").read_text()

    # Filled in, the labels come back: prediction-powered figures on the re-rendered report.
    for r in rows:
        r.update(correct="yes", faithful="yes", refused="no")
    with (tmp_path / "filled.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert main(["-q", "report", str(run), "--labels", str(tmp_path / "filled.csv")]) == 0
    labelled = json.loads((run / "summary.labelled.json").read_text())["labels"]
    assert labelled["answers_labelled"] == 2
    assert labelled["figures"]["system"]["faithfulness_yesno"]["human"]["value"] == 1.0
    assert "Skipped traces" in (run / "report.labelled.md").read_text()


def test_traces_matched_to_a_labelled_test_set(tmp_path):
    write_jsonl(tmp_path / "corpus.jsonl", SMALL_CORPUS)
    write_jsonl(tmp_path / "questions.jsonl", QUESTIONS)
    with ScriptedServer(reply=structured_reply) as s:
        cfg = {
            "name": "prod-labelled",
            "corpus": {"path": "corpus.jsonl"},
            "test_set": {"path": "questions.jsonl"},
            "retrieval": {"k": [1, 3], "retrievers": {"bm25": {"type": "bm25"}}},
            "judges": judges(s.base_url),
            "report": {"out": "runs"},
        }
        (tmp_path / "labelled.yaml").write_text(yaml.safe_dump(cfg))
        result = rag_eval.judge_traces(PHOENIX, config=tmp_path / "labelled.yaml", labels=0)
    # q2: py/sets first; q1: py/lists second; q6's trace has no retriever span (skipped).
    assert result.figure("retrieval.traces.hit@1") == {**result.figure("retrieval.traces.hit@1"), "value": 0.5, "n": 2}
    assert result.figure("retrieval.traces.hit@3")["value"] == 1.0
    assert result.figure("retrieval.traces.mrr")["value"] == 0.75
    assert "retrieval.bm25.hit@1" in json.dumps(result.summary_json) or "bm25" in result.summary.retrieval
    t = result.report.dump()["traces"]
    assert t["skipped"] == {"no_retriever_span": 1, "no_answer": 1, "error_status": 1, "not_in_test_set": 1}
    att = result.attribution_df().set_index("question_id")
    assert set(att.index) == {"q1", "q2"} and set(att["outcome"]) == {"ok"}
    assert "Skipped traces" in (result.run_dir / "report.md").read_text()
