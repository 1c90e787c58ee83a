"""``rag-eval judge-check``: how far the judges agree with labelled cases; ``--save`` calibrates."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rag_eval import api
from rag_eval.calibration.cutoffs import user_path
from rag_eval.commands.common import add_command
from rag_eval.judges.judge_check import CheckExtra, JudgeScore
from rag_eval.judges.judge_records import BandOutOfFold
from rag_eval.judges.registry import FAITHFUL_SHARE
from rag_eval.report.markdown import fmt


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        "judge-check",
        "how far the judges agree with labelled cases (out-of-fold accuracy, kappa, AUC); --save calibrates",
        "Every probability-scored judge on labelled cases; each case is decided with a cut-off fitted on the "
        "other folds, so every figure is out-of-fold. --save stores the cut-offs fitted on all cases for "
        "audits with this judge model and prompt.",
        config=False,
    )
    p.add_argument("--cases", nargs="*", default=["data/judge-check/cases.jsonl"], help="JSONL files of labelled cases")
    p.add_argument("--halueval", nargs="*", help="HaluEval QA JSONL as PATH[:START-STOP] (items START..STOP-1)")
    p.add_argument(
        "--judges",
        help="comma-separated judges to measure (default: the probability-scored ones; add faithfulness for Ragas)",
    )
    p.add_argument("--llm", choices=["local", "openai"], default="local", help="provider of the judge model")
    p.add_argument("--model", help="model name (provider openai, or a custom local server)")
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint")
    p.add_argument("--api-key-env", help="environment variable holding the API key")
    p.add_argument("--prompts-dir", help="folder of the own judges' prompts (default: the shipped ones)")
    p.add_argument(
        "--criteria",
        metavar="CONFIG",
        help="a config whose judges.criteria are measured too, on cases labelled for them (judge: the criterion's "
        "name, label: pass or fail)",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=FAITHFUL_SHARE,
        help="share of supported statements counted as faithful (the audit's judges.faithfulness_threshold)",
    )
    p.add_argument("--folds", type=int, default=5, help="cross-validation folds for the cut-offs")
    p.add_argument("--save", action="store_true", help="save the cut-offs fitted on all cases for audits to use")
    p.add_argument("--json", help="also write the figures to this JSON file")
    _measure_options(p)
    p.set_defaults(func=run)
    return p


def _measure_options(p: argparse.ArgumentParser) -> None:
    """--uncertain-target, --adapt and the second judge of --escalate."""
    p.add_argument(
        "--uncertain-target",
        type=float,
        help="agreement the decided verdicts must reach; the band of uncertain decisions is fitted to it "
        "(default: 0.95 refusal, 0.90 the others)",
    )
    p.add_argument(
        "--adapt",
        type=int,
        metavar="N",
        help="also measure each judge adapted to each source with N of its labelled cases (seeded draws; "
        "measured on the source's other cases, beside the saved judge)",
    )
    p.add_argument(
        "--escalate",
        metavar="BASE_URL",
        help="a second judge (OpenAI-compatible endpoint): measure it alone and in a cascade with the first",
    )
    p.add_argument("--escalate-model", help="the second judge's model name")
    p.add_argument("--escalate-api-key-env", help="environment variable holding the second judge's API key")
    p.add_argument("--escalate-prices", metavar="IN,OUT", help="the second judge's price per million tokens")


def _second_judge(args: argparse.Namespace) -> dict | None:
    """The second judge's llm section, from the --escalate options."""
    if not args.escalate:
        return None
    inp, _, out = (args.escalate_prices or "").partition(",")
    return {
        "provider": "openai",
        "model": args.escalate_model or "second",
        "base_url": args.escalate,
        "api_key_env": args.escalate_api_key_env,
        **({"prices": {"input": float(inp), "output": float(out or inp)}} if args.escalate_prices else {}),
    }


def run(args: argparse.Namespace) -> int:
    check = api.judge_check(
        args.cases,
        llm={"provider": args.llm, "model": args.model, "base_url": args.base_url, "api_key_env": args.api_key_env},
        judges=args.judges.split(",") if args.judges else None,
        folds=args.folds,
        save=args.save,
        threshold=args.threshold,
        uncertain_target=args.uncertain_target,
        adapt=args.adapt,
        prompts_dir=args.prompts_dir,
        criteria=args.criteria,
        halueval=args.halueval,
        second_judge=_second_judge(args),
    )
    _print_scores(check.scores)
    _print_adapted(check, args.adapt)
    for u in check.usages:
        print(
            f"model {u.model}: {u.calls} calls, {u.cache_hits} from cache, {u.prompt_tokens} prompt "
            f"and {u.completion_tokens} completion tokens"
        )
    if args.save:
        skipped = {v: why for s in check.scores for v, why in s.not_saved.items()}
        for variant, why in skipped.items():
            print(f"not saved: {variant}: {why}; label more cases of it (each verdict) and --save again")
        saved = {v for s in check.scores if s.source == "all" and s.cutoffs for v in s.cutoffs} - set(skipped)
        if saved:
            print(f"cut-offs and bands saved to {user_path()} ({', '.join(sorted(saved))})")
    if check.second is not None:
        _print_cascade(check)
    if args.json:
        Path(args.json).write_text(json.dumps(check.to_json(), indent=2))
    return 0


def _print_scores(scores: list[JudgeScore]) -> None:
    print("Out-of-fold figures (each case decided with a cut-off fitted on the other folds):")
    print(
        f"{'judge':<20}{'source':<14}{'accuracy [95% CI]':>22}{'bal.acc':>9}{'kappa [95% CI]':>24}{'AUC':>6}{'n':>5}{'nj':>4}"
    )
    for s in scores:
        auc = f"{s.auc:.2f}" if s.auc is not None else "–"
        bal = f"{s.balanced_accuracy:.2f}" if s.balanced_accuracy is not None else "–"
        print(
            f"{s.judge:<20}{s.source:<14}{fmt(s.accuracy.to_dict(), 2):>22}{bal:>9}{fmt(s.kappa.to_dict(), 2):>24}"
            f"{auc:>6}{s.accuracy.n:>5}{s.not_judged:>4}"
        )
        if s.source == "all":
            cut = f"; cut-off fitted on all: {s.cutoff_text()}" if s.cutoffs else ""
            print(
                f"    {s.method}{cut}; confusion (label -> predicted): "
                + "; ".join(
                    f"{lab}: " + ", ".join(f"{p} {n}" for p, n in row.items()) for lab, row in s.confusion.items()
                )
            )
            print(band_line(s))
            texted = CheckExtra.model_validate(s.extra).from_text
            if texted:
                print(
                    f"    {texted} verdicts were read from the text: the endpoint returned no logprobs, so their P is "
                    "0 or 1 and the cut-off, band and AUC above mean nothing (--save refuses such an endpoint)"
                )


def _print_adapted(check: api.JudgeCheck, n: int | None) -> None:
    adapted = check.adapted
    if n and not adapted:
        print(
            f"\n--adapt {n}: nothing measured: no adaptable judge has a source of at least {n + 10} labelled cases "
            f"(each draw adapts on {n} and measures on at least 10 others); lower --adapt or label more cases"
        )
    if not adapted:
        return
    print(
        f"\nAdapted on {n} labelled cases of each source (seeded draws), measured on the source's other "
        "cases, beside the saved judge on the same cases (decided verdicts right; share uncertain):"
    )
    for a in adapted:
        sd = f"{a.shipped_decided:.2f}" if a.shipped_decided is not None else "–"
        ad = f"{a.adapted_decided:.2f}" if a.adapted_decided is not None else "–"
        print(
            f"  {a.judge:<20}{a.source:<14} saved {sd} ({a.shipped_uncertain:.0%} uncertain)  "
            f"adapted {ad} ({a.adapted_uncertain:.0%} uncertain)  {a.cases} cases, {a.draws} draws"
            + ("  (saved judge fitted on these cases: in sample)" if a.saved_on_these else "")
        )


def band_line(s: JudgeScore) -> str:
    """A judge's band of uncertain decisions, as judge-check fitted and measured it."""
    extra = CheckExtra.model_validate(s.extra)
    bands = extra.bands
    if not bands:
        return "    no band of uncertain decisions (no probabilities)"
    oof = BandOutOfFold.load(extra.band_out_of_fold or {})
    edges = ", ".join(f"{v + ' ' if len(bands) > 1 else ''}" + _band_text(b) for v, b in bands.items())
    acc = f"{oof.decided_accuracy:.2f}" if oof.decided_accuracy is not None else "–"
    line = (
        f"    uncertain band {edges}; out of fold: decided {oof.n_decided} of {oof.n} agree on {acc}, "
        f"{oof.uncertain_share:.0%} uncertain"
    )
    target = min((b.target for b in bands.values()), default=None)
    if oof.decided_accuracy is not None and target is not None and oof.decided_accuracy < target - 1e-9:
        line += (
            f", under the target {target:.2f}: the band, fitted in sample, is narrower than these cases warrant "
            "(more labelled cases widen it; an audit says so beside the band)"
        )
    return line


def _band_text(b) -> str:
    """One variant's band: its edges, or why it is empty, and its target, as fitted on all cases."""
    if b.high > b.low:
        return (
            f"[{b.low:.3f}, {b.high:.3f}) (target {b.target:.2f} {'reached' if b.reached else 'not reached'} in sample)"
        )
    if b.reached:
        return f"empty (on the cases it was fitted on, the cut-off alone reaches the target {b.target:.2f})"
    return f"empty (no band within the uncertain limit reaches the target {b.target:.2f} in sample)"


def _print_cascade(check: api.JudgeCheck) -> None:
    second = check.second
    assert second is not None
    print(f"\nCascade (uncertain decisions of the first judge asked of {second.model} at {second.base_url}):")
    print(
        f"{'judge':<20}{'way':<14}{'accuracy [95% CI]':>22}{'n':>5}{'undecided':>10}{'calls 1st':>10}{'calls 2nd':>10}{'cost':>10}"
    )
    for r in check.cascade:
        print(
            f"{r.judge:<20}{r.way:<14}{fmt(r.accuracy.to_dict(), 2):>22}{r.accuracy.n:>5}{r.undecided:>10}"
            f"{r.calls_first:>10}{r.calls_second:>10}{r.cost:>10.4f}"
        )
