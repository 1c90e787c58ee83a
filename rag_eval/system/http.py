"""Calling a deployed RAG service over HTTP, one request per question, with the client layer's
discipline: at most ``concurrency`` requests in flight, retries with exponential backoff on 429,
5xx, timeouts and connection errors (``Retry-After`` honoured), successful responses kept in the
response cache (a rerun of an unchanged audit calls nothing), and calls counted in a ``Usage``.
A question whose call still fails gets its error, never an exception."""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import asdict, dataclass
from typing import Annotated, Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from rag_eval.base_records import Num, required
from rag_eval.errors import ConfigError, Problem
from rag_eval.json_paths import extract, extract_paired, is_single
from rag_eval.llm.client import _SECRETS, redact
from rag_eval.llm.response_cache import ResponseCache, cache_key
from rag_eval.llm.usage import Usage
from rag_eval.retrievers.mapping import Passage
from rag_eval.system.settings import _ENV_REF, HttpSystemConfig
from rag_eval.types import Question

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_WAIT_S = 30.0


class StoredPassage(BaseModel):
    """A passage as ``system.jsonl`` holds it (``Passage.to_dict``)."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    text: str | None = None
    score: float | None = None


class StoredReply(BaseModel):
    """A line of ``system.jsonl``: a reply (``SystemReply.to_dict``) and what it was asked with;
    a key a line leaves out has the reply's default."""

    model_config = ConfigDict(extra="ignore")

    question_id: str
    answer: str | None = None
    passages: list[StoredPassage] | None = None
    error: str | None = None
    status: int | None = None
    attempts: int = 0
    latency_s: float = 0.0
    cached: bool = False
    request_key: str | None = None


class SystemReply(BaseModel):
    """The system's answer and passages for one question, or the error that ended its retries.
    Pydantic: a line of system.jsonl (read through ``StoredReply``); the passages are kept as given."""

    question_id: str
    answer: str | None
    passages: Annotated[list[Passage], SkipValidation] = Field(default_factory=list)
    error: str | None = None
    status: int | None = None
    attempts: int = 0
    latency_s: Num = 0.0
    cached: bool = False

    def __init__(
        self,
        question_id: str,
        answer: str | None,
        passages: list[Passage] | None = None,
        error: str | None = None,
        status: int | None = None,
        attempts: int = 0,
        latency_s: Num = 0.0,
        cached: bool = False,
    ) -> None:
        """Positional as the fields (as the dataclass it was)."""
        super().__init__(
            question_id=question_id,
            answer=answer,
            passages=[] if passages is None else passages,
            error=error,
            status=status,
            attempts=attempts,
            latency_s=latency_s,
            cached=cached,
        )

    def to_dict(self) -> dict:
        return {
            "question_id": self.question_id,
            "answer": self.answer,
            "passages": [p.to_dict() for p in self.passages],
            "error": self.error,
            "status": self.status,
            "attempts": self.attempts,
            "latency_s": round(self.latency_s, 4),
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, d: dict) -> SystemReply:
        return cls.from_stored(StoredReply.model_validate(d))

    @classmethod
    def from_stored(cls, r: StoredReply) -> SystemReply:
        return cls(
            r.question_id,
            r.answer,
            [Passage(p.id, p.text, p.score) for p in r.passages or []],
            r.error,
            r.status,
            r.attempts,
            r.latency_s,
            r.cached,
        )


@dataclass(frozen=True)
class HttpRequest:
    """A request for one question as the cache keys it: templates filled, header values left as
    written (``${VAR}``), so the key holds no secret; ``body`` None for a GET."""

    method: str
    url: str
    headers: dict[str, str]
    params: dict[str, Any]
    body: Any

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Trial:
    """One request tried by hand: the request as sent (header values as written, ``${VAR}``), the
    reply's status and text (None and empty when none came), and what was parsed from it."""

    request: HttpRequest | dict
    status: int | None
    raw: str
    reply: SystemReply


def fill(template: Any, question: Question) -> Any:
    """The template with ``{question}`` and ``{question_id}`` replaced in every string (a JSON value)."""
    if isinstance(template, str):
        return template.replace("{question_id}", question.id).replace("{question}", question.question)
    if isinstance(template, dict):
        return {k: fill(v, question) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, question) for v in template]
    return template


def expand_env(value: str, where: str) -> str:
    """``${VAR}`` replaced by the environment variable; ConfigError when it is not set."""

    def one(m) -> str:
        var = m.group(1)
        if var not in os.environ:
            raise ConfigError(
                Problem(where, f"the environment variable {var} is not set", f"export {var}=... before the run")
            )
        secret = os.environ[var]
        if len(secret) >= 8:
            _SECRETS.add(secret)  # error messages recorded in the run folder never show it
        return secret

    return _ENV_REF.sub(one, value)


def passages_from(data: Any, cfg: HttpSystemConfig) -> list[Passage]:
    """The passages of a response: ids and texts paired by position; ValueError when they do not pair."""
    found_ids = extract(data, cfg.ids) if cfg.ids else None
    found_texts = extract(data, cfg.contexts) if cfg.contexts else None
    if cfg.ids and cfg.contexts and found_ids is not None and found_texts is not None:
        # Fields of one list's items: paired item by item, so that a passage without an id (or
        # without a text) keeps its place; it is then matched to the corpus by its text.
        paired = extract_paired(data, cfg.ids, cfg.contexts)
        if paired is not None:
            found_ids, found_texts = paired
    ids = [None if v is None else str(v) for v in found_ids] if found_ids is not None else None
    texts = [None if v is None else str(v) for v in found_texts] if found_texts is not None else None
    scores = extract(data, cfg.scores) if cfg.scores else None
    n = len(ids if ids is not None else required(texts, "system.ids or system.contexts (the passages' paths)"))
    if ids is not None and texts is not None and len(ids) != len(texts):
        raise ValueError(f"the response has {len(ids)} ids ({cfg.ids}) but {len(texts)} texts ({cfg.contexts})")
    if scores is not None and len(scores) != n:
        raise ValueError(f"the response has {n} passages but {len(scores)} scores ({cfg.scores})")
    out = []
    for i in range(n):
        score = scores[i] if scores is not None else None
        out.append(
            Passage(
                ids[i] if ids is not None else None,
                texts[i] if texts is not None else None,
                float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
            )
        )
    return out


def answer_from(data: Any, path: str) -> str:
    """The answer at ``path``; ValueError when the response has none there."""
    values = extract(data, path)
    if not values or values[0] is None:
        raise ValueError(f"the response has no answer at {path}")
    value = values[0] if is_single(path) else " ".join(str(v) for v in values)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return min(MAX_WAIT_S, max(0.0, float(response.headers.get("retry-after", ""))))
    except ValueError:
        return None


class HttpSystem:
    """One deployed service; create and use it inside the run's event loop."""

    def __init__(self, cfg: HttpSystemConfig, cache: ResponseCache | None, where: str = "system"):
        self.cfg, self.where = cfg, where
        self.url = expand_env(cfg.url, f"{where}.url")
        try:
            scheme = httpx.URL(self.url).scheme
        except httpx.InvalidURL as exc:
            scheme = f"invalid ({exc})"
        if scheme not in ("http", "https"):
            raise ConfigError(
                Problem(
                    f"{where}.url", f"'{cfg.url}' is not an http(s) URL", "write e.g. url: https://rag.example.com/ask"
                )
            )
        self.headers = {k: expand_env(v, f"{where}.headers.{k}") for k, v in cfg.headers.items()}
        self.cache = cache if cfg.cache else None
        self.usage = Usage.counter(f"system: {cfg.url}")
        self.gate = asyncio.Semaphore(cfg.concurrency)
        self.client = httpx.AsyncClient(timeout=cfg.timeout_s, trust_env=True)

    def request_of(self, question: Question) -> HttpRequest:
        """The request for a question, as the cache keys it."""
        return HttpRequest(
            self.cfg.method,
            self.cfg.url,
            self.cfg.headers,
            fill(self.cfg.params, question),
            fill(self.cfg.body, question) if self.cfg.method == "POST" else None,
        )

    def key(self, question: Question) -> str:
        return cache_key(f"system:{self.cfg.url}", self.request_of(question).to_dict())

    async def ask(self, question: Question) -> SystemReply:
        """The system's reply to one question (from the cache when it answered this request before)."""
        key = self.key(question)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            self.usage.cache_hits += 1
            reply = self._parse(question.id, 200, hit)
            reply.cached = True
            return reply
        req = self.request_of(question)
        start = time.perf_counter()
        attempts, last_error, status = 0, "", None
        async with self.gate:
            for attempt in range(self.cfg.max_retries + 1):
                attempts += 1
                wait = self.cfg.backoff_s * 2**attempt
                self.usage.calls += 1
                try:
                    response = await self.client.request(
                        self.cfg.method,
                        self.url,
                        headers=self.headers,
                        params=req.params or None,
                        json=req.body,
                    )
                except (httpx.TimeoutException, httpx.TransportError) as exc:
                    last_error, status = f"{type(exc).__name__}: {exc or 'no response'}", None
                else:
                    status = response.status_code
                    if status == 200:
                        reply = self._parse(question.id, status, response.content)
                        if reply.error is None and self.cache is not None:
                            self.cache.put(key, response.content)
                        reply.attempts, reply.latency_s = attempts, time.perf_counter() - start
                        if reply.error is not None:
                            self.usage.failures += 1
                        return reply
                    last_error = f"HTTP {status}: {response.text[:300]}"
                    if status not in RETRY_STATUS:
                        break
                    wait = _retry_after(response) if _retry_after(response) is not None else wait
                if attempt < self.cfg.max_retries:
                    await asyncio.sleep(min(wait, MAX_WAIT_S))
        self.usage.failures += 1
        return SystemReply(
            question.id,
            None,
            error=redact(f"the system failed after {attempts} attempt(s): {last_error}"),
            status=status,
            attempts=attempts,
            latency_s=time.perf_counter() - start,
        )

    async def try_once(self, question: Question) -> Trial:
        """One request for the question, neither cached nor retried, with the reply as it came and
        what was parsed from it (``rag-eval validate --try``)."""
        req = self.request_of(question)
        start = time.perf_counter()
        try:
            response = await self.client.request(
                self.cfg.method, self.url, headers=self.headers, params=req.params or None, json=req.body
            )
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            error = redact(f"{type(exc).__name__}: {exc or 'no response'} (timeout_s {self.cfg.timeout_s:g})")
            reply = SystemReply(question.id, None, error=error, latency_s=time.perf_counter() - start)
            return Trial(req, None, "", reply)
        raw = redact(response.text)
        if response.status_code != 200:
            reply = SystemReply(question.id, None, error=f"HTTP {response.status_code}", status=response.status_code)
        else:
            reply = self._parse(question.id, 200, response.content)
        reply.latency_s = time.perf_counter() - start
        return Trial(req, response.status_code, raw, reply)

    def _parse(self, qid: str, status: int, content: bytes) -> SystemReply:
        try:
            data = json.loads(content)
            return SystemReply(qid, answer_from(data, self.cfg.answer), passages_from(data, self.cfg), status=status)
        except ValueError as exc:  # JSONDecodeError is one
            return SystemReply(qid, None, error=redact(f"unusable response: {exc}"), status=status)

    async def aclose(self) -> None:
        await self.client.aclose()
