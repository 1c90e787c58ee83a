"""The sparse-matrix BM25 against rank-bm25's BM25Okapi: identical rankings, scores equal to 1e-9,
on the demo corpus and on section files (the one shipped in tests/data, and the PEP corpus of
../shared where it exists), with the same tokenizer and parameters."""

import json

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from rag_eval.data.python_docs import python_docs_corpus
from rag_eval.retrievers.bm25 import Bm25Retriever, SparseBm25, make_tokenizer
from rag_eval.retrievers.rankings import RetrieverContext
from rag_eval.retrievers.settings import Bm25Config
from rag_eval.types import Chunk, Corpus, Question

from ..conftest import ROOT, SECTION_FILES


def _check(corpus: Corpus, questions: list[str], **params):
    cfg = Bm25Config(type="bm25", **params)
    tok = make_tokenizer(cfg.tokenizer, cfg.lowercase)
    ref = BM25Okapi([tok(c.passage) for c in corpus.chunks], k1=cfg.k1, b=cfg.b, epsilon=cfg.epsilon)
    expected = np.array([ref.get_scores(tok(q)) for q in questions])
    got = SparseBm25.build([tok(c.passage) for c in corpus.chunks], cfg.k1, cfg.b, cfg.epsilon).scores(
        [tok(q) for q in questions]
    )
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    qs = [Question(f"q{i}", q, {}, True) for i, q in enumerate(questions)]
    a = Bm25Retriever(corpus, cfg).rank(qs, 20)
    b = Bm25Retriever(corpus, cfg.model_copy(update={"engine": "rank_bm25"})).rank(qs, 20)
    assert (a.top == b.top).all()


def test_identical_to_rank_bm25_on_the_demo_corpus():
    questions = [json.loads(line)["question"] for line in (ROOT / "data/python-docs/questions.jsonl").open()]
    questions += ["the the the", "zzz unknown words", "__init__ __init__ self", ""]  # repeats, unknown, empty
    _check(python_docs_corpus(), questions)
    _check(python_docs_corpus(), questions[:20], k1=0.9, b=0.4, epsilon=0.5)


@pytest.mark.parametrize("path", SECTION_FILES)
def test_identical_to_rank_bm25_on_a_section_file(path):
    sections = json.loads(path.read_text())
    rows = sections if isinstance(sections, list) else sections.get("sections", [])
    chunks = [
        Chunk(str(s.get("id", i)), s.get("text", ""), s.get("title", "")) for i, s in enumerate(rows) if s.get("text")
    ]
    questions = [c.title for c in chunks[:: max(1, len(chunks) // 150)]]
    _check(Corpus(chunks, path.stem), questions)


def test_negative_idf_is_floored_like_rank_bm25():
    # "python" is in 3 of 4 documents: its idf is negative and becomes epsilon x the mean idf.
    docs = ["python lists", "python tuples", "python sets", "dicts"]
    corpus = Corpus([Chunk(f"d{i}", t) for i, t in enumerate(docs)], "t")
    _check(corpus, ["python", "python dicts", "lists lists"])


def test_the_index_is_cached_on_disk(tmp_path):
    corpus = python_docs_corpus()
    cfg = Bm25Config(type="bm25")
    Bm25Retriever(corpus, cfg, context=RetrieverContext(tmp_path))
    [folder] = (tmp_path / "bm25").iterdir()
    assert (folder / "weights.npz").exists()
    again = Bm25Retriever(corpus, cfg, context=RetrieverContext(tmp_path))
    q = [Question("q", "How do I compare strings without case?", {}, True)]
    assert (again.rank(q, 5).top == Bm25Retriever(corpus, cfg).rank(q, 5).top).all()


def test_top_k_equals_a_stable_full_sort_with_ties():
    from rag_eval.retrievers.rankings import top_k

    rng = np.random.default_rng(0)
    for trial in range(200):
        m, n, k = int(rng.integers(1, 300)), int(rng.integers(1, 5)), int(rng.integers(1, 30))
        s = rng.random((n, m)) if trial % 3 == 0 else rng.integers(0, 5, size=(n, m)).astype(float)
        s[rng.random((n, m)) < 0.1] = -np.inf
        assert (top_k(s, k) == np.argsort(-s, axis=1, kind="stable")[:, : min(k, m)]).all()


def test_postings_counted_in_slices_equal_one_pass(monkeypatch):
    """The index is the same whether the term ids are counted into postings once or in many slices
    (a slice may end inside the corpus at any document)."""
    import rag_eval.retrievers.bm25 as bm25

    tok = make_tokenizer(r"[a-z0-9_]+")
    docs = [tok(c.passage) for c in python_docs_corpus().chunks] + [[], ["only"], ["only", "only"]]
    whole = SparseBm25.build(iter(docs), 1.5, 0.75, 0.25)
    monkeypatch.setattr(bm25, "FLUSH_TOKENS", 97)
    sliced = SparseBm25.build(iter(docs), 1.5, 0.75, 0.25)
    assert sliced.vocab == whole.vocab
    assert (sliced.weights != whole.weights).nnz == 0 and sliced.weights.nnz == whole.weights.nnz


def test_large_problems_rank_from_sparse_rows_as_from_the_whole_matrix(monkeypatch):
    """Above FULL_CELLS the BM25 retriever ranks from the CSR rows of its scores: the same top,
    scores and exact ranks of the labelled chunks as the whole matrix."""
    from rag_eval.retrievers import rankings

    corpus = python_docs_corpus()
    questions = [json.loads(line) for line in (ROOT / "data/python-docs/questions.jsonl").open()]
    qs = [
        Question(q["id"], q["question"], {c.id: 1 for c in corpus.chunks[i::40]}, True) for i, q in enumerate(questions)
    ]
    qs.append(Question("unknown", "zzz qqq", {corpus.chunks[3].id: 1}, True))  # no chunk scores above 0
    whole = Bm25Retriever(corpus, Bm25Config(type="bm25")).rank(qs, 30)
    assert whole.full is not None
    monkeypatch.setattr(rankings, "FULL_CELLS", 0)
    rows = Bm25Retriever(corpus, Bm25Config(type="bm25")).rank(qs, 30)
    assert rows.full is None and rows.scorer is not None
    np.testing.assert_array_equal(rows.top, whole.top)
    np.testing.assert_array_equal(rows.scores, whole.scores)
    for q, question in enumerate(qs):
        for cid in question.qrels:
            i = corpus.index[cid]
            assert rows.known[(q, i)] == whole.rank_of(q, i)
    assert rows.rank_of(0, 5) == whole.rank_of(0, 5)  # not labelled: from the dense scorer
