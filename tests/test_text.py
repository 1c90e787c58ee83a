"""rag_eval/text.py: the lines of a JSONL text."""

from __future__ import annotations

import json

from rag_eval.data.records import read_records
from rag_eval.labels.human import known_answers
from rag_eval.rundir import read_jsonl
from rag_eval.text import record_lines

# Breaks that str.splitlines splits at and JSON keeps raw inside a string (written with
# ensure_ascii=False, as the run folder's records are).
BREAKS = "\u2028\u2029\x85\x0b\x0c\x1c"


def test_record_lines_split_at_line_feeds_only():
    assert record_lines('{"a": 1}\r\n{"b": "x\u2028y"}\n') == ['{"a": 1}', '{"b": "x\u2028y"}']
    assert record_lines("a\n\nb") == ["a", "", "b"] and record_lines("") == []


def test_an_answer_holding_a_line_separator_keeps_its_record(tmp_path):
    """A model's answer with U+2028 and its kin in generation.jsonl: one record each, read whole by
    the run folder's reader, the labels' reader of the run's answers and the input reader."""
    answer = f"First part.{BREAKS}Second part."
    records = [{"question_id": "q1", "prompt": "base", "answer": answer}, {"question_id": "q2", "prompt": "base"}]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    assert len(text.splitlines()) > 2  # what tore the records before
    (tmp_path / "generation.jsonl").write_text(text, encoding="utf-8")
    assert read_jsonl(tmp_path / "generation.jsonl") == records
    assert known_answers(tmp_path) == {("q1", "base"): answer, ("q2", "base"): None}
    assert [r.data["question_id"] for r in read_records(tmp_path / "generation.jsonl", "test")] == ["q1", "q2"]
