"""Ways to ask the same embedded model for correctness, tried on the real cases (issue 28 item 3).

    python benchmarks/real_answers/real_variants.py [--variants a,b] [--json F]

Cases: the correctness cases of ``benchmarks/real_answers/data/cases-tuning.jsonl`` with the hand-written
``data/judge-check`` ones (fit: cut-offs and blends) and ``cases-reporting.jsonl`` (held out: the
structlog docs). Each variant gives every case one P(correct); its cut-off is fitted on the tuning
cases (balanced accuracy, as ``judge-check --save``) and applied to the reporting ones. Printed per
variant: AUC on tuning and reporting, the reporting accuracy at the tuning cut-off, and the requests.

Variants (the model and the cases stay the same):
- ``shipped``: the shipped choice of prompt by reference length (``correctness`` / ``correctness_short``).
- ``statement``, ``by_name``: one wording for every case (``correctness.md``, ``correctness_short.md``).
- ``averaged``: the two wordings averaged in log-odds.
- ``key_facts``: the reference split into its sentences and clauses, each asked by name; the least likely fact decides.
- ``reason_first``: a short comparison written first, then P(Yes) of the verdict word read after it
  (``benchmarks/real_answers/prompts/correctness_reason_first.md``; two requests, the second continues the first).
- ``+words``: each of the above blended with word evidence (``rag_eval/calibration/lexical.py``), fitted on tuning.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import time
from pathlib import Path

import numpy as np

from rag_eval import progress
from rag_eval.cache_dirs import cache_root
from rag_eval.calibration.cutoffs import fit_cutoff
from rag_eval.calibration.lexical import coverage, fit_blend, logit
from rag_eval.judges.judge_check import load_cases
from rag_eval.judges.scored import ScoredJudges, correctness_variant, split_statements
from rag_eval.judges.yesno import TOP_LOGPROBS, YES_NO, label_probabilities, load_prompt
from rag_eval.llm.session import LLMSession
from rag_eval.llm.settings import LLMConfig
from rag_eval.stats import wilson_interval

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "benchmarks" / "real_answers" / "data"
HAND = ROOT / "data" / "judge-check" / "cases.jsonl"
REASON_FIRST = ROOT / "benchmarks" / "real_answers" / "prompts" / "correctness_reason_first.md"
VARIANTS = ("shipped", "statement", "by_name", "averaged", "key_facts", "reason_first")


def _auc(pos: np.ndarray, score: np.ndarray) -> float | None:
    if pos.all() or not pos.any():
        return None
    from sklearn.metrics import roc_auc_score  # noqa: PLC0415 - only this benchmark needs it

    return float(roc_auc_score(pos, score))


def key_facts(reference: str) -> list[str]:
    """A reference's sentences and semicolon clauses (each long enough to be a fact)."""
    facts = [c.strip(" .") for s in split_statements(reference) for c in re.split(r";\s+", s)]
    return [f for f in facts if len(f.split()) >= 2] or [reference]


def _mean_logodds(ps: list[float]) -> float:
    z = float(np.mean([logit(p) for p in ps]))
    return 1 / (1 + math.exp(-z))


async def run(cases: list[dict], variants: list[str]) -> tuple[dict[str, list[float]], dict[str, int]]:
    session = LLMSession(cache_root())
    # The numerics the shipped calibration was fitted with, so the shipped prompts' requests come from the cache.
    llm = session.llm(LLMConfig(provider="local", repack=True), "correctness variants")
    scored = ScoredJudges.load(llm, None)
    reason_first = load_prompt(REASON_FIRST, "reason_first", ("question", "reference", "answer"))
    calls = dict.fromkeys(variants, 0)
    out: dict[str, list[float]] = {v: [] for v in variants}

    async def ask(name: str, c: dict, reference: str | None = None) -> float:
        d = await scored.prompts[name].ask(
            llm, question=c["question"], reference=reference or c["reference"], answer=c["answer"]
        )
        p = d.p("yes")
        return 0.5 if p is None else p

    async def reasoned(c: dict) -> float:
        user = {
            "role": "user",
            "content": reason_first.render(question=c["question"], reference=c["reference"], answer=c["answer"]),
        }
        first = await llm.chat([user], max_tokens=60, stop=["Verdict"])
        said = (first.text or "").split("Verdict")[0].rstrip()
        second = await llm.chat(
            [user, {"role": "assistant", "content": f"{said}\nVerdict:"}], max_tokens=1, logprobs=TOP_LOGPROBS
        )
        probs = label_probabilities((second.raw or {}).get("choices", [{}])[0], YES_NO) if not second.error else None
        return 0.5 if probs is None else probs["yes"]

    try:
        for n, c in enumerate(cases):
            cache: dict[str, float] = {}

            async def wording(name: str, c=c, cache=cache) -> float:
                if name not in cache:
                    cache[name] = await ask(name, c)
                return cache[name]

            for v in variants:
                if v == "shipped":
                    p = await wording(correctness_variant(c["reference"]))
                elif v == "statement":
                    p = await wording("correctness")
                elif v == "by_name":
                    p = await wording("correctness_short")
                elif v == "averaged":
                    p = _mean_logodds([await wording("correctness"), await wording("correctness_short")])
                elif v == "key_facts":
                    facts = key_facts(c["reference"])
                    ps = (
                        [await ask("correctness_short", c, f) for f in facts]
                        if len(facts) > 1
                        else [await wording("correctness_short")]
                    )
                    calls[v] += len(facts)
                    p = min(ps)
                else:
                    p = await reasoned(c)
                    calls[v] += 2
                out[v].append(p)
            print(f"  {n + 1}/{len(cases)}", flush=True)
    finally:
        await session.aclose()
        session.close()
    return out, calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    progress.set_enabled(False)
    variants = args.variants.split(",")
    fit = [c for c in load_cases(REAL / "cases-tuning.jsonl") + load_cases(HAND) if c["judge"] == "correctness"]
    rep = [c for c in load_cases(REAL / "cases-reporting.jsonl") if c["judge"] == "correctness"]
    t0 = time.perf_counter()
    probs, calls = asyncio.run(run(fit + rep, variants))
    wall = time.perf_counter() - t0
    y = np.array([c["label"] == "correct" for c in fit + rep])
    yf, yr = y[: len(fit)], y[len(fit) :]
    words = [coverage(c["reference"], c["answer"]).features() for c in fit + rep]
    rows = []
    print(f"\n{len(fit)} tuning cases ({yf.sum()} correct), {len(rep)} reporting ({yr.sum()} correct); {wall:.0f} s")
    print(f"{'variant':<22}{'AUC tuning':>11}{'AUC reporting':>14}  {'reporting accuracy at the tuning cut-off':<40}")
    for v in variants:
        p = np.array(probs[v])
        for tag, score in ((v, p), (f"{v}+words", None)):
            if score is None:
                blend = fit_blend(list(p[: len(fit)]), words[: len(fit)], list(yf))
                score = np.array([blend.p(pi, w) for pi, w in zip(p, words, strict=True)])
            cut = fit_cutoff(score[: len(fit)], yf)
            right = int(((score[len(fit) :] >= cut) == yr).sum())
            e = wilson_interval(right, len(rep))
            row = {
                "variant": tag,
                "auc_tuning": _auc(yf, score[: len(fit)]),
                "auc_reporting": _auc(yr, score[len(fit) :]),
                "accuracy_reporting": [right, len(rep)],
                "cutoff": float(cut),
            }
            rows.append(row)
            print(
                f"{tag:<22}{row['auc_tuning']:>11.2f}{row['auc_reporting']:>14.2f}  "
                f"{right / len(rep):.2f} [{e.ci_low:.2f}, {e.ci_high:.2f}] ({right}/{len(rep)}) at {cut:.3f}"
            )
    print("extra requests per variant:", calls)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "probs": probs}, indent=1))


if __name__ == "__main__":
    main()
