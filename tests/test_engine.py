"""The Ray engine on a local Ray instance (ray.init(num_cpus=2)) gives exactly the local engine's
results: retrieval ranks and metrics with the corpus embedded by Ray tasks, and the embedded
model's answers when its calls go through a model-server actor."""

import asyncio

import numpy as np
import pandas as pd
import pytest

import rag_eval
from rag_eval.engine import LocalEngine, RayEngine, make_engine
from rag_eval.llm.session import LLMSession
from rag_eval.llm.settings import EngineConfig, LLMConfig

from .conftest import SMALL_CORPUS, SMALL_QUESTIONS

ray = pytest.importorskip("ray")
RAY = {"type": "ray", "num_cpus": 2, "embed_batch": 2, "model_workers": 1, "worker_threads": 2}


@pytest.fixture(scope="module", autouse=True)
def _ray_instance():
    yield
    if ray.is_initialized():
        ray.shutdown()


@pytest.mark.slow  # starts a Ray instance and embeds the corpus twice (75 s on the shared 2 cores)
def test_retrieval_on_ray_equals_local(tmp_path, monkeypatch):
    monkeypatch.delenv("RAG_EVAL_CACHE_DIR")  # each engine its own embedding cache
    cfg = {
        "name": "engine",
        "retrieval": {
            "k": [1, 3],
            "depth": 5,
            "retrievers": {
                "bm25": {"type": "bm25"},
                "dense": {"type": "dense"},
                "hybrid": {"type": "hybrid", "of": ["dense", "bm25"]},
            },
        },
    }
    runs = {}
    for name, engine in (("local", None), ("ray", RAY)):
        c = {**cfg, "report": {"out": str(tmp_path / name)}, "cache_dir": str(tmp_path / f"cache-{name}")}
        if engine:
            c["engine"] = engine
        runs[name] = rag_eval.retrieval(c, corpus=SMALL_CORPUS, test_set=SMALL_QUESTIONS)
    assert ray.is_initialized()  # the second run really went through Ray
    cols = ["question_id", "retriever", "first_relevant_rank", "miss", "retrieved"]
    local, on_ray = (runs[n].retrieval_df()[cols] for n in ("local", "ray"))
    pd.testing.assert_frame_equal(local, on_ray)
    assert runs["local"].summary.retrieval == runs["ray"].summary.retrieval
    # Three Ray tasks (2 + 2 + 1 passages) wrote the same embeddings as one local call, to 1e-6.
    a = sorted((tmp_path / "cache-local" / "embeddings").glob("*.npy"), key=lambda p: p.stat().st_size)
    b = sorted((tmp_path / "cache-ray" / "embeddings").glob("*.npy"), key=lambda p: p.stat().st_size)
    assert [p.name for p in a] == [p.name for p in b]
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.load(x), np.load(y), atol=1e-6)


@pytest.mark.slow  # starts the real embedded model (llama-server) twice, locally and in a Ray actor
def test_embedded_model_calls_through_a_ray_actor_equal_local(tmp_path):
    llm_cfg = LLMConfig(provider="local", max_tokens=16)
    messages = [[{"role": "user", "content": f"Name one Python {w} in one word."}] for w in ("keyword", "builtin")]

    async def answers(engine) -> tuple[list[str], dict]:
        session = LLMSession(tmp_path / "cache", use_cache=False, engine=engine)
        try:
            llm = session.llm(llm_cfg, "generation.llm")
            out = [await llm.chat(m, max_tokens=16) for m in messages]
            return [r.text for r in out], session.usage()[0]
        finally:
            await session.aclose()
            session.close()

    local, local_usage = asyncio.run(answers(LocalEngine()))
    on_ray, ray_usage = asyncio.run(answers(RayEngine(EngineConfig(**RAY))))
    assert all(local) and on_ray == local
    assert ray_usage["calls"] == local_usage["calls"] == 2
    assert ray_usage["completion_tokens"] == local_usage["completion_tokens"] > 0


def test_engine_from_config():
    assert make_engine(None).type == "local"
    assert make_engine(EngineConfig(type="ray")).type == "ray"
    with pytest.raises(Exception, match="engine"):
        rag_eval.as_config(
            {"name": "x", "retrieval": {"k": [1], "retrievers": {"b": {"type": "bm25"}}}, "engine": {"type": "spark"}}
        )
