"""A deployed system's answers: the system is asked every question (replies kept in ``system.jsonl``
as they come; a rerun asks only what is missing), and its replies become the records of an audit:
one answer per question (prompt ``system``, on the passages it returned), the section of the report
that says how it was called and what failed, and the failures in words for the end of the run.
The audit itself is ``rag_eval.orchestration.sources.SystemAnswers``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from rag_eval.config import AuditConfig
from rag_eval.hashing import inputs_hash
from rag_eval.progress import say, track_async
from rag_eval.retrievers.custom import import_object
from rag_eval.retrievers.settings import SystemRetrieverConfig
from rag_eval.rundir import read_jsonl, write_text
from rag_eval.system.http import StoredReply, SystemReply
from rag_eval.system.settings import HttpSystemConfig
from rag_eval.types import Question


def system_name(cfg: AuditConfig) -> str:
    """The retriever name of the system (``system`` unless the config names it otherwise)."""
    return next(n for n, r in cfg.retrieval.retrievers.items() if isinstance(r, SystemRetrieverConfig))


def make_system(cfg: AuditConfig, cache):
    """The configured system's client, the class its kind names (call inside the run's event loop)."""
    s = cfg.system
    if s is None:
        raise ValueError("the config has no system: section")
    client = type(s).client
    where = cfg.where("system")
    if isinstance(client, str):
        client = import_object(client, f"{where} (type: {s.type})")
    return client(s, cache=cache, where=where)


def request_key(cfg: AuditConfig, q: Question) -> str:
    """What a finished reply was asked with: the system's settings and the question."""
    # How it is called (concurrency, retries, timeouts) does not change a reply: not part of the key.
    how = {"concurrency", "max_retries", "backoff_s", "timeout_s", "cache"}
    s = cfg.system
    assert s is not None  # only a config with a system asks it
    return inputs_hash(s.model_dump(mode="json", exclude=how & set(type(s).model_fields)), q.id, q.question)


def ask_all(cfg: AuditConfig, questions: list[Question], out: Path, cache) -> tuple[dict[str, SystemReply], dict]:
    """Every question's reply, appended to ``out`` as each comes; finished replies of an unchanged
    request are reused (failed ones are asked again). Returns the replies and the usage."""
    stored = (StoredReply.model_validate(r) for r in read_jsonl(out))
    done = {r.question_id: r for r in stored if r.error is None}
    replies: dict[str, SystemReply] = {}
    keys = {q.id: request_key(cfg, q) for q in questions}
    todo = []
    for q in questions:
        old = done.get(q.id)
        if old is not None and old.request_key == keys[q.id]:
            replies[q.id] = SystemReply.from_stored(old)
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
        usage = getattr(system, "usage", None)  # a kind that calls no model may keep none
        return usage.to_dict() if usage is not None else {"model": "system", "calls": len(todo)}

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
        "passages": mapped.counts.model_dump(),
        "unknown_ids": [{"question_id": q, "id": i} for q, i in mapped.unknown_ids[:20]],
        "usage": usage,
        "note": "retrieval figures are over the questions the system answered; a failed question is not_judged",
    }


def failure_lines(cfg: AuditConfig, failed: list[tuple[str, str]], limit: int = 5) -> list[str]:
    """The failed questions' reasons for the end of a run (the first ``limit``, then a count); a
    timeout names the limit it ran into (``system.timeout_s``)."""
    timeout = getattr(cfg.system, "timeout_s", None)
    lines = []
    for qid, error in failed[:limit]:
        why = error.strip()
        if "Timeout" in why and timeout is not None:
            why = (
                f"{why.rstrip(': ')} (no reply within system.timeout_s = {timeout:g} s; raise it if the system is slow)"
            )
        lines.append(f"  {qid}: {why}")
    if len(failed) > limit:
        lines.append(f"  ... and {len(failed) - limit} more (report.md, system.jsonl)")
    return lines
