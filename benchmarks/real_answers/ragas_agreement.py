"""The named Ragas metrics against people's labels, on the real RAG answers (issue 28 item 5).

    python benchmarks/real_answers/ragas_agreement.py [--part reporting] [--questions N] [--json F] [--save]

Rows: ``benchmarks/real_answers/data/ragas-labels.jsonl`` (``benchmarks/real_answers/real_cases.py`` writes it from the
blind readers' labels): each answer's ``faithful`` label, whether each of its three contexts helps
answer the question (``contexts_help``), and whether each reference statement is in the contexts
(``reference_statements``). With the embedded model, the shipped calibration and the response cache:

- Ragas ``faithfulness`` (skipped on refusals, as audits skip them) and rag-eval's
  ``faithfulness_yesno`` against ``faithful``: AUC of the score, and the agreement of the decision
  at the attribution's rule (faithful when every statement is supported, ``judges.faithfulness_threshold``).
- Ragas ``context_precision`` and ``context_precision_yesno``: each context's useful / not useful
  verdict against ``contexts_help``, and the score's mean absolute error against the average
  precision of the labels.
- Ragas ``context_recall`` and ``context_recall_yesno``: "every reference statement found" against
  the labels, and the score's mean absolute error against the labelled share.

Context precision and recall do not depend on the answer: each question's contexts are judged once.
``--save`` stores each Ragas metric's agreement with the calibration shipped for the model, so the
report prints it beside the metric's figure (under the ``judges.ragas_requests`` way measured).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

import numpy as np

from rag_eval import progress
from rag_eval.cache_dirs import cache_root
from rag_eval.calibration.cutoffs import SHIPPED, blends_for, cutoffs_for, ragas_key, save_entry
from rag_eval.judges.ragas_judges import RagasJudges
from rag_eval.judges.registry import FAITHFUL_SHARE, JUDGES, Families, Inputs
from rag_eval.judges.scored import ScoredJudges, average_precision
from rag_eval.llm.session import LLMSession
from rag_eval.llm.settings import LLMConfig
from rag_eval.stats import wilson_interval

ROOT = Path(__file__).resolve().parents[2]
LABELS = ROOT / "benchmarks" / "real_answers" / "data" / "ragas-labels.jsonl"
PARTS = {
    "reporting": "real answers over the structlog docs (reporting part)",
    "tuning": "real answers over the Python topics and attrs docs (tuning part)",
    "all": "real answers over the Python topics, attrs and structlog docs",
}


def _auc(positive: list[bool], score: list[float]) -> float | None:
    if len(set(positive)) < 2:
        return None
    from sklearn.metrics import roc_auc_score  # noqa: PLC0415 - only this benchmark needs it

    return float(roc_auc_score(positive, score))


def _share(k: int, n: int) -> str:
    if n == 0:
        return "-"
    e = wilson_interval(k, n)
    return f"{k / n:.2f} [{e.ci_low:.2f}, {e.ci_high:.2f}] ({k}/{n})"


async def judge_rows(rows: list[dict], mode: str) -> tuple[dict, list[dict], str]:
    """Every judgement the benchmark reads: per answer (faithfulness) and per question (contexts)."""
    session = LLMSession(cache_root())
    cfg = LLMConfig(provider="local", repack=True)
    llm = session.llm(cfg, "ragas agreement")
    scored = ScoredJudges.load(llm, None)
    scored.cutoffs, scored.calibrated = cutoffs_for(llm.identity, scored, {})
    scored.blends = blends_for(llm.identity, scored)
    ragas = RagasJudges(llm, json_schema=cfg.json_schema, requests=mode)
    fam = Families(scored, ragas)

    out: dict = {"answers": {}, "questions": {}}
    try:
        seen: set[str] = set()
        for n, r in enumerate(rows):
            x = Inputs(r["id"], "check", r["question"], r["answer"], r["contexts"], r["reference"])
            if not r["refused"]:
                out["answers"][r["id"]] = {
                    name: (await JUDGES[name].judge(fam, x)).to_dict()
                    for name in ("faithfulness", "faithfulness_yesno")
                }
            qkey = json.dumps([r["question"], r["contexts"], r["reference"]])
            if qkey not in seen:
                seen.add(qkey)
                out["questions"][r["id"]] = {
                    name: (await JUDGES[name].judge(fam, x)).to_dict()
                    for name in (
                        "context_recall",
                        "context_recall_yesno",
                        "context_precision",
                        "context_precision_yesno",
                    )
                }
            print(f"  {n + 1}/{len(rows)} {r['id']}", flush=True)
    finally:
        await session.aclose()
        usage = session.usage()
        session.close()
    return out, usage, llm.identity


def _useful(j: dict) -> list[bool] | None:
    if j["status"] != "judged":
        return None
    d = j.get("details") or {}
    if "verdicts" in d:
        return [bool(v) for v in d["verdicts"]]
    if "p_useful" in d:  # context_precision_yesno: each context's P(useful) against its cut-off
        return [p >= j["cutoff"] for p in d["p_useful"]]
    return None


def measure(rows: list[dict], judged: dict) -> dict:
    """The agreement figures of every judge with the labels."""
    by_id = {r["id"]: r for r in rows}
    res: dict = {}
    for name in ("faithfulness", "faithfulness_yesno"):
        pairs = [
            (by_id[i]["faithful"], js[name]["score"])
            for i, js in judged["answers"].items()
            if js[name]["status"] == "judged"
        ]
        pos = [bool(p) for p, _ in pairs]
        score = [float(s) for _, s in pairs]
        at_rule = sum((s >= FAITHFUL_SHARE - 1e-9) == p for p, s in zip(pos, score, strict=True))
        at_half = sum((s >= 0.5) == p for p, s in zip(pos, score, strict=True))
        res[name] = {
            "n": len(pairs),
            "not_judged": len(judged["answers"]) - len(pairs),
            "auc": _auc(pos, score),
            "agreement": (at_rule, len(pairs)),
            "agreement_at_0.5": (at_half, len(pairs)),
            "faithful": sum(pos),
        }
    for name in ("context_precision", "context_precision_yesno"):
        agree = total = 0
        errors = []
        for i, js in judged["questions"].items():
            useful = _useful(js[name])
            if useful is None:
                continue
            labels = by_id[i]["contexts_help"]
            agree += sum(u == bool(h) for u, h in zip(useful, labels, strict=True))
            total += len(labels)
            errors.append(abs(js[name]["score"] - average_precision([bool(h) for h in labels])))
        res[name] = {
            "n": len(errors),
            "agreement": (agree, total),
            "what": "context (helps answer the question)",
            "mae": float(np.mean(errors)) if errors else None,
        }
    for name in ("context_recall", "context_recall_yesno"):
        agree, errors = 0, []
        for i, js in judged["questions"].items():
            j = js[name]
            if j["status"] != "judged":
                continue
            st = by_id[i]["reference_statements"]
            share = sum(s["in_contexts"] for s in st) / len(st)
            agree += (j["score"] >= 1.0 - 1e-9) == (share == 1.0)
            errors.append(abs(j["score"] - share))
        res[name] = {
            "n": len(errors),
            "agreement": (agree, len(errors)),
            "what": "question (every reference statement found in the contexts)",
            "mae": float(np.mean(errors)) if errors else None,
        }
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", default="reporting", help="tuning, reporting or all")
    ap.add_argument("--questions", type=int, help="only the answers (every prompt's) to the first N questions")
    ap.add_argument("--ragas-requests", default="guided", choices=["guided", "native"])
    ap.add_argument("--json", help="write the figures and every judgement here")
    ap.add_argument("--save", action="store_true", help="ship the Ragas metrics' agreement with the calibration")
    args = ap.parse_args()
    progress.set_enabled(False)
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if args.part == "all" or r["part"] == args.part]
    if args.questions:
        first = list(dict.fromkeys(r["question"] for r in rows))[: args.questions]
        rows = sorted((r for r in rows if r["question"] in first), key=lambda r: first.index(r["question"]))
    t0 = time.perf_counter()
    judged, usage, identity = asyncio.run(judge_rows(rows, args.ragas_requests))
    wall = time.perf_counter() - t0
    res = measure(rows, judged)
    print(f"\n{len(rows)} answers ({args.part}), Ragas requests: {args.ragas_requests}; model {identity}")
    print(f"{'judge':<26}{'n':>4}  {'agreement with the labels':<30}{'AUC / MAE':>12}")
    for name, r in res.items():
        extra = (
            f"AUC {r['auc']:.2f}"
            if r.get("auc") is not None
            else (f"MAE {r['mae']:.2f}" if r.get("mae") is not None else "")
        )
        what = r.get("what", "answers (faithful = every statement supported)")
        print(f"{name:<26}{r['n']:>4}  {_share(*r['agreement']):<30}{extra:>12}  per {what}")
    calls = sum(u["calls"] for u in usage)
    model_s = sum(u["model_ms"] for u in usage) / 1000
    print(
        f"\n{calls} requests sent ({sum(u['cache_hits'] for u in usage)} from the cache), {model_s:.0f} model-s, {wall:.0f} s"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"part": args.part, "figures": res, "judged": judged}, indent=1, default=str)
        )
    if args.save:
        path = ROOT / "rag_eval" / "calibration" / SHIPPED
        for name in ("faithfulness", "context_precision", "context_recall"):
            k, n = res[name]["agreement"]
            save_entry(
                ragas_key(identity, name, args.ragas_requests),
                {
                    "agreement": {
                        "accuracy": round(k / n, 3) if n else None,
                        "n": n,
                        "measured_on": f"{PARTS.get(args.part, args.part)}, per "
                        f"{res[name].get('what', 'answer (faithful = every statement supported)')}, "
                        f"judges.ragas_requests {args.ragas_requests}, benchmarks/real_answers/ragas_agreement.py",
                    }
                },
                path,
            )
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
