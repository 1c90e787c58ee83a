"""A run's records and report do not depend on the order its model calls complete in (a cached
call completes at once; a slow one last): answers and verdicts keep the selection's order."""

import json

from rag_eval.orchestration.runner import run_audit

from ..judges.test_uncertain import _project
from ..scripted_server import ScriptedServer, structured_reply


def _slow_on(word: str):
    """Every request that mentions ``word`` waits, so its answer and verdicts complete last."""
    return lambda n, body: "sleep:0.4" if word in json.dumps(body) else "ok"


def _run(small_project, slow_word: str, out: str):
    with ScriptedServer(script=_slow_on(slow_word), reply=structured_reply) as s:
        cfg = _project(small_project, s.base_url)
        return run_audit(cfg, out=str(small_project / out), use_cache=False)


def test_records_and_report_keep_the_selection_order_whatever_completes_first(small_project):
    first = _run(small_project, "sequence type can be changed", "runs-a")  # q1's calls finish last
    second = _run(small_project, "What is a set", "runs-b")  # q2's calls finish last
    for run in (first, second):
        gens = [json.loads(x) for x in (run / "generation.jsonl").read_text().splitlines()]
        assert [g["question_id"] for g in gens] == sorted(g["question_id"] for g in gens)
        verdicts = [json.loads(x)["question_id"] for x in (run / "judgements.jsonl").read_text().splitlines()]
        assert verdicts == sorted(verdicts)  # q1's verdicts first although they completed last in the first run
    # The same figures and lists either way: only the creation time differs.
    a, b = ((r / "report.md").read_text().splitlines() for r in (first, second))
    assert [x for x in a if not x.startswith("- created:")] == [x for x in b if not x.startswith("- created:")]
