"""Trace files as applications write them: the opentelemetry-sdk ConsoleSpanExporter's default
output (pretty-printed span objects one after another) with OpenInference and OpenTelemetry GenAI
(``gen_ai.*``) attributes, read through the CLI; a Collector JSON-lines file of 16 traces with one
truncated line (the 15 good traces kept, the bad line counted and named with file and line)."""

import io
import json

import pytest
import yaml

from rag_eval.cli import main
from rag_eval.system.traces import read_traces

from ..conftest import SMALL_CORPUS
from ..scripted_server import ScriptedServer, judge_name, structured_reply
from .test_trace_audit import judges

TEXTS = {c["id"]: c["text"] for c in SMALL_CORPUS}


def _console_export() -> str:
    """Three traces made by the real SDK and written by its ConsoleSpanExporter (default
    formatter): one with OpenInference attributes, one with current GenAI attributes (an agent
    root with input/output messages, a retrieval span with query text and documents, a chat span),
    one with the deprecated flat gen_ai.prompt / gen_ai.completion attributes."""
    pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    out = io.StringIO()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
    tracer = provider.get_tracer("rag-app")

    with tracer.start_as_current_span("rag") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", "What is a set?")
        root.set_attribute("output.value", "An unordered collection of distinct hashable objects.")
        with tracer.start_as_current_span("retrieve") as r:
            r.set_attribute("openinference.span.kind", "RETRIEVER")
            r.set_attribute("retrieval.documents.0.document.id", "py/sets")
            r.set_attribute("retrieval.documents.0.document.content", TEXTS["py/sets"])
            r.set_attribute("retrieval.documents.0.document.score", 0.9)

    with tracer.start_as_current_span("invoke_agent docs-bot") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        messages = [
            {"role": "system", "parts": [{"type": "text", "content": "Answer from the docs."}]},
            {"role": "user", "parts": [{"type": "text", "content": "Which sequence type can be changed in place?"}]},
        ]
        root.set_attribute("gen_ai.input.messages", json.dumps(messages))
        with tracer.start_as_current_span("retrieval python-docs") as r:
            r.set_attribute("gen_ai.operation.name", "retrieval")
            r.set_attribute("gen_ai.data_source.id", "python-docs")
            r.set_attribute("gen_ai.retrieval.query.text", "sequence changed in place")
            docs = [
                {"id": "py/lists", "score": 0.81, "content": TEXTS["py/lists"]},
                {"id": "py/tuples", "score": 0.52, "content": TEXTS["py/tuples"], "metadata": {"file": "t.md"}},
            ]
            r.set_attribute("gen_ai.retrieval.documents", json.dumps(docs))
        with tracer.start_as_current_span("chat scripted") as c:
            c.set_attribute("gen_ai.operation.name", "chat")
            reply = [{"role": "assistant", "parts": [{"type": "text", "content": "Lists."}], "finish_reason": "stop"}]
            c.set_attribute("gen_ai.output.messages", json.dumps(reply))

    with tracer.start_as_current_span("workflow") as root:
        root.set_attribute("gen_ai.prompt.0.role", "user")
        root.set_attribute("gen_ai.prompt.0.content", "How do I wrap a block with a context manager?")
        with tracer.start_as_current_span("retrieval") as r:
            r.set_attribute("gen_ai.operation.name", "retrieval")
            r.set_attribute("gen_ai.retrieval.documents", json.dumps([{"id": "py/with", "text": TEXTS["py/with"]}]))
        with tracer.start_as_current_span("completion") as c:
            c.set_attribute("gen_ai.completion.0.role", "assistant")
            c.set_attribute("gen_ai.completion.0.content", "Use a with statement.")
    provider.shutdown()
    return out.getvalue()


def test_console_exporter_output_with_openinference_and_gen_ai_attributes(tmp_path, monkeypatch, capsys):
    text = _console_export()
    assert text.lstrip().startswith("{\n") and "}\n{\n" in text  # pretty objects one after another
    path = tmp_path / "console.txt"
    path.write_text(text)

    traces = read_traces([path])
    assert traces.skipped_lines == []
    by_q = {t.question: t for t in traces}
    assert set(by_q) == {
        "What is a set?",
        "Which sequence type can be changed in place?",
        "How do I wrap a block with a context manager?",
    }
    assert all(t.skipped is None for t in traces)
    assert by_q["What is a set?"].answer == "An unordered collection of distinct hashable objects."
    assert [(d.id, d.score) for d in by_q["What is a set?"].documents] == [("py/sets", 0.9)]
    agent = by_q["Which sequence type can be changed in place?"]
    assert agent.answer == "Lists."
    assert [(d.id, d.content, d.score) for d in agent.documents] == [
        ("py/lists", TEXTS["py/lists"], 0.81),
        ("py/tuples", TEXTS["py/tuples"], 0.52),
    ]
    assert agent.documents[1].metadata == {"file": "t.md"}
    flat = by_q["How do I wrap a block with a context manager?"]
    assert flat.answer == "Use a with statement." and [d.content for d in flat.documents] == [TEXTS["py/with"]]

    monkeypatch.chdir(tmp_path)
    with ScriptedServer(reply=structured_reply) as s:
        (tmp_path / "traces.yaml").write_text(yaml.safe_dump({"name": "console", "judges": judges(s.base_url)}))
        assert main(["-q", "traces", str(path), "--config", "traces.yaml", "--labels", "0"]) == 0
    assert "traces: 3 read, 3 audited; skipped: none" in capsys.readouterr().out


def _otlp_line(i: int, question: str, answer: str, doc: str) -> str:
    """One trace as the Collector's file exporter writes it: an OTLP JSON export on one line."""

    def attr(key, value):
        kind = "doubleValue" if isinstance(value, float) else "stringValue"
        return {"key": key, "value": {kind: value}}

    trace_id = f"{i + 1:032x}"
    root = {
        "traceId": trace_id,
        "spanId": f"{2 * i + 1:016x}",
        "name": "rag",
        "startTimeUnixNano": str(1_000 + i),
        "attributes": [
            attr("openinference.span.kind", "CHAIN"),
            attr("input.value", question),
            attr("output.value", answer),
        ],
    }
    retriever = {
        "traceId": trace_id,
        "spanId": f"{2 * i + 2:016x}",
        "parentSpanId": f"{2 * i + 1:016x}",
        "name": "retrieve",
        "startTimeUnixNano": str(1_000 + i),
        "attributes": [
            attr("openinference.span.kind", "RETRIEVER"),
            attr("retrieval.documents.0.document.id", doc),
            attr("retrieval.documents.0.document.content", TEXTS[doc]),
            attr("retrieval.documents.0.document.score", 0.5),
        ],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [root, retriever]}]}]})


LT_QUESTION = "Does a < b test whether set a is a proper subset of b?"


def test_jsonl_with_a_truncated_line_keeps_the_good_traces(tmp_path, monkeypatch, capsys):
    docs = ["py/sets", "py/lists", "py/dicts", "py/with"]
    lines = [_otlp_line(i, f"Question {i}: what is {docs[i % 4]}?", f"Answer {i}.", docs[i % 4]) for i in range(16)]
    # Trace 3 asks about '<' and answers from nothing in its document: judged unsupported, named.
    lines[2] = _otlp_line(2, LT_QUESTION, "Decorators say so.", "py/sets")
    lines[6] = lines[6][: len(lines[6]) // 2]  # the writer was killed mid-line
    path = tmp_path / "collector.jsonl"
    path.write_text("\n".join(lines) + "\n")

    traces = read_traces([path])
    assert len(traces) == 15 and f"{7:032x}" not in {t.trace_id for t in traces}
    ((bad),) = traces.skipped_lines
    assert (bad.file, bad.line, bad.reason) == (str(path), 7, "truncated_json")
    assert traces.skipped_line_counts() == {"truncated_json": 1}

    def reply(body):
        if judge_name(body) == "supported" and "Decorators" in body["messages"][-1]["content"]:
            return "No: the context does not say this."
        return structured_reply(body)

    monkeypatch.chdir(tmp_path)
    with ScriptedServer(reply=reply) as s:
        (tmp_path / "traces.yaml").write_text(yaml.safe_dump({"name": "jsonl", "judges": judges(s.base_url)}))
        assert main(["-q", "traces", str(path), "--config", "traces.yaml", "--labels", "0"]) == 0
    printed = capsys.readouterr().out
    assert "traces: 15 read, 15 audited" in printed
    assert f"skipped {path}:7 (truncated_json): JSON cut off after {len(lines[6])} characters" in printed
    run = next((tmp_path / "runs").iterdir())
    md = (run / "report.md").read_text()
    assert "1 unreadable parts of the files skipped: 1 truncated_json" in md
    assert f"| {path}:7 | truncated_json |" in md
    # The question is escaped once (Markdown shows '<'), not twice ('&amp;lt;' shows as '&lt;').
    assert "Does a &lt; b test" in md and "&amp;lt;" not in md
    report = json.loads((run / "report.json").read_text())
    assert report["traces"]["skipped_lines"] == [
        {"file": str(path), "line": 7, "reason": "truncated_json", "detail": bad.detail}
    ]


def test_broken_and_foreign_parts(tmp_path):
    """A broken (not cut-off) line is bad_json, JSON that is no span is not_a_span; a file with
    nothing readable is an error naming its first bad line."""
    good = _otlp_line(0, "What is a set?", "A collection.", "py/sets")
    path = tmp_path / "mixed.jsonl"
    path.write_text(good + '\n{"resourceSpans": oops}\n{"log": "not a span"}\n')
    traces = read_traces([path])
    assert len(traces) == 1
    assert [(x.line, x.reason) for x in traces.skipped_lines] == [(2, "bad_json"), (3, "not_a_span")]
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n")
    with pytest.raises(Exception) as err:
        read_traces([broken])
    assert f"{broken}:1" in err.value.render() and "not JSON" in err.value.render()
