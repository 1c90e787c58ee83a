"""LlamaIndex and Haystack plugged in from a config, with the real llama-index-core and haystack-ai
on a small in-memory index (their BM25 retrievers: nothing downloaded): as retrievers beside
rag-eval's own, and as whole query engines / pipelines audited as the system."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

import rag_eval

from ..conftest import ROOT, SMALL_CORPUS, SMALL_QUESTIONS, write_jsonl
from ..scripted_server import ScriptedServer, structured_reply

APP = textwrap.dedent(
    '''
    import json
    from pathlib import Path

    CORPUS = [json.loads(line) for line in (Path(__file__).parent / "corpus.jsonl").read_text().splitlines()]


    def llamaindex_retriever():
        from llama_index.core.schema import TextNode
        from llama_index.retrievers.bm25 import BM25Retriever

        # Node ids are not the chunk ids: the chunk id is in the metadata (id_key: chunk).
        nodes = [TextNode(text=c["text"], id_=f"node-{n}", metadata={"chunk": c["id"]}) for n, c in enumerate(CORPUS)]
        return BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3)


    def llamaindex_engine():
        from llama_index.core.llms import MockLLM
        from llama_index.core.query_engine import RetrieverQueryEngine

        return RetrieverQueryEngine.from_args(llamaindex_retriever(), llm=MockLLM(max_tokens=8))


    def _store():
        from haystack import Document
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        store = InMemoryDocumentStore()
        # Document ids are the chunk ids here.
        store.write_documents([Document(id=c["id"], content=c["text"]) for c in CORPUS])
        return store


    def haystack_retriever():
        from haystack.components.retrievers.in_memory import InMemoryBM25Retriever

        return InMemoryBM25Retriever(_store(), top_k=3)


    def haystack_pipeline():
        from haystack import Document, Pipeline, component

        @component
        class FirstSentence:
            """A scripted generator: the first sentence of the top document."""

            @component.output_types(replies=list[str])
            def run(self, question: str, documents: list[Document]):
                if "context manager" in question:
                    raise RuntimeError("the model is overloaded")
                return {"replies": [documents[0].content.split(".")[0] + "." if documents else "I do not know."]}

        pipe = Pipeline()
        pipe.add_component("retriever", haystack_retriever())
        pipe.add_component("llm", FirstSentence())
        pipe.connect("retriever.documents", "llm.documents")
        return pipe
    '''
)


@pytest.fixture
def app(tmp_path, monkeypatch):
    write_jsonl(tmp_path / "corpus.jsonl", SMALL_CORPUS)
    write_jsonl(tmp_path / "questions.jsonl", SMALL_QUESTIONS)
    (tmp_path / "fw_app.py").write_text(APP)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _config(tmp_path, **extra) -> str:
    cfg = {
        "name": "fw",
        "corpus": {"path": "corpus.jsonl"},
        "test_set": {"path": "questions.jsonl"},
        "retrieval": {"k": [1, 3], "depth": 5, "retrievers": {"bm25": {"type": "bm25"}}},
        "report": {"out": "runs"},
        **extra,
    }
    path = tmp_path / "fw.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return str(path)


def _direct_ranks(result, name: str) -> dict:
    df = result.retrieval_df()
    return df[df["retriever"] == name].set_index("question_id")["retrieved"].to_dict()


def test_framework_retrievers_beside_builtin_ones(app):
    pytest.importorskip("llama_index.retrievers.bm25")
    pytest.importorskip("haystack")
    import fw_app

    cfg = yaml.safe_load(Path(_config(app)).read_text())
    cfg["retrieval"]["retrievers"] |= {
        "li": {"type": "llamaindex", "factory": "fw_app:llamaindex_retriever", "id_key": "chunk"},
        "hs": {"type": "haystack", "factory": "fw_app:haystack_retriever"},
    }
    result = rag_eval.retrieval(cfg, base_dir=app)
    # Each retriever's ranking is the framework's own, mapped to the corpus ids.
    li = fw_app.llamaindex_retriever()
    hs = fw_app.haystack_retriever()
    for q in SMALL_QUESTIONS:
        assert _direct_ranks(result, "li")[q["id"]] == [n.node.metadata["chunk"] for n in li.retrieve(q["question"])]
        assert _direct_ranks(result, "hs")[q["id"]] == [d.id for d in hs.run(query=q["question"])["documents"]]
    for name in ("li", "hs", "bm25"):
        assert result.figure(f"retrieval.{name}.hit@3")["n"] == 3


def test_llamaindex_query_engine_as_the_system(app):
    pytest.importorskip("llama_index.retrievers.bm25")
    import fw_app

    with ScriptedServer(reply=structured_reply) as s:
        judges = {"llm": {"provider": "openai", "model": "scripted", "base_url": s.base_url}, "metrics": ["refusal"]}
        system = {"type": "llamaindex", "factory": "fw_app:llamaindex_engine", "id_key": "chunk"}
        result = rag_eval.audit(_config(app, system=system, judges=judges))
    li = fw_app.llamaindex_retriever()
    got = _direct_ranks(result, "system")
    for q in SMALL_QUESTIONS:
        assert got[q["id"]] == [n.node.metadata["chunk"] for n in li.retrieve(q["question"])]
    gens = [json.loads(line) for line in (result.run_dir / "generation.jsonl").read_text().splitlines()]
    assert len(gens) == 4 and all(g["answer"] and g["error"] is None for g in gens)
    assert result.figure("retrieval.system.hit@3")["n"] == 3 and "retrieval.bm25.hit@3" in {
        f"retrieval.{r}.hit@3" for r in result.summary.retrieval
    }


TELEMETRY = """
import sys
from rag_eval.retrievers.custom import import_object
import_object("fw_app:haystack_retriever", "test")
from haystack.telemetry import _telemetry
print(_telemetry.telemetry is None)
"""


def test_haystack_telemetry_is_off_once_rag_eval_loads_a_haystack_factory(app):
    """Importing rag_eval sets nothing; loading the user's factory turns Haystack's telemetry off first."""
    pytest.importorskip("haystack")
    env = {k: v for k, v in os.environ.items() if k != "HAYSTACK_TELEMETRY_ENABLED"}
    env["PYTHONPATH"] = os.pathsep.join([str(app), str(ROOT)])
    out = subprocess.run([sys.executable, "-c", TELEMETRY], env=env, capture_output=True, text=True, cwd=app)
    assert out.stdout.strip() == "True", out.stderr[-2000:]


def test_haystack_pipeline_as_the_system(app):
    pytest.importorskip("haystack")
    import fw_app

    with ScriptedServer(reply=structured_reply) as s:
        judges = {"llm": {"provider": "openai", "model": "scripted", "base_url": s.base_url}, "metrics": ["refusal"]}
        system = {
            "type": "haystack",
            "factory": "fw_app:haystack_pipeline",
            "inputs": {"retriever": {"query": "{question}"}, "llm": {"question": "{question}"}},
        }
        result = rag_eval.audit(_config(app, system=system, judges=judges))
    hs = fw_app.haystack_retriever()
    got = _direct_ranks(result, "system")
    gens = {
        g["question_id"]: g for g in map(json.loads, (result.run_dir / "generation.jsonl").read_text().splitlines())
    }
    for q in SMALL_QUESTIONS:
        if q["id"] == "q3":  # the pipeline raised: not_judged with its error, out of the retrieval figures
            assert "q3" not in got and "the model is overloaded" in gens["q3"]["error"]
            continue
        docs = hs.run(query=q["question"])["documents"]
        assert got[q["id"]] == [d.id for d in docs]
        assert gens[q["id"]]["answer"] == (docs[0].content.split(".")[0] + "." if docs else "I do not know.")
    att = result.attribution_df().set_index("question_id")
    assert att.loc["q3", "outcome"] == "not_judged" and "overloaded" in att.loc["q3", "why"]
