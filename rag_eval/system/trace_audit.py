"""Auditing production traces (``rag-eval traces FILE... --config CONFIG``, ``rag_eval.judge_traces``).

Without labels (the config names no corpus and test set), every complete trace is judged like a
supplied answer (``supplied.judge_supplied``): the judges' figures with intervals over the
traffic, and attribution with retrieval misses decided by the context-recall judge. With a corpus
and a labelled test set, traces are matched to the test set's questions (same words, whitespace
and case aside), and the matched ones are audited like a deployed system: the retrieved documents'
ids (or texts) give the retrieval figures with the labels. Either way a seeded sample of the
audited traces is written to label (``labels/labels.csv`` and ``labels.html``), and every trace
skipped for a missing part is counted by reason and named in the report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from rag_eval.config import (
    AuditConfig,
    GenerationConfig,
    JudgesConfig,
    SystemRetrieverConfig,
    config_from_dict,
    load_config,
)
from rag_eval.data.testset import normalise
from rag_eval.errors import ConfigError, DataError, Problem
from rag_eval.judges.labels import draw, label_run, write_csv, write_html
from rag_eval.llm.client import Usage
from rag_eval.orchestration.steps import Inputs, _set_status, load_inputs
from rag_eval.orchestration.supplied import SuppliedAnswer, context_id, judge_supplied
from rag_eval.progress import say
from rag_eval.report.files import write_report
from rag_eval.report.report_records import Report
from rag_eval.retrievers.mapping import Passage
from rag_eval.rundir import new_run_dir, write_text
from rag_eval.system.http import SystemReply
from rag_eval.system.run import _close, _session, audit_replies
from rag_eval.system.traces import SKIP_REASONS, Trace, read_traces

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


def skipped_section(traces: list[Trace], files: list[str]) -> dict:
    """Counts of read, audited and skipped traces, each skipped one named with its reason."""
    reasons = dict.fromkeys((*SKIP_REASONS, NO_TEXT, NOT_IN_TEST_SET), 0)
    for t in traces:
        if t.skipped:
            reasons[t.skipped] = reasons.get(t.skipped, 0) + 1
    return {
        "files": files,
        "read": len(traces),
        "audited": sum(t.skipped is None for t in traces),
        "skipped": {k: v for k, v in reasons.items() if v},
        "skipped_traces": [
            {"trace_id": t.trace_id, "question": t.question, "reason": t.skipped, "detail": t.detail}
            for t in traces
            if t.skipped
        ],
    }


def _rows(traces: list[Trace]):
    """Complete traces as supplied answers (the contexts: the documents' texts)."""
    rows, seen = [], set()
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
                rid, t.question, [d.content for d in t.documents if d.content], t.answer, None, True, t.where
            )
        )
    return rows


def _match(cfg: AuditConfig, traces: list[Trace], inputs):
    """Replies for the test set's questions that a trace asked (the latest trace of a question wins)."""
    by_text = {normalise(q.question).casefold(): q for q in inputs.questions}
    replies: dict[str, SystemReply] = {}
    trace_of: dict[str, str] = {}
    for t in traces:
        if t.skipped:
            continue
        q = by_text.get(normalise(t.question).casefold())
        if q is None:
            t.skipped, t.detail = NOT_IN_TEST_SET, "the question is not in the test set"
            continue
        replies[q.id] = SystemReply(q.id, t.answer, [Passage(d.id, d.content, d.score) for d in t.documents])
        trace_of[q.id] = t.trace_id
    return replies, trace_of


def _labelled_audit(cfg: AuditConfig, traces: list[Trace], run_dir: Path, use_cache: bool) -> Report:
    inputs = load_inputs(cfg)
    replies, trace_of = _match(cfg, traces, inputs)
    if not replies:
        raise DataError(
            Problem(
                str(inputs.test_set_path),
                f"none of the {len(traces)} traces asks a question of the test set",
                "give the test set the traced questions, or leave corpus and test_set out to judge without labels",
            )
        )
    name = "traces"
    # "traces" is the placeholder; a system retriever of the config has no replies here.
    others = {
        k: v for k, v in cfg.retrieval.retrievers.items() if k != name and not isinstance(v, SystemRetrieverConfig)
    }
    retrievers = {name: SystemRetrieverConfig(type="system"), **others}
    tcfg = cfg.model_copy(
        update={
            "retrieval": cfg.retrieval.model_copy(update={"retrievers": retrievers}),
            "generation": (cfg.generation or GenerationConfig(retriever=name)).model_copy(
                update={"retriever": name, "prompts": {"system": "(traced application)"}}
            ),
        }
    )
    matched = [q for q in inputs.questions if q.id in replies]
    say(f"traces: {len(matched)} traces match questions of the test set")
    session = _session(tcfg, run_dir, use_cache)
    try:
        report = audit_replies(
            tcfg,
            Inputs(inputs.corpus, matched, inputs.test_set_path),
            replies,
            Usage("traces").to_dict(),
            session,
            run_dir,
            source={"type": "traces", "trace_of": trace_of},
        )
    finally:
        _close(session, run_dir)
    return report


def audit_traces(
    cfg: AuditConfig, files: list[str | Path], *, use_cache: bool = True, label_n: int = 30, seed: int | None = None
) -> Path:
    """The audit of the traces in ``files``; returns the run folder (report.json, summary.json,
    report.md, traces.jsonl, labels/)."""
    traces = read_traces(files)
    run_dir = new_run_dir(cfg)
    write_text(
        run_dir / "traces.jsonl",
        "".join(
            json.dumps(
                {
                    "trace_id": t.trace_id,
                    "question": t.question,
                    "answer": t.answer,
                    "documents": [d.__dict__ for d in t.documents],
                    "skipped": t.skipped,
                    "detail": t.detail,
                    "where": t.where,
                },
                ensure_ascii=False,
            )
            + "\n"
            for t in traces
        ),
    )
    if labelled(cfg):
        report = _labelled_audit(cfg, traces, run_dir, use_cache)
    else:
        rows = _rows(traces)
        if not rows:
            raise DataError(
                Problem(
                    ", ".join(str(f) for f in files),
                    f"none of the {len(traces)} traces is complete (question, documents and answer)",
                    "see the reasons: " + json.dumps(skipped_section(traces, [])["skipped"]),
                )
            )
        report = judge_supplied(cfg, rows, run_dir, use_cache=use_cache)
        if cfg.judges.labels:  # the labels of an earlier draw, filled in: prediction-powered figures
            report = label_run(report, run_dir, cfg.resolve_path(cfg.judges.labels), cfg.stats.confidence)
    t = skipped_section(traces, [str(f) for f in files])
    say(f"traces: {t['read']} read, {t['audited']} audited, skipped: {t['skipped'] or 'none'}")
    t["labels"] = _label_sample(run_dir, report, label_n, cfg.stats.seed if seed is None else seed)
    report.traces = t

    write_report(run_dir, report)

    _set_status(run_dir, "finished")
    return run_dir


def _label_sample(run_dir: Path, report: Report, n: int, seed: int) -> dict | None:
    """A seeded random sample of the audited traces for people to label (rag-eval label's files)."""
    if n <= 0:
        return None
    try:
        rows = draw(run_dir, n, seed)
    except DataError:
        return None
    out = run_dir / "labels"
    out.mkdir(exist_ok=True)
    verdicts = {(r.question_id, r.prompt): r.judges for r in report.rows()}
    write_csv(rows, out / "labels.csv")
    write_html(rows, out / "labels.html", _texts(run_dir), verdicts)
    return {"n": len(rows), "seed": seed, "csv": str(out / "labels.csv"), "html": str(out / "labels.html")}


def _texts(run_dir: Path) -> dict[str, str]:
    """Passage texts by context id, for the labelling page."""
    texts = {}
    for line in (run_dir / "traces.jsonl").read_text(encoding="utf-8").splitlines():
        for d in json.loads(line)["documents"]:
            if d.get("content"):
                texts[context_id(d["content"])] = d["content"]
                if d.get("id"):
                    texts.setdefault(str(d["id"]), d["content"])
    return texts
