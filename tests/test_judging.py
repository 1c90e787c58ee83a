"""The judging stage under fault injection, and the call budget per answered question."""

import hashlib
import json
import math
import shutil
from collections import Counter

import pytest

from rag_eval.config import load_config
from rag_eval.judges.own import parse_verdict
from rag_eval.llm.scripted_server import ScriptedServer, schema_name, structured_reply
from rag_eval.runner import run_audit

from .conftest import ROOT


def _config(small_project, base_url, extra_llm=""):
    cfg = small_project / "audit.yaml"
    shutil.copy(ROOT / "prompts" / "answer.md", small_project / "answer.md")
    llm = f"{{provider: openai, model: scripted, base_url: '{base_url}', max_retries: 1, timeout_s: 1{extra_llm}}}"
    cfg.write_text(
        cfg.read_text()
        + (
            f"generation:\n  retriever: bm25\n  top_k: 2\n  prompts: {{base: {small_project / 'answer.md'}}}\n"
            f"  llm: {llm}\n"
            f"judges:\n  llm: {llm}\n  prompts_dir: {ROOT / 'prompts' / 'judges'}\n"
        )
    )
    return load_config(cfg)


def _records(run_dir, name):
    return [json.loads(line) for line in (run_dir / name).read_text().splitlines()]


def test_parse_verdict():
    assert parse_verdict('{"reason": "r", "verdict": "Correct"}', ("correct", "incorrect"))[0] == {
        "reason": "r",
        "verdict": "correct",
    }
    assert parse_verdict('```json\n{"reason": "r", "verdict": "refused"}\n```', ("refused",))[0]
    assert "not JSON" in parse_verdict('{"reason": "the answer is supported by', ("x",))[1]
    assert "not one of" in parse_verdict('{"verdict": "maybe"}', ("yes", "no"))[1]


def test_budget_of_calls_per_answered_question(small_project):
    """faithfulness 2, context precision k, context recall 1, correctness 1, refusal 1; none twice."""
    with ScriptedServer(reply=structured_reply) as s:
        run_dir = run_audit(_config(small_project, s.base_url))
        bodies = s.bodies
    kinds = Counter(schema_name(b) or "generation" for b in bodies)
    # 4 questions answered; 2 with a reference (q1, q2); 3 answerable; none refused; top_k = 2.
    assert kinds == {
        "generation": 4,
        "refusal": 4,
        "StatementGeneratorOutput": 4,
        "NLIStatementOutput": 4,
        "correctness": 2,
        "ContextPrecisionOutput": 2 * 2,
        "ContextRecallOutput": 2,
    }
    digests = [hashlib.sha256(json.dumps(b, sort_keys=True).encode()).hexdigest() for b in bodies]
    assert len(set(digests)) == len(digests)  # no request was sent twice
    summary = json.loads((run_dir / "summary.json").read_text())
    figs = summary["generation"]["base"]
    assert figs["faithfulness"]["value"] == 0.5 and figs["faithfulness"]["n"] == 4
    assert figs["correctness"]["value"] == 1.0 and figs["correctness"]["n_not_judged"] == 0
    assert figs["refusal_accuracy"]["n"] == 1 and figs["needless_refusal"]["n"] == 3


def test_faults_give_not_judged_with_reasons_and_means_over_the_rest(small_project):
    seen = set()

    def script(n, body):
        text = json.dumps(body["messages"])
        name = schema_name(body)
        if name == "refusal" and "Who wrote the Python tutorial" in text:
            return "sleep:3"  # times out on every try
        if name == "correctness" and "Which sequence type" in text:
            return "malformed"  # unparseable, also after the re-ask
        if name == "ContextRecallOutput" and "What is a set" in text:
            return "truncated"
        digest = hashlib.sha256(text.encode()).hexdigest()
        if int(digest, 16) % 3 == 0 and digest not in seen:
            seen.add(digest)
            return "429"  # the first try of a third of the requests; the retry succeeds
        return "ok"

    with ScriptedServer(script, reply=structured_reply) as s:
        run_dir = run_audit(_config(small_project, s.base_url))
    judgements = _records(run_dir, "judgements.jsonl")
    failed = {(j["judge"], j["question_id"]): j["error"] for j in judgements if j["status"] == "not_judged"}
    assert "Timeout" in failed[("refusal", "q4")]
    assert "not JSON" in failed[("correctness", "q1")] or "not one of" in failed[("correctness", "q1")]
    assert "incomplete" in failed[("context_recall", "q2")]
    summary = json.loads((run_dir / "summary.json").read_text())
    figs = summary["generation"]["base"]
    assert (figs["correctness"]["n"], figs["correctness"]["n_not_judged"]) == (1, 1)
    assert figs["context_recall"]["n"] == 1 and figs["context_recall"]["n_not_judged"] == 1
    assert figs["refusal_accuracy"]["n"] == 0 and figs["refusal_accuracy"]["n_not_judged"] == 1
    for fig in figs.values():
        assert fig["value"] is None or not math.isnan(fig["value"])
    report = (run_dir / "report.md").read_text()
    assert "Not judged (3)" in report


def test_kappa_known_values():
    from rag_eval.stats import cohen_kappa

    assert cohen_kappa(["a", "a", "b", "b"], ["a", "a", "b", "b"]) == 1.0
    # po = 0.5, pe = 0.5 -> 0
    assert cohen_kappa(["a", "a", "b", "b"], ["a", "b", "a", "b"]) == 0.0
    # 2x2 table [[20, 5], [10, 15]]: po = 0.7, pe = 0.5 -> 0.4
    labels = ["y"] * 25 + ["n"] * 25
    preds = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert abs(cohen_kappa(labels, preds) - 0.4) < 1e-12


def test_judge_check_scores_against_labels(tmp_path, capsys):
    from rag_eval.cli import main

    with ScriptedServer(reply=structured_reply) as s:
        code = main(
            [
                "--quiet",
                "judge-check",
                "--llm",
                "openai",
                "--model",
                "scripted",
                "--base-url",
                s.base_url,
                "--cases",
                str(ROOT / "data" / "judge-check" / "cases.jsonl"),
                "--prompts-dir",
                str(ROOT / "prompts" / "judges"),
            ]
        )
    out = capsys.readouterr().out
    assert code == 0
    # The scripted judge always says "correct", "answered" and scores faithfulness 0.5 (faithful).
    lines = {line.split()[0]: line for line in out.splitlines() if line and not line.startswith(" ")}
    assert "0.38 [" in lines["correctness"]  # 6 of 16 correct
    assert "0.50 [" in lines["refusal"] and "0.50 [" in lines["faithfulness"]
    assert " 0.00 [" in lines["refusal"]  # kappa of a constant guess is 0


@pytest.mark.slow
def test_all_five_judges_with_the_real_local_model(tmp_path, monkeypatch):
    """End to end: every judge on a few demo answers from the embedded model through the real openai client."""
    monkeypatch.chdir(ROOT)
    cfg = load_config(ROOT / "configs" / "demo.yaml")
    cfg.generation.sample = 2
    cfg.generation.top_k = 2
    cfg.generation.max_context_chars = 400
    cfg.generation.llm.max_tokens = 60
    cfg.report.out = str(tmp_path)
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(ROOT / ".cache"))
    run_dir = run_audit(cfg, use_cache=False)
    judgements = _records(run_dir, "judgements.jsonl")
    answered = [g for g in _records(run_dir, "generation.jsonl") if g["error"] is None]
    assert answered
    for g in answered:
        mine = {j["judge"]: j for j in judgements if j["question_id"] == g["question_id"]}
        assert set(mine) == {"faithfulness", "context_precision", "context_recall", "correctness", "refusal"}
        for j in mine.values():
            assert j["status"] in ("judged", "not_judged", "skipped")
            if j["status"] == "judged":
                assert j["reason"] and j["model"] == "qwen2.5-coder-1.5b-instruct-q4_k_m"
            if j["status"] == "not_judged":
                assert j["error"]
    assert any(j["status"] == "judged" for j in judgements)
