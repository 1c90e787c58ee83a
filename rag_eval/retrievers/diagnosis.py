"""Why did retrieval miss? Every cause that fits a miss, decided by its evidence and by the fixes
tried before they are advised.

Each rule looks for the evidence of one cause and, where it finds it, proposes the cause with the
figures it saw. A cause that implies a fix is only given when the fix, simulated on this very
question, confirms it:

- ``chunk_boundary`` and ``long_passage`` imply re-chunking: on a folder corpus the other chunkers
  are really applied (``rechunk.py``); a chunking cause whose re-chunking fixes nothing for this
  question is dropped (the neighbour ranking high was the same topic, not a cut). Where
  re-chunking cannot be simulated (chunks given as a file) the cause stays, marked unconfirmed,
  after every cause whose evidence was seen directly.
- ``fusion_buried`` is seen directly (a part of the hybrid ranks the chunk within k); the report
  adds whether another ``rrf_k`` or weighting fixes it.
- ``exact_token``, ``keyword_only`` and ``paraphrase`` (one kind of search finds what the other
  misses) add whether a hybrid of the two fixes it.

The causes that fit are ordered by how specific their evidence is, most specific first; the first
is the cause, the others are reported with their own evidence (``also``). The order:

1. suspect_label: a chunk in the top k answers the question: its text matches the evidence quote
   after normalisation, one passage of it holds the reference answer, or it names every identifier
   the reference names where the labelled chunk lacks one (``answer_match.py``); with an embedding
   model, also a chunk holding enough of the reference whose best passage is as close in meaning
   to the question and its reference as the labelled chunk's. A label problem before anything else.
2. generic_label: an evidence quote has fewer than ``generic_words`` content words, or the label
   resolves to more than ``generic_chunks`` chunks.
3. fusion_buried: a hybrid misses a chunk one of its parts ranks within k.
4. distractor (near-duplicate): a chunk above the relevant one is a near-duplicate of it (word
   5-gram Jaccard >= ``near_duplicate``).
5. long_passage: the relevant chunk is at least ``long_factor`` times the median chunk length, the
   evidence is at most ``small_part`` of it, the question shares more than ``vocabulary_overlap`` of
   its words with it, and re-chunking fixes the miss. Before the search causes: when splitting the
   chunk fixes the miss, the chunk's length is why the other search's rank does not carry over.
6. exact_token: the question names a symbol found in the relevant chunk, and keyword search finds
   the chunk within k while this (embedding) retriever does not.
7. keyword_only: keyword search finds the chunk within k, this embedding retriever does not.
8. paraphrase: this keyword retriever (or a hybrid's keyword part) misses a chunk that embedding
   search ranks within k, or within ``near_factor`` x k while keyword search ranks it beyond that
   and the question shares at most ``paraphrase_overlap`` of its words with it.
9. chunk_boundary: the chunk next to a relevant one in the same document ranks within k, and
   re-chunking fixes the miss.
10. distractor (same topic): the relevant chunk ranks just below k (at most ``near_factor`` x k)
    and another chunk (not its neighbour), ranked within k, is on the same topic: it shares at
    least as many of the question's words, or its heading shares a word with the relevant chunk's.
    For an embedding retriever that nearly found the chunk this comes before exact_token and
    keyword_only (6, 7): the search is not what failed, the chunks above it are what keep it out.
11. vocabulary_gap: at most ``vocabulary_overlap`` of the question's words are in the passage and no
    keyword or embedding retriever ranks it within ``near_factor`` x k.
12. unclear: none of the above.

The order and the thresholds were set on the tuning parts of ``benchmarks/diagnosis/data/`` (blind expert
readings of misses over the Python reference topics, attrs' and structlog's docs) and are measured
on its held-out part (marshmallow's docs); see ``benchmarks/diagnosis/diagnosis.py``.

Thresholds live in the config's ``diagnosis:`` section. :func:`simulate_fixes` tries the fusion and
hybrid fixes on every question (misses and hits); ``rechunk.py`` the other chunkers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property
from statistics import median
from typing import Any

from rag_eval.config import AuditConfig
from rag_eval.data.records import collection_paused
from rag_eval.engine import make_engine
from rag_eval.retrievers.answer_match import (
    MIN_WORDS,
    MeaningMatch,
    answer_in_chunk,
    distinct_symbols,
    holds_reference,
    meaning_query,
    passage_share,
)
from rag_eval.retrievers.dense import DenseRetriever
from rag_eval.retrievers.hybrid import fuse
from rag_eval.retrievers.rankings import RetrieverContext
from rag_eval.retrievers.rechunk import CHUNKING_CAUSES, rechunk_retrievers, simulate_rechunking
from rag_eval.retrievers.retrieval_records import OtherCause, SimulatedFix
from rag_eval.retrievers.settings import Bm25Config, DenseConfig, HybridConfig
from rag_eval.retrievers.stage import RetrievalResults, first_relevant_rank
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
SEARCH_CAUSES = ("exact_token", "keyword_only", "paraphrase")
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
    "distractor": "another chunk on the same topic outranks the answer: deduplicate the corpus, label both chunks, "
    "or make the question name what sets its passage apart",
    "suspect_label": "a retrieved chunk already answers the question: check the label (add that chunk)",
    "unclear": "no rule fired: read the question and the retrieved chunks",
}


@dataclass
class Diagnosis:
    """A miss's cause: the rule that found it, its figures, how it was decided, and the other
    causes that also fit (each ``{cause, rule, evidence, decided}``)."""

    cause: str
    rule: str
    evidence: dict
    decided: str = ""
    also: list[dict] = field(default_factory=list)
    dropped: list[dict] = field(default_factory=list)  # causes whose simulated fix did not confirm them

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def causes(self) -> list[str]:
        """The cause and every other cause that fits, most specific first."""
        return [self.cause] + [OtherCause.load(a).cause for a in self.also]


class Confirmations:
    """Which simulated fixes fix which misses: ``{(retriever, question id)}`` per kind of fix."""

    def __init__(self, fixes: list[SimulatedFix] | list[dict] | None, rechunked: set[str] | None = None):
        self.simulated = fixes is not None
        self.rechunked = rechunked or set()
        self.by_kind: dict[str, dict[tuple[str, str], str]] = {"rechunk": {}, "fusion": {}, "hybrid": {}}
        for f in map(SimulatedFix.load, fixes or []):
            cfg = f.config
            kind = "rechunk" if "corpus" in cfg else "hybrid" if cfg.get("type") == "hybrid" else "fusion"
            for qid in f.fixes:
                self.by_kind[kind].setdefault((f.retriever, qid), f.change)

    def fixed_by(self, kind: str, retriever: str, qid: str) -> str | None:
        return self.by_kind[kind].get((retriever, qid))


class Diagnoser:
    """Diagnoses the misses of every retriever of one retrieval stage."""

    def __init__(
        self, cfg: AuditConfig, corpus: Corpus, results: RetrievalResults, meaning: MeaningMatch | None = None
    ):
        self.cfg, self.dc, self.corpus, self.res, self.meaning = cfg, cfg.diagnosis, corpus, results, meaning
        types = cfg.retrieval.retrievers
        self.keyword = [n for n, r in types.items() if isinstance(r, Bm25Config)]
        self.embedding = [n for n, r in types.items() if isinstance(r, DenseConfig)]
        self.hybrid = {n: r for n, r in types.items() if isinstance(r, HybridConfig)}
        self._tokens: dict[int, set[str]] = {}
        self._candidates: dict[tuple[str, int], list[Diagnosis]] = {}
        self.near = int(self.dc.near_factor * results.miss_k)  # a rank this close is nearly found

    def prepare_meaning(self) -> None:
        """Embeds, once, what the suspect_label rule compares by meaning: the question and reference
        of every miss, and the passages of its top-k and labelled chunks."""
        if self.meaning is None:
            return
        k, queries, chunks = self.res.miss_k, [], {}
        for name, r in self.res.retrievers.items():
            for q, question in enumerate(self.res.questions):
                if not question.reference or not self.res.is_miss(name, q):
                    continue
                queries.append(meaning_query(question))
                ids = [i for i in r.rankings.top[q][:k] if i >= 0]
                ids += [self.corpus.index[c] for c, g in question.qrels.items() if g > 0]
                chunks.update({self.corpus.chunks[i].id: self.corpus.chunks[i].passage for i in ids})
        self.meaning.prepare(queries, chunks)

    @cached_property
    def median_len(self) -> float:
        """The median chunk length in characters (made when a rule first needs it)."""
        return median(len(c.text) for c in self.corpus.chunks)

    def chunk_tokens(self, i: int) -> set[str]:
        if i not in self._tokens:
            self._tokens[i] = set(tokens(self.corpus.chunks[i].passage))
        return self._tokens[i]

    def found_by(self, names: list[str], q: int) -> dict[str, int | None]:
        return {n: self.res.retrievers[n].first_rank[q] for n in names}

    def candidates(self, retriever: str, q: int) -> list[Diagnosis]:
        """Every cause whose evidence this miss shows, most specific first (not yet confirmed; fresh
        copies of the ones found the first time this miss was looked at)."""
        if (retriever, q) not in self._candidates:
            self._candidates[(retriever, q)] = self._find_candidates(retriever, q)
        return [Diagnosis(d.cause, d.rule, d.evidence) for d in self._candidates[(retriever, q)]]

    def _find_candidates(self, retriever: str, q: int) -> list[Diagnosis]:
        question = self.res.questions[q]
        k = self.res.miss_k
        relevant = [self.corpus.index[c] for c, g in question.qrels.items() if g > 0]
        ranking = [i for i in self.res.retrievers[retriever].rankings.top[q] if i >= 0]
        found: list[Diagnosis] = []
        rules = [
            self._suspect_label,
            self._generic_label,
            self._fusion_buried,
            self._near_duplicate,
            self._long_passage,
            self._exact_token,
            self._keyword_only,
            self._paraphrase,
            self._chunk_boundary,
            self._same_topic,
            self._vocabulary_gap,
        ]
        rank = self.res.retrievers[retriever].first_rank[q]
        if retriever in self.embedding and rank is not None and rank <= self.near:
            # Embedding search nearly found it: what keeps it out is the chunks above it, not the
            # kind of search (keyword search finding it too is reported in ``also``).
            rules.remove(self._same_topic)
            rules.insert(rules.index(self._exact_token), self._same_topic)
        for rule in rules:
            d = rule(retriever, q, question, relevant, ranking, k)
            if d and all(d.cause != f.cause for f in found):
                found.append(d)
        return found

    def diagnose(self, retriever: str, q: int, confirm: Confirmations | None = None) -> Diagnosis:
        """The cause of a miss: the most specific cause that fits and, where it implies a fix, that
        the simulated fix confirms; the other causes that fit in ``also``."""
        confirm = confirm or Confirmations(None)
        qid = self.res.questions[q].id
        kept, dropped = [], []
        for d in self.candidates(retriever, q):
            if self._decide(d, retriever, qid, confirm):
                kept.append(d)
            else:
                dropped.append({"cause": d.cause, "rule": d.rule, "evidence": d.evidence, "decided": d.decided})
        if not kept:
            kept = [
                Diagnosis(
                    "unclear",
                    "no rule fired",
                    {"rank": self.res.retrievers[retriever].first_rank[q]},
                    "no cause's evidence was found" + (" (or none was confirmed)" if dropped else ""),
                )
            ]
        # A chunking cause nobody could simulate is weaker evidence than any cause seen directly.
        kept.sort(key=lambda d: d.decided.startswith("unconfirmed"))
        first = kept[0]
        first.also = [
            {"cause": d.cause, "rule": d.rule, "evidence": d.evidence, "decided": d.decided} for d in kept[1:]
        ]
        first.dropped = dropped
        return first

    def _decide(self, d: Diagnosis, retriever: str, qid: str, confirm: Confirmations) -> bool:
        """Whether the cause is given; sets how it was decided."""
        if d.cause in CHUNKING_CAUSES:
            fix = confirm.fixed_by("rechunk", retriever, qid)
            if fix:
                d.decided = f"confirmed: simulated re-chunking ({fix}) fixes this miss"
                return True
            if retriever in confirm.rechunked:
                d.decided = "dropped: no simulated re-chunking fixes this miss"
                return False
            d.decided = "unconfirmed: re-chunking could not be simulated (needs a folder corpus chunked by rag-eval)"
            return True
        if d.cause == "fusion_buried":
            fix = confirm.fixed_by("fusion", retriever, qid)
            d.decided = _decided("from the component ranks", fix, confirm.simulated, "no simulated rrf_k or weighting")
            return True
        if d.cause in SEARCH_CAUSES and retriever not in self.hybrid:
            fix = confirm.fixed_by("hybrid", retriever, qid)
            d.decided = _decided("from the other search's rank", fix, confirm.simulated, "no simulated hybrid")
            return True
        d.decided = "from the rule's evidence (no fix to simulate)"
        return True

    def _suspect_label(self, retriever, q, question: Question, relevant, ranking, k):
        label_texts = [self.corpus.chunks[i].passage for i in relevant]
        dc = self.dc
        for pos, i in enumerate(ranking[:k]):
            if i in relevant:
                continue
            c = self.corpus.chunks[i]
            found = answer_in_chunk(question, c.passage, label_texts, dc.reference_coverage, dc.reference_margin)
            if found:
                how = {
                    "evidence quote": "matches the evidence quote after normalisation",
                    "reference answer": f"has a passage holding >= {dc.reference_coverage:.0%} of the reference "
                    f"answer's content words, {dc.reference_margin:.0%} more than the labelled chunk's best (and every "
                    "symbol it names)",
                    "reference identifiers": "names every identifier the reference answer names, the labelled chunk "
                    f"does not, and has a passage holding >= {dc.reference_coverage:.0%} of the reference's words",
                }[found["by"]]
                return Diagnosis(
                    "suspect_label",
                    f"a chunk in the top {k} {how}",
                    {"top_chunk": c.id, "top_rank": pos + 1, **found},
                )
        return self._answers_by_meaning(question, relevant, ranking, k)

    def _answers_by_meaning(self, question: Question, relevant, ranking, k):
        """A top chunk holding enough of the reference's words whose best passage is at least as
        close in meaning to the question and its reference as the labelled chunk's best."""
        ref = set(content_tokens(question.reference or ""))
        if self.meaning is None or len(ref) < MIN_WORDS:
            return None
        dc, chunks, query = self.dc, self.corpus.chunks, meaning_query(question)
        label = max(self.meaning.closeness(query, chunks[i].id) for i in relevant)
        named = distinct_symbols(question.reference or "")
        for pos, i in enumerate(ranking[:k]):
            if i in relevant:
                continue
            share = passage_share(ref, tokens(chunks[i].passage))
            if not holds_reference(share, ref, dc.reference_coverage) or not all(
                s <= self.chunk_tokens(i) for s in named
            ):
                continue
            close = self.meaning.closeness(query, chunks[i].id)
            if close >= label + dc.meaning_margin:
                return Diagnosis(
                    "suspect_label",
                    f"a chunk in the top {k} has a passage holding >= {dc.reference_coverage:.0%} of the reference "
                    "answer's content words and at least as close in meaning to the question and its reference as "
                    "the labelled chunk's best passage",
                    {
                        "top_chunk": chunks[i].id,
                        "top_rank": pos + 1,
                        "by": "reference answer (meaning)",
                        "reference_share": round(share, 2),
                        "closeness": round(close, 3),
                        "label_closeness": round(label, 3),
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

    def _near_duplicate(self, retriever, q, question, relevant, ranking, k):
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

    def _same_topic(self, retriever, q, question: Question, relevant, ranking, k):
        rank = self.res.retrievers[retriever].first_rank[q]
        if rank is None or rank > self.near:
            return None
        words = set(content_tokens(question.question))
        if not words:
            return None
        chunks = self.corpus.chunks
        own = max(coverage(words, self.chunk_tokens(r)) for r in relevant)
        headings = set().union(*(content_tokens(chunks[r].title or "") for r in relevant))
        for pos, i in enumerate(ranking[:k]):
            if i in relevant or self._neighbour(i, relevant):
                continue  # a neighbour ranking high is the chunk-boundary rule's evidence
            other = coverage(words, self.chunk_tokens(i))
            shared = sorted(headings & set(content_tokens(chunks[i].title or "")))
            if other >= own or shared:
                return Diagnosis(
                    "distractor",
                    f"the relevant chunk ranks just below the top {k} (at most {self.near}) and another chunk "
                    "on the same topic (not its neighbour), within the top k, "
                    + (
                        "shares at least as many of the question's words"
                        if other >= own
                        else f"has a heading on the same thing ({', '.join(shared)})"
                    ),
                    {
                        "distractor": chunks[i].id,
                        "distractor_rank": pos + 1,
                        "rank": rank,
                        "question_words_in_distractor": round(other, 2),
                        "question_words_in_relevant": round(own, 2),
                        "heading_words_shared": shared,
                    },
                )
        return None

    def _neighbour(self, i: int, relevant: list[int]) -> bool:
        chunks = self.corpus.chunks
        return any(abs(i - r) == 1 and chunks[i].doc_id and chunks[i].doc_id == chunks[r].doc_id for r in relevant)

    def _exact_token(self, retriever, q, question, relevant, ranking, k):
        if retriever in self.keyword:
            return None
        names = exact_tokens(question.question)
        in_chunk = [
            t for t in names if any(set(tokens(t)) and set(tokens(t)) <= self.chunk_tokens(i) for i in relevant)
        ]
        hits = {n: r for n, r in self.found_by(self.keyword, q).items() if r is not None and r <= k}
        if in_chunk and hits and retriever not in self.hybrid:
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
        near = self.near
        if retriever in self.hybrid:  # a hybrid whose keyword part fails and embedding part nearly finds it
            parts = self.hybrid[retriever].of
            keyword, embedding = [p for p in parts if p in self.keyword], [p for p in parts if p in self.embedding]
        elif retriever in self.keyword:
            keyword, embedding = [retriever], self.embedding
        else:
            return None
        if not keyword:
            return None
        hits = {n: r for n, r in self.found_by(embedding, q).items() if r is not None and r <= near}
        if not hits:
            return None
        words = set(content_tokens(question.question))
        overlap = max(coverage(words, self.chunk_tokens(i)) for i in relevant) if words else 0.0
        if min(hits.values()) > k and (
            overlap > self.dc.paraphrase_overlap
            or any(r is not None and r <= near for r in self.found_by(keyword, q).values())
        ):
            return None  # both nearly find it, or they share words: the wording is not what differs
        return Diagnosis(
            "paraphrase",
            f"embedding search ranks the chunk within {near} (keyword search not within {k})"
            + (
                f" and the question shares <= {self.dc.paraphrase_overlap:.0%} of its words with it"
                if min(hits.values()) > k
                else ""
            ),
            {
                "rank": self.res.retrievers[retriever].first_rank[q],
                "embedding_ranks": hits,
                "overlap": round(overlap, 2),
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
        near = self.near
        if overlap <= self.dc.vocabulary_overlap and all(r is None or r > near for r in ranks.values()):
            return Diagnosis(
                "vocabulary_gap",
                f"<= {self.dc.vocabulary_overlap:.0%} of the question's words are in the passage, and "
                f"neither keyword nor embedding search ranks it within {near}",
                {"overlap": round(overlap, 2), "ranks": ranks},
            )
        return None


def diagnose_misses(
    cfg: AuditConfig,
    corpus: Corpus,
    results: RetrievalResults,
    fixes: list[SimulatedFix] | list[dict] | None = None,
    rechunked: set[str] | None = None,
    meaning: MeaningMatch | None = None,
    diagnoser: Diagnoser | None = None,
) -> dict[str, dict[int, Diagnosis]]:
    """``{retriever: {question index: Diagnosis}}`` for every miss. ``fixes``: the simulated fixes
    that confirm causes implying them (None: nothing simulated yet); ``rechunked``: the retrievers
    re-chunking was simulated for (a chunking cause it does not confirm is dropped); ``meaning``:
    compares passages by meaning for suspect_label (None: by words only); ``diagnoser``: one that
    looked at these misses before (its causes found are reused)."""
    d = diagnoser or Diagnoser(cfg, corpus, results, meaning)
    if diagnoser is None:
        d.prepare_meaning()
    confirm = Confirmations(fixes, rechunked)
    return {
        name: {q: d.diagnose(name, q, confirm) for q in range(len(results.questions)) if results.is_miss(name, q)}
        for name in results.retrievers
    }


@collection_paused()
def diagnose_with_fixes(cfg: AuditConfig, corpus: Corpus, results: RetrievalResults, cache_dir) -> dict:
    """The retrieval stage's diagnosis: causes proposed, fixes simulated (fusion and hybrid on every
    question, re-chunking where a chunking cause is proposed), then causes decided by those fixes.
    Sets ``results.simulated_fixes`` and returns the diagnoses."""
    diagnoser = Diagnoser(cfg, corpus, results, meaning_match(cfg, corpus, cache_dir))
    diagnoser.prepare_meaning()
    proposed = diagnose_misses(cfg, corpus, results, diagnoser=diagnoser)
    fixes = simulate_fixes(cfg, corpus, results)
    rechunked = rechunk_retrievers(cfg, corpus, results, proposed)
    if rechunked:
        fixes += map(SimulatedFix.load, simulate_rechunking(cfg, corpus, results, proposed, cache_dir))
    results.simulated_fixes = sorted(fixes, key=lambda f: -f.net)
    return diagnose_misses(cfg, corpus, results, results.simulated_fixes, rechunked, diagnoser=diagnoser)


def meaning_match(cfg: AuditConfig, corpus: Corpus, cache_dir) -> MeaningMatch | None:
    """Passages compared by the embedding model of the stage's first dense retriever (its disk
    cache too); None when there is none or ``diagnosis.answer_meaning`` is off."""
    dense = [(n, r) for n, r in cfg.retrieval.retrievers.items() if isinstance(r, DenseConfig)]
    if not (dense and cfg.diagnosis.answer_meaning):
        return None

    name, r = dense[0]
    retriever = DenseRetriever(corpus, r, name, RetrieverContext(cache_dir, make_engine(cfg.engine)))

    def embed(texts: list[str], kind: str):
        prefix = r.query_prefix if kind == "query" else r.passage_prefix
        return retriever.embed([prefix + t for t in texts], f"diagnosis {kind}")

    return MeaningMatch(embed)


def simulate_fixes(cfg: AuditConfig, corpus: Corpus, results: RetrievalResults) -> list[SimulatedFix]:
    """Fixes tried on every answerable question before anyone applies them: for each hybrid, other
    ``rrf_k`` values and weights; for each keyword or embedding retriever with misses, a hybrid
    with a retriever of the other kind. Each says how many misses it fixes and how many hits it
    breaks (at ``miss_k``), from the same fusion the retrieval stage runs."""
    types = cfg.retrieval.retrievers
    k, depth = results.miss_k, cfg.retrieval.depth
    answerable = results.answerable
    out = []

    def outcome(name: str, rankings, change: str, config: dict) -> SimulatedFix | None:
        before = [results.is_miss(name, q) for q in answerable]
        after = []
        for q in answerable:
            rank = first_relevant_rank(rankings, q, results.questions[q], corpus)
            after.append(rank is None or rank > k)
        fixed = [results.questions[q].id for q, b, a in zip(answerable, before, after) if b and not a]
        caused = [results.questions[q].id for q, b, a in zip(answerable, before, after) if a and not b]
        if not fixed and not caused:
            return None
        return SimulatedFix(
            retriever=name,
            change=change,
            config=config,
            fixes=fixed,
            causes=caused,
            net=len(fixed) - len(caused),
            summary=f"{change} would fix {len(fixed)} miss{'es' if len(fixed) != 1 else ''} and cause "
            f"{len(caused)} (at k={k})",
        )

    for name, h in types.items():
        if not isinstance(h, HybridConfig):
            continue
        parts = [results.retrievers[p].rankings for p in h.of]
        # (what changes, the config change as the fix records it, the fusion's rrf_k and weights)
        trials: list[tuple[str, dict[str, Any], Any, Any]] = [
            (f"rrf_k {v:g}", {"rrf_k": v}, v, h.weights) for v in (10, 30, 100) if v != h.rrf_k
        ]
        if len(h.of) == 2:
            trials += [(f"weights {w}", {"weights": w}, h.rrf_k, w) for w in ([2.0, 1.0], [1.0, 2.0]) if w != h.weights]
        for change, upd, rrf_k, weights in trials:
            ranked = fuse(parts, len(corpus), depth, rrf_k, weights)
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
    return sorted(out, key=lambda f: -f.net)


def _decided(basis: str, fix: str | None, simulated: bool, tried: str) -> str:
    """How a cause was decided: its evidence, and what the simulated fix showed."""
    if fix:
        return f"{basis}; confirmed: {fix} fixes this miss"
    return f"{basis}; {tried} fixes it" if simulated else basis
