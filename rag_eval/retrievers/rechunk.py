"""Re-chunking tried before it is advised.

When misses point at chunking (``long_passage`` or ``chunk_boundary``) and the corpus is a folder
of documents that rag-eval chunks itself, each alternative chunker is really applied: the folder
is chunked again, every question labelled by evidence quotes is labelled again on the new chunks
(a quote that no longer sits inside one chunk leaves its question unlabelled: that is a miss the
re-chunking causes), the same built-in retrievers rank the new chunks, and the misses before and
after are compared question by question. The result reads like the other simulated fixes:
"fixed-size chunks of 500 characters would fix 1 miss and cause 2".

Questions labelled only by chunk ids (``answer_in``) cannot follow their chunks into a new
chunking, so they are left out and the count of questions simulated is given.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rag_eval.config import AuditConfig
from rag_eval.data.corpus import load_corpus
from rag_eval.data.settings import ChunkerConfig
from rag_eval.data.testset import EvidenceIndex
from rag_eval.progress import quiet, say
from rag_eval.retrievers.factory import run_retrievers
from rag_eval.retrievers.settings import Bm25Config, DenseConfig, HybridConfig
from rag_eval.retrievers.stage import evaluate
from rag_eval.types import Corpus

# The miss causes (rag_eval/retrievers/diagnosis.py) that a re-chunking could fix.
CHUNKING_CAUSES = ("long_passage", "chunk_boundary")


def alternatives(cc: ChunkerConfig) -> list[tuple[str, ChunkerConfig]]:
    """Other chunkers worth trying, each with how the report names it."""
    out: list[tuple[str, ChunkerConfig]] = []
    if cc.type == "heading":
        for m in (1500, 800):
            if cc.max_chars is None or m < cc.max_chars:
                out.append((f"heading sections split at {m:,} characters", cc.model_copy(update={"max_chars": m})))
    for size in (2000, 1000, 500):
        alt = ChunkerConfig(type="fixed", size=size, overlap=size // 5)
        if alt != cc:
            out.append((f"fixed-size chunks of {size:,} characters (overlap {size // 5})", alt))
    return out


def _own_retrievers(cfg: AuditConfig) -> dict:
    """The retrievers rag-eval can rerun on new chunks (its built-in ones, hybrids of those)."""
    own = {n: r for n, r in cfg.retrieval.retrievers.items() if isinstance(r, (Bm25Config, DenseConfig, HybridConfig))}
    return {n: r for n, r in own.items() if not isinstance(r, HybridConfig) or all(p in own for p in r.of)}


def rechunk_retrievers(cfg: AuditConfig, corpus: Corpus, results, diagnoses: dict[str, dict]) -> set[str]:
    """The retrievers re-chunking is simulated for (none: the corpus is not a folder rag-eval chunks,
    re-chunking is off or the corpus too large, no miss has a chunking cause among its causes, or
    no question is labelled by quotes)."""
    dc = cfg.diagnosis
    if not (cfg.corpus.folder and dc.rechunk and len(corpus) <= dc.rechunk_max_chunks):
        return set()
    if not any(set(d.causes) & set(CHUNKING_CAUSES) for per in diagnoses.values() for d in per.values()):
        return set()
    if not any(results.questions[i].evidence for i in results.answerable):
        return set()
    return set(_own_retrievers(cfg))


def simulate_rechunking(
    cfg: AuditConfig, corpus: Corpus, results, diagnoses: dict[str, dict], cache_dir: Path
) -> list[dict]:
    """Simulated fixes (see ``diagnosis.simulate_fixes`` for the record) for other chunkers."""
    own = _own_retrievers(cfg)
    if not rechunk_retrievers(cfg, corpus, results, diagnoses):
        return []
    picked = [i for i in results.answerable if results.questions[i].evidence]
    questions = [results.questions[i] for i in picked]
    out = []
    tried = alternatives(cfg.corpus.chunker)
    say(
        f"diagnosing misses: the corpus chunked {len(tried)} other way{'s' if len(tried) != 1 else ''} "
        f"({', '.join(change for change, _ in tried)}) and searched again, to test chunking as their cause"
    )
    for change, chunker in tried:
        alt = cfg.model_copy(
            update={
                "corpus": cfg.corpus.model_copy(update={"chunker": chunker}),
                "retrieval": cfg.retrieval.model_copy(update={"retrievers": own}),
            }
        )
        with quiet():  # the stage's own lines would read as the audit's retrieval again
            new_corpus = load_corpus(alt)
            index = EvidenceIndex(new_corpus)
            relabelled = [
                dataclasses.replace(q, qrels={cid: 1 for e in q.evidence for cid in index.find(e)}) for q in questions
            ]
            split = [q.id for q in relabelled if not q.qrels]
            res = evaluate(alt, new_corpus, relabelled, run_retrievers(alt, new_corpus, relabelled, cache_dir))
        for name in own:
            before = [results.is_miss(name, i) for i in picked]
            after = [res.is_miss(name, j) for j in range(len(relabelled))]
            fixed = [q.id for q, b, a in zip(questions, before, after) if b and not a]
            caused = [q.id for q, b, a in zip(questions, before, after) if a and not b]
            if not fixed and not caused:
                continue
            k = results.miss_k
            out.append(
                {
                    "retriever": name,
                    "change": change,
                    "config": {"corpus": {"chunker": chunker.model_dump(exclude_defaults=False)}},
                    "fixes": fixed,
                    "causes": caused,
                    "net": len(fixed) - len(caused),
                    "simulated_on": len(picked),
                    "labels_split": split,
                    "chunks": len(new_corpus),
                    "summary": f"{change} ({len(new_corpus)} chunks) would fix {len(fixed)} "
                    f"miss{'es' if len(fixed) != 1 else ''} and cause {len(caused)} for {name} (at k={k}; "
                    f"{len(picked)} questions labelled by quotes"
                    + (f", {len(split)} of whose quotes would be split between chunks" if split else "")
                    + ")",
                }
            )
    return out
