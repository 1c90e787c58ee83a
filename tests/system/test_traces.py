"""Reading trace exports: a hand-written OTLP JSON file in the shape Phoenix exports, and spans made
by the real opentelemetry-sdk with the OpenInference LangChain instrumentation around a LangChain
chain, exported to OTLP JSON (protobuf's JSON mapping: base64 ids) and read back."""

import json

import pytest

from rag_eval.errors import DataError
from rag_eval.system.traces import read_traces

from ..conftest import ROOT, SMALL_CORPUS

PHOENIX = ROOT / "data" / "traces" / "phoenix-export.json"
TEXTS = {c["id"]: c["text"] for c in SMALL_CORPUS}


def test_hand_written_phoenix_export_loads_every_part():
    traces = read_traces([PHOENIX])
    assert len(traces) == 6
    by_q = {t.question: t for t in traces}
    t = by_q["What is a set?"]
    assert t.trace_id == f"{0xA1:032x}" and t.skipped is None
    assert t.answer == "An unordered collection of distinct hashable objects."
    assert [(d.id, d.content, d.score) for d in t.documents] == [
        ("py/sets", TEXTS["py/sets"], 0.92),
        ("py/dicts", TEXTS["py/dicts"], 0.41),
    ]
    assert t.documents[0].metadata == {"source": "sets.md"} and t.metadata["session.id"] == "session-0"
    # No output on the root span: the answer is the LLM span's output message.
    assert by_q["Which sequence type can be changed in place?"].answer == "Lists can be changed in place."
    skipped = {t.question: t.skipped for t in traces if t.skipped}
    assert skipped == {
        "What maps hashable values?": "no_retriever_span",
        "Which sequences are immutable?": "no_answer",
        "How do I wrap a block with a context manager?": "error_status",
    }
    assert "RateLimitError" in by_q["How do I wrap a block with a context manager?"].detail


def test_collector_json_lines_and_bad_files(tmp_path):
    export = json.loads(PHOENIX.read_text())
    one = {"resourceSpans": export["resourceSpans"]}
    lines = tmp_path / "collector.jsonl"
    lines.write_text(json.dumps(one) + "\n" + json.dumps(one) + "\n")
    # The same spans twice (a Collector's file rotated): still six traces, documents not doubled.
    traces = read_traces([lines])
    assert len(traces) == 6
    assert len(next(t for t in traces if t.question == "What is a set?").documents) == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"spans": []}')
    with pytest.raises(DataError, match="not an OpenTelemetry trace export"):
        read_traces([bad])
    torn = tmp_path / "torn.jsonl"
    torn.write_text(json.dumps(one) + "\n{not json\n")
    # A broken line is skipped and named; the good line's traces are kept.
    read = read_traces([torn])
    assert len(read) == 6 and [(x.file, x.line, x.reason) for x in read.skipped_lines] == [(str(torn), 2, "bad_json")]
    only_bad = tmp_path / "only-bad.jsonl"
    only_bad.write_text("{not json\n")
    with pytest.raises(DataError) as err:
        read_traces([only_bad])
    assert f"{only_bad}:1" in err.value.render()


def test_documents_as_one_attribute_and_chat_messages(tmp_path):
    """Documents given as one list attribute (an OTLP kvlist per document, as some exporters write),
    a chat question in input.value's messages, and an SDK console span read alike."""
    docs = {
        "arrayValue": {
            "values": [
                {
                    "kvlistValue": {
                        "values": [
                            {"key": "document.id", "value": {"stringValue": "py/sets"}},
                            {"key": "document.content", "value": {"stringValue": TEXTS["py/sets"]}},
                            {"key": "document.score", "value": {"doubleValue": 0.5}},
                        ]
                    }
                }
            ]
        }
    }
    messages = json.dumps(
        {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is a set?"}]}
    )
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "rag",
        "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
            {"key": "input.value", "value": {"stringValue": messages}},
            {"key": "retrieval.documents", "value": docs},
        ],
    }
    llm = {
        "name": "llm",
        "context": {"trace_id": "0x" + "ab" * 16, "span_id": "0x" + "ef" * 8},
        "parent_id": "0x" + "cd" * 8,
        "start_time": "2026-12-01T10:00:00.000001Z",
        "attributes": {"openinference.span.kind": "LLM", "llm.output_messages.0.message.content": "A collection."},
        "status": {"status_code": "UNSET"},
    }
    (tmp_path / "a.json").write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    (tmp_path / "b.json").write_text(json.dumps([llm]))
    (t,) = read_traces([tmp_path / "a.json", tmp_path / "b.json"])[:1]
    assert t.question == "What is a set?" and t.answer == "A collection." and t.skipped is None
    assert [(d.id, d.content, d.score) for d in t.documents] == [("py/sets", TEXTS["py/sets"], 0.5)]


def _langchain_spans():
    """Spans of a real LangChain chain (retriever | prompt | fake LLM) under the OpenInference
    instrumentation, from the opentelemetry-sdk's in-memory exporter."""
    pytest.importorskip("openinference.instrumentation.langchain")
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models import FakeListLLM
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import PromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableParallel, RunnablePassthrough
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    class Keyword(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
            words = set(query.lower().rstrip("?").split())
            hits = [c for c in SMALL_CORPUS if words & set(c["text"].lower().rstrip(".").split())]
            return [Document(page_content=c["text"], metadata={"id": c["id"]}, id=c["id"]) for c in hits[:2]]

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        prompt = PromptTemplate.from_template("Context: {context}\nQuestion: {question}\nAnswer:")
        llm = FakeListLLM(responses=["An unordered collection.", "Mutable sequences."])
        join = lambda docs: "\n".join(d.page_content for d in docs)  # noqa: E731
        chain = (
            RunnableParallel(context=Keyword() | join, question=RunnablePassthrough())
            | prompt
            | llm
            | StrOutputParser()
        )
        answers = [chain.invoke("What is a set object?"), chain.invoke("Which sequences are mutable?")]
    finally:
        instrumentor.uninstrument()
    return exporter.get_finished_spans(), answers


def test_real_langchain_instrumentation_otlp_round_trip(tmp_path):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.common")
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans, answers = _langchain_spans()
    path = tmp_path / "otlp.json"
    path.write_text(MessageToJson(encode_spans(spans)))
    traces = read_traces([path])
    assert len(traces) == 2 and all(t.skipped is None for t in traces)
    first, second = traces
    assert (first.question, first.answer) == ("What is a set object?", answers[0])
    assert (second.question, second.answer) == ("Which sequences are mutable?", answers[1])
    assert [d.id for d in first.documents] == ["py/dicts", "py/sets"]
    assert [d.content for d in first.documents] == [TEXTS["py/dicts"], TEXTS["py/sets"]]
    assert {t.trace_id for t in traces} == {f"{s.context.trace_id:032x}" for s in spans}
