"""A whole LlamaIndex query engine or Haystack pipeline as the system: asked once per question (in
threads, ``concurrency`` at a time); its answer and the nodes / documents it used come back as a
``SystemReply``. An exception of the user's pipeline is that question's error, never a crash."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from rag_eval.errors import ConfigError, Problem
from rag_eval.json_paths import extract, parse_path
from rag_eval.llm.usage import Usage
from rag_eval.retrievers.custom import import_object
from rag_eval.retrievers.mapping import document_passage, node_passage
from rag_eval.system.http import SystemReply, Trial, fill
from rag_eval.system.settings import HaystackSystemConfig, LlamaIndexSystemConfig
from rag_eval.types import Question


def text_of(value: Any) -> str:
    """An answer as text: a string, a ChatMessage's text, a Haystack GeneratedAnswer's data."""
    if isinstance(value, str):
        return value
    for attr in ("text", "data", "content", "response"):
        inner = getattr(value, attr, None)
        if isinstance(inner, str):
            return inner
    return str(value)


class _ThreadedSystem:
    """Runs ``self.call(question)`` in threads, ``concurrency`` at a time."""

    def __init__(self, name: str, concurrency: int):
        self.usage = Usage.counter(name)
        self.gate = asyncio.Semaphore(concurrency)
        self.last_raw = ""  # the last output as it came, for ``rag-eval validate --try``

    def call(self, question: Question) -> SystemReply:
        raise NotImplementedError

    def request_of(self, question: Question) -> dict:
        """What the pipeline is given for a question."""
        return {"query": question.question}

    async def try_once(self, question: Question) -> Trial:
        """The question asked once, with the pipeline's output as it came and what was parsed."""
        reply = await self.ask(question)
        return Trial(self.request_of(question), None, self.last_raw, reply)

    async def ask(self, question: Question) -> SystemReply:
        start = time.perf_counter()
        async with self.gate:
            self.usage.calls += 1
            try:
                reply = await asyncio.to_thread(self.call, question)
            except Exception as exc:  # the user's pipeline: this question's error
                self.usage.failures += 1
                reply = SystemReply(question.id, None, error=f"the pipeline raised {type(exc).__name__}: {exc}")
        reply.attempts, reply.latency_s = 1, time.perf_counter() - start
        return reply

    async def aclose(self) -> None:
        return None


class LlamaIndexSystem(_ThreadedSystem):
    """``factory()`` returns a query engine (``.query(str)``, a Response with ``.response`` and
    ``.source_nodes``)."""

    def __init__(
        self, cfg: LlamaIndexSystemConfig, where: str = "system", cache: Any = None
    ):  # no cache: a pipeline runs in-process
        super().__init__(f"system: {cfg.factory}", cfg.concurrency)
        self.cfg = cfg
        self.engine = import_object(cfg.factory, f"{where}.factory")()
        if not hasattr(self.engine, "query"):
            raise ConfigError(
                Problem(
                    f"{where}.factory",
                    f"'{cfg.factory}' returned {type(self.engine).__name__}, not a LlamaIndex query engine",
                    "return index.as_query_engine(...) or another object with .query(question)",
                )
            )

    def call(self, question: Question) -> SystemReply:
        response = self.engine.query(question.question)
        self.last_raw = repr(response)
        answer = getattr(response, "response", None)
        passages = [node_passage(n, self.cfg.id_key) for n in getattr(response, "source_nodes", None) or []]
        if answer is None:
            return SystemReply(question.id, None, passages, error="the query engine's response has no answer text")
        return SystemReply(question.id, text_of(answer), passages)


class HaystackSystem(_ThreadedSystem):
    """``factory()`` returns a Pipeline; ``inputs`` (templated) is its run data, ``answer`` and
    ``documents`` are paths into its outputs (``$.component.output``)."""

    def __init__(
        self, cfg: HaystackSystemConfig, where: str = "system", cache: Any = None
    ):  # no cache: a pipeline runs in-process
        super().__init__(f"system: {cfg.factory}", cfg.concurrency)
        self.cfg = cfg
        self.pipeline = import_object(cfg.factory, f"{where}.factory")()
        if not hasattr(self.pipeline, "run"):
            raise ConfigError(
                Problem(
                    f"{where}.factory",
                    f"'{cfg.factory}' returned {type(self.pipeline).__name__}, not a Haystack Pipeline",
                    "return a haystack.Pipeline",
                )
            )
        # The components whose outputs the paths read, so that Pipeline.run returns them too.
        steps = (parse_path(cfg.answer), parse_path(cfg.documents))
        self.wanted = {s[0] for s in steps if s and isinstance(s[0], str)}

    def request_of(self, question: Question) -> dict:
        return {"inputs": fill(self.cfg.inputs, question)}

    def call(self, question: Question) -> SystemReply:
        out = self.pipeline.run(fill(self.cfg.inputs, question), include_outputs_from=self.wanted)
        self.last_raw = json.dumps(out, default=repr, ensure_ascii=False)
        docs = []
        for value in extract(out, self.cfg.documents):
            docs += value if isinstance(value, list) else [value]
        passages = [document_passage(d, self.cfg.id_key) for d in docs]
        answers = extract(out, self.cfg.answer)
        if not answers or answers[0] is None:
            return SystemReply(
                question.id, None, passages, error=f"the pipeline's outputs have no answer at {self.cfg.answer}"
            )
        return SystemReply(question.id, text_of(answers[0]), passages)
