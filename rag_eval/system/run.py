"""``rag-eval run`` on a config with ``system:``: the system is asked every question (replies kept in
``system.jsonl`` as they come; a rerun asks only what is missing), its passages give the retriever
``system`` (with any configured retriever beside it, on the same questions), its answers are the
prompt ``system``, judged on the passages it returned, and attribution is as for built-in
retrievers. A question the system failed on is ``not_judged`` with the error, and is left out of
the retrieval figures (which are over the questions it answered)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from rag_eval.cache_dirs import cache_root
from rag_eval.config import AuditConfig, HttpSystemConfig, LlamaIndexSystemConfig, SystemRetrieverConfig
from rag_eval.engine import make_engine
from rag_eval.errors import DataError, Problem
from rag_eval.hashing import inputs_hash
from rag_eval.judges.judging import run_judging
from rag_eval.judges.labels import label_run
from rag_eval.llm.session import LLMSession
from rag_eval.orchestration.steps import Inputs, _open_run, _say_reuse, _set_status, retrieval_stage
from rag_eval.progress import say, track_async
from rag_eval.report.assemble import add_judging, build_report, generation_section, retrieved_in_top_k
from rag_eval.report.files import write_report
from rag_eval.report.report_records import Report
from rag_eval.rundir import read_jsonl, write_json, write_text
from rag_eval.system.http import HttpSystem, SystemReply
from rag_eval.system.passages import judged_corpus, map_replies, system_rankings, with_own_passages
from rag_eval.system.pipelines import HaystackSystem, LlamaIndexSystem
from rag_eval.types import Question


def system_name(cfg: AuditConfig) -> str:
    """The retriever name of the system (``system`` unless the config names it otherwise)."""
    return next(n for n, r in cfg.retrieval.retrievers.items() if isinstance(r, SystemRetrieverConfig))


def make_system(cfg: AuditConfig, cache):
    """The configured system's client (call inside the run's event loop)."""
    s = cfg.system
    if isinstance(s, HttpSystemConfig):
        return HttpSystem(s, cache, cfg.where("system"))

    if isinstance(s, LlamaIndexSystemConfig):
        return LlamaIndexSystem(s, cfg.where("system"))
    return HaystackSystem(s, cfg.where("system"))


def request_key(cfg: AuditConfig, q: Question) -> str:
    """What a finished reply was asked with: the system's settings and the question."""
    # How it is called (concurrency, retries, timeouts) does not change a reply: not part of the key.
    how = {"concurrency", "max_retries", "backoff_s", "timeout_s", "cache"}
    return inputs_hash(
        cfg.system.model_dump(mode="json", exclude=how & set(type(cfg.system).model_fields)), q.id, q.question
    )


def ask_all(cfg: AuditConfig, questions: list[Question], out: Path, cache) -> tuple[dict[str, SystemReply], dict]:
    """Every question's reply, appended to ``out`` as each comes; finished replies of an unchanged
    request are reused (failed ones are asked again). Returns the replies and the usage."""
    done = {r["question_id"]: r for r in read_jsonl(out) if r.get("error") is None}
    replies: dict[str, SystemReply] = {}
    keys = {q.id: request_key(cfg, q) for q in questions}
    todo = []
    for q in questions:
        old = done.get(q.id)
        if old is not None and old.get("request_key") == keys[q.id]:
            replies[q.id] = SystemReply.from_dict(old)
        else:
            todo.append(q)
    if replies:
        say(f"system: reusing {len(replies)} finished replies of {out}")

    async def main() -> dict:
        system = make_system(cfg, cache)
        try:
            with out.open("a", encoding="utf-8") as fh:
                async for reply in track_async([system.ask(q) for q in todo], "asking the system"):
                    replies[reply.question_id] = reply
                    fh.write(json.dumps({**reply.to_dict(), "request_key": keys[reply.question_id]}) + "\n")
                    fh.flush()
        finally:
            await system.aclose()
        return system.usage.to_dict()

    usage = asyncio.run(main())
    ordered = {q.id: replies[q.id] for q in questions}
    write_text(out, "".join(json.dumps({**r.to_dict(), "request_key": keys[qid]}) + "\n" for qid, r in ordered.items()))
    return ordered, usage


def generation_records(cfg: AuditConfig, replies: dict[str, SystemReply], mapped) -> list[dict]:
    """One ``generation.jsonl`` record per question: the system's answer on its passages (prompt ``system``)."""
    name = system_name(cfg)
    return [
        {
            "question_id": qid,
            "prompt": "system",
            "prompt_hash": None,
            "retriever": name,
            "contexts": mapped.ids.get(qid, []) if r.error is None else [],
            "answer": r.answer,
            "model": "system",
            "latency_s": round(r.latency_s, 3),
            "cached": r.cached,
            "error": r.error,
        }
        for qid, r in replies.items()
    ]


def system_section(cfg: AuditConfig, questions: list[Question], replies: dict[str, SystemReply], mapped, usage) -> dict:
    """What the report says about the system: how it was called, what failed, how its passages mapped."""
    s = cfg.system
    failed = [
        {"question_id": q.id, "question": q.question, "error": replies[q.id].error}
        for q in questions
        if replies[q.id].error is not None
    ]
    return {
        "type": s.type if s else "traces",
        "endpoint": s.url if isinstance(s, HttpSystemConfig) else getattr(s, "factory", None),
        "retriever": system_name(cfg),
        "questions": len(questions),
        "answered": len(questions) - len(failed),
        "failed": failed,
        "passages": mapped.counts,
        "unknown_ids": [{"question_id": q, "id": i} for q, i in mapped.unknown_ids[:20]],
        "usage": usage,
        "note": "retrieval figures are over the questions the system answered; a failed question is not_judged",
    }


def run_system_audit(cfg: AuditConfig, *, out=None, use_cache: bool = True, resume=None, inputs=None) -> Path:
    """The audit of ``cfg.system``; returns the run folder (see the module's docstring)."""
    inputs, run_dir = _open_run(cfg, out, resume, inputs)
    _set_status(run_dir, "started")
    session = _session(cfg, run_dir, use_cache)
    try:
        say(f"system: asking the {cfg.system.type} system {len(inputs.questions)} questions")
        replies, usage = ask_all(cfg, inputs.questions, run_dir / "system.jsonl", session.cache)
        report = audit_replies(cfg, inputs, replies, usage, session, run_dir)
    finally:
        _close(session, run_dir)
    _finish(run_dir, report)
    return run_dir


def _session(cfg: AuditConfig, run_dir: Path, use_cache: bool):
    return LLMSession(
        cache_root(cfg.cache_folder), use_cache=use_cache, log_dir=run_dir, engine=make_engine(cfg.engine)
    )


def _close(session, run_dir: Path) -> None:
    write_json(run_dir / "llm_usage.json", session.usage())
    session.close()


def _finish(run_dir: Path, report: Report) -> None:
    write_report(run_dir, report)
    _set_status(run_dir, "finished")


def audit_replies(
    cfg: AuditConfig,
    inputs,
    replies: dict[str, SystemReply],
    usage: dict,
    session,
    run_dir: Path,
    source: dict | None = None,
) -> Report:
    """Retrieval figures from the replies' passages, their answers judged on them, attribution;
    the report data. ``replies`` holds one reply per question of ``inputs``; ``source`` describes
    where they came from (default: the configured system)."""
    mapped = map_replies(inputs.corpus, replies)
    questions = with_own_passages(inputs.questions, mapped, len(inputs.corpus))
    answered = [q for q in questions if replies[q.id].error is None]
    failed = [q for q in questions if replies[q.id].error is not None]
    if failed:
        say(f"system: {len(failed)} of {len(questions)} questions failed (not_judged): {replies[failed[0].id].error}")
    if not any(q.answerable for q in answered):
        what = (
            f"the system answered none of the {len(questions)} questions; first error: {replies[failed[0].id].error}"
            if not answered
            else f"the system answered only unanswerable questions ({len(answered)} of {len(questions)}): "
            "its retrieval cannot be measured"
        )
        raise DataError(
            Problem(
                cfg.where("system"),
                what,
                f"check that the system is up and the request fits it (replies in {run_dir})",
            )
        )
    sub = Inputs(mapped.corpus, answered, inputs.test_set_path)
    rankings = system_rankings(mapped, answered, cfg.retrieval.depth)
    res, diagnoses, findings = retrieval_stage(cfg, sub, run_dir, given={system_name(cfg): rankings})
    report = build_report(
        cfg, mapped.corpus, res, test_set_path=str(inputs.test_set_path), findings=findings, diagnoses=diagnoses
    )
    report.config_path = str(Path(cfg.config_path).resolve()) if cfg.config_path else None
    n_ans = sum(q.answerable for q in questions)
    # The test set as asked; the retrieval section counts the questions the system answered.
    report.test_set = report.test_set.model_copy(
        update={"questions": len(questions), "answerable": n_ans, "unanswerable": len(questions) - n_ans}
    )
    report.system = {**system_section(cfg, questions, replies, mapped, usage), **(source or {})}
    records = generation_records(cfg, replies, mapped)
    write_text(run_dir / "generation.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    # Every passage the system returned goes to its generator: "retrieved" is any relevant one among them.
    gen = cfg.generation.model_copy(update={"top_k": cfg.retrieval.depth})
    gcfg = cfg.model_copy(update={"generation": gen})
    report.generation = generation_section(gcfg, records, len(questions), session.usage() + [usage])
    write_report(run_dir, report)
    if cfg.judges is not None:
        judgements, reuse = run_judging(gcfg, judged_corpus(mapped), questions, records, session, run_dir)
        _say_reuse("judgements", reuse)
        add_judging(
            report, gcfg, questions, report.generation.records, judgements, retrieved_in_top_k(gcfg, res), reuse=reuse
        )
        if cfg.judges.labels:
            report = label_run(report, run_dir, cfg.resolve_path(cfg.judges.labels), cfg.stats.confidence)
    report.generation.usage = session.usage() + [usage]
    return report
