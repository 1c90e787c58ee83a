"""Building the report data (a JSON-ready dict) from the stages' results."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from rag_eval.attribution import GENERATION_FAILURES, OUTCOMES, RETRIEVAL_FAILURES, attribute
from rag_eval.config import AuditConfig
from rag_eval.report.quotes import row_evidence
from rag_eval.retrievers.diagnosis import CAUSES
from rag_eval.retrievers.stage import RetrievalResults
from rag_eval.stats import weighted_share
from rag_eval.types import Corpus
from rag_eval.version import __version__


def table_metrics(ks: list[int]) -> list[str]:
    """The headline columns: hit@1, hit@5, hit@10 (those measured), MRR, nDCG at the largest k."""
    hits = [f"hit@{k}" for k in ks if k in (1, 5, 10)] or [f"hit@{k}" for k in ks]
    return hits + ["mrr", f"ndcg@{10 if 10 in ks else max(ks)}"]


def retrieval_section(cfg: AuditConfig, res: RetrievalResults, corpus: Corpus, diagnoses: dict | None = None) -> dict:
    """Figures, comparisons and misses (with their diagnosed causes) of the retrieval stage."""
    diagnoses = diagnoses or {}
    misses = {}
    for name, r in res.retrievers.items():
        rows = []
        for i, q in enumerate(res.questions):
            if not res.is_miss(name, i):
                continue
            rows.append(
                {
                    "question_id": q.id,
                    "question": q.question,
                    "rank": r.first_rank[i],
                    "relevant": [cid for cid, g in q.qrels.items() if g > 0],
                    "top": r.rankings.ids(corpus, i)[: res.miss_k],
                    **({"diagnosis": diagnoses[name][i].to_dict()} if i in diagnoses.get(name, {}) else {}),
                }
            )
        misses[name] = rows
    names = [s.name for s in res.metrics]
    hist = {name: rank_histogram([r.first_rank[i] for i in res.answerable]) for name, r in res.retrievers.items()}
    return {
        "simulated_fixes": res.simulated_fixes,
        # How approximate rankings were made and what they cost (HNSW: recall@10 against exact search).
        "index_notes": {n: r.rankings.notes for n, r in res.retrievers.items() if r.rankings.notes},
        "rank_histogram": hist,
        "metrics": names,
        "table": [m for m in table_metrics(cfg.retrieval.k) if m in names],
        "miss_k": res.miss_k,
        "retrievers": {n: {m: e.to_dict() for m, e in r.aggregates.items()} for n, r in res.retrievers.items()},
        "comparisons": [c.to_dict() for c in res.comparisons],
        "misses": misses,
    }


RANK_BUCKETS = ("1", "2", "3", "4", "5", "6-10", "11-20", "21-100", ">100 or none")


def rank_histogram(ranks: list[int | None]) -> dict[str, int]:
    """Answerable questions by the rank of their first relevant chunk."""
    out = dict.fromkeys(RANK_BUCKETS, 0)
    for r in ranks:
        key = (
            str(r)
            if r is not None and r <= 5
            else "6-10"
            if r is not None and r <= 10
            else "11-20"
            if r is not None and r <= 20
            else "21-100"
            if r is not None and r <= 100
            else ">100 or none"
        )
        out[key] += 1
    return out


def build_report(
    cfg: AuditConfig,
    corpus: Corpus,
    res: RetrievalResults,
    *,
    test_set_path: str,
    findings: list | None = None,
    diagnoses: dict | None = None,
) -> dict:
    """The report data; summary.json and every rendering come from this."""
    n_ans = len(res.answerable)
    return {
        "name": cfg.name,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "rag_eval_version": __version__,
        "corpus": {"source": corpus.source, "chunks": len(corpus), "fingerprint": corpus.fingerprint()[:16]},
        "test_set": {
            "path": test_set_path,
            "questions": len(res.questions),
            "answerable": n_ans,
            "unanswerable": len(res.questions) - n_ans,
        },
        "lint": [f.to_dict() for f in findings or []],
        "retrieval": retrieval_section(cfg, res, corpus, diagnoses),
    }


def summary(report: dict) -> dict:
    """summary.json: every figure at ``retrieval.<retriever>.<metric>`` as {value, ci_low, ci_high, n}."""
    r = report["retrieval"]
    comparison: dict[str, dict] = {}
    for c in r["comparisons"]:
        comparison.setdefault(c["metric"], {})[f"{c['a']}_vs_{c['b']}"] = {
            k: c[k]
            for k in (
                "wins",
                "losses",
                "ties",
                "diff",
                "ci_low",
                "ci_high",
                "p_value",
                "p_holm",
                "test",
                "detectable",
                "verdict",
            )
        }
    return {
        "name": report["name"],
        "created": report["created"],
        "rag_eval_version": report["rag_eval_version"],
        "corpus": report["corpus"],
        "test_set": report["test_set"],
        "retrieval": r["retrievers"],
        "retrieval_comparison": comparison,
        "retrieval_misses": {n: {"k": r["miss_k"], "count": len(m)} for n, m in r["misses"].items()},
        "diagnosis": {n: cause_counts(m) for n, m in r["misses"].items()},
        "simulated_fixes": [
            {k: f[k] for k in ("retriever", "change", "config", "net", "summary")}
            | {"fixes": len(f["fixes"]), "causes": len(f["causes"])}
            for f in r.get("simulated_fixes", [])
        ],
        "lint": {f["code"]: {"severity": f["severity"], "questions": len(f["questions"])} for f in report["lint"]},
        **({"generation": report["judges"]["figures"]} if "judges" in report else {}),
        **({"comparison": _comparison_summary(report["comparison"])} if "comparison" in report else {}),
        **(
            {
                "attribution": {
                    p: {o: {k: v for k, v in e.items()} for o, e in shares.items()}
                    for p, shares in report["attribution"]["shares"].items()
                },
                "failure_split": report["attribution"]["split"],
            }
            if "attribution" in report
            else {}
        ),
        **(
            {
                "generation_counts": {
                    p: {k: v for k, v in c.items() if k != "prompt_hash"}
                    for p, c in report["generation"]["prompts"].items()
                },
                "llm_usage": report["generation"]["usage"],
            }
            if "generation" in report
            else {}
        ),
        **({"system": _system_summary(report["system"])} if "system" in report else {}),
        **({"traces": {k: report["traces"][k] for k in ("read", "audited", "skipped")}} if "traces" in report else {}),
    }


def _system_summary(section: dict) -> dict:
    """The deployed system's calls: questions asked, answered, failed (not_judged)."""
    return {"questions": section["questions"], "answered": section["answered"], "failed": len(section["failed"])}


def _comparison_summary(section: dict) -> dict:
    """``comparison.<metric>.<A>_vs_<B>`` = {wins, losses, ties, diff, ci_low, ci_high, p_value, p_holm, verdict}."""
    out: dict[str, dict] = {}
    keys = ("wins", "losses", "ties", "diff", "ci_low", "ci_high", "p_value", "p_holm", "test", "verdict")
    for c in section["comparisons"]:
        out.setdefault(c["metric"], {})[f"{c['a']}_vs_{c['b']}"] = {k: c[k] for k in keys}
    return out


def cause_counts(misses: list[dict]) -> dict[str, int]:
    """Misses per diagnosed cause, every cause present (0 where none)."""
    counts = dict.fromkeys(CAUSES, 0)
    for m in misses:
        if "diagnosis" in m:
            counts[m["diagnosis"]["cause"]] += 1
    return counts


def generation_section(
    cfg: AuditConfig, records: list[dict], n_selected: int, usage: list[dict], n_total: int | None = None
) -> dict:
    """Answers per prompt, failures, and model usage."""
    g = cfg.generation
    n_total = n_selected if n_total is None else n_total
    prompts = {}
    for name in {r["prompt"] for r in records} | set(g.prompts if not g.answers else []):
        mine = [r for r in records if r["prompt"] == name]
        prompts[name] = {
            "answered": sum(r.get("error") is None for r in mine),
            "failed": sum(r.get("error") is not None for r in mine),
            "prompt_hash": next((r.get("prompt_hash") for r in mine), None),
        }
    return {
        "retriever": g.retriever,
        "top_k": g.top_k,
        "questions": n_selected,
        "sampled": n_selected < n_total,
        "prompts": prompts,
        "usage": usage,
        "records": records,
    }


def attribution_section(
    cfg: AuditConfig,
    res: RetrievalResults,
    corpus: Corpus,
    generations: list[dict],
    judgements: list[dict],
    more_questions: list | None = None,
) -> dict:
    """Outcome per question and prompt, shares with Wilson intervals, and the failed questions.
    ``more_questions``: questions outside the retrieval results whose generation failed (a deployed
    system that returned an error): each is ``not_judged`` with that error."""
    g = cfg.generation
    threshold = cfg.judges.faithfulness_threshold if cfg.judges else 0.5
    deciding = cfg.judges.deciding_faithfulness if cfg.judges else None
    index = {q.id: i for i, q in enumerate(res.questions)}
    first = res.retrievers[g.retriever].first_rank
    by_answer: dict[tuple[str, str], dict[str, dict]] = {}
    for j in judgements:
        by_answer.setdefault((j["question_id"], j["prompt"]), {})[j["judge"]] = j
    rows, shares, split = [], {}, {}
    for prompt in sorted({r["prompt"] for r in generations}):
        outcomes, weights = [], []
        for gen in (r for r in generations if r["prompt"] == prompt):
            weights.append(gen.get("weight", 1.0))
            i = index.get(gen["question_id"])
            if i is None:  # not in the retrieval results: its generation failed, so not_judged follows
                q, retrieved = next(x for x in more_questions or [] if x.id == gen["question_id"]), True
            else:
                q = res.questions[i]
                retrieved = bool(first[i] and first[i] <= g.top_k)
            js = by_answer.get((q.id, prompt), {})
            outcome, why = attribute(
                q, retrieved, gen, js, faithfulness_threshold=threshold, faithfulness_judge=deciding
            )
            outcomes.append(outcome)
            relevant = {cid for cid, grade in q.qrels.items() if grade > 0}
            rows.append(
                {
                    "question_id": q.id,
                    "question": q.question,
                    "prompt": prompt,
                    "outcome": outcome,
                    "why": why,
                    "answerable": q.answerable,
                    "reference": q.reference,
                    "contexts": [{"id": cid, "relevant": cid in relevant} for cid in gen.get("contexts", [])],
                    "answer": gen.get("answer"),
                    "judges": {
                        name: {
                            **{k: j.get(k) for k in ("status", "score", "verdict", "reason", "error", "probability")},
                            **row_evidence(j),
                        }
                        for name, j in js.items()
                    },
                }
            )
        n = len(outcomes)
        st = cfg.stats
        # Under a stratified sample each question stands for its stratum (its weight).
        shares[prompt] = {
            o: {
                **weighted_share(
                    np.array([x == o for x in outcomes], dtype=float), np.array(weights), confidence=st.confidence
                ).to_dict(),
                "count": outcomes.count(o),
            }
            for o in OUTCOMES
        }
        retrieval = sum(outcomes.count(o) for o in RETRIEVAL_FAILURES)
        generation = sum(outcomes.count(o) for o in GENERATION_FAILURES)
        split[prompt] = {
            "retrieval": retrieval,
            "generation": generation,
            "failures": retrieval + generation,
            "not_judged": outcomes.count("not_judged"),
            "uncertain": outcomes.count("uncertain"),
            "questions": n,
        }
    return {
        "outcomes": list(OUTCOMES),
        "shares": shares,
        "split": split,
        "rows": rows,
        "faithfulness_threshold": threshold,
        "faithfulness_judge": deciding,
    }
