"""Production traces as the answers of an audit (``rag-eval traces FILE... --config CONFIG``,
``rag_eval.judge_traces``; the audit is ``rag_eval.orchestration.sources.TracedAnswers``).

Without labels (the config names no corpus and test set), every complete trace is judged like a
supplied answer: the judges' figures with intervals over the
traffic, and attribution with retrieval misses decided by the context-recall judge. With a corpus
and a labelled test set, traces are matched to the test set's questions (same words, whitespace
and case aside), and the matched ones are audited like a deployed system: the retrieved documents'
ids (or texts) give the retrieval figures with the labels. Either way a seeded sample of the
audited traces is written to label (``labels/labels.csv`` and ``labels.html``), and every trace
skipped for a missing part is counted by reason and named in the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from rag_eval.answers.settings import GenerationConfig
from rag_eval.answers.supplied import SuppliedAnswer, context_id
from rag_eval.config import AuditConfig, config_from_dict, load_config
from rag_eval.data.inputs import Inputs
from rag_eval.data.testset import normalise
from rag_eval.errors import ConfigError, Problem
from rag_eval.judges.settings import JudgesConfig
from rag_eval.retrievers.mapping import Passage
from rag_eval.retrievers.settings import SystemRetrieverConfig
from rag_eval.system.http import SystemReply
from rag_eval.system.system_records import TracesSection
from rag_eval.system.traces import SKIP_REASONS, Trace
from rag_eval.text import record_lines

NO_TEXT = "no_document_text"
NOT_IN_TEST_SET = "not_in_test_set"


def traces_config(config: Any, out: str | Path | None = None) -> AuditConfig:
    """The config of a traces audit: a YAML path, a dict or an AuditConfig; ``corpus``, ``test_set``
    and ``retrieval`` may be left out (then there are no labels, and no retrieval figures)."""
    if isinstance(config, AuditConfig):
        cfg = config
    else:
        path = None
        if isinstance(config, (str, Path)):
            path = Path(config)
            try:
                raw = yaml.safe_load(path.read_text(encoding="utf-8"))
            except OSError as exc:
                raise ConfigError(
                    Problem(str(path), f"cannot read the config: {exc.strerror or exc}", "check the path")
                ) from None
            except yaml.YAMLError as exc:
                raise ConfigError(
                    Problem(str(path), f"not valid YAML: {exc}", "check indentation and quoting")
                ) from None
        else:
            raw = config
        if not isinstance(raw, dict):
            raise ConfigError(
                Problem(str(path or "config"), "the config must be a mapping", "give name: and judges: at least")
            )
        raw = dict(raw)
        complete = all(k in raw for k in ("name", "corpus", "test_set", "retrieval"))
        if not ("corpus" in raw and "test_set" in raw):
            raw.setdefault("corpus", {"source": "given"})
            raw.setdefault("test_set", {"source": "given"})
        # A placeholder when none is named: the traces' own retrieval is added as retriever "traces".
        raw.setdefault("retrieval", {"retrievers": {"traces": {"type": "bm25"}}})
        raw.setdefault("judges", {})
        raw.pop("system", None)
        if path is not None and complete:
            cfg = load_config(path)  # with line numbers in its errors
            if cfg.system is not None:
                cfg = cfg.model_copy(update={"system": None})
        elif path is not None:
            cfg = config_from_dict(raw, path.parent, label=str(path))
            cfg.config_path = str(path)
        else:
            cfg = config_from_dict(raw)
    if cfg.judges is None:
        cfg = cfg.model_copy(update={"judges": JudgesConfig()})
    if out is not None:
        cfg = cfg.model_copy(update={"report": cfg.report.model_copy(update={"out": str(out)})})
    return cfg


def labelled(cfg: AuditConfig) -> bool:
    """The config names a corpus and a test set file: traces are matched to labelled questions."""
    return cfg.corpus.source != "given" and cfg.test_set.path is not None


def traced_config(cfg: AuditConfig) -> AuditConfig:
    """The config of a labelled traces audit: the traces' retrieval is the retriever ``traces``
    (beside the config's own retrievers) and their answers the prompt ``system``."""
    name = "traces"
    # "traces" is the placeholder; a system retriever of the config has no replies here.
    others = {
        k: v for k, v in cfg.retrieval.retrievers.items() if k != name and not isinstance(v, SystemRetrieverConfig)
    }
    retrievers = {name: SystemRetrieverConfig(type="system"), **others}
    return cfg.model_copy(
        update={
            "retrieval": cfg.retrieval.model_copy(update={"retrievers": retrievers}),
            "generation": (cfg.generation or GenerationConfig(retriever=name)).model_copy(
                update={"retriever": name, "prompts": {"system": "(traced application)"}}
            ),
        }
    )


def skipped_section(traces: list[Trace], files: list[str]) -> TracesSection:
    """Counts of read, audited and skipped traces, each skipped one named with its reason."""
    reasons = dict.fromkeys((*SKIP_REASONS, NO_TEXT, NOT_IN_TEST_SET), 0)
    for t in traces:
        if t.skipped:
            reasons[t.skipped] = reasons.get(t.skipped, 0) + 1
    section = {
        "files": files,
        "read": len(traces),
        "audited": sum(t.skipped is None for t in traces),
        "skipped": {k: v for k, v in reasons.items() if v},
        "skipped_traces": [
            {"trace_id": t.trace_id, "question": t.question, "reason": t.skipped, "detail": t.detail}
            for t in traces
            if t.skipped
        ],
        "skipped_lines": [line.dump() for line in getattr(traces, "skipped_lines", [])],  # read_traces' TraceRead
    }
    return TracesSection.load(section)


def trace_rows(traces: list[Trace]) -> list[SuppliedAnswer]:
    """Complete traces as supplied answers (the contexts: the documents' texts)."""
    rows: list[SuppliedAnswer] = []
    seen: set[str] = set()
    for t in traces:
        if t.skipped:
            continue
        if t.documents and not any(d.content for d in t.documents):
            t.skipped, t.detail = NO_TEXT, "the retriever span's documents have ids but no content (give a corpus)"
            continue
        rid = t.trace_id if t.trace_id not in seen else f"{t.trace_id}-{len(seen)}"
        seen.add(rid)
        rows.append(
            SuppliedAnswer(
                rid,
                t.question or "",
                [d.content for d in t.documents if d.content],
                t.answer or "",
                None,
                True,
                t.where,
            )
        )
    return rows


def match_traces(traces: list[Trace], inputs: Inputs) -> tuple[dict[str, SystemReply], dict[str, str]]:
    """Replies for the test set's questions that a trace asked (the latest trace of a question wins)."""
    by_text = {normalise(q.question).casefold(): q for q in inputs.questions}
    replies: dict[str, SystemReply] = {}
    trace_of: dict[str, str] = {}
    for t in traces:
        if t.skipped:
            continue
        q = by_text.get(normalise(t.question or "").casefold())
        if q is None:
            t.skipped, t.detail = NOT_IN_TEST_SET, "the question is not in the test set"
            continue
        replies[q.id] = SystemReply(q.id, t.answer, [Passage(d.id, d.content, d.score) for d in t.documents])
        trace_of[q.id] = t.trace_id
    return replies, trace_of


def trace_records(traces: list[Trace]) -> list[dict]:
    """Every trace read, as ``traces.jsonl`` keeps it (skipped ones with the reason)."""
    return [
        {
            "trace_id": t.trace_id,
            "question": t.question,
            "answer": t.answer,
            "documents": [d.__dict__ for d in t.documents],
            "skipped": t.skipped,
            "detail": t.detail,
            "where": t.where,
        }
        for t in traces
    ]


class _StoredDocument(BaseModel):
    """A trace's document as ``traces.jsonl`` keeps it (``TraceDocument``); only id and text are read."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    content: str | None = None


class _StoredTrace(BaseModel):
    """A line of ``traces.jsonl`` (``trace_records``); only its documents are read back."""

    model_config = ConfigDict(extra="ignore")

    documents: list[_StoredDocument] = []


def passage_texts(run_dir: Path) -> dict[str, str]:
    """Passage texts by context id, for the labelling page."""
    texts = {}
    for line in filter(str.strip, record_lines((run_dir / "traces.jsonl").read_text(encoding="utf-8"))):
        for d in _StoredTrace.model_validate_json(line).documents:
            if d.content:
                texts[context_id(d.content)] = d.content
                if d.id:
                    texts.setdefault(d.id, d.content)
    return texts
