"""A run's judgements re-decided by adapted judges, adaptations saved per corpus, and judge-check
measuring the adapted judges beside the saved ones (rag_eval/judges/adapted.py)."""

from __future__ import annotations

import json

import pytest

from rag_eval.calibration import adaptation
from rag_eval.calibration.adaptation import Decider
from rag_eval.calibration.lexical import Blend
from rag_eval.cli import main
from rag_eval.hashing import text_hash
from rag_eval.judges.adapted import (
    Texts,
    answer_id,
    answer_ids,
    deciders_of,
    item_of,
    redecide,
    save_adaptation,
    saved_adaptation,
    start_again,
)
from rag_eval.judges.judgement import Judgement

from ..scripted_server import ScriptedServer, judge_name, structured_reply

BLEND = Blend(-1.0, 2.0, {"polar": -1.5, "source_talk": 2.0, "new_words": -1.0})


def _refusal(p_model: float, features: dict, status="judged") -> Judgement:
    p = BLEND.p(p_model, features)
    return Judgement(
        "refusal",
        "q1",
        "base",
        status,
        score=1.0 if p >= 0.5 else 0.0,
        verdict="refused" if p >= 0.5 else "answered",
        probability=p,
        cutoff=0.5,
        judge_prompt_hash="h1",
        details={"variant": "refusal", "evidence": {"words": {"p_model": p_model, "features": features}}},
    )


def test_a_verdict_is_re_decided_from_what_it_was_made_of():
    j = _refusal(0.4, {"polar": 0.0, "source_talk": 1.0, "new_words": 0.0})
    it = item_of(j, positive=True)
    assert it.p_model == (0.4,) and it.features[0]["source_talk"] == 1.0 and it.positive
    # The shipped decider reproduces the recorded decision; a higher cut-off turns it.
    shipped = Decider(BLEND, 0.5, None)
    same = redecide(j, shipped, {"labels": 0})
    # P 0.547 is 0.19 in log-odds over the cut-off: a close call, left uncertain leaning as recorded.
    assert (same.status, same.details["leaning"]) == ("uncertain", j.verdict)
    assert same.probability == pytest.approx(j.probability, abs=1e-6)
    lower = redecide(j, Decider(BLEND, 0.3, None), {"labels": 0})
    assert (lower.status, lower.verdict) == ("judged", j.verdict)
    strict = redecide(j, Decider(BLEND, 0.99, (0.5, 0.995)), {"labels": 12})
    assert strict.status == "uncertain" and strict.verdict is None
    assert strict.details["leaning"] == "answered" and strict.details["adapted"] == {"labels": 12}
    turned = redecide(j, Decider(BLEND, 0.999, None), {"labels": 12})
    assert turned.status == "judged" and turned.verdict == "answered" and turned.score == 0.0
    # Under judges.uncertain: off the run left nothing uncertain, and the adapted judge does not either.
    off = redecide(j, shipped, {"labels": 0}, rules=False)
    assert (off.status, off.verdict) == ("judged", j.verdict) and "left_uncertain" not in off.details


def _correctness(p: float) -> Judgement:
    return Judgement(
        "correctness",
        "q1",
        "base",
        "judged",
        score=1.0 if p >= 0.5 else 0.0,
        verdict="correct" if p >= 0.5 else "incorrect",
        probability=p,
        cutoff=0.5,
        judge_prompt_hash="h1",
        details={"variant": "correctness"},
    )


def test_an_adapted_incorrect_of_an_answer_restating_its_reference_stays_uncertain():
    """As the next audit with the saved adaptation decides it (review 53 M2): the rule reads the
    answer's texts; an answer that adds words, or a rule switched off, is decided."""
    question = "Which port does the server listen on by default?"
    restated = Texts(question=question, reference="Port 8080.", answer="The server listens on port 8080.")
    added = Texts(question=question, reference="Port 8080.", answer="Port 8080, or 9090 behind the proxy.")
    adapted = Decider(None, 0.9, None)  # a strict adapted cut-off: P 0.2 decides incorrect, far from it
    j = _correctness(0.2)
    kept = redecide(j, adapted, {}, texts=restated)
    assert kept.status == "uncertain" and kept.details["leaning"] == "incorrect"
    assert "says what the reference says" in kept.details["left_uncertain"]
    assert redecide(j, adapted, {}, texts=added).verdict == "incorrect"
    assert redecide(j, adapted, {}, texts=restated, rules=False).verdict == "incorrect"
    assert redecide(j, adapted, {}).verdict == "incorrect"  # no texts: nothing to read
    # A correct verdict is never touched by the rule.
    assert redecide(_correctness(0.95), adapted, {}, texts=restated).verdict == "correct"


def test_a_statement_judge_is_re_decided_per_statement():
    rows = [
        {
            "statement": "a",
            "p_supported": 0.9,
            "supported": True,
            "evidence": {"words": {"p_model": 0.9, "features": {"w": 1.0}}},
        },
        {
            "statement": "b",
            "p_supported": 0.6,
            "supported": True,
            "evidence": {"words": {"p_model": 0.6, "features": {"w": 0.0}}},
        },
    ]
    j = Judgement(
        "faithfulness_yesno",
        "q1",
        "base",
        "judged",
        score=1.0,
        probability=0.6,
        cutoff=0.5,
        details={"statements": rows},
    )
    d = Decider(Blend(0.0, 1.0, {"w": 0.0}), 0.7, None, threshold=1.0)
    out = redecide(j, d, {})
    assert out.score == 0.5 and [s["supported"] for s in out.details["statements"]] == [True, False]
    assert out.probability == pytest.approx(0.6)


def test_deciders_come_from_the_reports_calibration():
    cal = {
        "refusal": {
            "cutoff": 0.55,
            "cutoffs": {"refusal": 0.55},
            "bands": {"refusal": {"low": 0.5, "high": 0.6}},
            "blends": {"refusal": BLEND.to_dict()},
        },
        "context_recall": {"cutoff": 0.5},  # a Ragas metric: never adapted
    }
    ds = deciders_of(cal, [], threshold=1.0)
    assert set(ds) == {"refusal"}
    assert ds["refusal"].cutoff == 0.55 and ds["refusal"].band == (0.5, 0.6) and ds["refusal"].blend == BLEND


def test_adaptations_are_kept_per_corpus_model_and_prompt(tmp_path):
    path = tmp_path / "adaptations.json"
    d = Decider(BLEND, 0.61, (0.5, 0.7), labels=20, how="both", shift=-0.3)
    save_adaptation("corpusA", "local:abc:llama/x:ctx=8192:fa=auto", "refusal", "h1", d, "labels.csv", path=path)
    # The server's build and flags are not part of the key (as for calibrations); the corpus is.
    got = saved_adaptation("corpusA", "local:abc:other-build:ctx=8192", "refusal", "h1", path=path)
    assert got is not None and Decider.from_dict(got).to_dict() == d.to_dict() and got["source"] == "labels.csv"
    assert saved_adaptation("corpusB", "local:abc:ctx=8192", "refusal", "h1", path=path) is None
    assert saved_adaptation("corpusA", "local:abc:ctx=8192", "refusal", "h2", path=path) is None


def test_judge_check_reports_the_adapted_judges_beside_the_saved_ones(tmp_path, capsys, monkeypatch):
    """judge-check --adapt 10 on cases where the judge model is too strict for this source: adapted
    on 10 of its cases, it decides the others right; the judge as saved does not."""
    # A corpus where the judge is far off: priors weak enough for 10 labels to move it (the shipped
    # priors, chosen on real corpora where the judges were close already, barely move it).
    monkeypatch.setattr(adaptation, "PRIORS", {"correctness": (1.0, 0.5), "refusal": (1.0, 0.5)})
    cases = []
    for i in range(40):
        good = i % 2 == 0
        cases.append(
            {
                "id": f"c{i}",
                "judge": "correctness",
                "source": "mydocs",
                "question": f"What colour is widget {i}?",
                "reference": f"Widget {i} is painted in the colour number {i * 7} of the catalogue.",
                "answer": f"It is colour {i * 7}." if good else f"It is colour {i * 7 + 1}, marked {i}G.",
                "label": "correct" if good else "incorrect",
            }
        )
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    goods = {c["answer"] for c in cases if c["label"] == "correct"}

    def reply(body):
        return "No: it misses the reference." if judge_name(body) == "correctness" else structured_reply(body)

    def probability(body):
        text = body["messages"][-1]["content"]
        return 0.6 if any(f"Candidate answer: {g}" in text for g in goods) else 0.9

    out = tmp_path / "check.json"
    with ScriptedServer(reply=reply, probability=probability) as s:
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
                str(path),
                "--judges",
                "correctness",
                "--adapt",
                "10",
                "--json",
                str(out),
            ]
        )
    assert code == 0
    printed = capsys.readouterr().out
    assert "Adapted on 10 labelled cases of each source" in printed
    scores = {(x["judge"], x["source"]): x for x in json.loads(out.read_text())["scores"]}
    a = scores[("correctness", "mydocs")]["extra"]["adapted"]
    assert a["labels"] == 10 and a["cases"] == 40 and a["draws"] == 20
    assert a["shipped_decided"] == pytest.approx(0.5, abs=0.05)  # every answer called incorrect at 0.5
    assert a["adapted_decided"] > 0.95
    assert a["saved_on_these"] is False and "in sample" not in printed

    # User trial 3 F5: too few cases for --adapt says so; after a --save on these cases, the saved
    # judge's column is marked as measured in sample.
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path / "cache"))  # the --save below stays in this test
    with ScriptedServer(reply=reply, probability=probability) as s:  # one endpoint: one judge identity

        def check(*extra):
            args = ["--quiet", "judge-check", "--llm", "openai", "--model", "scripted", "--base-url", s.base_url]
            assert main([*args, "--cases", str(path), "--judges", "correctness", *extra]) == 0
            return capsys.readouterr().out

        assert "--adapt 40: nothing measured: no adaptable judge has a source of at least 50 labelled cases" in (
            check("--adapt", "40")
        )
        check("--save")
        assert "(saved judge fitted on these cases: in sample)" in check("--adapt", "10")


def test_a_new_adaptation_of_a_run_a_saved_one_decided_starts_from_the_shipped_judge():
    """``start_again``: a variant a saved adaptation decided starts from the shipped judge, keeping a
    band the config set (or none) and dropping only the adaptation's own band."""

    def calibration(band_source: str | None) -> dict:
        band = {"low": 0.2, "high": 0.7, "source": band_source} if band_source is not None else None
        return {
            "correctness": {
                "cutoff": 0.4,
                "identity": "http://nowhere.invalid/v1",  # no shipped calibration: cut-off 0.5, no band
                "prompt_hashes": {"correctness_short": "abc"},
                "bands": {"correctness_short": band} if band else {},
                "adapted": {"correctness_short": {"labels": 7}},
            }
        }

    again = start_again(calibration("adapted to this corpus with 7 labels (l.csv)"), 0.5)
    assert again["correctness_short"].cutoff == 0.5 and again["correctness_short"].band is None
    assert start_again(calibration("judges.uncertain"), 0.5)["correctness_short"].band == (0.2, 0.7)
    assert start_again(calibration(None), 0.5)["correctness_short"].band is None  # uncertain: off stays off
    # An answer is its question, prompt and text: another text of the same question is another answer.
    assert answer_id("q1", "base", "Use X.") != answer_id("q1", "base", "Use Z.")
    assert answer_id("faq|1", "base", None) != answer_id("faq", "1|base", None)
    # The same words in other spaces and line ends are the same answer (a labels file reads them so);
    # answer_ids also holds the id an adaptation saved before that, the hash of the text as it was.
    assert answer_id("q1", "base", "Use X\r\n  now.") == answer_id("q1", "base", " Use X now.")
    legacy = '["q1", "base"]#' + text_hash("Use X\nnow.")
    assert answer_ids("q1", "base", "Use X\nnow.") == {answer_id("q1", "base", "Use X now."), legacy}


def test_starting_again_takes_the_shipped_cutoff_band_and_blend_of_the_run_s_judge_model(monkeypatch):
    """Where a saved calibration exists for the run's judge model and prompt (``judge-check --save``
    or the shipped table), starting again takes its cut-off, blend and band, not a default."""
    from rag_eval.calibration.cutoffs import SavedCalibration, key
    from rag_eval.judges import adapted as adapted_module

    identity = "http://judge.invalid/v1"
    blend = Blend(intercept=0.1, model=1.2, weights={"new_words": -0.5}).to_dict()
    table = {key(identity, "correctness_short", "abc"): SavedCalibration(cutoff=0.3, band=[0.25, 0.4], blend=blend)}
    monkeypatch.setattr(adapted_module, "saved_calibrations", lambda: table)
    calibration = {
        "correctness": {
            "cutoff": 0.45,
            "identity": identity,
            "prompt_hashes": {"correctness_short": "abc"},
            "bands": {"correctness_short": {"low": 0.4, "high": 0.5, "source": "adapted to this corpus with 9 labels"}},
            "adapted": {"correctness_short": {"labels": 9}},
        }
    }
    d = start_again(calibration, 0.5)["correctness_short"]
    assert (d.cutoff, d.band) == (0.3, (0.25, 0.4))
    assert d.blend is not None and d.blend.to_dict() == blend
