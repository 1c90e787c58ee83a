"""Escalation with two scripted endpoints, one unsure and one sure: only the first judge's
uncertain decisions reach the second, nothing when there are none, at most max_calls; the record
says who decided with both probabilities; the report gives the cost and the figures both ways.
And judge-check --escalate: the first judge alone, the second alone and the cascade."""

import json
import re

import pytest

from rag_eval.orchestration.runner import run_audit

from ..scripted_server import ScriptedServer, judge_name, structured_reply
from .test_uncertain import _project, unsure_reply


def _second_block(url, extra=""):
    return (
        f"  escalate:\n    llm: {{provider: openai, model: strong, base_url: '{url}', max_retries: 1, timeout_s: 5}}\n"
        f"    prices: {{input: 2.0, output: 8.0}}\n{extra}"
    )


def _records(run_dir):
    return [json.loads(x) for x in (run_dir / "judgements.jsonl").read_text().splitlines()]


def test_only_the_uncertain_decisions_reach_the_second_judge(small_project):
    # First judge: unsure of correctness (P 0.9 in the band) for q1, sure (No, P 0.9) for q2; its
    # faithfulness statements (P 0.9) all in their band. Second judge: sure (P 0.99), says Yes.
    with (
        ScriptedServer(reply=unsure_reply) as first,
        ScriptedServer(reply=structured_reply, probability=lambda b: 0.99) as second,
    ):
        cfg = _project(
            small_project,
            first.base_url,
            "  uncertain: {correctness: [0.85, 0.95], faithfulness_yesno: [0.85, 0.95]}\n"
            + _second_block(second.base_url),
        )
        run_dir = run_audit(cfg)
        asked = [(judge_name(b), b["messages"][-1]["content"]) for b in second.bodies]
    records = _records(run_dir)
    unsure_first = [r["details"]["escalation"]["first_record"] for r in records if r["details"].get("escalation")]
    # Exactly the uncertain ones: q1's correctness, and each answer's one statement (3 answered
    # questions are faithfulness-judged: q1, q2, q3; q4's answer is judged too, it is not a refusal).
    kinds = sorted(k for k, _ in asked)
    n_faith = sum(r["judge"] == "faithfulness_yesno" for r in unsure_first)
    assert kinds == sorted(["correctness"] + ["supported"] * n_faith)
    assert n_faith == sum(r["judge"] == "faithfulness_yesno" for r in records) >= 3
    assert all(r["status"] == "uncertain" for r in unsure_first)
    [text] = [t for k, t in asked if k == "correctness"]
    assert "Lists." in text  # q1's reference, not q2's
    corr = {r["question_id"]: r for r in records if r["judge"] == "correctness"}
    esc = corr["q1"]["details"]["escalation"]
    assert corr["q1"]["status"] == "judged" and corr["q1"]["verdict"] == "correct"
    assert esc["decided_by"] == "second" and esc["model"] == "strong"
    assert esc["first_probability"] == pytest.approx(0.9) and esc["second_probability"] == pytest.approx(0.99)
    assert esc["second"]["how"] == "text verdict"  # no calibration saved for the second model
    assert "escalation" not in corr["q2"]["details"] and corr["q2"]["verdict"] == "incorrect"
    report = json.loads((run_dir / "report.json").read_text())
    e = report["judges"]["escalation"]
    assert (e["uncertain"], e["escalated"], e["decided"], e["calls"]) == (
        1 + n_faith,
        1 + n_faith,
        1 + n_faith,
        1 + n_faith,
    )
    assert e["usage"]["calls"] == 1 + n_faith
    # 10 prompt and 5 completion tokens per scripted call, at 2 and 8 per million.
    assert e["usage"]["cost"] == pytest.approx((1 + n_faith) * (10 * 2.0 + 5 * 8.0) / 1e6)
    before = e["figures_without"]["base"]["correctness"]
    after = report["judges"]["figures"]["base"]["correctness"]
    assert (before["n"], before["n_uncertain"], before["value"]) == (1, 1, 0.0)
    assert (after["n"], after["n_uncertain"], after["value"]) == (2, 0, 0.5)
    assert e["outcomes_without"]["base"]["uncertain"]["count"] >= 1
    assert report["attribution"]["shares"]["base"]["uncertain"]["count"] == 0
    md = (run_dir / "report.md").read_text()
    assert "### Escalated to a second judge" in md and f"{1 + n_faith} of {1 + n_faith} uncertain verdicts" in md
    assert "| base | correctness | 0.00 [" in md and "n=1 unc=1 |" in md and "n=2 unc=0 |" in md


def test_a_sure_first_judge_sends_nothing(small_project):
    with ScriptedServer(reply=unsure_reply) as first, ScriptedServer(reply=structured_reply) as second:
        cfg = _project(small_project, first.base_url, "  uncertain: off\n" + _second_block(second.base_url))
        run_dir = run_audit(cfg)
        assert second.calls == 0
    e = json.loads((run_dir / "report.json").read_text())["judges"]["escalation"]
    assert (e["uncertain"], e["escalated"], e["calls"], e["usage"]["cost"]) == (0, 0, 0, 0.0)


def test_max_calls_bounds_what_is_sent_and_a_rerun_sends_the_same(small_project):
    with ScriptedServer(reply=unsure_reply) as first, ScriptedServer(reply=structured_reply) as second:
        cfg = _project(
            small_project,
            first.base_url,
            "  uncertain: {faithfulness_yesno: [0.85, 0.95]}\n" + _second_block(second.base_url, "    max_calls: 2\n"),
        )
        run_dir = run_audit(cfg)
        assert second.calls == 2
        again = run_audit(cfg, resume=run_dir)
        assert second.calls == 2  # the same two decisions, answered from the cache
    for rd in (run_dir, again):
        e = json.loads((rd / "report.json").read_text())["judges"]["escalation"]
        assert (e["calls"], e["escalated"]) == (2, 2) and e["over_budget"] == e["uncertain"] - 2
    records = _records(run_dir)
    skipped = [r for r in records if r["status"] == "uncertain"]
    assert skipped and all("max_calls (2) reached" in r["details"]["escalation"]["not_sent"] for r in skipped)
    sent = sorted(r["question_id"] for r in records if (r["details"].get("escalation") or {}).get("decided_by"))
    assert sent == sorted(r["question_id"] for r in records if r["judge"] == "faithfulness_yesno")[:2]


def _refusal_cases(path, n=40):
    """Refusal cases: the even ones declined. The first judge's P(yes = answers) is clear for most,
    and on the wrong side for a few near the middle."""
    rows = []
    for i in range(n):
        refused = i % 2 == 0
        answer = f"[case {i}] " + ("I cannot answer that from the documents." if refused else "It is 42.")
        rows.append(
            {
                "id": f"r{i}",
                "judge": "refusal",
                "question": f"Question {i}?",
                "answer": answer,
                "label": "refused" if refused else "answered",
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def _p_first(i):
    refused = i % 2 == 0
    if i % 5 == 0:  # near the middle, often wrong
        return 0.55 if refused else 0.45
    return 0.05 if refused else 0.95


def test_judge_check_measures_first_alone_second_alone_and_the_cascade(tmp_path, capsys):
    from rag_eval.cli import main

    _refusal_cases(tmp_path / "cases.jsonl")

    def case(body):
        return int(re.search(r"\[case (\d+)\]", body["messages"][-1]["content"]).group(1))

    def first_p(body):
        i = case(body)
        p_yes = _p_first(i)
        return p_yes if p_yes >= 0.5 else 1 - p_yes  # P of the word the reply starts with

    def first_reply(body):
        return "Yes: it answers." if _p_first(case(body)) >= 0.5 else "No: it declines."

    def second_reply(body):  # always right
        return "No: it declines." if case(body) % 2 == 0 else "Yes: it answers."

    with (
        ScriptedServer(reply=first_reply, probability=first_p) as first,
        ScriptedServer(reply=second_reply, probability=lambda b: 0.99) as second,
    ):
        code = main(
            [
                "--quiet",
                "judge-check",
                "--llm",
                "openai",
                "--model",
                "small",
                "--base-url",
                first.base_url,
                "--cases",
                str(tmp_path / "cases.jsonl"),
                "--judges",
                "refusal",
                "--escalate",
                second.base_url,
                "--escalate-model",
                "strong",
                "--escalate-prices",
                "1,4",
                "--json",
                str(tmp_path / "out.json"),
            ]
        )
        assert code == 0
        second_calls = second.calls
    out = json.loads((tmp_path / "out.json").read_text())
    rows = {r["way"]: r for r in out["cascade"]}
    assert set(rows) == {"first alone", "second alone", "cascade"}
    assert rows["second alone"]["accuracy"]["value"] == 1.0 and rows["second alone"]["calls_second"] == 40
    assert second_calls == 40
    assert rows["first alone"]["accuracy"]["value"] < 1.0 and rows["first alone"]["calls_second"] == 0
    # The cascade sends only the uncertain (the 8 cases near the middle, out of fold) and is right on them.
    assert 0 < rows["cascade"]["calls_second"] <= 16
    assert rows["cascade"]["accuracy"]["value"] > rows["first alone"]["accuracy"]["value"]
    assert rows["cascade"]["cost"] < rows["second alone"]["cost"]
    score = next(s for s in out["scores"] if s["judge"] == "refusal" and s["source"] == "all")
    band = score["extra"]["bands"]["refusal"]
    assert band["low"] <= score["cutoffs"]["refusal"] < band["high"]
    printed = capsys.readouterr().out
    assert "Cascade" in printed and "uncertain band [" in printed


def test_an_answer_the_second_judge_calls_a_refusal_sends_no_faithfulness_question(small_project):
    """Refusal verdicts go first: where the second judge says refused, the answer's faithfulness
    (uncertain too) is skipped, not sent."""

    def second_reply(body):
        if judge_name(body) == "refusal":
            return "No: it declines."
        return structured_reply(body)

    with ScriptedServer(reply=structured_reply) as first, ScriptedServer(reply=second_reply) as second:
        cfg = _project(
            small_project,
            first.base_url,
            "  uncertain: {refusal: [0.05, 0.15], faithfulness_yesno: [0.85, 0.95]}\n" + _second_block(second.base_url),
        )
        run_dir = run_audit(cfg)
        kinds = [judge_name(b) for b in second.bodies]
    assert kinds == ["refusal"] * 4  # P(refused) 0.1 is in the band for every answer; no statement sent
    records = _records(run_dir)
    faith = [r for r in records if r["judge"] == "faithfulness_yesno"]
    assert faith and all(r["status"] == "skipped" and r["reason"] == "the answer is a refusal" for r in faith)
    assert all(r["details"]["escalation"]["first_record"]["status"] == "uncertain" for r in faith)
    report = json.loads((run_dir / "report.json").read_text())
    outcomes = {r["question_id"]: r["outcome"] for r in report["attribution"]["rows"]}
    assert outcomes == {"q1": "refused", "q2": "refused", "q3": "refused", "q4": "correct_refusal"}
    e = report["judges"]["escalation"]
    assert (e["escalated"], e["calls"]) == (4, 4)


def test_an_uncertain_citations_verdict_is_kept_uncertain_with_the_reason_and_nothing_is_asked():
    import asyncio

    from rag_eval.judges.escalation import NOT_ESCALATED, AnswerTexts, escalate
    from rag_eval.judges.judgement import Judgement
    from rag_eval.judges.scored import ScoredJudges

    class NoCalls:
        model = identity = "strong"

        async def chat(self, *a, **kw):
            raise AssertionError("the citations judge's record must not be asked of the second judge")

    first = Judgement("citations", "q1", "cite", "uncertain", reason="1 of 1 claims (1 uncertain)")
    texts = AnswerTexts("Which?", "Lists can change [1].", "", "Lists are mutable.")
    done, info = asyncio.run(
        escalate([first], lambda j: texts, ScoredJudges.load(NoCalls(), None), {}, max_calls=None, threshold=1.0)
    )
    [j] = done
    assert j.status == "uncertain" and j.details["escalation"]["not_sent"] == NOT_ESCALATED
    assert (info.escalated, info.calls) == (0, 0)


def test_a_second_judge_that_is_the_first_is_refused_and_its_close_calls_stay_open(small_project, capsys):
    """User trial 3 F9: escalate.llm naming judges.llm's own model and endpoint is a config error
    (file and line); a second judge's P within the numeric noise of its cut-off decides nothing; the
    escalation's usage is its own calls even when its client is the first judge's."""
    import asyncio

    from rag_eval.cli import main
    from rag_eval.judges.escalation import second_opinion
    from rag_eval.llm.usage import Usage, since

    cfg = small_project / "audit.yaml"
    cfg.write_text(
        cfg.read_text()
        + "judges:\n  llm: {provider: local}\n  metrics: [correctness]\n"
        + "  escalate:\n    llm: {provider: local}\n    max_calls: 3\n"
    )
    assert main(["validate", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "audit.yaml:" in err and "escalate.llm is the first judge's own model and endpoint" in err

    class Decision:
        error, reason, method, text_label, probs = None, "", "logprobs", "yes", [0.8]

        def p(self, word):
            return 0.800

    class Prompt:
        async def ask_with(self, llm, values):
            return Decision()

    class Second:
        calibrated = {"correctness": True}
        llm = None

        def cutoff(self, variant):
            return 0.793

        def prompt_for(self, variant):
            return Prompt()

    close = asyncio.run(second_opinion(Second(), {}, "correctness", True, {}))
    assert close.positive is None and "within the server's numeric noise of its cut-off 0.793" in close.how
    assert asyncio.run(second_opinion(Second(), {}, "correctness", True, {}, noise=False)).positive is True

    before = Usage.counter("m")
    now = before.model_copy(update={"calls": 40, "prompt_tokens": 28811})
    snapshot = before.model_copy(update={"calls": 34, "prompt_tokens": 24024})
    assert (since(now, snapshot).calls, since(now, snapshot).prompt_tokens) == (6, 4787)


def test_a_second_judge_on_another_gguf_file_or_the_same_openai_model_is_told_apart():
    """Review 54 M6: another local GGUF file is another judge; the same OpenAI model named with and
    without OpenAI's base_url is the same one."""
    from rag_eval.judges.settings import JudgesConfig

    JudgesConfig.model_validate(
        {
            "llm": {"provider": "local", "model_path": "/m/small.gguf"},
            "escalate": {"llm": {"provider": "local", "model_path": "/m/big.gguf"}},
        }
    )
    with pytest.raises(ValueError, match="escalate.llm is the first judge's own model and endpoint"):
        JudgesConfig.model_validate(
            {
                "llm": {"provider": "openai", "model": "gpt-4o-mini"},
                "escalate": {
                    "llm": {"provider": "openai", "model": "gpt-4o-mini", "base_url": "https://api.openai.com/v1/"}
                },
            }
        )
