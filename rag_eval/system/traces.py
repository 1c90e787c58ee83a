"""Production traces: OpenTelemetry exports of a RAG application, read into one record per trace:
the question, the answer and the documents the model read.

Two attribute conventions are read side by side:

- OpenInference (Phoenix, Arize, LangSmith's and Langfuse's OTel exports): the root span's
  ``input.value`` / ``output.value``, LLM spans' ``llm.output_messages``, retriever spans'
  ``retrieval.documents.N.document.{id,content,score,metadata}`` (a reranker's output documents
  when the trace has a reranker, since those are what the model read);
- the OpenTelemetry GenAI semantic conventions (``gen_ai.*``): ``gen_ai.operation.name`` says what
  a span is (``retrieval``; ``chat`` / ``text_completion`` / ``generate_content``; ``invoke_agent``),
  ``gen_ai.retrieval.query.text`` and ``gen_ai.retrieval.documents`` (a list of ``{id, score, ...}``
  objects, structured or one JSON string; the text under ``content`` or ``text``),
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (``[{role, parts: [{type: text,
  content}]}]``), and the deprecated flat ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``.

Accepted files: an OTLP JSON export (``{"resourceSpans": [...]}``, ids hex or base64), JSON lines of
those (the OpenTelemetry Collector's file exporter), and the opentelemetry-sdk console exporter's
spans (``ConsoleSpanExporter``'s default output: pretty-printed ``ReadableSpan.to_json()`` objects
one after another; or a list of them). Any of these may be concatenated. A broken part of a file
(a truncated JSON line, JSON that is no span) is skipped, counted by reason and named with its file
and line (:class:`SkippedLine`); a trace that lacks a part is skipped with a counted reason and
named (trace id, question) in the report. Nothing is dropped silently.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_eval.errors import DataError, Problem
from rag_eval.system.system_records import SkippedLine

SKIP_REASONS = ("no_question", "no_answer", "no_retriever_span", "error_status")
# Why a part of a file was skipped: JSON cut off before its end, JSON broken elsewhere, or JSON that
# is no OpenTelemetry span export.
LINE_SKIP_REASONS = ("truncated_json", "bad_json", "not_a_span")
# gen_ai.operation.name values and the OpenInference span kinds they correspond to.
GEN_AI_KINDS = {
    "retrieval": "RETRIEVER",
    "retrieve_documents": "RETRIEVER",  # an earlier draft's name, still emitted by some instrumentations
    "chat": "LLM",
    "text_completion": "LLM",
    "generate_content": "LLM",
    "invoke_agent": "AGENT",
    "invoke_workflow": "CHAIN",
}
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


def _kind(attrs: dict[str, Any]) -> str:
    """The span's kind: OpenInference's ``openinference.span.kind``, else what its GenAI
    ``gen_ai.operation.name`` corresponds to, else LLM for a span carrying GenAI messages."""
    kind = str(attrs.get("openinference.span.kind") or "").upper()
    if kind:
        return kind
    op = str(attrs.get("gen_ai.operation.name") or "").lower()
    if op in GEN_AI_KINDS:
        return GEN_AI_KINDS[op]
    if any(k.startswith(("gen_ai.output.messages", "gen_ai.completion")) for k in attrs):
        return "LLM"
    return ""


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
                        _kind(attrs),
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
        _kind(attrs),
        attrs,
        0 if not start else int(re.sub(r"\D", "", start)[:20] or 0),
        (status.get("description") or "error") if failed else None,
    )


# Where a new top-level JSON value may start after a broken one: a line beginning with { or [
# (JSON lines, and pretty-printed objects, whose inner lines are indented).
_RESTART = re.compile(r"\n(?=[\[{])")
_DECODER = json.JSONDecoder()


def _json_values(text: str, source: str) -> tuple[list[tuple[int, Any]], list[SkippedLine]]:
    """Every JSON value in ``text`` with the line it starts on: one value, JSON lines, or values
    written one after another (the console exporter's pretty-printed spans). A value that does not
    parse is skipped up to the next line that starts with ``{`` or ``[``, and recorded."""
    values: list[tuple[int, Any]] = []
    skipped: list[SkippedLine] = []
    pos, n = 0, len(text)
    line, counted = 1, 0  # the line number of offset ``counted`` (counted on, never from the start)
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            return values, skipped
        line, counted = line + text.count("\n", counted, pos), pos
        try:
            value, pos = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            m = _RESTART.search(text, pos + 1)
            stop = m.start() if m else n
            # Cut off: the parser ran to the end of the part (an unterminated string, a missing brace).
            cut = exc.pos >= pos + len(text[pos:stop].rstrip()) or exc.msg.startswith("Unterminated string")
            column = exc.pos - (text.rfind("\n", 0, exc.pos) + 1) + 1
            where = f"line {exc.lineno} column {column}" if exc.lineno != line else f"column {column}"
            said = f"{exc.msg.removesuffix(' at')} at {where}"
            size = len(text[pos:stop].rstrip())
            skipped.append(
                SkippedLine(
                    file=source,
                    line=line,
                    reason="truncated_json" if cut else "bad_json",
                    detail=f"JSON cut off after {size} characters ({said})" if cut else f"not JSON: {said}",
                )
            )
            pos = stop
        else:
            values.append((line, value))


def _spans_of(item: Any) -> list[Span] | None:
    """The spans of one JSON value, or None when it is no span export."""
    if isinstance(item, dict) and ("resourceSpans" in item or "resource_spans" in item):
        return _otlp_spans(item)
    if isinstance(item, dict) and "context" in item and "name" in item:
        return [_console_span(item)]
    if isinstance(item, dict) and isinstance(item.get("data"), list):  # {"data": [otlp, ...]}
        return [s for d in item["data"] if isinstance(d, dict) for s in _otlp_spans(d)]
    return None


def read_file(path: Path) -> tuple[list[Span], list[SkippedLine]]:
    """Every span of an export file and the parts of it that were skipped (with file, line and
    reason). DataError naming the file (and line) when nothing in it is a span."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DataError(
            Problem(str(path), f"cannot read the trace file: {exc.strerror or exc}", "check the path")
        ) from None
    except UnicodeDecodeError as exc:
        raise DataError(
            Problem(str(path), f"not UTF-8 text ({exc.reason})", "give a JSON export of the traces")
        ) from None
    values, skipped = _json_values(text, str(path))
    spans: list[Span] = []
    for line, value in values:
        for item in value if isinstance(value, list) else [value]:
            found = _spans_of(item)
            if found is None:
                skipped.append(
                    SkippedLine(
                        file=str(path),
                        line=line,
                        reason="not_a_span",
                        detail="JSON without resourceSpans that is not an SDK console span either",
                    )
                )
                continue
            for span in found:
                span.source = str(path)
            spans += found
    if not spans:
        if any(s.reason != "not_a_span" for s in skipped):
            first = next(s for s in skipped if s.reason != "not_a_span")
            raise DataError(
                Problem(
                    f"{path}:{first.line}",
                    first.detail,
                    "give an OTLP JSON export (one object, or one per line as the Collector writes) or "
                    "the opentelemetry-sdk console exporter's output",
                )
            )
        raise DataError(
            Problem(
                str(path),
                "not an OpenTelemetry trace export (no resourceSpans, and not SDK console spans)",
                "export the traces as OTLP JSON (Phoenix, the Collector's file exporter, or "
                "opentelemetry-sdk's exporters)",
            )
        )
    skipped.sort(key=lambda s: s.line)
    return spans, skipped


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


def _message_text(message: Any) -> str | None:
    """A chat message's text: the GenAI form's text ``parts``, else a ``content`` string (or the
    OpenAI form's list of text parts)."""
    if not isinstance(message, dict):
        return None
    parts = message.get("parts")
    if not isinstance(parts, list):
        parts = message.get("content")
    if isinstance(parts, str):
        return parts.strip() or None
    texts = [
        p.get("content") if isinstance(p.get("content"), str) else p.get("text")
        for p in parts or []
        if isinstance(p, dict) and p.get("type", "text") == "text"
    ]
    joined = "\n".join(t.strip() for t in texts if isinstance(t, str) and t.strip())
    return joined or None


def _last_message(value: Any, role: str) -> str | None:
    """The text of the last message of ``role`` in a GenAI messages attribute (a list, or its JSON)."""
    msgs = _parsed(value)
    if isinstance(msgs, dict):
        msgs = msgs.get("messages", [msgs])
    for m in reversed(msgs if isinstance(msgs, list) else []):
        if isinstance(m, dict) and str(m.get("role", role)).lower() == role:
            found = _message_text(m)
            if found:
                return found
    return None


def _flat_message(attrs: dict[str, Any], prefix: str, role: str) -> str | None:
    """The last ``role`` message of the deprecated flat form (``gen_ai.prompt.N.role`` and
    ``gen_ai.prompt.N.content``; ``gen_ai.completion.N.*``), as OpenLLMetry writes it."""
    by_n: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = re.match(rf"^{re.escape(prefix)}\.(\d+)\.(role|content)$", key)
        if m:
            by_n.setdefault(int(m.group(1)), {})[m.group(2)] = value
    for n in sorted(by_n, reverse=True):
        d = by_n[n]
        content = d.get("content")
        if str(d.get("role", role)).lower() == role and isinstance(content, str) and content.strip():
            return content.strip()
    return None


def _gen_ai_documents(span: Span) -> list[TraceDocument]:
    """The documents of a GenAI retrieval span: ``gen_ai.retrieval.documents``, a list of objects
    with ``id`` and ``score`` and, as the convention allows, further fields (the text under
    ``content``, ``text`` or ``page_content``; ``metadata``, else the remaining fields)."""
    raw = _parsed(span.attributes.get("gen_ai.retrieval.documents"))
    out = []
    for d in raw if isinstance(raw, list) else []:
        if not isinstance(d, dict):
            continue
        content = next((d[k] for k in ("content", "text", "page_content") if isinstance(d.get(k), str)), None)
        meta = _parsed(d.get("metadata"))
        if not isinstance(meta, dict):
            known = ("id", "score", "content", "text", "page_content", "metadata")
            meta = {k: v for k, v in d.items() if k not in known}
        cid = d.get("id") if d.get("id") not in (None, "") else meta.get("id")
        score = d.get("score")
        out.append(
            TraceDocument(
                None if cid in (None, "") else str(cid),
                content,
                float(score) if isinstance(score, (int, float, str)) and _is_number(score) else None,
                meta,
            )
        )
    return out


def _llm_output(span: Span) -> str | None:
    """An LLM span's answer: OpenInference output messages, GenAI output messages (current or the
    deprecated flat completions), else its output value."""
    msgs = sorted(
        (int(m.group(1)), v)
        for k, v in span.attributes.items()
        if (m := re.match(r"^llm\.output_messages\.(\d+)\.message\.content$", k))
    )
    if msgs and isinstance(msgs[-1][1], str) and msgs[-1][1].strip():
        return msgs[-1][1].strip()
    return (
        _last_message(span.attributes.get("gen_ai.output.messages"), "assistant")
        or _flat_message(span.attributes, "gen_ai.completion", "assistant")
        or _pick(span.attributes.get("output.value"), ANSWER_KEYS)
        or _pick(span.attributes.get("gen_ai.completion"), ANSWER_KEYS)
    )


def _question(root: Span, retrievers: list[Span]) -> str | None:
    """The user's question: the root span's input, else (an agent or workflow root) its last GenAI
    user message (or deprecated flat prompt), else the first retriever's input or GenAI query text."""
    question = _pick(root.attributes.get("input.value"), QUESTION_KEYS)
    if question is None and root.kind != "LLM":  # an LLM's user message is the filled prompt
        question = _last_message(root.attributes.get("gen_ai.input.messages"), "user") or _flat_message(
            root.attributes, "gen_ai.prompt", "user"
        )
    for s in retrievers[:1]:
        question = question or _pick(s.attributes.get("input.value"), QUESTION_KEYS)
        question = question or _pick(s.attributes.get("gen_ai.retrieval.query.text"), QUESTION_KEYS)
    return question


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
        question = _question(root, retrievers)
        answer = None
        if root.kind != "RETRIEVER":
            answer = _pick(root.attributes.get("output.value"), ANSWER_KEYS) or _last_message(
                root.attributes.get("gen_ai.output.messages"), "assistant"
            )
        if answer is None and llms:
            answer = _llm_output(llms[-1])
        docs: list[TraceDocument] = []
        source = rerankers[-1:] if rerankers else retrievers
        for s in source:
            found = documents_of(s, "reranker.output_documents" if s.kind == "RERANKER" else "retrieval.documents")
            found = found or (_gen_ai_documents(s) if s.kind == "RETRIEVER" else [])
            docs += [d for d in found if all((d.id, d.content) != (x.id, x.content) for x in docs)]
        meta = {
            k: root.attributes[k] for k in ("session.id", "user.id", "metadata") if root.attributes.get(k) is not None
        }
        t = Trace(tid, question, answer, docs, f"{root.source} (trace {tid})", metadata=meta)
        failed = next((s for s in mine if s.error), None)
        if failed is not None:
            t.skipped, t.detail = "error_status", f"span '{failed.name}' ended with an error: {failed.error}"
        elif question is None:
            t.skipped, t.detail = (
                "no_question",
                (
                    "the root span has no input.value (nor gen_ai.input.messages) with a question, and no retriever "
                    "span has one (input.value, gen_ai.retrieval.query.text)"
                ),
            )
        elif not retrievers:
            t.skipped, t.detail = (
                "no_retriever_span",
                (
                    "no retriever span (openinference.span.kind RETRIEVER or gen_ai.operation.name retrieval): "
                    "the documents are unknown"
                ),
            )
        elif answer is None:
            t.skipped, t.detail = (
                "no_answer",
                ("neither the root span's output (output.value, gen_ai.output.messages) nor an LLM span's"),
            )
        traces.append(t)
    return traces


class TraceRead(list):
    """The traces of the files (a list of :class:`Trace`, complete or skipped with their reason),
    with ``skipped_lines``: the parts of the files that could not be read, each with file, line,
    reason and detail, in file order."""

    def __init__(self, traces: list[Trace], skipped_lines: list[SkippedLine]):
        super().__init__(traces)
        self.skipped_lines = skipped_lines

    def skipped_line_counts(self) -> dict[str, int]:
        """How many parts were skipped, by reason (only the reasons that occurred)."""
        counts = {r: sum(s.reason == r for s in self.skipped_lines) for r in LINE_SKIP_REASONS}
        return {r: n for r, n in counts.items() if n}


def read_traces(paths: list[str | Path]) -> TraceRead:
    """Every trace of the files, complete or skipped with its reason, and the skipped lines."""
    spans: list[Span] = []
    skipped: list[SkippedLine] = []
    for p in paths:  # a trace's spans may be spread over several files (one per batch or per service)
        found, bad = read_file(Path(p))
        spans += found
        skipped += bad
    traces = assemble(spans)
    if not traces:
        raise DataError(
            Problem(", ".join(str(p) for p in paths), "the files hold no spans", "export traces with spans in them")
        )
    return TraceRead(traces, skipped)
