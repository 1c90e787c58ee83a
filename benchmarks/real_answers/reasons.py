"""Are the own judges' reasons evidence for their decisions? Labelled cases judged with quoted reasons.

    python benchmarks/real_answers/reasons.py [--per-judge 6] [--source real|holdout|fresh|hand] [--budget-s 1500]
                                 [--out benchmarks/real_answers/results/reasons-result.json]

Judges labelled cases (``real``: the real answers of benchmarks/real_answers/data/cases-reporting.jsonl, the
structlog docs; ``holdout``: those of cases-holdout.jsonl, the python-dotenv and tinytag READMEs; ``fresh``:
cases-fresh.jsonl, the tenacity and tabulate READMEs;
``hand``: the python-docs ones of data/judge-check/cases.jsonl) of each kind
(refusal, correctness, faithfulness; the same number of each label, in file order) with the
embedded model, the shipped cut-offs and blends and ``judges.reasons: quote``, on an empty response cache so that every
request is really sent, one case at a time (as an audit's requests share the server's KV cache).
Counted per decision (a verdict, or one statement of faithfulness_yesno): the share whose reason
carries a verified quote (and the share with a quote or the named words a blended decision rests
on), the decisions the cut-off took against the model's word and how their
reasons were made, reasons shown from a label word other than the decision (a contradiction; 0 by
construction, counted to prove it), the model's own reasons that copy the prompt, and the extra
requests, tokens and model time of the quoted reasons against the verdict requests (llama-server's
own timings per request). Every shown reason is listed for reading by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OWN = ["refusal", "correctness", "faithfulness_yesno"]
DECIDED_WORD = {"answered": "Yes", "refused": "No", "correct": "Yes", "incorrect": "No"}


def _timed_chat(stats: dict):
    """LLM.chat wrapped to add each request's server time and tokens to ``stats`` by kind."""
    from rag_eval.llm.client import LLM

    original = LLM.chat

    async def chat(self, messages, **kw):
        result = await original(self, messages, **kw)
        forced = messages[-1]["role"] == "assistant"
        kind = "reason" if forced else ("verdict" if kw.get("logprobs") else "generation")
        t = (result.raw or {}).get("timings") or {}
        s = stats.setdefault(kind, Counter())
        s["requests"] += 1
        s["model_ms"] += float(t.get("prompt_ms") or 0) + float(t.get("predicted_ms") or 0)
        s["prompt_evaluated"] += int(t.get("prompt_n") or 0)
        s["prompt_reused"] += int(t.get("cache_n") or 0)
        s["completion_tokens"] += result.completion_tokens
        return result

    LLM.chat = chat


def decisions(records: list[dict]) -> list[dict]:
    """One row per decision: the judge, question, decided word, the model's word, the evidence."""
    rows = []
    for r in records:
        if r["status"] not in ("judged", "uncertain") or r["judge"] not in OWN:
            continue
        d = r["details"]
        if r["judge"] == "faithfulness_yesno":
            for s in d["statements"]:
                word = "Yes" if s["supported"] else "No"
                rows.append(
                    {
                        "judge": r["judge"],
                        "qid": r["question_id"],
                        "decided": word,
                        "reason": s["reason"],
                        "statement": s["statement"],
                        **_ev(s["evidence"], s["model_said"]),
                    }
                )
        else:
            verdict = r["verdict"] or d.get("leaning")
            rows.append(
                {
                    "judge": r["judge"],
                    "qid": r["question_id"],
                    "decided": DECIDED_WORD[verdict],
                    "verdict": verdict,
                    "p": r["probability"],
                    "reason": r["reason"],
                    **_ev(d["evidence"], d["model_said"]),
                }
            )
    return rows


def _ev(ev: dict, said: str | None) -> dict:
    words = (ev.get("words") or {}).get("note") or ""
    return {
        "said": said,
        "shown": ev["shown"],
        "verified": ev["verified"],
        # The words a blended decision rests on (each taken from the answer or reference, and
        # checked absent from its counterpart): evidence a reader can check as well as a quote.
        "word_evidence": words,
        "evidence": ev["verified"] or bool(words),
        "quotes": ev["quotes"],
        "model_reason": ev["model_reason"],
        "copied": ev["model_reason_copies_prompt"],
        "calls": ev["calls"],
        "tokens": ev["completion_tokens"],
    }


def summarise(rows: list[dict], stats: dict, n_records: int) -> dict:
    n = len(rows)
    overturned = [r for r in rows if r["said"] and r["said"] != r["decided"]]
    # A reason shown from the model's own words where it wrote the other word argues the other way.
    contradicting = [r for r in rows if r["shown"] == "model" and r["said"] != r["decided"]]
    verdict, reason = stats.get("verdict", Counter()), stats.get("reason", Counter())
    return {
        "decisions": n,
        "judgements": n_records,
        "verified_quote_share": round(sum(r["verified"] for r in rows) / n, 3) if n else None,
        "evidence_share": round(sum(r["evidence"] for r in rows) / n, 3) if n else None,
        "verified_by_judge": {
            j: f"{sum(r['verified'] for r in rows if r['judge'] == j)}/{sum(r['judge'] == j for r in rows)}"
            for j in OWN
        },
        "shown": dict(Counter(r["shown"] for r in rows)),
        "overturned_by_cutoff": len(overturned),
        "overturned_shown": dict(Counter(r["shown"] for r in overturned)),
        "contradicting_structurally": len(contradicting),
        "model_reasons_copying_prompt": sum(r["copied"] for r in rows),
        "quotes_copying_prompt": sum(q["copies_prompt"] for r in rows for q in r["quotes"]),
        "requests": {"verdict": verdict["requests"], "reason": reason["requests"]},
        "completion_tokens": {"verdict": verdict["completion_tokens"], "reason": reason["completion_tokens"]},
        "prompt_tokens_evaluated": {"verdict": verdict["prompt_evaluated"], "reason": reason["prompt_evaluated"]},
        "prompt_tokens_reused_from_kv": {"verdict": verdict["prompt_reused"], "reason": reason["prompt_reused"]},
        "model_s": {"verdict": round(verdict["model_ms"] / 1000, 1), "reason": round(reason["model_ms"] / 1000, 1)},
        "extra_model_s_per_judgement": round(reason["model_ms"] / 1000 / max(1, n_records), 2),
        "extra_model_s_per_decision": round(reason["model_ms"] / 1000 / max(1, n), 2),
        "verdict_model_s_per_decision": round(verdict["model_ms"] / 1000 / max(1, verdict["requests"]), 2),
    }


SOURCES = {
    "real": ROOT / "benchmarks" / "real_answers" / "data" / "cases-reporting.jsonl",
    "holdout": ROOT / "benchmarks" / "real_answers" / "data" / "cases-holdout.jsonl",
    "fresh": ROOT / "benchmarks" / "real_answers" / "data" / "cases-fresh.jsonl",
    "hand": ROOT / "data" / "judge-check" / "cases.jsonl",
}


def pick(per_judge: int, source: str = "real") -> list[dict]:
    """The first cases of each judge (real answers of the reporting part, or the hand-written
    python-docs ones), alternating its labels; the judges in turn."""
    from rag_eval.judges.judge_check import load_cases
    from rag_eval.judges.registry import CASE_KINDS

    cases = [c for c in load_cases(SOURCES[source]) if source != "hand" or c.get("source") == "python-docs"]
    per: list[list[dict]] = []
    for judge, kind in CASE_KINDS.items():
        labels = kind.labels
        by_label = [[c for c in cases if c["judge"] == judge and c["label"] == lab] for lab in labels]
        mine = [c for group in zip(*by_label) for c in group] + [c for g in by_label for c in g]
        unique = {c["id"]: c for c in reversed(mine)}  # the first place of each case wins
        per.append(sorted(unique.values(), key=mine.index)[:per_judge])
    return [c for group in zip(*per) for c in group]  # the judges in turn, so a budget cuts each alike


def write(out: Path, cases: list[dict], records: list[dict], stats: dict, started: float) -> dict:
    """The figures so far, written to ``out`` (after every case: a stopped run leaves its part)."""
    own = [r for r in records if r["status"] in ("judged", "uncertain")]
    rows = decisions(records)
    result = {
        "cases": f"{len(records)} of {len(cases)} picked",
        "wall_s": round(time.perf_counter() - started, 1),
        "not_judged": len(records) - len(own),
        **summarise(rows, stats, len(own)),
        "rows": rows,
    }
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return result


async def judge_cases(cases: list[dict], budget_s: float, out: Path) -> dict:
    """Each case judged in turn until the model time spent passes ``budget_s`` (the model's own
    time, so that a run paused by someone else's measurement keeps its budget)."""
    from rag_eval.calibration.cutoffs import blends_for, cutoffs_for
    from rag_eval.judges.scored import ScoredJudges
    from rag_eval.llm.session import LLMSession
    from rag_eval.llm.settings import LLMConfig

    stats: dict = {}
    _timed_chat(stats)
    session = LLMSession(Path(os.environ["RAG_EVAL_CACHE_DIR"]))
    llm = session.llm(LLMConfig(provider="local", repack=True), "benchmarks/real_answers/reasons.py")
    records, started, result = [], time.perf_counter(), {}
    try:
        scored = ScoredJudges.load(llm, None)
        scored.cutoffs, scored.calibrated = cutoffs_for(llm.identity, scored, {})
        scored.blends = blends_for(llm.identity, scored)
        scored.reasons = "quote"
        for c in cases:
            if sum(s["model_ms"] for s in stats.values()) / 1000 > budget_s:
                break
            if c["judge"] == "refusal":
                j = await scored.refusal(c["id"], "check", c["question"], c["answer"])
            elif c["judge"] == "correctness":
                j = await scored.correctness(c["id"], "check", c["question"], c["reference"], c["answer"])
            else:
                j = await scored.faithfulness(c["id"], "check", c["question"], c["answer"], c["contexts"])
            records.append({**j.to_dict(), "label": c["label"]})
            print(f"{c['id']} {j.judge} {j.status} {j.verdict or j.score}: {j.reason}", flush=True)
            result = write(out, cases, records, stats, started)
    finally:
        await session.aclose()
    return result


def main() -> None:
    import asyncio

    ap = argparse.ArgumentParser()
    ap.add_argument("--per-judge", type=int, default=6)
    ap.add_argument("--source", choices=sorted(SOURCES), default="real")
    ap.add_argument("--budget-s", type=float, default=1500, help="start no case after this much model time")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "real_answers" / "results" / "reasons-result.json"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rag-eval-reasons-"))
    os.environ["RAG_EVAL_CACHE_DIR"] = str(work / "cache")  # every request really sent
    result = asyncio.run(judge_cases(pick(args.per_judge, args.source), args.budget_s, Path(args.out)))
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1))
    for r in result.get("rows", []):
        print(
            f"{r['qid']} {r['judge']} said={r['said']} decided={r['decided']} shown={r['shown']} "
            f"verified={r['verified']}: {r['reason']}  [model: {r['model_reason']}]"
        )


if __name__ == "__main__":
    main()
