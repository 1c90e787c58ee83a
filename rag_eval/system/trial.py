"""``rag-eval validate CONFIG --try "a question"``: the configured system asked one question, and
what the audit would make of its reply shown step by step: the request as filled in, the reply as
it came, the answer, passages and ids parsed from it, and how each passage maps onto the corpus."""

from __future__ import annotations

import asyncio
import json

from rag_eval.config import AuditConfig
from rag_eval.errors import ConfigError, Problem
from rag_eval.retrievers.mapping import TextMatcher, chunk_of
from rag_eval.system.http import HttpRequest, Trial
from rag_eval.system.replies import make_system
from rag_eval.system.settings import HttpSystemConfig, SystemConfig
from rag_eval.types import Corpus, Question

RAW_CHARS = 3000  # of the reply shown
TEXT_CHARS = 100  # of each passage shown


def try_system(cfg: AuditConfig, text: str) -> Trial:
    """The configured system asked ``text`` once (no cache, no retries)."""
    question = Question("try", text, {}, True)

    async def main() -> Trial:
        _system(cfg)
        system = make_system(cfg, None)  # no cache: the question is asked now
        try:
            return await system.try_once(question)
        finally:
            await system.aclose()

    return asyncio.run(main())


def _system(cfg: AuditConfig) -> SystemConfig:
    """The config's system; a clear error for a config without one."""
    if cfg.system is None:
        raise ConfigError(
            Problem(cfg.where("system"), "no system is configured", "add a system: section to the config")
        )
    return cfg.system


def _short(text: str | None, n: int) -> str:
    text = " ".join((text or "").split())
    return repr(text if len(text) <= n else text[: n - 3] + "...")


def describe(cfg: AuditConfig, trial: Trial, corpus: Corpus) -> str:
    """The trial as lines: request, raw reply, parsed answer and passages (and their mapping)."""
    s = _system(cfg)
    lines = []
    if isinstance(s, HttpSystemConfig):
        req = trial.request if isinstance(trial.request, HttpRequest) else HttpRequest(**trial.request)
        lines.append(f"request: {req.method} {req.url}")
        if req.headers:
            lines.append(f"  headers: {json.dumps(req.headers, ensure_ascii=False)}")
        if req.params:
            lines.append(f"  params: {json.dumps(req.params, ensure_ascii=False)}")
        if req.body is not None:
            lines.append(f"  body: {json.dumps(req.body, ensure_ascii=False)}")
        got = f"HTTP {trial.status}" if trial.status is not None else "no reply"
    else:
        what = f"{s.factory}()" if hasattr(s, "factory") else f"the {s.type} system"  # a kind without a factory
        lines.append(f"request: {what} given {json.dumps(trial.request, ensure_ascii=False, default=repr)}")
        got = "output"
    lines.append(f"reply: {got} in {trial.reply.latency_s:.2f} s")
    raw = trial.raw if len(trial.raw) <= RAW_CHARS else trial.raw[:RAW_CHARS] + f"... ({len(trial.raw)} characters)"
    lines += [f"  {line}" for line in (raw or "(empty)").splitlines()]
    reply = trial.reply
    lines.append("parsed:")
    if reply.error is not None:
        lines.append(f"  error: {reply.error}")
    else:
        lines.append(f"  answer: {_short(reply.answer, 300)}")
    if isinstance(s, HttpSystemConfig):
        paths = ", ".join(f"{k} {getattr(s, k)}" for k in ("answer", "contexts", "ids", "scores") if getattr(s, k))
        lines.append(f"  (JSON paths: {paths})")
    lines.append(f"  passages: {len(reply.passages)}")
    matcher = TextMatcher(corpus)
    for n, p in enumerate(reply.passages, start=1):
        idx = chunk_of(corpus, matcher, p.id, p.text)
        if idx is None:
            where = "not in the corpus: a passage of its own (relevant when an evidence quote is in it)"
        elif p.id is not None and p.id in corpus.index:
            where = "a corpus chunk (by id)"
        else:
            where = f"corpus chunk '{corpus.chunks[idx].id}' (by its text)"
        score = f", score {p.score:g}" if p.score is not None else ""
        lines.append(f"  {n}. id {p.id!r}{score}: {where}")
        if p.text is not None:
            lines.append(f"     text {_short(p.text, TEXT_CHARS)}")
    return "\n".join(lines)
