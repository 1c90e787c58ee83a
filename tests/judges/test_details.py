"""A judgement's details are typed per kind of judge: read from the judgements.jsonl of old run
folders (which hold no tag), each line's details are the record of its judge's kind and write back
to exactly the dict they were read from."""

import json

import pytest

from rag_eval.judges.details import (
    ContextsDetails,
    OtherDetails,
    RagasDetails,
    StatementsDetails,
    VerdictDetails,
    details_of,
)
from rag_eval.judges.judgement import Judgement

from ..conftest import ROOT

OLD = ROOT / "tests" / "data" / "old_runs"


def _lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (OLD / name / "judgements.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("name", ["compare-labelled", "supplied"])
def test_old_runs_details_read_typed_and_write_back_unchanged(name):
    kinds = {}
    for r in _lines(name):
        typed = Judgement.from_dict(r).typed_details
        assert typed.dump() == (r.get("details") or {})
        if r.get("details"):
            kinds.setdefault(r["judge"], type(typed))
    expected = {
        "refusal": VerdictDetails,
        "correctness": VerdictDetails,
        "faithfulness": StatementsDetails,
        "faithfulness_yesno": StatementsDetails,
        "context_precision": RagasDetails,
        "context_recall": RagasDetails,
        "context_recall_yesno": StatementsDetails,
    }
    assert kinds == {judge: expected[judge] for judge in kinds}


def test_each_kind_reads_its_fields():
    yesno = details_of(
        {
            "statements": [
                {"statement": "A.", "p_supported": 0.9, "supported": True},
                {"statement": "B.", "p_supported": 0.2},
            ],
            "calibrated": False,
            "band": [0.3, 0.7],
            "uncertain_statements": [1],
        }
    )
    assert isinstance(yesno, StatementsDetails)
    assert (yesno.probabilities, yesno.band, yesno.uncertain_statements, yesno.calibrated) == (
        [0.9, 0.2],
        [0.3, 0.7],
        [1],
        False,
    )
    ragas = details_of({"statements": [{"statement": "A.", "reason": "r", "verdict": 1}]})
    assert isinstance(ragas, StatementsDetails) and ragas.statements[0].verdict == 1 and ragas.probabilities == []
    verdict = details_of({"raw": "Yes: it does.", "variant": "correctness_short", "evidence": {"words": None}})
    assert (
        isinstance(verdict, VerdictDetails)
        and verdict.variant == "correctness_short"
        and verdict.raw == "Yes: it does."
    )
    contexts = details_of({"p_useful": [0.8, 0.1], "contexts": [{}, {}]})
    assert isinstance(contexts, ContextsDetails) and contexts.p_useful == [0.8, 0.1]
    rubric = details_of({"mean_level": 2.5})
    assert (
        isinstance(rubric, OtherDetails)
        and rubric.model_extra == {"mean_level": 2.5}
        and rubric.dump() == {"mean_level": 2.5}
    )
    assert isinstance(details_of(None), OtherDetails) and details_of({}).dump() == {}
