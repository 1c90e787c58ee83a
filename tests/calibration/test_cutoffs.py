"""Cut-off fitting and cross-validation: out-of-fold figures never see a case's own label."""

import numpy as np

from rag_eval.calibration.cutoffs import balanced_accuracy, fit_cutoff, out_of_fold


def test_fit_cutoff_separates_and_prefers_the_middle_on_ties():
    probs = np.array([0.1, 0.2, 0.3, 0.7, 0.8])
    positive = np.array([False, False, False, True, True])
    cut = fit_cutoff(probs, positive)
    assert 0.3 < cut <= 0.7
    assert balanced_accuracy(positive, probs >= cut) == 1.0
    # A shifted judge (every probability low) gets a low cut-off, not 0.5.
    shifted = probs / 4
    assert 0.3 / 4 < fit_cutoff(shifted, positive) < 0.7 / 4
    assert fit_cutoff(np.full(4, 0.6), np.array([True, False, True, False])) == 0.5


def test_fit_cutoff_separates_probabilities_near_one():
    """A small model's P(yes) is often 0.999x for both classes: the cut-off must fall between."""
    probs = np.array([0.99991, 0.99995, 0.99998, 0.999995, 0.999999, 0.9999995])
    positive = np.array([False, False, False, True, True, True])
    cut = fit_cutoff(probs, positive)
    assert 0.99998 < cut < 0.999995
    assert balanced_accuracy(positive, probs >= cut) == 1.0
    near_zero = 1 - probs
    assert balanced_accuracy(~positive, near_zero >= fit_cutoff(near_zero, ~positive)) == 1.0


def test_balanced_accuracy_weighs_each_class_equally():
    positive = np.array([True] * 8 + [False] * 2)
    assert balanced_accuracy(positive, np.ones(10, bool)) == 0.5
    assert balanced_accuracy(positive, positive) == 1.0


def _oof(probs, positive, seed=0):
    def fit(train):
        return fit_cutoff(probs[train], positive[train])

    return out_of_fold(len(probs), positive, fit, lambda test, c: probs[test] >= c, folds=5, seed=seed)


def test_out_of_fold_is_honest_on_noise_and_exact_on_signal():
    rng = np.random.default_rng(0)
    n = 200
    positive = rng.random(n) < 0.5
    noise = rng.random(n)
    in_sample = balanced_accuracy(positive, noise >= fit_cutoff(noise, positive))
    oof, cuts = _oof(noise, positive)
    assert in_sample > 0.55  # fitting on the labels flatters a useless judge...
    assert abs(balanced_accuracy(positive, oof) - 0.5) < 0.08  # ...out of fold it is at chance
    assert len(cuts) == 5
    signal = np.where(positive, 0.3 + rng.random(n) * 0.1, 0.1 + rng.random(n) * 0.1)
    oof, _ = _oof(signal, positive)
    assert balanced_accuracy(positive, oof) == 1.0  # separable at 0.2, far from 0.5


def test_folds_are_stratified_and_seeded():
    positive = np.array([True] * 10 + [False] * 10)
    probs = np.linspace(0, 1, 20)
    a, _ = _oof(probs, positive, seed=1)
    b, _ = _oof(probs, positive, seed=1)
    assert (a == b).all()


def test_config_cutoff_for_a_judge_sets_every_variant_unless_named():
    from types import SimpleNamespace

    from rag_eval.calibration.cutoffs import cutoffs_for

    scored = SimpleNamespace(prompt_hash=lambda judge: "no-saved-calibration")
    cuts, calibrated = cutoffs_for("nobody", scored, {"correctness": 0.6})
    assert cuts == {"correctness": 0.6, "correctness_short": 0.6} and not any(calibrated.values())
    cuts, _ = cutoffs_for("nobody", scored, {"correctness": 0.6, "correctness_short": 0.9, "refusal": 0.4})
    assert cuts == {"correctness": 0.6, "correctness_short": 0.9, "refusal": 0.4}


def test_the_shipped_calibration_is_found_for_the_embedded_model_whatever_the_server_build(tmp_path):
    """The cache identity names the server build and flags; the calibration belongs to the model."""
    from rag_eval.calibration.cutoffs import key, model_identity, saved
    from rag_eval.llm.session import LLMSession
    from rag_eval.llm.settings import LLMConfig

    identity = LLMSession.identity(LLMConfig(provider="local", parallel=2, flash_attn="off"))
    assert identity.count(":") > 3 and "llama" in identity
    assert model_identity(identity) == f"local:{identity.split(':')[1]}:ctx=8192"
    shipped = sorted(k for k in saved() if k.startswith("local:"))
    assert shipped
    for k in shipped:
        _, judge, prompt_hash = k.split("|")
        assert key(identity, judge, prompt_hash) == k
    assert model_identity("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"


def test_the_shipped_blends_and_a_saved_ragas_agreement_are_read_for_the_model(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from rag_eval.calibration.cutoffs import blends_for, ragas_agreement_for, ragas_key, save_entry
    from rag_eval.judges.scored import ScoredJudges
    from rag_eval.llm.session import LLMSession
    from rag_eval.llm.settings import LLMConfig

    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path))
    identity = LLMSession.identity(LLMConfig(provider="local"))
    scored = ScoredJudges.load(SimpleNamespace(model="m"), None)
    blends = blends_for(identity, scored)
    # The shipped calibration blends refusal, correctness (statement references), faithfulness_yesno
    # and citations (benchmarks/citations/fit_blend.py); correctness_short (short references) decides
    # on the model's own P.
    assert sorted(blends) == ["citations", "citations/every_passage", "correctness", "faithfulness_yesno", "refusal"]
    assert blends["refusal"].weights["polar"] < 0 < blends["refusal"].weights["source_talk"]
    assert blends["faithfulness_yesno"].weights["word_share"] > 0
    # A citation's sentence found in its passages supports it; found better in another passage does not.
    assert blends["citations"].weights["elsewhere_gap"] < 0 < blends["citations"].weights["word_share"]
    # Its question against every given passage ("is the claim supported anywhere?") has its own.
    assert blends["citations/every_passage"].weights["word_share"] > 0
    assert blends_for("another-model", scored) == {}
    shipped = ragas_agreement_for(identity, ["faithfulness", "context_recall", "context_precision"], "guided")
    # Measured by benchmarks/real_answers/ragas_agreement.py --save on the real reporting answers.
    assert sorted(shipped) == ["context_precision", "context_recall", "faithfulness"]
    assert all(
        0 <= a["accuracy"] <= 1 and a["n"] > 0 and "ragas_agreement.py" in a["measured_on"] for a in shipped.values()
    )
    # The user's own measurement (saved under the cache) wins over the shipped one.
    save_entry(ragas_key(identity, "faithfulness", "guided"), {"agreement": {"accuracy": 0.6, "n": 20}})
    mine = ragas_agreement_for(identity, ["faithfulness", "context_recall"], "guided")
    assert mine["faithfulness"] == {"accuracy": 0.6, "n": 20} and mine["context_recall"] == shipped["context_recall"]
    assert ragas_agreement_for(identity, ["faithfulness"], "native") == {}


def test_a_hand_edited_entry_that_is_no_calibration_names_the_file_the_entry_and_the_fix(tmp_path, monkeypatch):
    import json

    import pytest

    from rag_eval.calibration.cutoffs import saved_calibrations
    from rag_eval.errors import DataError

    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path))
    (tmp_path / "calibrations.json").write_text(
        json.dumps({"local:abc|correctness|h1": {"cutoff": 0.5, "sources": "x"}})
    )
    with pytest.raises(DataError) as err:
        saved_calibrations()
    text = str(err.value)
    assert str(tmp_path / "calibrations.json") in text and "'local:abc|correctness|h1'" in text and "sources" in text
    assert "judge-check --save" in text
