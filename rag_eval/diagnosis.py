"""Why did retrieval miss? A probable cause for every miss, by transparent rules.

Rules are tried in this order; the first that fires names the cause, and the diagnosis records
the rule with its threshold and the figures that made it fire. Thresholds live in the config's
``diagnosis:`` section.

Specific causes come before broad ones:

1. suspect_label: the top-ranked chunk holds at least ``reference_coverage`` of the reference
   answer's content words, more than any labelled chunk: the label is probably wrong.
2. generic_label: an evidence quote has fewer than ``generic_words`` content words, or the label
   resolves to more than ``generic_chunks`` chunks: the label says little about the answer, so
   neither its hits nor its misses mean much.
3. distractor: a chunk ranked above every relevant one is a near-duplicate of a relevant chunk
   (word 5-gram Jaccard >= ``near_duplicate``).
4. chunk_boundary: the chunk next to a relevant one in the same document ranks within k while the
   relevant one does not: the retriever found the place, and the boundary cut the evidence from
   the words the question uses (more overlap or larger chunks; the re-chunking simulation tries it).
5. fusion_buried: a hybrid retriever misses a chunk that one of its parts ranks within k (the
   component ranks are in the evidence).
6. exact_token: the question names a symbol or identifier that occurs in the relevant chunk, and
   a keyword (bm25) retriever finds the chunk within k while this retriever does not.
7. keyword_only: keyword search finds the chunk within k, this (embedding) retriever does not.
8. paraphrase: embedding search finds the chunk within k, this (keyword) retriever does not: the
   question says it in other words.
9. long_passage: the relevant chunk is at least ``long_factor`` times the median chunk length,
   the evidence quote (if any) is at most ``small_part`` of it, and the question shares more
   than ``vocabulary_overlap`` of its words with it (else vocabulary is the likelier cause).
10. vocabulary_gap: at most ``vocabulary_overlap`` of the question's content words occur in the
   relevant chunk, and no keyword or embedding retriever finds it within k.
11. unclear: none of the above.

Where a fix can be tried cheaply, :func:`simulate_fixes` tries it on every question (misses and
hits) before anyone follows it: other ``rrf_k`` or weights for a hybrid, or a hybrid of a
keyword and an embedding retriever; ``rechunk.py`` tries other chunkers on a folder corpus.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from statistics import median

from rag_eval.config import AuditConfig, Bm25Config, DenseConfig, HybridConfig
from rag_eval.retrieval.stage import RetrievalResults
from rag_eval.text import content_tokens, coverage, exact_tokens, jaccard, shingles, tokens
from rag_eval.types import Corpus, Question

CAUSES = (
    "suspect_label",
    "generic_label",
    "distractor",
    "chunk_boundary",
    "fusion_buried",
    "exact_token",
    "keyword_only",
    "paraphrase",
    "long_passage",
    "vocabulary_gap",
    "unclear",
)
FIXES = {
    "generic_label": "the label says little about the answer: quote the sentence that answers the question",
    "chunk_boundary": "a chunk boundary cut the evidence from the question's words: more chunk overlap or larger "
    "chunks (see the simulated re-chunking)",
    "fusion_buried": "fusion buried a chunk one part ranked high: try other hybrid weights or rrf_k (see the "
    "simulated fixes)",
    "keyword_only": "keyword search finds it, embeddings do not: use hybrid search",
    "paraphrase": "the question uses other words than the passage: add embedding (hybrid) search or query rewriting",
    "long_passage": "a chunking problem: split long sections (chunker max_chars or fixed-size chunks)",
    "vocabulary_gap": "the question and passage use different words: try query rewriting or a stronger embedding model",
    "exact_token": "embeddings miss exact symbols: use hybrid or keyword search",
    "distractor": "a near-duplicate chunk outranks the answer: deduplicate the corpus or label both chunks",
    "suspect_label": "the top chunk contains the reference answer: check the label",
    "unclear": "no rule fired: read the question and the retrieved chunks",
}


@dataclass
class Diagnosis:
    cause: str
    rule: str
    evidence: dict

    def to_dict(self) -> dict:
        return asdict(self)


class Diagnoser:
    """Diagnoses the misses of every retriever of one retrieval stage."""

    def __init__(self, cfg: AuditConfig, corpus: Corpus, results: RetrievalResults):
        self.cfg, self.dc, self.corpus, self.res = cfg, cfg.diagnosis, corpus, results
        self.median_len = median(len(c.text) for c in corpus.chunks)
        types = cfg.retrieval.retrievers
        self.keyword = [n for n, r in types.items() if isinstance(r, Bm25Config)]
        self.embedding = [n for n, r in types.items() if isinstance(r, DenseConfig)]
        self.hybrid = {n: r for n, r in types.items() if isinstance(r, HybridConfig)}
        self._tokens: dict[int, set[str]] = {}

    def chunk_tokens(self, i: int) -> set[str]:
        if i not in self._tokens:
            self._tokens[i] = set(tokens(self.corpus.chunks[i].passage))
        return self._tokens[i]

    def found_by(self, names: list[str], q: int) -> dict[str, int | None]:
        return {n: self.res.retrievers[n].first_rank[q] for n in names}

    def diagnose(self, retriever: str, q: int) -> Diagnosis:
        question = self.res.questions[q]
        k = self.res.miss_k
        relevant = [self.corpus.index[c] for c, g in question.qrels.items() if g > 0]
        ranking = [i for i in self.res.retrievers[retriever].rankings.top[q] if i >= 0]
        for rule in (
            self._suspect_label,
            self._generic_label,
            self._distractor,
            self._chunk_boundary,
            self._fusion_buried,
            self._exact_token,
            self._keyword_only,
            self._paraphrase,
            self._long_passage,
            self._vocabulary_gap,
        ):
            found = rule(retriever, q, question, relevant, ranking, k)
            if found:
                return found
        return Diagnosis("unclear", "no rule fired", {"rank": self.res.retrievers[retriever].first_rank[q]})

    def _suspect_label(self, retriever, q, question: Question, relevant, ranking, k):
        ref = set(content_tokens(question.reference or ""))
        if len(ref) < 3 or not ranking or ranking[0] in relevant:
            return None
        top_cov = coverage(ref, self.chunk_tokens(ranking[0]))
        label_cov = max(coverage(ref, self.chunk_tokens(i)) for i in relevant)
        if top_cov >= self.dc.reference_coverage and top_cov > label_cov:
            return Diagnosis(
                "suspect_label",
                f"top chunk holds >= {self.dc.reference_coverage:.0%} of the reference's content words, "
                "more than the labelled chunk",
                {
                    "top_chunk": self.corpus.chunks[ranking[0]].id,
                    "top_coverage": round(top_cov, 2),
                    "label_coverage": round(label_cov, 2),
                },
            )
        return None

    def _generic_label(self, retriever, q, question: Question, relevant, ranking, k):
        short = [e for e in question.evidence if len(set(content_tokens(e))) < self.dc.generic_words]
        if short or len(relevant) > self.dc.generic_chunks:
            return Diagnosis(
                "generic_label",
                f"an evidence quote has fewer than {self.dc.generic_words} content words"
                if short
                else f"the label resolves to more than {self.dc.generic_chunks} chunks",
                {"quotes": short, "relevant_chunks": len(relevant)},
            )
        return None

    def _chunk_boundary(self, retriever, q, question: Question, relevant, ranking, k):
        chunks = self.corpus.chunks
        rel = set(relevant)
        for pos, i in enumerate(ranking[:k]):
            if i in rel:
                continue
            for r in relevant:
                if abs(i - r) == 1 and chunks[i].doc_id and chunks[i].doc_id == chunks[r].doc_id:
                    words = set(content_tokens(question.question))
                    return Diagnosis(
                        "chunk_boundary",
                        f"the chunk next to the relevant one in the same document ranks within the top {k}",
                        {
                            "neighbour": chunks[i].id,
                            "neighbour_rank": pos + 1,
                            "relevant": chunks[r].id,
                            "rank": self.res.retrievers[retriever].first_rank[q],
                            "question_words_in_neighbour": round(coverage(words, self.chunk_tokens(i)), 2),
                            "question_words_in_relevant": round(coverage(words, self.chunk_tokens(r)), 2),
                        },
                    )
        return None

    def _distractor(self, retriever, q, question, relevant, ranking, k):
        best = min((ranking.index(i) for i in relevant if i in ranking), default=len(ranking))
        rel_shingles = {i: shingles(self.corpus.chunks[i].text) for i in relevant}
        for pos, i in enumerate(ranking[: min(best, k)]):
            cand = shingles(self.corpus.chunks[i].text)
            for r, sh in rel_shingles.items():
                sim = jaccard(cand, sh)
                if sim >= self.dc.near_duplicate:
                    return Diagnosis(
                        "distractor",
                        f"a chunk above the relevant one is a near-duplicate of it "
                        f"(5-gram Jaccard >= {self.dc.near_duplicate})",
                        {
                            "distractor": self.corpus.chunks[i].id,
                            "distractor_rank": pos + 1,
                            "relevant": self.corpus.chunks[r].id,
                            "similarity": round(sim, 2),
                        },
                    )
        return None

    def _exact_token(self, retriever, q, question, relevant, ranking, k):
        if retriever in self.keyword:
            return None
        names = exact_tokens(question.question)
        in_chunk = [
            t for t in names if any(set(tokens(t)) and set(tokens(t)) <= self.chunk_tokens(i) for i in relevant)
        ]
        hits = {n: r for n, r in self.found_by(self.keyword, q).items() if r is not None and r <= k}
        if in_chunk and hits:
            return Diagnosis(
                "exact_token",
                "the question names a symbol found in the relevant chunk, and keyword search finds it "
                f"within the top {k}",
                {"tokens": in_chunk, "keyword_ranks": hits, "rank": self.res.retrievers[retriever].first_rank[q]},
            )
        return None

    def _fusion_buried(self, retriever, q, question, relevant, ranking, k):
        if retriever not in self.hybrid:
            return None
        parts = self.found_by(self.hybrid[retriever].of, q)
        high = {n: r for n, r in parts.items() if r is not None and r <= k}
        if not high:
            return None
        return Diagnosis(
            "fusion_buried",
            f"a part of the hybrid ranks the chunk within the top {k}, the fusion does not",
            {"rank": self.res.retrievers[retriever].first_rank[q], "component_ranks": parts},
        )

    def _keyword_only(self, retriever, q, question, relevant, ranking, k):
        if retriever in self.keyword or retriever in self.hybrid:
            return None
        hits = {n: r for n, r in self.found_by(self.keyword, q).items() if r is not None and r <= k}
        if not hits:
            return None
        return Diagnosis(
            "keyword_only",
            f"keyword search finds the chunk within the top {k}, this retriever does not",
            {"rank": self.res.retrievers[retriever].first_rank[q], "keyword_ranks": hits},
        )

    def _paraphrase(self, retriever, q, question: Question, relevant, ranking, k):
        if retriever not in self.keyword:
            return None
        hits = {n: r for n, r in self.found_by(self.embedding, q).items() if r is not None and r <= k}
        if not hits:
            return None
        words = set(content_tokens(question.question))
        overlap = max(coverage(words, self.chunk_tokens(i)) for i in relevant) if words else None
        return Diagnosis(
            "paraphrase",
            f"embedding search finds the chunk within the top {k}, keyword search does not",
            {
                "rank": self.res.retrievers[retriever].first_rank[q],
                "embedding_ranks": hits,
                "overlap": None if overlap is None else round(overlap, 2),
            },
        )

    def _long_passage(self, retriever, q, question: Question, relevant, ranking, k):
        longest = max(relevant, key=lambda i: len(self.corpus.chunks[i].text))
        length = len(self.corpus.chunks[longest].text)
        if length < self.dc.long_factor * self.median_len:
            return None
        words = set(content_tokens(question.question))
        if words and max(coverage(words, self.chunk_tokens(i)) for i in relevant) <= self.dc.vocabulary_overlap:
            return None  # few shared words: a vocabulary gap, which re-chunking does not close
        share = max((len(e) for e in question.evidence), default=0) / length if question.evidence else None
        if share is not None and share > self.dc.small_part:
            return None
        return Diagnosis(
            "long_passage",
            f"the relevant chunk is >= {self.dc.long_factor}x the median chunk length"
            + (f" and the evidence is <= {self.dc.small_part:.0%} of it" if share is not None else ""),
            {
                "chunk": self.corpus.chunks[longest].id,
                "length": length,
                "median_length": self.median_len,
                "evidence_share": round(share, 3) if share else share,
            },
        )

    def _vocabulary_gap(self, retriever, q, question: Question, relevant, ranking, k):
        words = set(content_tokens(question.question))
        if not words:
            return None
        overlap = max(coverage(words, self.chunk_tokens(i)) for i in relevant)
        ranks = self.found_by(self.keyword + self.embedding, q)
        if overlap <= self.dc.vocabulary_overlap and all(r is None or r > k for r in ranks.values()):
            return Diagnosis(
                "vocabulary_gap",
                f"<= {self.dc.vocabulary_overlap:.0%} of the question's words are in the passage, and "
                f"neither keyword nor embedding search finds it within the top {k}",
                {"overlap": round(overlap, 2), "ranks": ranks},
            )
        return None


def diagnose_misses(cfg: AuditConfig, corpus: Corpus, results: RetrievalResults) -> dict[str, dict[int, Diagnosis]]:
    """``{retriever: {question index: Diagnosis}}`` for every miss."""
    d = Diagnoser(cfg, corpus, results)
    return {
        name: {q: d.diagnose(name, q) for q in range(len(results.questions)) if results.is_miss(name, q)}
        for name in results.retrievers
    }


def simulate_fixes(cfg: AuditConfig, corpus: Corpus, results: RetrievalResults) -> list[dict]:
    """Fixes tried on every answerable question before anyone applies them: for each hybrid, other
    ``rrf_k`` values and weights; for each keyword or embedding retriever with misses, a hybrid
    with a retriever of the other kind. Each says how many misses it fixes and how many hits it
    breaks (at ``miss_k``), from the same fusion the retrieval stage runs."""
    from rag_eval.retrieval.hybrid import fuse
    from rag_eval.retrieval.stage import first_relevant_rank

    types = cfg.retrieval.retrievers
    k, depth = results.miss_k, cfg.retrieval.depth
    answerable = results.answerable
    out = []

    def outcome(name: str, rankings, change: str, config: dict) -> dict | None:
        before = [results.is_miss(name, q) for q in answerable]
        after = []
        for q in answerable:
            rank = first_relevant_rank(rankings, q, results.questions[q], corpus)
            after.append(rank is None or rank > k)
        fixed = [results.questions[q].id for q, b, a in zip(answerable, before, after) if b and not a]
        caused = [results.questions[q].id for q, b, a in zip(answerable, before, after) if a and not b]
        if not fixed and not caused:
            return None
        return {
            "retriever": name,
            "change": change,
            "config": config,
            "fixes": fixed,
            "causes": caused,
            "net": len(fixed) - len(caused),
            "summary": f"{change} would fix {len(fixed)} miss{'es' if len(fixed) != 1 else ''} and cause "
            f"{len(caused)} (at k={k})",
        }

    for name, h in types.items():
        if not isinstance(h, HybridConfig):
            continue
        parts = [results.retrievers[p].rankings for p in h.of]
        trials = [(f"rrf_k {v:g}", {"rrf_k": v}) for v in (10, 30, 100) if v != h.rrf_k]
        if len(h.of) == 2:
            trials += [(f"weights {w}", {"weights": w}) for w in ([2.0, 1.0], [1.0, 2.0]) if w != h.weights]
        for change, upd in trials:
            ranked = fuse(parts, len(corpus), depth, upd.get("rrf_k", h.rrf_k), upd.get("weights", h.weights))
            found = outcome(name, ranked, f"{name} with {change}", upd)
            if found:
                out.append(found)
    keyword = [n for n, r in types.items() if isinstance(r, Bm25Config)]
    embedding = [n for n, r in types.items() if isinstance(r, DenseConfig)]
    for a in keyword + embedding:
        if not any(results.is_miss(a, q) for q in answerable):
            continue
        for b in embedding if a in keyword else keyword:
            ranked = fuse([results.retrievers[a].rankings, results.retrievers[b].rankings], len(corpus), depth, 60)
            found = outcome(a, ranked, f"a hybrid of {a} and {b} (rrf_k 60)", {"type": "hybrid", "of": [a, b]})
            if found:
                out.append(found)
    return sorted(out, key=lambda f: -f["net"])
