"""The retrieval stage: rank, score each question, aggregate with intervals, compare retrievers."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rag_eval.config import AuditConfig
from rag_eval.data.records import collection_paused
from rag_eval.data.testset import label_provenance
from rag_eval.metrics import MetricSpec, default_metrics, parse_metric, relevance_data
from rag_eval.retrievers.rankings import Rankings
from rag_eval.retrievers.retrieval_records import SimulatedFix
from rag_eval.stats import Comparison, Estimate, apply_holm, bootstrap_mean, compare_paired
from rag_eval.types import Corpus, Question


@dataclass
class RetrieverResult:
    """One retriever's rankings and its per-question metric arrays (answerable questions only)."""

    name: str
    rankings: Rankings
    per_question: dict[str, np.ndarray]
    aggregates: dict[str, Estimate]
    first_rank: list[int | None]


@dataclass
class RetrievalResults:
    """Everything the retrieval stage found, for the records and the report."""

    questions: list[Question]
    answerable: list[int]
    metrics: list[MetricSpec]
    miss_k: int
    retrievers: dict[str, RetrieverResult]
    comparisons: list[Comparison] = field(default_factory=list)
    simulated_fixes: list[SimulatedFix] = field(default_factory=list)  # set by the runner (diagnosis, rechunk)

    def is_miss(self, retriever: str, q: int) -> bool:
        """Answerable question ``q`` has no relevant chunk in the retriever's top miss_k."""
        r = self.retrievers[retriever]
        rank = r.first_rank[q]
        return self.questions[q].answerable and (rank is None or rank > self.miss_k)


def miss_k(cfg: AuditConfig) -> int:
    """The cut-off that defines a retrieval miss: retrieval.miss_k, else 5 if measured, else the largest k."""
    if cfg.retrieval.miss_k:
        return cfg.retrieval.miss_k
    return 5 if 5 in cfg.retrieval.k else max(cfg.retrieval.k)


def compare_metrics(cfg: AuditConfig, k: int) -> list[MetricSpec]:
    names = cfg.retrieval.compare_on or [f"hit@{k}", "mrr"]
    return [parse_metric(n) for n in names]


def first_relevant_rank(rankings: Rankings, q: int, question: Question, corpus: Corpus) -> int | None:
    """Rank of the best-ranked relevant chunk (exact beyond depth when the retriever scores all)."""
    ranks = [rankings.rank_of(q, corpus.index[cid]) for cid, g in question.qrels.items() if g > 0]
    found = [r for r in ranks if r is not None]
    return min(found) if found else None


@collection_paused()
def evaluate(
    cfg: AuditConfig, corpus: Corpus, questions: list[Question], rankings: dict[str, Rankings]
) -> RetrievalResults:
    """Score every retriever on the answerable questions and compare them pairwise."""
    st = cfg.stats
    specs = [parse_metric(n) for n in (cfg.retrieval.metrics or default_metrics(cfg.retrieval.k))]
    answerable = [i for i, q in enumerate(questions) if q.answerable]
    mk = miss_k(cfg)
    results: dict[str, RetrieverResult] = {}
    for name, rk in rankings.items():
        ranked = [rk.ids(corpus, i) for i in answerable]
        data = relevance_data(ranked, [questions[i].qrels for i in answerable], cfg.retrieval.depth)
        per_q = {s.name: s.compute(data) for s in specs}
        for s in compare_metrics(cfg, mk):
            per_q.setdefault(s.name, s.compute(data))
        agg = {
            m: bootstrap_mean(v, n_resamples=st.bootstrap_resamples, confidence=st.confidence, seed=st.seed)
            for m, v in per_q.items()
            if m in {s.name for s in specs}
        }
        first = [first_relevant_rank(rk, i, q, corpus) if q.answerable else None for i, q in enumerate(questions)]
        results[name] = RetrieverResult(name, rk, per_q, agg, first)

    comparisons = []
    for spec in compare_metrics(cfg, mk):
        for a, b in itertools.combinations(results, 2):
            comparisons.append(
                compare_paired(
                    results[a].per_question[spec.name],
                    results[b].per_question[spec.name],
                    names=(a, b),
                    metric=spec.name,
                    binary=spec.binary,
                    n_resamples=st.permutation_resamples,
                    bootstrap_resamples=st.bootstrap_resamples,
                    confidence=st.confidence,
                    seed=st.seed,
                    alpha=st.alpha,
                )
            )
    apply_holm(comparisons, alpha=st.alpha)
    return RetrievalResults(questions, answerable, specs, mk, results, comparisons)


@collection_paused()
def question_records(
    res: RetrievalResults, corpus: Corpus, show: int, diagnoses: dict[str, dict] | None = None
) -> list[dict]:
    """One JSON-ready record per question and retriever, for ``retrieval.jsonl``.

    ``diagnoses`` maps retriever -> question index -> an object with ``to_dict()`` (a miss's cause).
    """
    diagnoses = diagnoses or {}
    pos = {q: j for j, q in enumerate(res.answerable)}
    labels = [label_provenance(q, corpus) for q in res.questions]
    records = []
    for name, r in res.retrievers.items():
        for i, q in enumerate(res.questions):
            top = r.rankings.top[i][:show]
            record = {
                "question_id": q.id,
                "question": q.question,
                "retriever": name,
                "answerable": q.answerable,
                "labels": labels[i],
                "first_relevant_rank": r.first_rank[i],
                "miss": res.is_miss(name, i),
                "relevant": {cid: g for cid, g in q.qrels.items() if g > 0},
                "retrieved": [
                    {"id": corpus.chunks[c].id, "score": float(s), "grade": q.qrels.get(corpus.chunks[c].id, 0)}
                    for c, s in zip(top, r.rankings.scores[i][:show])
                    if c >= 0
                ],
                **({"diagnosis": diagnoses[name][i].to_dict()} if i in diagnoses.get(name, {}) else {}),
                **({"metrics": {m: float(v[pos[i]]) for m, v in r.per_question.items()}} if i in pos else {}),
            }
            records.append(record)
    return records


def write_records(path: Path, records: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
