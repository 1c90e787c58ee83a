"""The own judges on real RAG answers, labelled blind (issue 28), with the embedded model.

    python benchmarks/real_answers/real_judges.py [--parts tuning,reporting] [--fit-parts tuning] [--threads N]
                                     [--json F] [--write-calibration [--write-judges a,b]
                                     [--report-part P]]

Cases: ``benchmarks/real_answers/data/cases-<part>.jsonl`` (``benchmarks/real_answers/real_cases.py`` writes them from the
readers' labels). Each probability-scored judge's blend, cut-off and band of uncertain decisions are
fitted on the ``--fit-parts`` (default the TUNING part: real answers over the Python reference
topics and the attrs docs) plus the hand-written data/judge-check cases, and applied unchanged to
every other part of ``--parts``: REPORTING (the structlog docs), HOLDOUT (the python-dotenv and
tinytag READMEs, labelled after the first fit was shipped), FRESH (the tenacity and tabulate
READMEs, labelled after the second). A part that is also fitted on is reported in-sample.
Reported per judge and part: the agreement of every decision at the cut-off, the agreement of the
decided verdicts once the band's are set aside, the uncertain share, AUC, with 95% Wilson intervals.
Targets (issue 28, held-out parts): decided agreement >= 0.90 for correctness and faithfulness,
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
from rag_eval.calibration.cutoffs import model_identity
from rag_eval.calibration.lexical import Blend, coverage, declining, fit_blend, support
from rag_eval.judges.judge_check import (
    Prediction,
    cutoff_fitter,
    halueval_cases,
    kind_of,
    load_cases,
    predict,
    saved_band,
    score_judge,
)
from rag_eval.judges.registry import FAITHFUL_SHARE, JUDGES
from rag_eval.judges.scored import split_statements
from rag_eval.judges.uncertain import case_status, fit_band
from rag_eval.judges.uncertain import target as target_of
from rag_eval.llm.settings import LLMConfig
from rag_eval.stats import wilson_interval

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "benchmarks" / "real_answers" / "data"
HAND = ROOT / "data" / "judge-check" / "cases.jsonl"
HALUEVAL = ROOT.parent / "shared" / "data" / "halueval-qa" / "qa_dev.jsonl"
JUDGES_RUN = ("refusal", "correctness", "faithfulness_yesno")
MAX_UNCERTAIN = 0.25
PART_DOCS = {
    "reporting": "the structlog docs",
    "holdout": "the python-dotenv and tinytag READMEs",
    "fresh": "the tenacity and tabulate READMEs",
}


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


# The judges whose probability is blended with word evidence (``rag_eval/calibration/lexical.py``), and
# the prompts that get the blend: correctness_short (references of at most 6 words, rare in real
# answers) keeps the model's own P, whose cut-off carries to HaluEval's short answers (0.85 on items
# 200-239) where the blend's, fitted on a handful of short references, did not (0.55).
BLENDED = ("refusal", "correctness", "faithfulness_yesno")
BLENDED_PROMPTS = ("refusal", "correctness", "faithfulness_yesno")


def word_features(name: str, case: dict) -> list[dict[str, float]]:
    """The word evidence of one case, one per probability of its prediction (as the judge computes it)."""
    if name == "refusal":
        return [declining(case["question"], case["answer"]).features()]
    if name == "correctness":
        return [coverage(case["reference"], case["answer"]).features()]
    return [support(s, case.get("contexts") or []).features() for s in split_statements(case["answer"])]


def _labelled(name: str, cases: list[dict], preds: list) -> list[int]:
    return [i for i, c in enumerate(cases) if c["judge"] == kind_of(name) and preds[i].error is None]


def fit_word_blend(name: str, cases: list[dict], preds: list, fitted_on: str) -> Blend:
    """The blend of the model's P(positive) with word evidence fitted on labelled cases (each
    statement of a faithfulness case takes its answer's label)."""
    positive = JUDGES[name].check.kind.positive
    ps, feats, labels = [], [], []
    for i in _labelled(name, cases, preds):
        if (preds[i].variant or name) not in BLENDED_PROMPTS:
            continue
        for p, f in zip(preds[i].probs, word_features(name, cases[i]), strict=True):
            ps.append(p)
            feats.append(f)
            labels.append(cases[i]["label"] == positive)
    return fit_blend(ps, feats, labels, fitted_on=fitted_on)


def blended(name: str, cases: list[dict], preds: list, blend: Blend) -> list:
    """The predictions as the judge makes them with ``blend`` (the model's probabilities kept apart)."""
    out = list(preds)
    for i in _labelled(name, cases, preds):
        if (preds[i].variant or name) not in BLENDED_PROMPTS:
            continue
        probs = [blend.p(p, f) for p, f in zip(preds[i].probs, word_features(name, cases[i]), strict=True)]
        out[i] = Prediction(probs=probs, score=min(probs), variant=preds[i].variant)
    return out


def evaluate(
    name: str,
    cases: list[dict],
    preds: list,
    cutoffs: dict[str, float],
    bands: dict[str, dict],
    threshold: float = FAITHFUL_SHARE,
) -> dict:
    """Decisions at the fitted cut-offs and bands on ``cases``: agreement of all and of the decided."""
    kind = kind_of(name)
    pos_label = JUDGES[name].check.kind.positive
    idx = [i for i, c in enumerate(cases) if c["judge"] == kind]
    ok = [i for i in idx if preds[i].error is None]
    positive = np.array([cases[i]["label"] == pos_label for i in ok])
    probs = [np.asarray(preds[i].probs, float) for i in ok]
    variant = [preds[i].variant or name for i in ok]
    decide, _ = cutoff_fitter(name, probs, positive, variant, threshold)
    at_cut = decide(list(range(len(ok))), cutoffs) if ok else np.array([], bool)
    uncertain = np.zeros(len(ok), bool)
    decided_pos = at_cut.copy()
    for n, v in enumerate(variant):
        band = bands.get(v)
        if band is None:
            continue
        # The band's edges live on the scale its cut-off applies to (the probability per statement).
        unc, pos = case_status(probs[n], band["low"], band["high"], threshold)
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


def fit_all(
    fit_cases: list[dict], fit_preds: dict, threshold: float = FAITHFUL_SHARE
) -> dict[str, tuple[dict, dict, object]]:
    """Per judge: the cut-offs and bands fitted on ``fit_cases``, and the overall score."""
    fitted = {}
    for name in JUDGES_RUN:
        overall = score_judge(name, fit_cases, fit_preds[name], threshold=threshold, folds=5, seed=0)[0]
        bands = {}
        for v, cut in overall.cutoffs.items():
            ids = _ids(fit_cases, fit_preds[name], name, v)
            b = fit_band(
                [np.asarray(fit_preds[name][i].probs, float) for i in ids],
                [fit_cases[i]["label"] == JUDGES[name].check.kind.positive for i in ids],
                cut,
                target=target_of(v),
                max_share=MAX_UNCERTAIN,
                threshold=threshold,
            )
            bands[v] = {**dataclasses.asdict(b), "target": target_of(v)}
        fitted[name] = (overall.cutoffs, bands, overall)
    return fitted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="tuning,reporting")
    ap.add_argument("--threads", type=int, default=None, help="llama-server threads (default: all cores)")
    ap.add_argument("--no-hand", action="store_true", help="fit on the real answers alone")
    ap.add_argument(
        "--fit-parts", default="tuning", help="the parts the cut-offs, bands and blends are fitted on (each in --parts)"
    )
    ap.add_argument("--report-part", default="reporting", help="the part whose agreement --write-calibration saves")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument(
        "--threshold", type=float, default=FAITHFUL_SHARE, help="share of supported statements for a faithful answer"
    )
    ap.add_argument("--write-calibration", action="store_true", help="ship the cut-offs and bands fitted here")
    ap.add_argument(
        "--write-judges",
        default=",".join(JUDGES_RUN),
        help="the judges --write-calibration writes (the others keep theirs)",
    )
    ap.add_argument(
        "--halueval",
        metavar="START-STOP",
        help="also report on these HaluEval QA items (../shared/data/halueval-qa/qa_dev.jsonl), e.g. 200-240",
    )
    args = ap.parse_args()
    progress.set_enabled(True)
    # The server numerics the shipped calibration was fitted with (its requests are in the response
    # cache); benchmarks/settings_agreement.py measures how far other settings decide alike.
    llm = LLMConfig(provider="local", threads=args.threads, repack=True)
    parts = args.parts.split(",")
    cases = {p: load_cases(REAL / f"cases-{p}.jsonl") for p in parts}
    if args.halueval:
        start, stop = (int(x) for x in args.halueval.split("-"))
        parts.append("halueval")
        cases["halueval"] = halueval_cases(HALUEVAL, start, stop)
    fit_parts = args.fit_parts.split(",")
    hand = [] if args.no_hand else load_cases(HAND)
    fit_cases = [c for p in fit_parts for c in cases[p]] + hand
    fitted_on = " + ".join(f"real {p}" for p in fit_parts) + ("" if args.no_hand else " + data/judge-check")
    t0 = time.perf_counter()
    # The model's own probabilities: what the blends are fitted on, and the "model alone" rows.
    raw, usage = {}, []
    for part in parts + (["hand"] if hand else []):
        raw[part], more, identity, scored = predict(
            hand if part == "hand" else cases[part], llm, cache_root(), None, list(JUDGES_RUN), blends=False
        )
        usage += more
    t1 = time.perf_counter()
    fit_raw = {n: [x for p in fit_parts + (["hand"] if hand else []) for x in raw[p][n]] for n in JUDGES_RUN}
    blends = {name: fit_word_blend(name, fit_cases, fit_raw[name], fitted_on) for name in BLENDED}
    pcases = {**cases, "hand": hand}
    with_blend = {
        part: {n: blended(n, pcases[part], preds[n], blends[n]) if n in blends else preds[n] for n in preds}
        for part, preds in raw.items()
    }
    fit_blended = {n: [x for p in fit_parts + (["hand"] if hand else []) for x in with_blend[p][n]] for n in JUDGES_RUN}
    out = {"model": identity, "fitted_on": fitted_on, "blends": {n: b.to_dict() for n, b in blends.items()}, "rows": []}
    shipped_file = json.loads((ROOT / "rag_eval" / "calibration" / "calibration_embedded.json").read_text())
    # The cut-offs shipped before this run (for comparison), on the scale they were fitted on.
    shipped = {
        k.split("|")[1]: v
        for k, v in shipped_file.items()
        if k.startswith(model_identity(identity)) and "cutoff" in v  # the Ragas metrics' entries have none
    }
    fitted_by = {}
    for decider, preds_by_part, fit_preds in (("model", raw, fit_raw), ("blend", with_blend, fit_blended)):
        fitted = fitted_by[decider] = fit_all(fit_cases, fit_preds, args.threshold)
        print(f"\n[{decider}] cut-offs and bands fitted on {fitted_on} ({len(fit_cases)} cases)")
        for name, (cuts, bands, _) in fitted.items():
            if decider == "blend" and name in blends:
                print(f"  {name} blend: {blends[name].describe()}")
            print(
                f"  {name}: "
                + ", ".join(
                    f"{v} cut-off {c:.3f} band [{bands[v]['low']:.3f}, {bands[v]['high']:.3f})"
                    f" (fit: decided {bands[v]['decided_accuracy'] or 0:.2f}, uncertain {bands[v]['uncertain_share']:.2f})"
                    for v, c in cuts.items()
                )
            )
        print(f"{'judge':<20}{'part':<11}{'at cut-off':<26}{'decided':<26}{'uncertain':<24}{'AUC':>5}")
        for part in parts:
            for name in JUDGES_RUN:
                cuts, bands, _ = fitted[name]
                pp = preds_by_part[part][name]
                choices = [("fitted", cuts, bands)]
                old = {v: e for v, e in shipped.items() if ("blend" in e) == (decider == "blend" and name in blends)}
                if old:
                    choices.append(("shipped", {v: e["cutoff"] for v, e in old.items()}, {}))
                for label, c, b in choices:
                    row = {
                        "part": part,
                        "decider": decider,
                        "cutoffs": label,
                        **evaluate(name, cases[part], pp, {**cuts, **c}, b, args.threshold),
                    }
                    out["rows"].append(row)
                    auc = f"{row['auc']:.2f}" if row["auc"] is not None else "-"
                    tag = part + (" (shipped cut-off, no band)" if label == "shipped" else "")
                    print(
                        f"{name:<20}{tag:<11}{_share(*row['accuracy_at_cutoff']):<26}"
                        f"{_share(*row['decided_agreement']):<26}{_share(*row['uncertain']):<24}{auc:>5}"
                    )
    t2 = time.perf_counter()
    calls = sum(u["calls"] for u in usage)
    print(f"\n{calls} calls, {t2 - t0:.0f} s (model requests {t1 - t0:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    if args.write_calibration:
        from rag_eval.calibration.cutoffs import SHIPPED, save  # noqa: PLC0415 - writing is rare

        path = ROOT / "rag_eval" / "calibration" / SHIPPED
        for name, (cuts, bands, overall) in fitted_by["blend"].items():
            if name not in args.write_judges.split(","):
                continue
            rep = next(
                (
                    r
                    for r in out["rows"]
                    if r["judge"] == name
                    and r["part"] == args.report_part
                    and r["cutoffs"] == "fitted"
                    and r["decider"] == "blend"
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
                        **({"blend": blends[name].to_dict()} if name in blends and v in BLENDED_PROMPTS else {}),
                        "agreement": {
                            "accuracy": round(k / n, 3) if n else None,
                            "n": n,
                            "measured_on": f"real answers over {PART_DOCS.get(args.report_part, args.report_part)} "
                            f"({args.report_part} part, decided verdicts), "
                            "benchmarks/real_answers/real_judges.py",
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
