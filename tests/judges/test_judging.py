"""The judging stage under fault injection, and the call budget per answered question."""

import hashlib
import json
import math
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from rag_eval.config import load_config
from rag_eval.judges.yesno import VERDICT_TOKENS
from rag_eval.orchestration import pipeline
from rag_eval.orchestration.runner import run_audit

from ..conftest import ROOT
from ..scripted_server import ScriptedServer, judge_name, structured_reply


def _config(small_project, base_url, extra_llm="", extra_metrics=None):
    cfg = small_project / "audit.yaml"
    shutil.copy(ROOT / "prompts" / "answer.md", small_project / "answer.md")
    llm = f"{{provider: openai, model: scripted, base_url: '{base_url}', max_retries: 1, timeout_s: 1{extra_llm}}}"
    cfg.write_text(
        cfg.read_text()
        + (
            f"generation:\n  retriever: bm25\n  top_k: 2\n  prompts: {{base: {small_project / 'answer.md'}}}\n"
            f"  llm: {llm}\n"
            f"judges:\n  llm: {llm}\n  prompts_dir: {ROOT / 'prompts' / 'judges'}\n"
            + (f"  metrics: [{', '.join(extra_metrics)}]\n" if extra_metrics else "")
        )
    )
    return load_config(cfg)


def _records(run_dir, name):
    return [json.loads(line) for line in (run_dir / name).read_text().splitlines()]


def test_label_probabilities_and_text_labels():
    import math

    from rag_eval.judges.yesno import YES_NO, label_probabilities, text_label

    choice = {
        "logprobs": {
            "content": [
                {
                    "token": "Yes",
                    "logprob": math.log(0.6),
                    "top_logprobs": [
                        {"token": "Yes", "logprob": math.log(0.6)},
                        {"token": " yes", "logprob": math.log(0.1)},
                        {"token": "No", "logprob": math.log(0.2)},
                        {"token": "Maybe", "logprob": math.log(0.1)},
                    ],
                }
            ]
        }
    }
    probs = label_probabilities(choice, YES_NO)
    assert probs["yes"] == pytest.approx(0.7 / 0.9) and probs["no"] == pytest.approx(0.2 / 0.9)
    assert label_probabilities({}, YES_NO) is None  # no logprobs: the text decides
    assert text_label("No: the context does not say.", YES_NO) == ("no", "the context does not say.")
    assert text_label("**Yes** - it does", YES_NO) == ("yes", "it does")
    assert text_label("I think so", YES_NO)[0] is None


def test_statement_split():
    from rag_eval.judges.scored import split_statements

    text = "Lists are mutable. Tuples are not, e.g. (1, 2). Yes.\n- sets are unordered\n2. dicts map keys"
    assert split_statements(text) == [
        "Lists are mutable.",
        "Tuples are not, e.g. (1, 2). Yes.",
        "sets are unordered",
        "dicts map keys",
    ]


def test_judge_decides_by_probability_and_falls_back_to_text(small_project):
    """P(yes) against the cut-off where logprobs exist; the text's Yes/No (recorded as such) where not."""
    with ScriptedServer(script=lambda n, body: "no-logprobs" if n % 2 else "ok", reply=structured_reply) as s:
        run_dir = run_audit(_config(small_project, s.base_url, extra_metrics=["correctness", "refusal"]))
    judged = [j for j in _records(run_dir, "judgements.jsonl") if j["status"] == "judged"]
    assert {j["method"] for j in judged} == {"logprobs", "text"}
    for j in judged:
        assert j["cutoff"] == 0.5
        if j["method"] == "logprobs":
            p_yes = 0.9 if j["judge"] == "correctness" else 0.1  # refusal: "Yes" (answers) -> P(refused) 0.1
            assert j["probability"] == pytest.approx(p_yes)
        else:
            assert j["probability"] in (0.0, 1.0)
        assert j["verdict"] == ("correct" if j["judge"] == "correctness" else "answered")


def test_budget_of_calls_per_answered_question(small_project):
    """faithfulness 2, context precision k, context recall 1 (once per question, not per prompt),
    correctness 1, refusal 1, faithfulness_yesno one per sentence of the answer, each own verdict
    asked alone (its label word); then, only for the answers the report shows (a failed outcome),
    each own verdict with its reason and the quoted reason (judges.reasons: quote): one short
    request more per decision, two for correctness (its answer and its reference); none twice.
    Once an answer's verdict shows it will be shown (q4's refusal: it answered an unanswerable
    question), that verdict is asked again with its reason at once and the own judges after it ask
    with theirs from the start, each still decided by its verdict asked alone (q4's supported: the
    short request and the one with its reason, so which answers are shown changes no verdict)."""
    with ScriptedServer(reply=structured_reply) as s:
        run_dir = run_audit(_config(small_project, s.base_url))
        bodies = s.bodies
    kinds = Counter(judge_name(b) or "generation" for b in bodies)
    outcomes = {
        r["question_id"]: r["outcome"] for r in json.loads((run_dir / "report.json").read_text())["attribution"]["rows"]
    }
    failed = sorted(q for q, o in outcomes.items() if o not in ("ok", "correct_refusal"))
    assert failed == ["q4"]  # answered an unanswerable question: no reference, one sentence
    # 4 questions answered; 2 with a reference (q1, q2); 3 answerable; none refused; top_k = 2.
    assert kinds == {
        "generation": 4,
        "refusal": 4 + 1,
        "StatementGeneratorOutput": 4,
        "NLIStatementOutput": 4,
        "correctness": 2,
        "ContextPrecisionOutput": 2 * 2,
        "ContextRecallOutput": 2,
        "supported": 4 + 1,  # the scripted answers are one sentence each; q4's asked alone, then with its reason
        "refusal reason": 1,
        "supported reason": 1,
    }
    verdicts = [b for b in bodies if judge_name(b) in ("refusal", "supported", "correctness")]
    assert sorted(b["max_tokens"] for b in verdicts) == [2] * 10 + [48] * 2
    # q4's refusal alone, then again with its reason right after; its supported alone, then with its reason.
    q4 = [(judge_name(b), b["max_tokens"]) for b in verdicts if "Who wrote the Python tutorial" in json.dumps(b)]
    assert q4 == [("refusal", 2), ("refusal", 48), ("supported", 2), ("supported", 48)]
    digests = [hashlib.sha256(json.dumps(b, sort_keys=True).encode()).hexdigest() for b in bodies]
    assert len(set(digests)) == len(digests)  # no request was sent twice
    deferred = [j for j in _records(run_dir, "judgements.jsonl") if j["details"].get("reasons_deferred")]
    assert sorted((j["judge"], j["question_id"]) for j in deferred if j["judge"] == "refusal") == [
        ("refusal", q) for q in ("q1", "q2", "q3")
    ]
    summary = json.loads((run_dir / "summary.json").read_text())
    figs = summary["generation"]["base"]
    assert figs["faithfulness"]["value"] == 0.5 and figs["faithfulness"]["n"] == 4
    assert figs["correctness"]["value"] == 1.0 and figs["correctness"]["n_not_judged"] == 0
    assert figs["refusal_accuracy"]["n"] == 1 and figs["needless_refusal"]["n"] == 3


def _failed_section(run_dir) -> str:
    report = (run_dir / "report.md").read_text()
    start = report.index("### Failed questions")
    end = report.find("\n## ", start)
    return report[start : end if end >= 0 else None]


def test_reasons_asked_only_for_shown_answers_leave_the_report_as_it_was(small_project, monkeypatch):
    """The failed questions of the report list the same answers with the same reasons and quotes
    whether every verdict is asked with its reason (as before) or only those of the answers shown."""
    with ScriptedServer(reply=structured_reply) as s:
        lazy = run_audit(_config(small_project, s.base_url))
        lazy_calls = len(s.bodies)
        # As before: every verdict asked with its reason, from an empty response cache.
        monkeypatch.setattr(pipeline, "shown_questions", lambda cfg, got: None)
        monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(small_project / "cache-eager"))
        (small_project / "audit.yaml").write_text((small_project / "audit.yaml").read_text().split("generation:")[0])
        eager = run_audit(_config(small_project, s.base_url))
        eager_calls = len(s.bodies) - lazy_calls
    assert (lazy_calls, eager_calls) == (32, 40)  # the budget above, and the one before it
    assert "**q4**" in _failed_section(lazy)
    assert _failed_section(lazy) == _failed_section(eager)
    shown = {j["judge"]: j for j in _records(lazy, "judgements.jsonl") if j["question_id"] == "q4"}
    assert shown["refusal"]["reason"] and "reasons_deferred" not in shown["refusal"]["details"]
    assert shown["refusal"]["details"]["evidence"]["shown"] != "not asked"


def test_faults_give_not_judged_with_reasons_and_means_over_the_rest(small_project):
    seen = set()

    def script(n, body):
        text = json.dumps(body["messages"])
        name = judge_name(body)
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
    assert "does not start with yes or no" in failed[("correctness", "q1")]
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


def test_judge_check_reports_out_of_fold_figures_per_source_and_saves_cutoffs(tmp_path, capsys):
    from rag_eval.calibration.cutoffs import user_path
    from rag_eval.cli import main

    out = tmp_path / "check.json"
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
                "--save",
                "--json",
                str(out),
            ]
        )
    assert code == 0
    # findings-52 L2: decided as an audit decides them, by the verdict asked alone (2 tokens).
    assert {b["max_tokens"] for b in s.bodies if b.get("logprobs")} == {VERDICT_TOKENS}
    printed = capsys.readouterr().out
    assert "Out-of-fold" in printed
    scores = {(x["judge"], x["source"]): x for x in json.loads(out.read_text())["scores"]}
    assert {("correctness", "all"), ("refusal", "all"), ("faithfulness_yesno", "all")} <= set(scores)
    # The scripted judge gives every case the same probability: no separation (AUC 0.5), and no
    # cut-off can do better than a constant guess (balanced accuracy 0.5).
    for name in ("correctness", "refusal", "faithfulness_yesno"):
        assert scores[(name, "all")]["auc"] == 0.5
        assert scores[(name, "all")]["balanced_accuracy"] == 0.5
    saved = json.loads(user_path().read_text())
    assert {k.split("|")[1] for k in saved} == {"correctness", "refusal", "faithfulness_yesno"}
    assert all(k.startswith(s.base_url.rstrip("/")) for k in saved)
    # User trial 3 L11: each variant's n is the cases its cut-off was fitted on.
    asked = sum(judge_name(b) == "correctness" for b in s.bodies if b.get("logprobs"))
    [n_correct] = [v["n"] for k, v in saved.items() if k.split("|")[1] == "correctness"]
    assert n_correct == asked  # (these cases ask the long-reference prompt only)


@pytest.mark.slow
def test_every_judge_with_the_real_local_model(tmp_path, monkeypatch):
    """End to end: every judge of the registry on a few demo answers from the embedded model through
    the real openai client, from a folder other than the repository."""
    from rag_eval.judges.registry import JUDGE_NAMES

    monkeypatch.chdir(tmp_path)
    cfg = load_config(ROOT / "configs" / "demo.yaml")
    cfg.judges.metrics = list(JUDGE_NAMES)
    cfg.generation.sample = 2
    cfg.generation.top_k = 2
    cfg.generation.max_context_chars = 400
    cfg.generation.llm.max_tokens = 60
    cfg.report.out = str(tmp_path)
    run_dir = run_audit(cfg, use_cache=False)
    judgements = _records(run_dir, "judgements.jsonl")
    answered = [g for g in _records(run_dir, "generation.jsonl") if g["error"] is None]
    assert answered
    for g in answered:
        mine = {j["judge"]: j for j in judgements if j["question_id"] == g["question_id"]}
        assert set(mine) == set(JUDGE_NAMES)
        for j in mine.values():
            assert j["status"] in ("judged", "not_judged", "skipped")
            if j["status"] == "judged":
                assert j["reason"] and j["model"] == "qwen2.5-coder-1.5b-instruct-q4_k_m"
            if j["status"] == "not_judged":
                assert j["error"]
    # Each judge must really work with the embedded model: at least one verdict from every one of them.
    judged = {j["judge"] for j in judgements if j["status"] == "judged"}
    assert judged == set(JUDGE_NAMES), [(j["judge"], j["status"], j.get("error")) for j in judgements]
    scored = [j for j in judgements if j["status"] == "judged" and j["method"] is not None]
    assert scored and all(j["method"] == "logprobs" for j in scored)  # llama-server returns logprobs
    assert all(0 <= (j["probability"] if j["probability"] is not None else 0.5) <= 1 for j in scored)


def test_correctness_asks_a_short_reference_by_name_with_its_own_cutoff(tmp_path):
    """A reference of a few words gets the short-reference prompt and that prompt's cut-off; a
    sentence gets the statement prompt and its own; a rerun compares both prompts' hashes."""
    import asyncio

    from rag_eval.judges.scored import ScoredJudges, correctness_variant
    from rag_eval.llm.session import LLMSession
    from rag_eval.llm.settings import LLMConfig

    assert correctness_variant("Bath") == "correctness_short"
    assert correctness_variant("Since Python 3.7 dict order is guaranteed to be insertion order.") == "correctness"
    with ScriptedServer(reply=structured_reply) as s:
        session = LLMSession(tmp_path)

        async def main():
            llm = session.llm(LLMConfig(provider="openai", model="scripted", base_url=s.base_url), "test")
            # The scripted judge answers Yes with P = 0.9 to either prompt.
            scored = ScoredJudges.load(llm, None, {"correctness_short": 0.95, "correctness": 0.5})
            try:
                short = await scored.correctness("q1", "p", "Which town?", "Bath", "Small represented Bath.")
                long = await scored.correctness(
                    "q2", "p", "Since when?", "Since Python 3.7 dicts keep insertion order.", "Python 3.7."
                )
                return scored, short, long
            finally:
                await session.aclose()

        scored, short, long = asyncio.run(main())
        session.close()
        asked = [b["messages"][-1]["content"] for b in s.bodies]
    assert "Does the answer to check give Bath as the answer" in asked[0]
    assert "Does the candidate answer state the reference answer" in asked[1]
    assert (short.details["variant"], short.cutoff, short.verdict) == ("correctness_short", 0.95, "incorrect")
    assert (long.details["variant"], long.cutoff, long.verdict) == ("correctness", 0.5, "correct")
    assert short.probability == pytest.approx(0.9) and long.probability == pytest.approx(0.9)
    assert scored.decision_cutoffs("correctness") == {"correctness": 0.5, "correctness_short": 0.95}
    assert short.judge_prompt_hash == scored.judge_hash("correctness") != scored.prompt_hash("correctness")


def test_judge_check_fits_a_cutoff_per_prompt_variant():
    """Two prompts on different probability scales: one cut-off for both cannot separate the
    classes, one per prompt does, and judge-check reports the out-of-fold result of the latter."""
    from rag_eval.judges.judge_check import Prediction, score_judge

    cases, preds = [], []
    rng = np.random.default_rng(0)
    for i in range(40):
        short, correct = i % 2 == 0, i % 4 < 2
        # short-reference prompt: correct ~0.9, incorrect ~0.8; statement prompt: 0.6 vs 0.3
        p = (0.9 if correct else 0.8) if short else (0.6 if correct else 0.3)
        p += rng.uniform(-0.02, 0.02)
        cases.append(
            {"id": f"c{i}", "judge": "correctness", "source": "s", "label": "correct" if correct else "incorrect"}
        )
        preds.append(Prediction(probs=[p], score=p, variant="correctness_short" if short else "correctness"))
    row = score_judge("correctness", cases, preds, threshold=0.5, folds=5, seed=0)[0]
    assert row.accuracy.value == 1.0
    assert 0.62 < row.cutoffs["correctness_short"] < 0.88 and 0.32 < row.cutoffs["correctness"] < 0.58
    one = [Prediction(probs=p.probs, score=p.score) for p in preds]  # no variants: a single cut-off
    assert score_judge("correctness", cases, one, threshold=0.5, folds=5, seed=0)[0].accuracy.value <= 0.8


def test_ragas_reasons_are_bounded_in_the_schema_sent_not_in_validation(small_project):
    """Every Ragas verdict step sends its own output model's schema, named as Ragas names it, with
    maxLength on each reason; what comes back is validated by Ragas' own rules (a long reason from
    an endpoint without guided decoding still parses)."""
    from ragas.metrics.collections.context_precision.util import ContextPrecisionOutput

    from rag_eval.judges.ragas_judges import REASON_CHARS, bounded_reasons

    with ScriptedServer(reply=structured_reply) as s:
        run_audit(_config(small_project, s.base_url))
        bodies = s.bodies
    seen = set()
    for b in bodies:
        name = judge_name(b)
        if name in ("NLIStatementOutput", "ContextPrecisionOutput", "ContextRecallOutput"):
            text = json.dumps(b["response_format"])
            assert f'"maxLength": {REASON_CHARS}' in text, name
            seen.add(name)
        elif name == "StatementGeneratorOutput":
            assert "maxLength" not in json.dumps(b["response_format"])
    assert seen == {"NLIStatementOutput", "ContextPrecisionOutput", "ContextRecallOutput"}
    bounded = bounded_reasons(ContextPrecisionOutput, REASON_CHARS)
    assert bounded.__name__ == "ContextPrecisionOutput"
    assert bounded(reason="x" * 500, verdict=1).verdict == 1
    assert bounded_reasons(ContextPrecisionOutput, None) is ContextPrecisionOutput


def test_a_failed_second_request_neither_changes_the_judges_after_it_nor_ends_green(small_project):
    """q4's refusal ("answered" an unanswerable question) shows its answer, so its verdict is asked
    again with its reason at once. Where that request fails (HTTP 500, retried, failing), the judges
    after it still run on the verdict asked alone (q4 is not taken for a refusal), and the refusal
    ends not_judged with the error, as a failed call always does: the run's default gate fails and a
    rerun asks again, rather than the report showing a verdict whose reason could not be asked."""

    def script(n, body):
        text = json.dumps(body)
        if judge_name(body) == "refusal" and body["max_tokens"] == 48 and "Who wrote the Python tutorial" in text:
            return "500"
        return "ok"

    with ScriptedServer(script=script, reply=structured_reply) as s:
        run_dir = run_audit(_config(small_project, s.base_url))
        failed = [b for b in s.bodies if judge_name(b) == "refusal" and b["max_tokens"] == 48]
    assert failed  # the second request was sent (and failed)
    q4 = {j["judge"]: j for j in _records(run_dir, "judgements.jsonl") if j["question_id"] == "q4"}
    assert q4["faithfulness_yesno"]["status"] == "judged"  # judged on the verdict asked alone
    assert q4["refusal"]["status"] == "not_judged" and "500" in q4["refusal"]["error"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["generation"]["base"]["refusal_accuracy"]["n_not_judged"] == 1


def test_a_prompt_s_verdicts_do_not_move_when_another_prompt_shows_its_answers(small_project, tmp_path):
    """User trial H1: an answer is asked its verdicts alone, then again with their reasons when a
    reader is shown it, which another prompt's outcome can decide (the question's answers are shown
    for every prompt). The second request is another request, and the server's numerics differ with
    it (here P 0.62 alone, 0.38 with the reason): the verdict is decided by the first, so base's
    records are the same whether or not a second prompt made them shown, with and without the
    response cache; only the reasons are added."""
    from ..scripted_server import asks_verdict_only

    def reply(body):
        text = body["messages"][-1]["content"]
        if judge_name(body) is None and "OTHER-PROMPT" in text:
            return "I cannot tell from the documents."
        if judge_name(body) == "refusal" and "I cannot tell from the documents." in text:
            return "No: it declines to answer."
        return structured_reply(body)

    def probability(body):
        if judge_name(body) == "correctness":
            return 0.62 if asks_verdict_only(body) else 0.38
        return 0.9

    def base_records(run_dir):
        keep = ("status", "verdict", "probability", "cutoff")
        return {
            (r["judge"], r["question_id"]): ({k: r[k] for k in keep}, bool(r["details"].get("reasons_deferred")))
            for r in _records(run_dir, "judgements.jsonl")
            if r["prompt"] == "base" and r["judge"] in ("correctness", "refusal")
        }

    (small_project / "other.md").write_text("OTHER-PROMPT\n" + (ROOT / "prompts" / "answer.md").read_text())
    with ScriptedServer(reply=reply, probability=probability) as s:
        alone = _config(small_project, s.base_url, extra_metrics=["correctness", "refusal"])
        first = base_records(run_audit(alone, out=str(tmp_path / "alone")))
        both = alone.model_copy(deep=True)
        both.generation.prompts["other"] = str(small_project / "other.md")
        for use_cache in (True, False):
            second = base_records(run_audit(both, out=str(tmp_path / f"both-{use_cache}"), use_cache=use_cache))
            assert {k: v[0] for k, v in second.items()} == {k: v[0] for k, v in first.items()}
            assert {k[0] for k, v in first.items() if v[1]} == {"correctness", "refusal"}  # asked alone there
            assert not any(v[1] for v in second.values())  # here every base answer was shown, with its reasons
    # Decided by the request made alone (0.62), also where the reason was asked.
    assert {v[0]["probability"] for k, v in first.items() if k[0] == "correctness"} - {None} == {0.62}


def test_judge_check_saves_each_correctness_prompt_with_its_own_case_count(tmp_path, capsys, monkeypatch):
    """User trial 3 L11 (the earlier test's cases ask one prompt only): a judge of two prompts splits
    its cases, and each saved cut-off says how many it was fitted on. User trial 4 F17: a prompt with
    too few cases (2 saved an empty band) is not saved, and the console says why."""
    from rag_eval.calibration.cutoffs import user_path
    from rag_eval.cli import main

    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path / "cache"))  # its own calibrations file
    long_ref = "The limit is set by the max_connections argument of the pool, ten by default."

    def cases(n_long: tuple[int, int], n_short: tuple[int, int]) -> Path:
        kinds = (
            [(long_ref, "Ten, set by max_connections.", "correct")] * n_long[0]
            + [(long_ref, "It has no limit.", "incorrect")] * n_long[1]
            + [("Ten.", "Ten.", "correct")] * n_short[0]
            + [("Ten.", "Five.", "incorrect")] * n_short[1]
        )
        rows = [
            {"judge": "correctness", "question": f"q{i}", "reference": ref, "answer": ans, "label": label}
            for i, (ref, ans, label) in enumerate(kinds)
        ]
        path = tmp_path / f"cases-{len(rows)}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return path

    def saved() -> dict:
        table = json.loads(user_path().read_text()) if user_path().exists() else {}
        return {k.split("|")[1]: v["n"] for k, v in table.items() if k.split("|")[1].startswith("correctness")}

    with ScriptedServer(reply=structured_reply) as s:
        args = ["--llm", "openai", "--model", "scripted", "--base-url", s.base_url, "--save", "--cases"]
        assert main(["--quiet", "judge-check", *args, str(cases((2, 2), (2, 1)))]) == 0
        out = capsys.readouterr().out
        assert saved() == {}
        assert "not saved: correctness: 4 cases, 2 of its rarer verdict: saving needs 10 cases with 3 of each" in out
        assert "not saved: correctness_short: 3 cases, 1 of its rarer verdict" in out and "saved to" not in out
        assert "4-fold cross-validated" not in out and "5-fold cross-validated" in out  # 7 cases: 5 folds hold one
        assert main(["--quiet", "judge-check", *args, str(cases((6, 5), (5, 5)))]) == 0
        assert saved() == {"correctness": 11, "correctness_short": 10}
        assert "cut-offs and bands saved to" in capsys.readouterr().out
        # Review 55 M7: too few cases again: the earlier calibration stays in force, and is said to.
        assert main(["--quiet", "judge-check", *args, str(cases((2, 2), (2, 1)))]) == 0
    assert "the calibration you saved before (n 11) still applies: delete its entry" in capsys.readouterr().out
    assert saved() == {"correctness": 11, "correctness_short": 10}
