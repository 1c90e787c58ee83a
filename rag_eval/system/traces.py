"""Production traces: OpenTelemetry exports (OTLP JSON) of a RAG application instrumented with
OpenInference conventions (Phoenix, Arize, LangSmith's and Langfuse's OTel exports), read into one
record per trace: the question (root span's ``input.value``), the answer (root span's
``output.value``, else the last LLM span's output), and the documents (retriever spans'
``retrieval.documents.N.document.{id,content,score,metadata}``; a reranker's output documents when
the trace has a reranker, since those are what the model read).

Accepted files: an OTLP JSON export (``{"resourceSpans": [...]}``, ids hex or base64), JSON lines of
those (the OpenTelemetry Collector's file exporter), and the opentelemetry-sdk console exporter's
spans (``ReadableSpan.to_json()``, one object or a list). A trace that lacks a part is skipped
with a counted reason and named (trace id, question) in the report, never dropped silently.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_eval.errors import DataError, Problem

SKIP_REASONS = ("no_question", "no_answer", "no_retriever_span", "error_status")
QUESTION_KEYS = ("question", "query", "input", "user_input", "q", "prompt", "messages", "content")
ANSWER_KEYS = ("answer", "output", "result", "text", "content", "response")
_DOC = re.compile(r"^(retrieval\.documents|reranker\.output_documents)\.(\d+)\.document\.(id|content|score|metadata)$")


@dataclass
class Span:
    """The parts of a span the audit reads: ids, name, OpenInference kind, flat attributes, status."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    attributes: dict[str, Any]
    start: int = 0
    error: str | None = None
    source: str = ""  # the file it was read from


@dataclass
class TraceDocument:
    id: str | None
    content: str | None
    score: float | None
    metadata: dict = field(default_factory=dict)


@dataclass
class Trace:
    """One trace as an audited answer, or the reason it cannot be one."""

    trace_id: str
    question: str | None
    answer: str | None
    documents: list[TraceDocument]
    where: str
    skipped: str | None = None  # one of SKIP_REASONS
    detail: str = ""
    metadata: dict = field(default_factory=dict)


def _hex_id(value: Any) -> str:
    """A trace or span id as lowercase hex: OTLP JSON writes hex, protobuf's JSON mapping base64,
    the SDK's console exporter 0x-prefixed hex."""
    if value in (None, ""):
        return ""
    s = str(value)
    if s.startswith("0x"):
        return s[2:].lower()
    if re.fullmatch(r"[0-9a-fA-F]{16}|[0-9a-fA-F]{32}", s):
        return s.lower()
    try:
        return base64.b64decode(s, validate=True).hex()
    except (ValueError, TypeError):
        return s


def _any_value(v: Any) -> Any:
    """An OTLP AnyValue (``{"stringValue": ...}``, ``{"arrayValue": {"values": [...]}}``, ...) as Python."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return int(v["intValue"])
    if "arrayValue" in v:
        return [_any_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: _any_value(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values", [])}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def _attributes(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):  # the console exporter's flat mapping
        return dict(raw)
    return {a["key"]: _any_value(a.get("value")) for a in raw or [] if isinstance(a, dict) and "key" in a}


def _otlp_spans(data: dict) -> list[Span]:
    spans = []
    for rs in data.get("resourceSpans") or data.get("resource_spans") or []:
        for ss in rs.get("scopeSpans") or rs.get("scope_spans") or rs.get("instrumentationLibrarySpans") or []:
            for s in ss.get("spans") or []:
                attrs = _attributes(s.get("attributes"))
                status = s.get("status") or {}
                code = status.get("code")
                failed = code in (2, "STATUS_CODE_ERROR", "ERROR")
                spans.append(
                    Span(
                        _hex_id(s.get("traceId") or s.get("trace_id")),
                        _hex_id(s.get("spanId") or s.get("span_id")),
                        _hex_id(s.get("parentSpanId") or s.get("parent_span_id")) or None,
                        s.get("name", ""),
                        str(attrs.get("openinference.span.kind", "")).upper(),
                        attrs,
                        int(s.get("startTimeUnixNano") or s.get("start_time_unix_nano") or 0),
                        (status.get("message") or "error") if failed else None,
                    )
                )
    return spans


def _console_span(s: dict) -> Span:
    ctx = s.get("context") or {}
    attrs = _attributes(s.get("attributes"))
    status = s.get("status") or {}
    failed = str(status.get("status_code", "")).upper() == "ERROR"
    start = s.get("start_time") or ""
    return Span(
        _hex_id(ctx.get("trace_id")),
        _hex_id(ctx.get("span_id")),
        _hex_id(s.get("parent_id")) or None,
        s.get("name", ""),
        str(attrs.get("openinference.span.kind", "")).upper(),
        attrs,
        0 if not start else int(re.sub(r"\D", "", start)[:20] or 0),
        (status.get("description") or "error") if failed else None,
    )


def read_spans(path: Path) -> list[Span]:
    """Every span of an export file; DataError naming the file (and line) when it is none of the formats."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(
            Problem(str(path), f"cannot read the trace file: {exc.strerror or exc}", "check the path")
        ) from None
    try:
        docs = [json.loads(text)]
    except json.JSONDecodeError:
        docs = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                docs.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(
                    Problem(
                        f"{path}:{n}",
                        f"not JSON: {exc.msg}",
                        "give an OTLP JSON export (one object, or one per line as the Collector writes)",
                    )
                ) from None
    spans: list[Span] = []
    for doc in docs:
        items = doc if isinstance(doc, list) else [doc]
        for item in items:
            if isinstance(item, dict) and ("resourceSpans" in item or "resource_spans" in item):
                spans += _otlp_spans(item)
            elif isinstance(item, dict) and "context" in item and "name" in item:
                spans.append(_console_span(item))
            elif isinstance(item, dict) and isinstance(item.get("data"), list):  # {"data": [otlp, ...]}
                for d in item["data"]:
                    spans += _otlp_spans(d) if isinstance(d, dict) else []
            else:
                raise DataError(
                    Problem(
                        str(path),
                        "not an OpenTelemetry trace export (no resourceSpans, and not SDK console spans)",
                        "export the traces as OTLP JSON (Phoenix, the Collector's file exporter, or "
                        "opentelemetry-sdk's exporters)",
                    )
                )
    return spans


def _parsed(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _pick(value: Any, keys: tuple[str, ...]) -> str | None:
    """The text in an input/output value: the string itself, or the first known key of a JSON object
    (LangChain's {"question": ...}, {"output": ...}), or its only string value."""
    value = _parsed(value)
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, dict):
        for k in keys:
            if isinstance(value.get(k), str) and value[k].strip():
                return value[k].strip()
        for k in keys:
            if isinstance(value.get(k), (dict, list)):
                inner = _pick(value[k], keys)
                if inner:
                    return inner
        strings = [v for v in value.values() if isinstance(v, str) and v.strip()]
        return strings[0].strip() if len(strings) == 1 else None
    if isinstance(value, list) and value:
        return _pick(value[-1], keys)
    return None


def documents_of(span: Span, prefix: str = "retrieval.documents") -> list[TraceDocument]:
    """A span's documents under ``prefix`` (flat ``prefix.N.document.*`` keys, or one JSON list)."""
    by_n: dict[int, dict] = {}
    for key, value in span.attributes.items():
        m = _DOC.match(key)
        if m and m.group(1) == prefix:
            by_n.setdefault(int(m.group(2)), {})[m.group(3)] = value
    if not by_n and isinstance(span.attributes.get(prefix), (str, list)):  # a JSON list of documents
        raw = _parsed(span.attributes[prefix])
        for n, d in enumerate(raw if isinstance(raw, list) else []):
            doc = d.get("document", d) if isinstance(d, dict) else {}
            # Flattened keys inside (an OTLP kvlist: {"document.id": ..., "document.content": ...}).
            doc = {k.removeprefix("document."): v for k, v in doc.items()} if isinstance(doc, dict) else {}
            by_n[n] = {k: doc.get(k) for k in ("id", "content", "score", "metadata")}
    out = []
    for n in sorted(by_n):
        d = by_n[n]
        meta = _parsed(d.get("metadata"))
        score = d.get("score")
        meta = meta if isinstance(meta, dict) else {}
        cid = d.get("id") if d.get("id") not in (None, "") else meta.get("id")  # LangChain keeps it in metadata
        out.append(
            TraceDocument(
                None if cid in (None, "") else str(cid),
                None if d.get("content") is None else str(d["content"]),
                float(score) if isinstance(score, (int, float, str)) and _is_number(score) else None,
                meta,
            )
        )
    return out


def _is_number(v: Any) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def _llm_output(span: Span) -> str | None:
    msgs = sorted(
        (int(m.group(1)), v)
        for k, v in span.attributes.items()
        if (m := re.match(r"^llm\.output_messages\.(\d+)\.message\.content$", k))
    )
    if msgs and isinstance(msgs[-1][1], str) and msgs[-1][1].strip():
        return msgs[-1][1].strip()
    return _pick(span.attributes.get("output.value"), ANSWER_KEYS)


def assemble(spans: list[Span]) -> list[Trace]:
    """One Trace per trace id, in the order the traces started."""
    by_trace: dict[str, list[Span]] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    traces = []
    for tid, mine in sorted(by_trace.items(), key=lambda kv: min(s.start for s in kv[1])):
        mine.sort(key=lambda s: s.start)
        ids = {s.span_id for s in mine}
        roots = [s for s in mine if not s.parent_id or s.parent_id not in ids]
        root = roots[0] if roots else mine[0]
        retrievers = [s for s in mine if s.kind == "RETRIEVER"]
        rerankers = [s for s in mine if s.kind == "RERANKER"]
        llms = [s for s in mine if s.kind == "LLM"]
        question = _pick(root.attributes.get("input.value"), QUESTION_KEYS)
        if question is None and retrievers:
            question = _pick(retrievers[0].attributes.get("input.value"), QUESTION_KEYS)
        answer = _pick(root.attributes.get("output.value"), ANSWER_KEYS) if root.kind != "RETRIEVER" else None
        if answer is None and llms:
            answer = _llm_output(llms[-1])
        docs: list[TraceDocument] = []
        source = rerankers[-1:] if rerankers else retrievers
        for s in source:
            found = documents_of(s, "reranker.output_documents" if s.kind == "RERANKER" else "retrieval.documents")
            docs += [d for d in found if all((d.id, d.content) != (x.id, x.content) for x in docs)]
        meta = {
            k: root.attributes[k] for k in ("session.id", "user.id", "metadata") if root.attributes.get(k) is not None
        }
        t = Trace(tid, question, answer, docs, f"{root.source} (trace {tid})", metadata=meta)
        failed = next((s for s in mine if s.error), None)
        if failed is not None:
            t.skipped, t.detail = "error_status", f"span '{failed.name}' ended with an error: {failed.error}"
        elif question is None:
            t.skipped, t.detail = "no_question", "the root span has no input.value with a question"
        elif not retrievers:
            t.skipped, t.detail = "no_retriever_span", "no span of kind RETRIEVER: the documents are unknown"
        elif answer is None:
            t.skipped, t.detail = "no_answer", "neither the root span's output.value nor an LLM span's output"
        traces.append(t)
    return traces


def read_traces(paths: list[str | Path]) -> list[Trace]:
    """Every trace of the files, complete or skipped with its reason."""
    spans: list[Span] = []
    for p in paths:  # a trace's spans may be spread over several files (one per batch or per service)
        for span in read_spans(Path(p)):
            span.source = str(p)
            spans.append(span)
    traces = assemble(spans)
    if not traces:
        raise DataError(
            Problem(", ".join(str(p) for p in paths), "the files hold no spans", "export traces with spans in them")
        )
    return traces
