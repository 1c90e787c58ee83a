"""Prompt comparison: statistics on constructed cases, one retrieval, cache reuse across runs."""

import json
import shutil

import numpy as np
import pytest

from rag_eval.config import load_config
from rag_eval.errors import DataError
from rag_eval.orchestration.compare import check_same_contexts
from rag_eval.stats import apply_holm, compare_paired

from ..conftest import ROOT
from ..scripted_server import ScriptedServer, judge_name, structured_reply


def test_identical_prompts_give_p_one_and_no_winner():
    x = np.array([1.0, 0.0, 1.0, 1.0, 0.0] * 14)
    c = compare_paired(x, x.copy(), names=("a", "b"), metric="correctness", binary=True)
    apply_holm([c])
    assert c.p_holm == 1.0 and "no difference" in c.verdict and "beats" not in c.verdict


def test_ten_of_ten_discordant_pairs_is_called_better():
    strict = np.array([1.0] * 10 + [1.0] * 30 + [0.0] * 30)
    base = np.array([0.0] * 10 + [1.0] * 30 + [0.0] * 30)
    c = compare_paired(strict, base, names=("strict", "baseline"), metric="refusal_accuracy", binary=True)
    apply_holm([c])
    assert c.p_value == pytest.approx(0.00195, abs=1e-5)
    assert c.verdict.startswith("strict beats baseline on refusal_accuracy: better on 10, worse on 0, same on 60")


def test_small_difference_is_not_settled_and_names_questions_needed():
    a = np.array([1.0] * 9 + [0.0] * 7 + [1.0] * 54)
    b = np.array([0.0] * 9 + [1.0] * 7 + [1.0] * 54)
    c = compare_paired(a, b, names=("strict", "baseline"), metric="correctness", binary=True)
    apply_holm([c])
    assert "not settled by 70 questions" in c.verdict and "questions would detect" in c.verdict


def test_different_contexts_are_refused():
    gens = [
        {"question_id": "q", "prompt": "a", "contexts": ["c1"]},
        {"question_id": "q", "prompt": "b", "contexts": ["c2"]},
    ]
    with pytest.raises(DataError, match="different contexts"):
        check_same_contexts(gens)


def _config(project, base_url, prompts):
    shutil.copy(ROOT / "prompts" / "answer.md", project / "a.md")
    shutil.copy(ROOT / "prompts" / "answer_strict.md", project / "b.md")
    llm = f"{{provider: openai, model: scripted, base_url: '{base_url}'}}"
    listed = ", ".join(f"{p}: {project / (p + '.md')}" for p in prompts)
    cfg = project / f"audit-{'-'.join(prompts)}.yaml"
    cfg.write_text(
        (project / "audit.yaml").read_text()
        + (
            f"generation:\n  retriever: bm25\n  top_k: 2\n  prompts: {{{listed}}}\n  llm: {llm}\n"
            f"judges:\n  llm: {llm}\n  prompts_dir: {ROOT / 'prompts' / 'judges'}\n"
            f"cache_dir: {project / 'cache'}\n"
        )
    )
    return load_config(cfg)


def test_compare_after_an_audit_costs_only_the_new_prompts_calls(small_project, monkeypatch):
    from rag_eval.orchestration.runner import run_audit, run_compare
    from rag_eval.retrievers import factory as build

    monkeypatch.delenv("RAG_EVAL_CACHE_DIR")
    calls = {"retrieval": 0}
    original = build.run_retrievers

    def counting(*args, **kwargs):
        calls["retrieval"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(build, "run_retrievers", counting)

    def reply(body):
        text = json.dumps(body["messages"])
        if judge_name(body) == "refusal" and "The documents do not answer" in text:
            return "No: it declines."
        if judge_name(body) is None and "careful assistant" in text:
            return "The documents do not answer this question."
        return structured_reply(body)

    with ScriptedServer(reply=reply) as s:
        run_audit(_config(small_project, s.base_url, ["a"]))
        audit_calls = len(s.bodies)
        calls["retrieval"] = 0
        run_dir = run_compare(_config(small_project, s.base_url, ["a", "b"]))
        new = s.bodies[audit_calls:]
    assert calls["retrieval"] == 1
    for_b = [
        b
        for b in new
        if "careful assistant" in json.dumps(b["messages"])
        or "The documents do not answer" in json.dumps(b["messages"])
    ]
    for_a = [b for b in new if b not in for_b]
    # b's 4 answers, the refusal judge on each, correctness on the 2 with a reference; faithfulness is
    # skipped for refusals, and context precision and recall (the same request for both prompts) are cached;
    # b's answers all decline, so the report shows them: each refusal decision asked again with its
    # reason (q1-q3's at once, a needless refusal showing its answer; q4's, a right refusal, at the
    # end, since a's answer to q4 is shown), correctness (q1, q2) after a needless refusal asked with
    # its reason from the start (and alone: its verdict is decided by that request, as everywhere),
    # and each quoted reason one short request more, two for correctness.
    assert len(for_b) == 4 + (4 + 4) + 2 * 2 + (4 + 2 * 2)
    # a's answers to the questions b failed are shown beside b's (the prompts disagree on them): the
    # audit left their own verdicts without reasons, so only those reasons are asked now.
    # q1-q3 (q4 failed in the audit already and has its reasons): refusal, supported and correctness
    # (q1, q2) again with their reasons, and their quoted reasons.
    assert all(b["max_tokens"] == 48 or b["messages"][-1]["role"] == "assistant" for b in for_a)
    kinds = [judge_name(b) for b in for_a]
    assert {k: kinds.count(k) for k in kinds} == {
        "refusal": 3,
        "supported": 3,
        "correctness": 2,
        "refusal reason": 3,
        "supported reason": 3,
        "correctness reason": 2 * 2,
    }
    summary = json.loads((run_dir / "summary.json").read_text())
    ref = summary["comparison"]["refusal_accuracy"]["a_vs_b"]
    assert (ref["wins"], ref["losses"], ref["ties"]) == (0, 1, 0)
    nn = summary["comparison"]["no_needless_refusal"]["a_vs_b"]
    assert (nn["wins"], nn["losses"]) == (3, 0)
    report = (run_dir / "report.md").read_text()
    assert "## Prompts compared on the same contexts" in report and "Questions where the prompts disagree" in report


def test_compare_writes_its_comparison_holding_the_run_folder(small_project, monkeypatch):
    """Review 54 L2: the comparison is written into the audit's report after the audit let the folder
    go; it is written as the folder's writer, so another shell's `report` or `--resume` waits."""
    from rag_eval.orchestration import runner
    from rag_eval.rundir import writer_of

    held = []
    original = runner.write_report

    def checking(run_dir, report, *args, **kwargs):
        held.append(writer_of(run_dir))
        return original(run_dir, report, *args, **kwargs)

    monkeypatch.setattr(runner, "write_report", checking)
    with ScriptedServer(reply=structured_reply) as s:
        run_dir = runner.run_compare(_config(small_project, s.base_url, ["a", "b"]))
    assert held and all(w is not None and w.startswith("pid ") for w in held)
    assert writer_of(run_dir) is None  # and let go after
