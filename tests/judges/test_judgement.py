"""A line of judgements.jsonl reads back as it was written, whatever release wrote it."""

from __future__ import annotations

import json

from rag_eval.judges.judgement import Judgement


def test_a_line_round_trips_byte_for_byte_with_the_types_it_was_given() -> None:
    j = Judgement("correctness", "q1", "baseline", "judged", 1, "correct", "it says so", details={"n": 2})
    line = json.dumps(j.to_dict())
    assert json.dumps(Judgement.from_dict(json.loads(line)).to_dict()) == line
    assert '"score": 1,' in line  # an int stays an int (not 1.0)
    assert list(j.to_dict())[:4] == ["judge", "question_id", "prompt", "status"]


def test_older_lines_read_unknown_keys_ignored_missing_ones_defaulted_null_details_empty() -> None:
    old = {"judge": "refusal", "question_id": "q2", "prompt": "p", "status": "skipped", "details": None, "gone": 1}
    j = Judgement.from_dict(old)
    assert (j.details, j.score, j.input_hash, j.method) == ({}, None, None, None)
    assert "gone" not in j.to_dict()


def test_a_record_that_holds_judgements_writes_every_key_of_each() -> None:
    from rag_eval.judges.judge_records import JudgesSection

    j = Judgement("faithfulness", "q1", "baseline", "judged", 1.0)
    section = JudgesSection(
        records=[j, Judgement.from_dict({"judge": "r", "question_id": "q", "prompt": "p", "status": "skipped"})]
    )
    for dumped in section.dump()["records"]:
        assert list(dumped) == list(Judgement.model_fields)  # probability, cutoff, method: null, not left out
