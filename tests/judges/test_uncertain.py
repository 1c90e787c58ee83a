"""Uncertain verdicts: the band around a cut-off, fitted so that decided verdicts reach a target
agreement; records in it counted apart, outcomes `uncertain`, and the report's list to label first."""

import json
import math
import shutil

import numpy as np
import pytest

from rag_eval.config import load_config
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.uncertain import Band, bands_for, case_status, fit_band, mark
from rag_eval.orchestration.runner import run_audit

from ..conftest import ROOT
from ..scripted_server import ScriptedServer, judge_name, structured_reply


def _overlapping(seed=0, n=200):
    """Positives with P(yes) ~ U(0.35, 1), negatives ~ U(0, 0.65): wrong only near the middle."""
    rng = np.random.default_rng(seed)
    positive = rng.random(n) < 0.5
    p = np.where(positive, rng.uniform(0.35, 1.0, n), rng.uniform(0.0, 0.65, n))
    return p, positive


def test_the_band_leaves_the_fewest_cases_uncertain_that_reach_the_target():
    p, positive = _overlapping()
    at_cut = float(np.mean((p >= 0.5) == positive))
    assert at_cut < 0.9  # deciding everything at the cut-off misses the target
    fit = fit_band([[x] for x in p], positive, 0.5, target=0.95)
    assert fit.reached and fit.low < 0.5 <= fit.high
    unc = (p >= fit.low) & (p < fit.high)
    decided = ~unc
    assert np.mean((p[decided] >= 0.5) == positive[decided]) >= 0.95
    assert fit.decided_accuracy == pytest.approx(np.mean((p[decided] >= 0.5) == positive[decided]))
    assert fit.uncertain_share == pytest.approx(unc.mean())
    # A lower target needs a narrower band.
    loose = fit_band([[x] for x in p], positive, 0.5, target=0.85)
    assert loose.uncertain_share < fit.uncertain_share
    # Classes a cut-off separates need no band at all.
    clean = fit_band([[0.1], [0.2], [0.8], [0.9]], [False, False, True, True], 0.5, target=0.95)
    assert clean.uncertain_share == 0 and clean.decided_accuracy == 1.0
    # An unreachable target within half the cases undecided says so.
    coin = fit_band([[x] for x in np.linspace(0.3, 0.7, 20)], [i % 2 == 0 for i in range(20)], 0.5, target=0.99)
    assert not coin.reached and coin.uncertain_share <= 0.5


def test_a_statement_judge_is_uncertain_when_its_unsure_statements_can_cross_the_threshold():
    # Statements 0.95 (sure yes), 0.6 (in the band), 0.1 (sure no): the share is 1/3 or 2/3.
    assert case_status([0.95, 0.6, 0.1], 0.4, 0.8, 0.5) == (True, False)
    assert case_status([0.95, 0.6, 0.9], 0.4, 0.8, 0.5) == (False, True)  # 2/3 or 3/3: faithful either way
    assert case_status([0.1, 0.6, 0.2], 0.4, 0.8, 0.5) == (False, False)


def test_mark_records_the_uncertain_decision_with_its_probability_and_leaning():
    j = Judgement("correctness", "q1", "base", "judged", 1.0, "correct", "r", probability=0.6, cutoff=0.57)
    j.details = {"variant": "correctness"}
    bands = {"correctness": Band(0.5, 0.7, "test")}
    u = mark(j, bands, 0.5)
    assert (u.status, u.verdict, u.score, u.probability) == ("uncertain", None, None, 0.6)
    assert u.details["leaning"] == "correct" and u.details["band"] == [0.5, 0.7]
    sure = mark(Judgement("correctness", "q1", "base", "judged", 1.0, "correct", probability=0.9), bands, 0.5)
    assert sure.status == "judged" and sure.verdict == "correct"
    # The short-reference prompt has its own band; none here, so it is decided.
    other = Judgement(
        "correctness", "q", "b", "judged", 1.0, "correct", probability=0.6, details={"variant": "correctness_short"}
    )
    assert mark(other, bands, 0.5).status == "judged"
    # Review 55 M12: an overturned verdict's plain words say what the cut-off would decide, not that it did.
    said = 'the model wrote "No" (P(correct) = 0.60); the calibrated cut-off 0.57 decided correct, 0.03 above it'
    worded = mark(j.model_copy(update={"reason": said}), bands, 0.5)
    assert worded.reason == said.replace("0.57 decided correct", "0.57 would decide correct")
    f = Judgement("faithfulness_yesno", "q", "b", "judged", 0.5, probability=0.6)
    f.details = {"statements": [{"p_supported": 0.95}, {"p_supported": 0.6}]}
    fu = mark(f, {"faithfulness_yesno": Band(0.5, 0.8, "t")}, 0.75)
    assert fu.status == "uncertain" and fu.details["score_range"] == [0.5, 1.0]
    assert fu.details["uncertain_statements"] == [1] and fu.details["leaning_score"] == 0.5


def test_bands_come_from_the_calibration_or_the_config_or_say_why_not(monkeypatch, tmp_path):
    from rag_eval.calibration import cutoffs as calibration

    class Scored:
        def prompt_hash(self, judge):
            return "h-" + judge

    saved = {
        calibration.key("m", "refusal", "h-refusal"): {"cutoff": 0.6, "band": [0.45, 0.7], "sources": ["cases"]},
        calibration.key("m", "correctness", "h-correctness"): {"cutoff": 0.57},
    }
    monkeypatch.setattr(calibration, "saved", lambda: saved)
    bands, notes = bands_for("m", Scored(), "auto", judges=["refusal", "correctness", "faithfulness_yesno"])
    assert set(bands) == {"refusal"} and (bands["refusal"].low, bands["refusal"].high) == (0.45, 0.7)
    assert "saved without a band" in notes["correctness"] and "no calibration" in notes["correctness"]
    assert "no calibration" in notes["faithfulness_yesno"]
    bands, notes = bands_for("m", Scored(), {"correctness": [0.4, 0.8]}, judges=["correctness", "refusal"])
    assert set(bands) == {"correctness", "correctness_short"} and "no band in judges.uncertain" in notes["refusal"]
    assert bands_for("m", Scored(), "off", judges=["refusal"])[0] == {}
    # User trial 3 F4: a band fitted in sample whose decided verdicts missed its target out of fold
    # says so beside it (the shipped correctness_short band: empty, 0.86 out of fold, target 0.90).
    saved[calibration.key("m", "refusal", "h-refusal")].update(
        band_target=0.95, band_out_of_fold={"decided_accuracy": 0.81, "n_decided": 12, "n": 12}
    )
    bands, _ = bands_for("m", Scored(), "auto", judges=["refusal"])
    assert "target agreement 0.95; out of fold its decided verdicts agreed on 0.81, under the target" in (
        bands["refusal"].source
    )
    saved[calibration.key("m", "refusal", "h-refusal")]["band_out_of_fold"]["decided_accuracy"] = 0.97
    assert bands_for("m", Scored(), "auto", judges=["refusal"])[0]["refusal"].source == (
        "fitted on cases (target agreement 0.95)"
    )


def test_judge_checks_band_line_says_in_sample_and_out_of_fold_apart():
    """User trial 3 F4: "empty (the cut-off alone reaches it) (target 0.90 not reached)" read as a
    contradiction, and "reaches" was true in sample only."""
    from types import SimpleNamespace

    from rag_eval.commands.judge_check import band_line

    def score(low, high, reached, acc):
        band = {"low": low, "high": high, "target": 0.9, "reached": reached}
        extra = {
            "bands": {"correctness": band},
            "band_out_of_fold": {"decided_accuracy": acc, "n_decided": 16, "n": 16},
        }
        return SimpleNamespace(extra=extra)

    line = band_line(score(0.79, 0.79, True, 0.81))
    assert "empty (on the cases it was fitted on, the cut-off alone reaches the target 0.90)" in line
    assert "agree on 0.81, 0% uncertain, under the target 0.90: the band, fitted in sample, is narrower" in line
    line = band_line(score(0.79, 0.79, False, 0.81))
    assert "empty (no band within the uncertain limit reaches the target 0.90 in sample)" in line
    line = band_line(score(0.5, 0.8, True, 0.95))
    assert "[0.500, 0.800) (target 0.90 reached in sample)" in line and "under the target" not in line


def _project(small_project, base_url, extra=""):
    shutil.copy(ROOT / "prompts" / "answer.md", small_project / "answer.md")
    llm = f"{{provider: openai, model: scripted, base_url: '{base_url}', max_retries: 1, timeout_s: 5}}"
    cfg = small_project / "audit.yaml"
    cfg.write_text(
        cfg.read_text()
        + f"generation:\n  retriever: bm25\n  top_k: 2\n  prompts: {{base: answer.md}}\n  llm: {llm}\n"
        + f"judges:\n  llm: {llm}\n  metrics: [correctness, refusal, faithfulness_yesno]\n{extra}"
    )
    return load_config(cfg)


def unsure_reply(body):
    """The judge says No to q2's correctness (P 0.9: decided incorrect), Yes (P 0.9) to the rest."""
    if judge_name(body) == "correctness" and "distinct hashable" in body["messages"][-1]["content"]:
        return "No: the answer misses the reference."
    return structured_reply(body)


def test_an_audit_counts_uncertain_verdicts_apart_and_lists_them_to_label_first(small_project):
    with ScriptedServer(reply=unsure_reply) as s:
        cfg = _project(small_project, s.base_url, "  uncertain: {correctness: [0.85, 0.95]}\n")
        run_dir = run_audit(cfg)
    records = [json.loads(x) for x in (run_dir / "judgements.jsonl").read_text().splitlines()]
    corr = {r["question_id"]: r for r in records if r["judge"] == "correctness"}
    assert corr["q1"]["status"] == "uncertain" and corr["q1"]["probability"] == pytest.approx(0.9)
    assert corr["q1"]["details"]["leaning"] == "correct" and corr["q1"]["verdict"] is None
    assert corr["q2"]["status"] == "judged" and corr["q2"]["verdict"] == "incorrect"  # P(correct) 0.1
    summary = json.loads((run_dir / "summary.json").read_text())
    fig = summary["generation"]["base"]["correctness"]
    assert (fig["n"], fig["n_uncertain"], fig["value"]) == (1, 1, 0.0)  # q1 is out of the share
    att = summary["attribution"]["base"]
    assert att["uncertain"]["count"] == 1 and summary["failure_split"]["base"]["uncertain"] == 1
    report = json.loads((run_dir / "report.json").read_text())
    row = next(r for r in report["attribution"]["rows"] if r["question_id"] == "q1")
    assert row["outcome"] == "uncertain" and "correctness uncertain: P 0.90" in row["why"]
    md = (run_dir / "report.md").read_text()
    assert "### Label these first: 1 uncertain verdicts" in md
    assert "| q1 | base | correctness | 0.900 | [0.850, 0.950) | correct |" in md
    assert "uncertain where P lies in [0.850, 0.950)" in md
    assert "Label these first" in (run_dir / "report.html").read_text()


def test_the_band_is_validated_with_a_clear_message(small_project):
    from rag_eval.errors import ConfigError

    original = (small_project / "audit.yaml").read_text()
    with pytest.raises(ConfigError) as err:
        _project(small_project, "http://127.0.0.1:9/v1", "  uncertain: {corectness: [0.4, 0.6]}\n")
    assert "did you mean 'correctness'" in str(err.value)
    (small_project / "audit.yaml").write_text(original)
    with pytest.raises(ConfigError) as err:
        _project(small_project, "http://127.0.0.1:9/v1", "  uncertain: {refusal: [0.7, 0.6]}\n")
    assert "low <= high" in str(err.value)


def test_a_verdict_within_the_server_s_numeric_noise_of_its_cut_off_is_uncertain():
    """User trials M10 and 2-M11: P 0.8426 under a cut-off of 0.8430 with an empty fitted band was a
    decided "incorrect". Within NUMERIC_NOISE_LOGIT of the cut-off (what the server's numerics alone
    move, benchmarks/verdict_noise) a verdict is uncertain, its band widened to say where."""
    from rag_eval.judges.judgement import Judgement
    from rag_eval.judges.uncertain import NUMERIC_NOISE_LOGIT, mark_close_call, without_uncertain_note

    def verdict(p: float) -> Judgement:
        return Judgement(
            "correctness",
            "q1",
            "a",
            "judged",
            verdict="incorrect",
            score=0.0,
            probability=p,
            cutoff=0.842993,
            reason="the model wrote Yes",
            details={"band": [0.842993, 0.842993]},
        )

    close = mark_close_call(verdict(0.842615))
    assert (close.status, close.verdict, close.details["leaning"]) == ("uncertain", None, "incorrect")
    low, high = close.details["band"]
    assert low < 0.842615 < high and abs(math.log(high / (1 - high)) - math.log(0.842993 / 0.157007)) == pytest.approx(
        NUMERIC_NOISE_LOGIT, abs=1e-4
    )
    assert (
        "numeric noise of the cut-off 0.843" in close.reason
        and without_uncertain_note(close.reason) == "the model wrote Yes"
    )
    far = verdict(0.79)  # 0.35 under the cut-off in log-odds: decided
    assert mark_close_call(far) == far
    # A plain-words reason says what the cut-off alone would decide, not that it decided; decided
    # again (an adaptation), it reads as it was.
    plain = 'the model wrote "Yes" (P(correct) = 0.84); the calibrated cut-off 0.84 decided incorrect, less than 0.01 under it'
    worded = mark_close_call(verdict(0.842615).model_copy(update={"reason": plain}))
    assert worded.reason.startswith(
        'the model wrote "Yes" (P(correct) = 0.84); the calibrated cut-off 0.84 would decide incorrect, less than'
    )
    assert " decided " not in worded.reason and without_uncertain_note(worded.reason) == plain


def test_an_incorrect_verdict_of_an_answer_restating_its_reference_is_uncertain():
    """User trial 2 H2: the answer "Call click.unstyle(text)." to that very reference was a decided
    "incorrect" at P 0.79; the words and the judge disagree, so it is left uncertain. Narrow (review
    53 H1: it only ever undecides "incorrect"): an answer with a word beyond the reference and the
    question, another negation, a yes/no the other way, or a reference of one word stays decided."""
    from rag_eval.judges.judgement import Judgement
    from rag_eval.judges.uncertain import mark_reference_restated

    j = Judgement("correctness", "q1", "a", "judged", verdict="incorrect", score=0.0, probability=0.79, cutoff=0.84)

    def restated(reference: str, answer: str, question: str = "How do I strip the colours?") -> bool:
        got = mark_reference_restated(j, reference, question, answer)
        assert got == j or (got.status, got.details["leaning"], got.details["band"]) == ("uncertain", "incorrect", None)
        return got.status == "uncertain"

    ref = "Call click.unstyle(text)."
    assert restated(ref, "Call click.unstyle(text).")
    assert restated(ref, "To strip the colours, call click.unstyle(text).")  # the question's words
    assert not restated(ref, "Call click.style(text).")  # a name missing
    assert not restated(ref, "Call click.unstyle(text) twice, then reset the terminal.")  # words beyond
    assert not restated("It is thread-safe.", "It is not thread-safe.", "Is it thread-safe?")  # a negation
    assert not restated("The timeout is 30 seconds.", "The timeout is 60 seconds, not 30 seconds.", "What timeout?")
    assert not restated("Yes.", "No.", "Is it?") and not restated("No.", "Yes, it is.", "Is it?")


def test_close_calls_are_left_uncertain_in_an_audit_unless_uncertain_is_off(small_project):
    """Review 53 M8: the rules wired into a run. Correctness at P 0.52 against the default cut-off
    0.5 is a close call: uncertain, saying why; under judges.uncertain: off it is decided."""

    def probability(body):
        return 0.52 if judge_name(body) == "correctness" else 0.9

    with ScriptedServer(reply=structured_reply, probability=probability) as s:
        run_dir = run_audit(_project(small_project, s.base_url))
        off = run_audit(_project(small_project, s.base_url, "  uncertain: 'off'\n"))
    for folder, status in ((run_dir, "uncertain"), (off, "judged")):
        records = [json.loads(x) for x in (folder / "judgements.jsonl").read_text().splitlines()]
        corr = [r for r in records if r["judge"] == "correctness" and r["status"] != "skipped"]
        assert corr and {r["status"] for r in corr} == {status}, folder
        if status == "uncertain":
            assert all("numeric noise of the cut-off 0.500" in r["details"]["left_uncertain"] for r in corr)
