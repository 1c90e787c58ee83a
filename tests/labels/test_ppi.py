"""Prediction-powered intervals: a seeded simulation with a synthetic judge of known bias and
accuracy, the label-count planning rule, and intervals from a handful of labels (exact at 0/n and
n/n, n = 1..10; coverage at small n; the issue's six labels through the CLI)."""

import csv
import json

import numpy as np
import pytest
import yaml
from scipy.stats import binomtest

from rag_eval.cli import main
from rag_eval.labels.ppi import human_mean, labels_needed, ppi_mean
from rag_eval.stats import weighted_share

from ..scripted_server import ScriptedServer, structured_reply
from ..system.test_trace_audit import judges
from ..system.test_traces_formats import _otlp_line

TRUTH = 0.70


def _draw(rng, n, tpr, fpr):
    """Human labels with mean TRUTH, and a judge that says 1 with probability tpr on a 1, fpr on a 0."""
    y = (rng.random(n) < TRUTH).astype(float)
    yhat = np.where(y == 1, rng.random(n) < tpr, rng.random(n) < fpr).astype(float)
    return y, yhat


def _simulate(tpr, fpr, reps=300, n=100, n_unlabelled=1000, seed=7):
    rng = np.random.default_rng(seed)
    judge_cover = ppi_cover = 0
    ppi_width, human_width = [], []
    for _ in range(reps):
        y, yhat = _draw(rng, n, tpr, fpr)
        _, yhat_u = _draw(rng, n_unlabelled, tpr, fpr)
        judge_only = weighted_share(np.concatenate([yhat, yhat_u]), np.ones(n + n_unlabelled))
        judge_cover += judge_only.ci_low <= TRUTH <= judge_only.ci_high
        est = ppi_mean(y, yhat, yhat_u, bounded=False)
        ppi_cover += est.ci_low <= TRUTH <= est.ci_high
        ppi_width.append(est.ci_high - est.ci_low)
        h = human_mean(y)
        human_width.append(h.ci_high - h.ci_low)
    return judge_cover / reps, ppi_cover / reps, float(np.mean(ppi_width)), float(np.mean(human_width))


def test_a_biased_judge_misleads_alone_and_ppi_covers_the_truth():
    """A judge that calls half the bad answers good (accuracy 0.78, share biased by +0.08): its own
    interval, over 1,100 verdicts, almost never holds the truth; PPI with 100 labels covers it
    about 95% of the time (measured: 0.95 of 300 seeded runs)."""
    judge_cover, ppi_cover, _, _ = _simulate(tpr=0.9, fpr=0.5)
    assert judge_cover < 0.05
    assert 0.92 <= ppi_cover <= 0.98


def test_a_good_judge_makes_the_ppi_interval_narrower_than_the_labels_alone():
    """A judge right 95% of the time: PPI++ with 100 labels and 1,000 verdicts gives an interval
    well under the width of the 100 labels alone, still covering the truth about 95% of the time."""
    _, ppi_cover, ppi_width, human_width = _simulate(tpr=0.95, fpr=0.05)
    assert 0.92 <= ppi_cover <= 0.98
    assert ppi_width < 0.75 * human_width


def test_a_useless_judge_costs_nothing_with_power_tuning():
    """A judge no better than a coin: PPI++ falls back to about the labels' own width."""
    _, ppi_cover, ppi_width, human_width = _simulate(tpr=0.5, fpr=0.5, reps=150)
    assert ppi_cover >= 0.9
    assert ppi_width == pytest.approx(human_width, rel=0.1)


def test_ppi_point_estimate_is_the_judged_mean_corrected_by_the_labelled_bias():
    y = np.array([1, 0, 1, 1, 0, 1, 0, 1.0])
    yhat = np.array([1, 1, 1, 1, 1, 1, 0, 1.0])  # two false positives among 8
    yu = np.array([1, 1, 0, 1, 1, 1, 1, 0, 1, 1.0])
    est = ppi_mean(y, yhat, yu, power_tuned=False)
    # mean(yhat_u) - mean(yhat - y) = 0.8 - 2/8
    assert est.value == pytest.approx(0.8 - 0.25)
    assert est.method == "ppi" and est.n_labels == 8 and est.n_unlabelled == 10
    only = ppi_mean(y, yhat, np.array([]))
    assert only.method == "human only" and only.value == pytest.approx(5 / 8)


def test_labels_needed_follows_the_disagreement_rate():
    assert labels_needed(0.80, 0.10) == 77  # 1.96^2 * 0.2 / 0.01
    assert labels_needed(0.75, 0.05) == 385
    assert labels_needed(1.0, 0.10) == 10


CONFIDENCE = 0.95


@pytest.mark.parametrize("n", range(1, 11))
def test_labels_at_the_boundary_get_an_exact_interval(n):
    """0/n and n/n labels: Clopper–Pearson's [0, 1 - 0.025^(1/n)] and its mirror, never the
    zero-width [0, 0] of a normal interval; n = 1 has one too."""
    upper = 1 - 0.025 ** (1 / n)
    none, every = human_mean(np.zeros(n)), human_mean(np.ones(n))
    assert (none.value, none.ci_low) == (0.0, 0.0) and none.ci_high == pytest.approx(upper)
    assert (every.value, every.ci_high) == (1.0, 1.0) and every.ci_low == pytest.approx(1 - upper)
    # One yes among n: scipy's exact binomial interval.
    one = human_mean(np.r_[np.ones(1), np.zeros(n - 1)])
    ci = binomtest(1, n).proportion_ci(CONFIDENCE, method="exact")
    assert (one.ci_low, one.ci_high) == pytest.approx((ci.low, ci.high))


@pytest.mark.parametrize("n", range(1, 11))
def test_prediction_powered_share_at_the_boundary_is_never_zero_width(n):
    """The issue's case at every n: the labels all say no; the judge said yes on them and on the
    unlabelled answers (PPI's rectifier is then constant, its normal interval zero-width; PPI++'s
    weight is 0/0). The figure keeps its point estimate and contains the labels' exact interval."""
    y, yhat, yu = np.zeros(n), np.ones(n), np.ones(10)
    est = ppi_mean(y, yhat, yu)
    exact = human_mean(y)
    assert est.value == pytest.approx(0.0)
    assert est.ci_low == 0.0 and est.ci_high >= exact.ci_high == pytest.approx(1 - 0.025 ** (1 / n))
    assert est.n_labels == n and est.n_unlabelled == 10
    # The judge agreeing with the labels (all no) changes nothing: still not zero-width.
    agree = ppi_mean(y, np.zeros(n), np.r_[np.zeros(5), np.ones(5)])
    assert agree.ci_high - agree.ci_low >= exact.ci_high - 1e-12
    # All yes mirrors it.
    yes = ppi_mean(np.ones(n), np.ones(n), yu)
    assert yes.ci_high == 1.0 and yes.ci_low <= 0.025 ** (1 / n) + 1e-12


def test_weighted_labels_use_the_effective_sample_size():
    """Sampling weights: the exact interval on Kish's effective n, between the plain n and fewer."""
    y = np.zeros(8)
    plain = human_mean(y)
    weighted = human_mean(y, w=np.array([1, 1, 1, 1, 4, 4, 4, 4.0]))
    n_eff = 20**2 / 68
    assert weighted.ci_high == pytest.approx(1 - 0.025 ** (1 / n_eff)) and weighted.ci_high > plain.ci_high


def test_many_labels_on_both_sides_keep_the_narrower_ppi_interval():
    """Past the small-sample rule (30 labels, at least 5 each way) PPI++ stands alone: a good
    judge's interval is narrower than the labels' exact one."""
    rng = np.random.default_rng(3)
    y, yhat = _draw(rng, 60, 0.95, 0.05)
    _, yu = _draw(rng, 1000, 0.95, 0.05)
    est = ppi_mean(y, yhat, yu)
    assert est.method == "ppi++"
    exact = human_mean(y)
    assert est.ci_high - est.ci_low < 0.75 * (exact.ci_high - exact.ci_low)


def _coverage(truth: float, n: int, reps: int, seed: int) -> tuple[float, float, float]:
    """Coverage of the labels-only, the prediction-powered and a plain normal (Wald) interval for
    a share ``truth``, from ``n`` labels and 200 verdicts of a judge right 80% of the time."""
    rng = np.random.default_rng(seed)
    human = ppi = wald = 0
    for _ in range(reps):
        y = (rng.random(n) < truth).astype(float)
        yhat = np.where(rng.random(n) < 0.8, y, 1 - y)
        y_u = (rng.random(200) < truth).astype(float)
        yu = np.where(rng.random(200) < 0.8, y_u, 1 - y_u)
        h, p = human_mean(y), ppi_mean(y, yhat, yu)
        human += h.ci_low <= truth <= h.ci_high
        ppi += p.ci_low <= truth <= p.ci_high
        half = 1.96 * np.sqrt(y.mean() * (1 - y.mean()) / n)
        wald += y.mean() - half <= truth <= y.mean() + half
    return human / reps, ppi / reps, wald / reps


@pytest.mark.parametrize("truth", [0.05, 0.2, 0.5])
@pytest.mark.parametrize("n", [3, 6, 10])
def test_coverage_at_small_n_is_at_least_nominal(n, truth):
    """300 seeded runs per case: the labels-only and prediction-powered intervals hold the truth at
    least about 95% of the time at n = 3, 6, 10 (the exact interval is conservative: measured
    0.96-1.00), where the normal interval of the labels covers as little as 0.14 (p = 0.05, n = 3)."""
    human, ppi, wald = _coverage(truth, n, reps=300, seed=1000 * n + int(100 * truth))
    assert human >= 0.93 and ppi >= 0.93
    if truth == 0.05:
        assert wald < 0.7  # what the zero-width interval at 0/n did to the figures


def test_six_labels_all_no_through_the_cli(tmp_path, monkeypatch):
    """The issue's case as a user meets it: 16 traces judged faithful, six of them labelled not
    faithful; `rag-eval report RUN --labels` printed 0.00 [0.00, 0.00] n=6 for the labels and the
    prediction-powered figure. Both now hold the labels' exact interval [0, 0.46]."""
    docs = ["py/sets", "py/lists", "py/dicts", "py/with"]
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(_otlp_line(i, f"Question {i}?", f"Answer {i}.", docs[i % 4]) + "\n" for i in range(16)))
    monkeypatch.chdir(tmp_path)
    with ScriptedServer(reply=structured_reply) as s:
        (tmp_path / "traces.yaml").write_text(yaml.safe_dump({"name": "six", "judges": judges(s.base_url)}))
        assert main(["-q", "traces", str(path), "--config", "traces.yaml", "--labels", "6", "--seed", "0"]) == 0
        run = next((tmp_path / "runs").iterdir())
        rows = list(csv.DictReader((run / "labels" / "labels.csv").open()))
        assert len(rows) == 6
        for r in rows:
            r.update(faithful="no", refused="no")
        with (tmp_path / "filled.csv").open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        assert main(["-q", "report", str(run), "--labels", str(tmp_path / "filled.csv")]) == 0
    fig = json.loads((run / "summary.labelled.json").read_text())["labels"]["figures"]["system"]["faithfulness_yesno"]
    upper = 1 - 0.025 ** (1 / 6)  # 0.459
    assert fig["human"]["value"] == 0.0 and fig["human"]["n_labels"] == 6
    assert (fig["human"]["ci_low"], fig["human"]["ci_high"]) == pytest.approx((0.0, upper))
    assert fig["ppi"]["value"] == pytest.approx(0.0) and fig["ppi"]["n_unlabelled"] == 10
    assert fig["ppi"]["ci_low"] == 0.0 and fig["ppi"]["ci_high"] >= upper - 1e-9
    assert "0.00 [0.00, 0.00]" not in (run / "report.labelled.md").read_text()
