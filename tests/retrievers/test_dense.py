"""Dense retrieval at scale: embeddings written in batches to a memory-mapped cache that resumes
after an interruption; block scoring equal to whole-matrix scoring with the real model; HNSW
checked against exact search."""

import numpy as np
import pytest

from rag_eval.engine import LocalEngine
from rag_eval.errors import ConfigError
from rag_eval.llm.settings import EngineConfig
from rag_eval.retrievers import rankings as base
from rag_eval.retrievers.ann import build_hnsw, recall_at, search
from rag_eval.retrievers.dense import DenseRetriever
from rag_eval.retrievers.rankings import RetrieverContext
from rag_eval.retrievers.settings import DenseConfig
from rag_eval.types import Chunk, Corpus, Question

from ..conftest import SMALL_CORPUS, SMALL_QUESTIONS


class CountingModel:
    """Stands in for the embedding model to count and interrupt batches (fault injection)."""

    def __init__(self, fail_at: int | None = None):
        self.calls, self.fail_at = [], fail_at

    def get_embedding_dimension(self) -> int:
        return 4

    def encode(self, texts, **kw):
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            raise KeyboardInterrupt
        self.calls.append(list(texts))
        out = np.array([[len(t), t.count("a"), t.count("e"), 1.0] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _corpus(n: int) -> Corpus:
    return Corpus(
        [Chunk(f"c{i}", "a" * (i % 5) + "e" * (i % 3) + " text", f"t{i}", f"doc{i % 7}") for i in range(n)], "test"
    )


def test_embeddings_resume_after_an_interruption(tmp_path, monkeypatch):
    corpus = _corpus(10)
    texts = [c.passage for c in corpus.chunks]
    small = LocalEngine(EngineConfig(embed_batch=4))
    r = DenseRetriever(corpus, DenseConfig(type="dense"), context=RetrieverContext(tmp_path, small))
    r.__dict__["model"] = CountingModel(fail_at=2)
    with pytest.raises(KeyboardInterrupt):
        r.embed(texts, "passages")
    assert r.model.calls == [texts[0:4], texts[4:8]]
    r2 = DenseRetriever(corpus, DenseConfig(type="dense"), context=RetrieverContext(tmp_path, small))
    r2.__dict__["model"] = CountingModel()
    got = r2.embed(texts, "passages")
    assert r2.model.calls == [texts[8:10]]  # only the batch not done before
    assert isinstance(got, np.memmap) and got.dtype == np.float32
    np.testing.assert_array_equal(got, CountingModel().encode(texts))
    r3 = DenseRetriever(corpus, DenseConfig(type="dense"), context=RetrieverContext(tmp_path, small))
    r3.__dict__["model"] = CountingModel()
    np.testing.assert_array_equal(r3.embed(texts, "passages"), got)
    assert r3.model.calls == []
    assert not list(tmp_path.rglob("*.partial*"))


def test_block_scoring_equals_the_whole_matrix_with_the_real_model(tmp_path, monkeypatch):
    corpus = Corpus([Chunk(c["id"], c["text"], c["title"], c["id"]) for c in SMALL_CORPUS], "small")
    qs = [Question(q["id"], q["question"], {"py/lists": 1} if q["id"] == "q1" else {}, True) for q in SMALL_QUESTIONS]
    cfg = DenseConfig(type="dense")
    whole = DenseRetriever(corpus, cfg, context=RetrieverContext(tmp_path)).rank(qs, 5)
    assert whole.full is not None
    monkeypatch.setattr(base, "FULL_CELLS", 0)
    monkeypatch.setattr(base, "BLOCK_CELLS", 10)  # two questions a block
    blocks = DenseRetriever(corpus, cfg, context=RetrieverContext(tmp_path)).rank(qs, 5)
    assert blocks.full is None and blocks.known
    np.testing.assert_array_equal(blocks.top, whole.top)
    np.testing.assert_allclose(blocks.scores, whole.scores, atol=1e-6)
    assert blocks.rank_of(0, corpus.index["py/lists"]) == whole.rank_of(0, corpus.index["py/lists"]) == 2


def test_hnsw_against_exact_search():
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(50, 32))
    x = (centers[rng.integers(0, 50, 4000)] + 0.3 * rng.normal(size=(4000, 32))).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[rng.choice(4000, 100, replace=False)] + 0.05 * rng.normal(size=(100, 32)).astype(np.float32)
    exact = base.top_k(q @ x.T, 10)
    top, scores = search(build_hnsw(x, 16), q, 10, 128)
    assert recall_at(top, exact, 10) >= 0.95
    np.testing.assert_allclose(scores[:, 0], (q @ x.T).max(axis=1), atol=1e-4)  # the best is found
    assert recall_at(exact[:, ::-1], exact, 10) == 1.0 and recall_at(exact, exact[::-1], 10) < 0.3


def test_hnsw_index_in_a_config_reports_its_recall(tmp_path, capsys):
    from rag_eval import progress

    progress.set_enabled(True)
    try:
        corpus = Corpus([Chunk(c["id"], c["text"], c["title"], c["id"]) for c in SMALL_CORPUS], "small")
        qs = [Question(q["id"], q["question"], {}, True) for q in SMALL_QUESTIONS]
        exact = DenseRetriever(corpus, DenseConfig(type="dense"), context=RetrieverContext(tmp_path)).rank(qs, 5)
        approx = DenseRetriever(
            corpus, DenseConfig(type="dense", index="hnsw"), context=RetrieverContext(tmp_path)
        ).rank(qs, 5)
    finally:
        progress.set_enabled(False)
    assert approx.notes["recall@10_vs_exact"] == 1.0  # five chunks: HNSW finds them all
    np.testing.assert_array_equal(approx.top, exact.top)
    assert len(list((tmp_path / "embeddings").glob("hnsw-*.faiss"))) == 1


def test_hnsw_recall_is_in_the_report(small_project):
    import rag_eval

    text = (small_project / "audit.yaml").read_text()
    (small_project / "audit.yaml").write_text(
        text.replace("    bm25: {type: bm25}\n", "    bm25: {type: bm25}\n    ann: {type: dense, index: hnsw}\n")
    )
    result = rag_eval.retrieval(str(small_project / "audit.yaml"))
    assert result.report.dump()["retrieval"]["index_notes"]["ann"]["recall@10_vs_exact"] == 1.0
    assert "recall@10 against exact search 1.000 on 4 questions" in (result.run_dir / "report.md").read_text()


def test_hnsw_without_faiss_names_the_fix(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__
    monkeypatch.setattr(
        builtins,
        "__import__",
        lambda n, *a, **k: (_ for _ in ()).throw(ImportError) if n == "faiss" else real(n, *a, **k),
    )
    corpus = Corpus([Chunk(c["id"], c["text"], c["title"], c["id"]) for c in SMALL_CORPUS], "small")
    r = DenseRetriever(corpus, DenseConfig(type="dense", index="hnsw"), context=RetrieverContext(tmp_path))
    r.__dict__["model"] = CountingModel()
    with pytest.raises(ConfigError, match="faiss-cpu"):
        r.rank([Question("q", "lists?", {}, True)], 3)


_CHILD = """
import json, os, sys
import numpy as np
from rag_eval.llm.settings import EngineConfig
from rag_eval.retrievers.settings import DenseConfig
from rag_eval.engine import LocalEngine
from rag_eval.retrievers.rankings import RetrieverContext
from rag_eval.retrievers.dense import DenseRetriever
from rag_eval.types import Chunk, Corpus

class Model:
    calls = []
    def encode(self, texts, **kw):
        if len(self.calls) == int(sys.argv[2]):
            os._exit(9)  # killed mid-run: no clean-up, no Python exit handlers
        self.calls.append(len(texts))
        with open(sys.argv[3], "a") as fh:
            fh.write(json.dumps(list(texts)) + "\\n")
        return np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32)

corpus = Corpus([Chunk(f"c{i}", "a" * (i % 5) + " text", f"t{i}") for i in range(10)], "test")
from pathlib import Path
r = DenseRetriever(corpus, DenseConfig(type="dense"), context=RetrieverContext(Path(sys.argv[1]), LocalEngine(EngineConfig(embed_batch=4))))
r.__dict__["model"] = Model()
print(json.dumps(np.asarray(r.embed([c.passage for c in corpus.chunks], "passages")).tolist()))
"""


def test_embedding_resumes_in_a_new_process_after_a_kill(tmp_path):
    import json
    import subprocess
    import sys

    log = tmp_path / "encoded.jsonl"

    def run(fail_at: int) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", _CHILD, str(tmp_path), str(fail_at), str(log)], capture_output=True, text=True
        )

    first = run(fail_at=2)
    assert first.returncode == 9
    assert [len(json.loads(x)) for x in log.read_text().splitlines()] == [4, 4]
    second = run(fail_at=99)
    assert second.returncode == 0, second.stderr
    batches = [json.loads(x) for x in log.read_text().splitlines()]
    assert [len(b) for b in batches] == [4, 4, 2]  # the new process embedded only the missing batch
    got = np.array(json.loads(second.stdout))
    texts = [t for b in batches for t in b]
    np.testing.assert_array_equal(got, [[len(t), t.count("a"), 1.0] for t in texts])
    third = run(fail_at=0)  # everything cached: a third process encodes nothing
    assert third.returncode == 0 and len(log.read_text().splitlines()) == 3
