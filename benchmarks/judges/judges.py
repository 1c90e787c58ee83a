"""How well the judges agree with labels they were not tuned on, with the embedded model (or any).

    python benchmarks/judges/judges.py [--tune 0-90] [--report 200-260] [--ragas] [--write-calibration]

Cases: HaluEval QA items from ../shared/data/halueval-qa/qa_dev.jsonl (faithfulness and
correctness cases, see rag_eval.judges.judge_check.halueval_cases) and the hand-labelled
data/judge-check/cases.jsonl (Python docs; refusal cases on other topics too). The cut-off of each
probability-scored judge is fitted on the TUNE items only and then applied, unchanged, to the
REPORT items (HaluEval) and to the hand-labelled cases; only REPORT figures are targets.
Baseline (named, measured in the same run with --ragas): Ragas Faithfulness at score >= 0.5.
Targets (issue 11): correctness accuracy >= 0.80, faithfulness balanced accuracy >= 0.75,
refusal accuracy >= 0.90, not judged <= 5%.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from rag_eval import progress
from rag_eval.cache_dirs import cache_root
from rag_eval.judges.judge_check import halueval_cases, kind_of, load_cases, predict, score_judge
from rag_eval.llm.settings import LLMConfig

ROOT = Path(__file__).resolve().parents[2]
HALUEVAL = ROOT.parent / "shared" / "data" / "halueval-qa" / "qa_dev.jsonl"
TARGETS = {"correctness": ("accuracy", 0.80), "faithfulness_yesno": ("balanced", 0.75), "refusal": ("accuracy", 0.90)}


def span(text: str) -> tuple[int, int]:
    a, b = text.split("-")
    return int(a), int(b)


def fitted_cutoffs(cases, preds, judges, threshold, extras=None):
    """Each probability-scored judge's cut-offs (one per prompt variant) fitted on all of ``cases``
    (judge-check's own fit); ``extras`` (a dict) receives each judge's fitted bands of uncertain
    decisions and the cases' probabilities."""
    out = {}
    for name in judges:
        kind = kind_of(name)
        if name == "faithfulness" or not any(c["judge"] == kind for c in cases):
            continue  # Ragas has no cut-off; refusal has no HaluEval cases (fitted out-of-fold below)
        overall = score_judge(name, cases, preds[name], threshold=threshold, folds=5, seed=0)[0]
        out[name] = overall.cutoffs
        if extras is not None:
            extras[name] = (dict(overall.cutoffs), overall.extra)
    return out


REFUSAL_BATCHES = ("r", "rg", "rh")  # id prefixes of the refusal cases, in the order they were written


def refusal_transfer(cases, preds, threshold):
    """Each batch of refusal cases written after the prompt was chosen (ids rg*, then rh*), decided
    at the cut-off fitted on the batches before it: how a cut-off from a small set carries to
    cases written later."""
    batch = [re.match(r"[a-z]+", c["id"]).group(0) for c in cases]
    rows = []
    for k, name in enumerate(REFUSAL_BATCHES[1:], start=1):
        new = [i for i, b in enumerate(batch) if b == name]
        old = [i for i, b in enumerate(batch) if b in REFUSAL_BATCHES[:k]]
        if not new or not old:
            continue
        fitted = score_judge(
            "refusal", [cases[i] for i in old], [preds[i] for i in old], threshold=threshold, folds=5, seed=0
        )[0]
        later = [{**cases[i], "source": f"{name}*, cut-off from {len(old)} earlier"} for i in new]
        got = score_judge(
            "refusal", later, [preds[i] for i in new], threshold=threshold, folds=5, seed=0, fixed_cutoff=fitted.cutoffs
        )
        rows += [r for r in got if r.source != "all"]
    return rows


def long_reference_cutoff(tune, llm, threshold) -> float:
    """The cut-off of the correctness prompt for long references, fitted on the TUNE items asked
    with that prompt (HaluEval's references are short, so the judge itself would ask them the
    short-reference prompt): the same prompt files, with correctness_short.md replaced by
    correctness.md."""
    import shutil
    import tempfile

    from rag_eval.resources import shipped_prompt

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "judges"
        shutil.copytree(shipped_prompt("judges"), folder)
        shutil.copy(folder / "correctness.md", folder / "correctness_short.md")
        preds, _, _, _ = predict(tune, llm, cache_root(), folder, ["correctness"])
    rows = score_judge("correctness", tune, preds["correctness"], threshold=threshold, folds=5, seed=0)
    return next(iter(rows[0].cutoffs.values()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tune", default="0-90", help="HaluEval items to fit cut-offs on")
    parser.add_argument("--report", default="200-240", help="HaluEval items to report on (never tuned on)")
    parser.add_argument("--ragas", action="store_true", help="also measure Ragas Faithfulness (slow)")
    parser.add_argument("--write-calibration", action="store_true", help="ship the tuned cut-offs with rag-eval")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()
    progress.set_enabled(True)
    judges = ["refusal", "correctness", "faithfulness_yesno"] + (["faithfulness"] if args.ragas else [])
    llm = LLMConfig(provider="local", repack=True)
    threshold = 0.5

    tune = halueval_cases(HALUEVAL, *span(args.tune))
    report = halueval_cases(HALUEVAL, *span(args.report))
    hand = load_cases(ROOT / "data" / "judge-check" / "cases.jsonl")
    hand_refusal = [c for c in hand if c["judge"] == "refusal"]
    # Refusal has no HaluEval cases: its cut-off is fitted out-of-fold on the hand-labelled set.
    t0 = time.perf_counter()
    preds_tune, usage_tune, identity, scored = predict(
        tune, llm, cache_root(), None, [j for j in judges if j != "refusal"]
    )
    extras: dict = {}
    cutoffs = fitted_cutoffs(tune, preds_tune, judges, threshold, extras)
    if "correctness" in cutoffs:
        cutoffs["correctness"]["correctness"] = long_reference_cutoff(tune, llm, threshold)
    t1 = time.perf_counter()
    evaluated = report + [c for c in hand if c["judge"] != "refusal"]
    preds, usage, _, _ = predict(evaluated, llm, cache_root(), None, [j for j in judges if j != "refusal"])
    t2 = time.perf_counter()
    preds_ref, usage_ref, _, _ = predict(hand_refusal, llm, cache_root(), None, ["refusal"])
    t3 = time.perf_counter()

    rows = []
    for name in judges:
        if name == "refusal":
            rows += score_judge(name, hand_refusal, preds_ref[name], threshold=threshold, folds=5, seed=0)
            overall = next(r for r in rows if r.judge == "refusal" and r.source == "all")
            cutoffs["refusal"] = overall.cutoffs
            extras["refusal"] = (dict(overall.cutoffs), overall.extra)
            rows += refusal_transfer(hand_refusal, preds_ref["refusal"], threshold)
        else:
            rows += score_judge(
                name, evaluated, preds[name], threshold=threshold, folds=5, seed=0, fixed_cutoff=cutoffs.get(name)
            )
    n_tune = len({c["id"].split("-")[0] for c in tune})
    print(
        f"\nmodel {identity}; cut-offs fitted on HaluEval items {args.tune} ({n_tune} items): "
        + ", ".join(f"{v} {c:.3f}" for cuts in cutoffs.values() for v, c in cuts.items())
    )
    print(
        f"{'judge':<20}{'source':<12}{'acc':>6}{' [95% CI]':<15}{'bal.acc':>8}{'kappa':>7}{'AUC':>6}{'n':>5}{'nj':>4}  target"
    )
    for r in rows:
        target = ""
        if r.source == "halueval" or (r.judge == "refusal" and r.source == "all"):
            kind, goal = TARGETS.get(r.judge, ("", None))
            if goal is not None:
                got = r.accuracy.value if kind == "accuracy" else r.balanced_accuracy
                target = f"{kind} >= {goal}: {'met' if got is not None and got >= goal else 'NOT met'}"
        acc = r.accuracy
        ci = f" [{acc.ci_low:.2f}, {acc.ci_high:.2f}]" if acc.value is not None else ""
        print(
            f"{r.judge:<20}{r.source:<12}{(acc.value or 0):>6.2f}{ci:<15}{(r.balanced_accuracy or 0):>8.2f}"
            f"{(r.kappa.value if r.kappa.value is not None else float('nan')):>7.2f}"
            f"{(r.auc if r.auc is not None else float('nan')):>6.2f}{acc.n:>5}{r.not_judged:>4}  {target}"
        )
    calls = sum(u["calls"] for u in usage + usage_ref)
    prompt_tokens = sum(u["prompt_tokens"] for u in usage + usage_ref)
    completion = sum(u["completion_tokens"] for u in usage + usage_ref)
    judged = len(evaluated) + len(hand_refusal)
    print(
        f"\nreport phase: {judged} judged cases, {calls} calls ({calls / judged:.2f} a case), {prompt_tokens} prompt and "
        f"{completion} completion tokens ({completion / max(1, calls):.1f} a call); "
        f"{t2 - t1 + t3 - t2:.0f} s ({(t2 - t1 + t3 - t2) / judged:.1f} s a case); tune phase {t1 - t0:.0f} s"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"cutoffs": cutoffs, "rows": [r.to_dict() for r in rows]}, indent=2))
    if args.write_calibration:
        from rag_eval.calibration.cutoffs import SHIPPED, save
        from rag_eval.judges.judge_check import saved_band

        def band(name, variant, cut):
            """The band fitted with this very cut-off (none where the cut-off was refitted apart)."""
            fitted, extra = extras.get(name, ({}, {}))
            return saved_band(extra, variant) if fitted.get(variant) == cut else {}

        path = ROOT / "rag_eval" / "judges" / SHIPPED
        for name, variant, cut in [(n, v, c) for n, cuts in cutoffs.items() for v, c in cuts.items()]:
            save(
                identity,
                variant,
                scored.prompt_hash(variant),
                {
                    "cutoff": cut,
                    "fitted_on": f"halueval {args.tune}" if name != "refusal" else "data/judge-check refusal cases",
                    # What reports quote (and PPI sizes labels by): agreement over every source.
                    "agreement": next(
                        {
                            "accuracy": round(r.accuracy.value, 3),
                            "n": r.accuracy.n,
                            "measured_on": "data/judge-check refusal cases, out of fold"
                            if name == "refusal"
                            else f"held-out HaluEval QA {args.report} and data/judge-check (benchmarks/judges/judges.py)",
                        }
                        for r in rows
                        if r.judge == name and r.source == "all"
                    ),
                    **band(name, variant, cut),
                },
                path=path,
            )
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
