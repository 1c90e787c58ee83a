"""Keyword retrieval: BM25 (Okapi, as rank-bm25's BM25Okapi computes it) as a sparse matrix.

Each chunk's per-term BM25 weight is computed once into a term x chunk sparse matrix; a batch of
questions is then one sparse product (questions x terms, term counts) @ (terms x chunks), instead
of rank-bm25's Python loop over every chunk for every query term. The weights are computed with
rank-bm25's own formula and operation order (idf, with negative idfs floored at epsilon x the mean
idf; tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))), so scores agree to the last bits but for the
order of summation; ``engine: rank_bm25`` keeps the reference implementation. The index is cached
on disk, keyed by the corpus and the parameters.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from array import array
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi
from scipy import sparse

from rag_eval.progress import track
from rag_eval.retrievers.rankings import Rankings, RetrieverContext, relevant_indices
from rag_eval.retrievers.settings import Bm25Config
from rag_eval.types import Corpus, Question

BLOCK = 64  # questions scored per sparse product (small blocks stay in the CPU's cache: faster)
FLUSH_TOKENS = 1 << 22  # tokens held (as term ids) before they are counted into postings


class _Vocab(dict):
    """Term -> id; looking up a new term gives it the next id (ids in order of first appearance)."""

    def __missing__(self, term: str) -> int:
        self[term] = n = len(self)
        return n


def make_tokenizer(pattern: str, lowercase: bool = True):
    """A function text -> tokens: every match of ``pattern``, after lower-casing if asked."""
    rx = re.compile(pattern)
    return (lambda text: rx.findall(text.lower())) if lowercase else rx.findall


class SparseBm25:
    """BM25Okapi's scores from a term x document sparse matrix of per-term weights."""

    def __init__(self, vocab: dict[str, int], weights, n_docs: int):
        self.vocab, self.weights, self.n_docs = vocab, weights, n_docs

    @classmethod
    def build(cls, docs: Iterable[list[str]], k1: float, b: float, epsilon: float) -> SparseBm25:
        """The index of ``docs`` (token lists, consumed one at a time: pass a generator; the term ids
        of up to ``FLUSH_TOKENS`` tokens are held before they are counted into postings)."""
        vocab = _Vocab()
        term_id = vocab.__getitem__  # a new term gets the next id
        lengths = array("q")
        ids = array("i")
        rows_parts, cols_parts, tf_parts = [], [], []
        first = 0  # the first document of the tokens held in ``ids``

        def flush(upto: int) -> None:
            # (document, term) pairs of the documents first..upto-1, counted: their postings.
            t = np.asarray(ids, dtype=np.int64)
            d = np.repeat(np.arange(first, upto, dtype=np.int64), np.asarray(lengths[first:upto], dtype=np.int64))
            pairs, counts = np.unique(d * (len(vocab) + 1) + t, return_counts=True)
            rows_parts.append((pairs % (len(vocab) + 1)).astype(np.intc))
            cols_parts.append((pairs // (len(vocab) + 1)).astype(np.intc))
            tf_parts.append(counts.astype(np.intc))

        for toks in docs:
            lengths.append(len(toks))
            ids.extend(map(term_id, toks))
            if len(ids) >= FLUSH_TOKENS:
                flush(len(lengths))
                first, ids = len(lengths), array("i")
        flush(len(lengths))
        rows_a, cols_a = np.concatenate(rows_parts), np.concatenate(cols_parts)
        tf_counts, dls = np.concatenate(tf_parts), np.asarray(lengths, dtype=float)
        n = len(dls)
        df = np.bincount(rows_a, minlength=len(vocab)).astype(float)
        # rank-bm25: idf = log(N - df + 0.5) - log(df + 0.5); negative ones become epsilon x mean idf.
        idf = np.array([math.log(n - f + 0.5) - math.log(f + 0.5) for f in df])
        if len(idf):
            idf = np.where(idf < 0, epsilon * (idf.sum() / len(idf)), idf)
        avgdl = dls.sum() / n if n else 1.0
        w = np.empty(len(rows_a))
        step = 1 << 22  # postings weighed at a time (bounds the temporaries)
        for s in range(0, len(w), step):
            tf = tf_counts[s : s + step].astype(float)
            dl = dls[cols_a[s : s + step]]
            w[s : s + step] = idf[rows_a[s : s + step]] * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))
        matrix = sparse.csr_matrix((w, (rows_a, cols_a)), shape=(len(vocab), n))
        return cls(dict(vocab), matrix, n)

    def scores(self, queries: list[list[str]]) -> np.ndarray:
        """(queries x documents) scores; an unknown term adds 0, a repeated term counts again."""
        return self.sparse_scores(queries).toarray()

    def sparse_scores(self, queries: list[list[str]]) -> sparse.csr_matrix:
        """:meth:`scores` as a CSR matrix: a document with none of a query's terms is not listed (0)."""
        rows, cols, vals = [], [], []
        for i, toks in enumerate(queries):
            for t, c in Counter(toks).items():
                j = self.vocab.get(t)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
                    vals.append(float(c))
        q = sparse.csr_matrix((vals, (rows, cols)), shape=(len(queries), len(self.vocab)))
        return (q @ self.weights).tocsr()

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        # Uncompressed: zlib took longer than building the index (18 s of a 100k-chunk stage).
        sparse.save_npz(folder / "weights.npz", self.weights, compressed=False)
        # The terms in id order (ids are 0, 1, ...): a list is read and written faster than a mapping.
        (folder / "terms.json").write_text(json.dumps(list(self.vocab)), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> SparseBm25 | None:
        try:
            weights = sparse.load_npz(folder / "weights.npz").tocsr()
            terms = json.loads((folder / "terms.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        vocab = {t: i for i, t in enumerate(terms)}
        return cls(vocab, weights, weights.shape[1])


class Bm25Retriever:
    """BM25 over each chunk's title and text; scores every chunk for every question."""

    def __init__(self, corpus: Corpus, cfg: Bm25Config, name: str = "bm25", context: RetrieverContext | None = None):
        """``context.cache_dir`` keeps the index on disk (by corpus and settings); None: not kept."""
        self.name, self.cfg, self.corpus = name, cfg, corpus
        cache_dir = context.cache_dir if context else None
        self.tokenize = make_tokenizer(cfg.tokenizer, cfg.lowercase)
        if cfg.engine == "rank_bm25":
            self.reference = BM25Okapi(
                [self.tokenize(c.passage) for c in corpus.chunks], k1=cfg.k1, b=cfg.b, epsilon=cfg.epsilon
            )
            return
        self.reference = None
        folder = None
        if cache_dir is not None:
            key = hashlib.sha256(
                f"{corpus.fingerprint()}|{cfg.tokenizer}|{cfg.lowercase}|{cfg.k1}|{cfg.b}|{cfg.epsilon}".encode()
            ).hexdigest()[:24]
            folder = Path(cache_dir) / "bm25" / key
            cached = SparseBm25.load(folder)
            if cached is not None and cached.n_docs == len(corpus):
                self.index = cached
                return
        self.index = SparseBm25.build((self.tokenize(c.passage) for c in corpus.chunks), cfg.k1, cfg.b, cfg.epsilon)
        if folder is not None:
            self.index.save(folder)

    def rank(self, questions: list[Question], depth: int) -> Rankings:
        tokens = [self.tokenize(q.question) for q in questions]
        if self.reference is not None:
            ref = self.reference

            def scorer(rows: np.ndarray) -> np.ndarray:
                return np.vstack([ref.get_scores(tokens[i]) for i in rows] or [np.zeros((0, ref.corpus_size))])

            return Rankings.from_scorer(
                scorer,
                len(questions),
                ref.corpus_size,
                depth,
                relevant_indices(self.corpus, questions),
                progress=lambda blocks: track(blocks, f"{self.name}: searching"),
            )
        index = self.index

        def dense(rows: np.ndarray) -> np.ndarray:
            out = np.zeros((len(rows), index.n_docs))
            for s in range(0, len(rows), BLOCK):
                index.sparse_scores([tokens[i] for i in rows[s : s + BLOCK]]).toarray(out=out[s : s + BLOCK])
            return out

        return Rankings.from_sparse(
            lambda rows: index.sparse_scores([tokens[i] for i in rows]),
            dense,
            len(questions),
            index.n_docs,
            depth,
            relevant_indices(self.corpus, questions),
            block=BLOCK,
            progress=lambda blocks: track(blocks, f"{self.name}: searching"),
        )
