"""Judge noise, measured: a judged difference between two runs within the judge's measured
disagreement (with people, or with itself on identical inputs) is flagged; an unmeasured judge is
named as such. The runs are written in the run folder's own shape (no model started)."""

import pytest

import rag_eval

from .test_diff import judged_run


def test_a_judged_difference_within_the_judges_measured_disagreement_is_flagged(tmp_path):
    answers = {"q1": ("Lists.", "correct"), "q2": ("A set.", "correct"), "q3": ("Use with.", "incorrect")}
    base = judged_run(tmp_path, "noise", answers, agreement=0.6)
    new = judged_run(tmp_path, "noise", {**answers, "q3": ("With a with block.", "correct")}, agreement=0.6)
    corr = rag_eval.diff(base, new).figure("generation.baseline.correctness")
    assert corr.diff == pytest.approx(1 / 3) and corr.judge_noise.within is True
    assert "disagrees with people on 0.40 of 40 labelled cases" in corr.judge_noise.source
    assert "within judge noise" in corr.verdict
    # Without a calibration, the judge's agreement with itself on the unchanged answers is the measure.
    plain = judged_run(tmp_path, "plain", answers, agreement=None)
    plain2 = judged_run(tmp_path, "plain", {**answers, "q3": ("With a with block.", "correct")}, agreement=None)
    corr = rag_eval.diff(plain, plain2).figure("generation.baseline.correctness")
    assert corr.judge_noise.noise == 0.0 and corr.judge_noise.within is False
    assert "changed its verdict on 0 of 2 identical inputs" in corr.judge_noise.source
    # Every answer changed and no calibration: nothing measured, and the diff says so.
    other = {q: (a + " Indeed.", v) for q, (a, v) in answers.items()}
    other["q3"] = ("With a with block.", "correct")
    corr = rag_eval.diff(plain, judged_run(tmp_path, "plain", other, agreement=None)).figure(
        "generation.baseline.correctness"
    )
    assert corr.judge_noise.within is None and "not measured" in corr.judge_noise.note
