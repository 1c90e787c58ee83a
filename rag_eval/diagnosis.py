"""Why did retrieval miss? A probable cause for every miss, by transparent rules.

Rules are tried in this order; the first that fires names the cause, and the diagnosis records
the rule with its threshold and the figures that made it fire. Thresholds live in the config's
``diagnosis:`` section.

1. suspect_label: the top-ranked chunk holds at least ``reference_coverage`` of the reference
   answer's content words, more than any labelled chunk: the label is probably wrong.
2. distractor: a chunk ranked above every relevant one is a near-duplicate of a relevant chunk
   (word 5-gram Jaccard >= ``near_duplicate``).
3. exact_token: the question names a symbol or identifier that occurs in the relevant chunk, and
   a keyword (bm25) retriever finds the chunk within k while this retriever does not.
4. long_passage: the relevant chunk is at least ``long_factor`` times the median chunk length
   (and the evidence quote, if any, is at most ``small_part`` of it).
5. vocabulary_gap: at most ``vocabulary_overlap`` of the question's content words occur in the
   relevant chunk, and no keyword or embedding retriever finds it within k.
6. unclear: none of the above.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from statistics import median

from rag_eval.config import AuditConfig, Bm25Config, DenseConfig
from rag_eval.retrieval.stage import RetrievalResults
from rag_eval.text import content_tokens, coverage, exact_tokens, jaccard, shingles, tokens
from rag_eval.types import Corpus, Question

CAUSES = ("long_passage", "vocabulary_gap", "exact_token", "distractor", "suspect_label", "unclear")
FIXES = {
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
            self._distractor,
            self._exact_token,
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

    def _long_passage(self, retriever, q, question: Question, relevant, ranking, k):
        longest = max(relevant, key=lambda i: len(self.corpus.chunks[i].text))
        length = len(self.corpus.chunks[longest].text)
        if length < self.dc.long_factor * self.median_len:
            return None
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
