"""The own judges on real RAG answers, labelled blind (issue 28), with the embedded model.

    python benchmarks/real_judges.py [--parts tuning,reporting] [--threads N] [--json F]
                                     [--write-calibration]

Cases: ``data/real-answers/cases-{tuning,reporting}.jsonl`` (``benchmarks/real_cases.py`` writes
them from the readers' labels). Each probability-scored judge's cut-off and its band of uncertain
decisions are fitted on the TUNING part (real answers over the Python reference topics and the
attrs docs, plus the hand-written data/judge-check cases) and applied unchanged to the REPORTING
part (real answers over the structlog docs, never tuned on). Reported per judge and part: the
agreement of every decision at the cut-off, the agreement of the decided verdicts once the band's
are set aside, the uncertain share, AUC, with 95% Wilson intervals.
Targets (issue 28, reporting part): decided agreement >= 0.90 for correctness and faithfulness,
>= 0.95 for refusal, with at most 25% uncertain.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from rag_eval import progress
from rag_eval.cache_dirs import cache_root
from rag_eval.config import LLMConfig
from rag_eval.judges.calibration import model_identity
from rag_eval.judges.judge_check import cutoff_fitter, kind_of, load_cases, predict, saved_band, score_judge
from rag_eval.judges.registry import JUDGES
from rag_eval.judges.uncertain import case_status, fit_band
from rag_eval.judges.uncertain import target as target_of
from rag_eval.stats import wilson_interval

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "data" / "real-answers"
HAND = ROOT / "data" / "judge-check" / "cases.jsonl"
JUDGES_RUN = ("refusal", "correctness", "faithfulness_yesno")
MAX_UNCERTAIN = 0.25


def _auc(pos: np.ndarray, score: np.ndarray) -> float | None:
    if pos.all() or not pos.any():
        return None
    from scipy.stats import mannwhitneyu  # noqa: PLC0415 - only this benchmark needs it

    u = mannwhitneyu(score[pos], score[~pos]).statistic
    return float(u / (pos.sum() * (~pos).sum()))


def _share(k: int, n: int) -> str:
    if n == 0:
        return "-"
    e = wilson_interval(k, n)
    return f"{k / n:.2f} [{e.ci_low:.2f}, {e.ci_high:.2f}] ({k}/{n})"


def evaluate(name: str, cases: list[dict], preds: list, cutoffs: dict[str, float], bands: dict[str, dict]) -> dict:
    """Decisions at the fitted cut-offs and bands on ``cases``: agreement of all and of the decided."""
    kind = kind_of(name)
    pos_label = JUDGES[name].check.kind.positive
    idx = [i for i, c in enumerate(cases) if c["judge"] == kind]
    ok = [i for i in idx if preds[i].error is None]
    positive = np.array([cases[i]["label"] == pos_label for i in ok])
    probs = [np.asarray(preds[i].probs, float) for i in ok]
    variant = [preds[i].variant or name for i in ok]
    decide, _ = cutoff_fitter(name, probs, positive, variant, 0.5)
    at_cut = decide(list(range(len(ok))), cutoffs) if ok else np.array([], bool)
    uncertain = np.zeros(len(ok), bool)
    decided_pos = at_cut.copy()
    for n, v in enumerate(variant):
        band = bands.get(v)
        if band is None:
            continue
        # The band's edges live on the scale its cut-off applies to (the probability per statement).
        unc, pos = case_status(probs[n], band["low"], band["high"], 0.5)
        uncertain[n], decided_pos[n] = unc, pos if not unc else at_cut[n]
    right = at_cut == positive
    dec = ~uncertain
    score = np.array([min(p) if len(p) else np.nan for p in probs])
    return {
        "judge": name,
        "n": len(idx),
        "not_judged": len(idx) - len(ok),
        "accuracy_at_cutoff": (int(right.sum()), len(ok)),
        "decided_agreement": (int((decided_pos == positive)[dec].sum()), int(dec.sum())),
        "uncertain": (int(uncertain.sum()), len(ok)),
        "auc": _auc(positive, score) if ok else None,
        "positives": int(positive.sum()),
        "wrong": [cases[ok[n]]["id"] for n in range(len(ok)) if dec[n] and decided_pos[n] != positive[n]],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="tuning,reporting")
    ap.add_argument("--threads", type=int, default=None, help="llama-server threads (default: all cores)")
    ap.add_argument("--no-hand", action="store_true", help="fit on the real tuning answers alone")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--write-calibration", action="store_true", help="ship the cut-offs and bands fitted here")
    args = ap.parse_args()
    progress.set_enabled(True)
    llm = LLMConfig(provider="local", threads=args.threads)
    parts = args.parts.split(",")
    cases = {p: load_cases(REAL / f"cases-{p}.jsonl") for p in parts}
    fit_cases = cases["tuning"] + ([] if args.no_hand else load_cases(HAND))
    t0 = time.perf_counter()
    fit_preds, usage, identity, scored = predict(fit_cases, llm, cache_root(), None, list(JUDGES_RUN))
    t1 = time.perf_counter()
    fitted: dict[str, tuple[dict, dict]] = {}
    for name in JUDGES_RUN:
        overall = score_judge(name, fit_cases, fit_preds[name], threshold=0.5, folds=5, seed=0)[0]
        bands = {
            v: {**dataclasses.asdict(b), "target": target_of(v)}
            for v, cut in overall.cutoffs.items()
            for b in [
                fit_band(
                    [np.asarray(fit_preds[name][i].probs, float) for i in _ids(fit_cases, fit_preds[name], name, v)],
                    [
                        fit_cases[i]["label"] == JUDGES[name].check.kind.positive
                        for i in _ids(fit_cases, fit_preds[name], name, v)
                    ],
                    cut,
                    target=target_of(v),
                    max_share=MAX_UNCERTAIN,
                )
            ]
        }
        fitted[name] = (overall.cutoffs, bands, overall)
    out = {"model": identity, "fitted_on": "real tuning" + ("" if args.no_hand else " + data/judge-check"), "rows": []}
    print(f"\nmodel {identity}; cut-offs and bands fitted on {out['fitted_on']} ({len(fit_cases)} cases)")
    for name, (cuts, bands, _) in fitted.items():
        print(
            f"  {name}: "
            + ", ".join(
                f"{v} cut-off {c:.3f} band [{bands[v]['low']:.3f}, {bands[v]['high']:.3f})"
                f" (fit: decided {bands[v]['decided_accuracy'] or 0:.2f}, uncertain {bands[v]['uncertain_share']:.2f})"
                for v, c in cuts.items()
            )
        )
    # The cut-offs shipped before this benchmark (fitted on HaluEval and the refusal cases), for comparison.
    shipped_file = json.loads((ROOT / "rag_eval" / "judges" / "calibration_embedded.json").read_text())
    shipped = {k.split("|")[1]: v["cutoff"] for k, v in shipped_file.items() if k.startswith(model_identity(identity))}
    print(f"\n{'judge':<20}{'part':<11}{'at cut-off':<26}{'decided':<26}{'uncertain':<24}{'AUC':>5}")
    for part in parts:
        preds = fit_preds if part == "tuning" else None
        if preds is None:
            preds, more, _, _ = predict(cases[part], llm, cache_root(), None, list(JUDGES_RUN))
            usage += more
        pcases = cases[part]
        pp = preds if part != "tuning" else {n: fit_preds[n][: len(pcases)] for n in JUDGES_RUN}
        for name in JUDGES_RUN:
            cuts, bands, _ = fitted[name]
            for label, c, b in (("fitted", cuts, bands), ("shipped", shipped, {})):
                row = {"part": part, "cutoffs": label, **evaluate(name, pcases, pp[name], {**cuts, **c}, b)}
                out["rows"].append(row)
                auc = f"{row['auc']:.2f}" if row["auc"] is not None else "-"
                print(
                    f"{name:<20}{part + (' (shipped cut-off, no band)' if label == 'shipped' else ''):<11}"
                    f"{_share(*row['accuracy_at_cutoff']):<26}{_share(*row['decided_agreement']):<26}"
                    f"{_share(*row['uncertain']):<24}{auc:>5}"
                )
    t2 = time.perf_counter()
    calls = sum(u["calls"] for u in usage)
    print(f"\n{calls} calls, {t2 - t0:.0f} s (fit phase {t1 - t0:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    if args.write_calibration:
        from rag_eval.judges.calibration import SHIPPED, save  # noqa: PLC0415 - writing is rare

        path = ROOT / "rag_eval" / "judges" / SHIPPED
        for name, (cuts, bands, overall) in fitted.items():
            rep = next(
                (
                    r
                    for r in out["rows"]
                    if r["judge"] == name and r["part"] == "reporting" and r["cutoffs"] == "fitted"
                ),
                None,
            )
            for v, cut in cuts.items():
                b = bands[v]
                k, n = rep["decided_agreement"] if rep else (0, 0)
                save(
                    identity,
                    v,
                    scored.prompt_hash(v),
                    {
                        "cutoff": cut,
                        "fitted_on": out["fitted_on"],
                        "agreement": {
                            "accuracy": round(k / n, 3) if n else None,
                            "n": n,
                            "measured_on": "real answers over the structlog docs (reporting part, decided verdicts), "
                            "benchmarks/real_judges.py",
                        },
                        **saved_band(
                            {
                                "bands": {v: {**b, "target": b["target"]}},
                                "band_out_of_fold": overall.extra.get("band_out_of_fold"),
                                "cases": overall.extra.get("cases", []),
                            },
                            v,
                        ),
                    },
                    path=path,
                )
        print(f"wrote {path}")


def _ids(cases: list[dict], preds: list, name: str, variant: str) -> list[int]:
    kind = kind_of(name)
    return [
        i
        for i, c in enumerate(cases)
        if c["judge"] == kind and preds[i].error is None and (preds[i].variant or name) == variant
    ]


if __name__ == "__main__":
    main()
