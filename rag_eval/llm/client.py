"""The one client layer: an ``AsyncOpenAI`` whose HTTP transport does the cache look-up, bounds
concurrency and counts tokens, so that no consumer (the generator, Ragas, the own judges) can
bypass it. Retries with exponential backoff on 429, 5xx, timeouts and connection errors, honouring
``Retry-After``, are the ``openai`` client's own (``max_retries``); what still fails is recorded.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import BaseModel

from rag_eval import progress
from rag_eval.base_records import required
from rag_eval.errors import ConfigError, Problem, RagEvalError
from rag_eval.llm.response_cache import ResponseCache, cache_key
from rag_eval.llm.schedule import PrefixScheduler, prompt_text
from rag_eval.llm.settings import LLMConfig
from rag_eval.llm.slots import SlotLibrary
from rag_eval.llm.usage import TokenUsage, Usage

CACHE_HEADER = "x-rag-eval-cache"
SLOT_TIMEOUT_S = 60.0  # a slot save or restore moves tens of MB
LATENCY_HEADER = "x-rag-eval-latency"


class EnvironmentTransport(httpx.AsyncBaseTransport):
    """Sends through an httpx client that honours HTTP(S)_PROXY, ALL_PROXY and NO_PROXY.

    A bare ``AsyncHTTPTransport`` ignores the environment; a client picks the proxy per URL.
    """

    def __init__(self) -> None:
        self.client = httpx.AsyncClient(trust_env=True, timeout=None)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.client.send(request)

    async def aclose(self) -> None:
        await self.client.aclose()


class CachingTransport(httpx.AsyncBaseTransport):
    """Serves chat completions from the cache, else sends them (at most ``concurrency`` at a time).

    ``identity`` names the endpoint in the cache key (the base URL, or the local model's hash);
    ``start`` (for the embedded server) is called on the first request that must really be sent
    and returns the base URL to send to, so a fully cached run never starts a server. Identical
    requests in flight at once are sent once. ``slots`` (a one-slot embedded server): saved slots of
    earlier servers are restored before a request whose beginning they share, and repeated
    beginnings are saved for the next server. Every completed call is counted for the progress
    lines (``progress.call_done``), and the seconds of the answered ones measured (``latency_s``).
    """

    def __init__(
        self,
        identity: str,
        usage: Usage,
        cache: ResponseCache | None,
        concurrency: int,
        inner: httpx.AsyncBaseTransport | None = None,
        start: Callable[[], str] | None = None,
        slots: SlotLibrary | None = None,
    ):
        self.identity, self.usage, self.cache, self.slots = identity, usage, cache, slots
        self.inner = inner or EnvironmentTransport()
        self.scheduler = PrefixScheduler(concurrency)
        self.start = start
        self.target: httpx.URL | None = None  # the started local server, once started
        self.start_error: Exception | None = None
        self.inflight: dict[str, asyncio.Future] = {}
        self.answered = 0  # calls sent and answered (HTTP 200)
        self.answered_s = 0.0  # their seconds, summed

    @property
    def latency_s(self) -> float | None:
        """Mean seconds of a call sent and answered by this endpoint, or None before the first."""
        return self.answered_s / self.answered if self.answered else None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return await self.inner.handle_async_request(self._routed(request, await request.aread()))
        body = await request.aread()
        key = cache_key(self.identity, body)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            self.usage.cache_hits += 1
            progress.call_done(cached=True)
            return _response(200, hit, [("content-type", "application/json"), (CACHE_HEADER, "hit")], request)
        if key in self.inflight:
            self.usage.shared += 1
            status, content, headers = await asyncio.shield(self.inflight[key])
            progress.call_done(failed=status != 200)
            return _response(status, content, headers, request)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self.inflight[key] = future
        try:
            status, content, headers = await self._send(request, body, key)
            future.set_result((status, content, headers))
        except Exception as exc:
            progress.call_done(failed=True)
            future.set_exception(exc)
            future.exception()  # marked as retrieved: the waiters get it, nobody is warned
            raise
        except BaseException:
            future.cancel()
            raise
        finally:
            del self.inflight[key]
        progress.call_done(failed=status != 200)
        return _response(status, content, headers, request)

    async def _send(self, request: httpx.Request, body: bytes, key: str) -> tuple[int, bytes, list]:
        text = prompt_text(body)
        async with await self.scheduler(text):
            routed = self._routed(request, body)
            sent_to = self.target
            await self._restore_slot(text)
            self.usage.calls += 1
            start = time.perf_counter()
            try:
                response = await self.inner.handle_async_request(routed)
                content = await response.aread()
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError):
                if not self._revived(sent_to):
                    raise
                routed = self._routed(request, body)  # the request again, to the server started anew
                start = time.perf_counter()  # the restart is no part of the request's latency
                response = await self.inner.handle_async_request(routed)
                content = await response.aread()
            elapsed = time.perf_counter() - start
            if response.status_code == 200:
                self.answered += 1
                self.answered_s += elapsed
                self.usage.record(content)
                if self.cache is not None and _complete(content):
                    self.cache.put(key, content)
                await self._save_slot(text)
        headers = [
            (k, v) for k, v in response.headers.items() if k.lower() not in ("content-encoding", "content-length")
        ]
        headers.append((LATENCY_HEADER, f"{elapsed:.4f}"))
        return response.status_code, content, headers

    async def _restore_slot(self, text: str) -> None:
        """Load the saved slot that best starts ``text`` into the server, where one is worth it."""
        if self.slots is None or self.target is None:
            return
        try:
            entry = self.slots.to_restore(text)
            if entry and await self._slot_action("restore", entry.file):
                self.slots.restored(entry)
                self.usage.prefix_restored += 1
        except Exception:  # noqa: BLE001 - a library that errs is only switched off: the request goes on
            self.slots.disabled = True

    async def _save_slot(self, text: str) -> None:
        """Save the slot that now holds ``text`` where its beginning repeats and is not saved yet."""
        if self.slots is None or self.target is None:
            return
        try:
            file = self.slots.to_save(text)
            self.slots.sent(text)
            if file:
                n_bytes = await self._slot_action("save", file)
                if n_bytes:
                    self.slots.saved(file, text, n_bytes)
                    self.usage.prefix_saved += 1
                else:
                    self.slots.stats.failed += 1
        except Exception:  # noqa: BLE001 - the reply is cached already; only the library stops
            self.slots.disabled = True

    async def _slot_action(self, action: str, file: str) -> int:
        """Save or restore slot 0 of the started server as ``file``: the bytes moved, 0 on failure
        (a failed restore only means the prompt is evaluated)."""
        target = required(self.target, "the started local server's address")
        url = httpx.URL(scheme=target.scheme, host=target.host, port=target.port, path="/slots/0")
        request = httpx.Request(
            "POST",
            url.copy_merge_params({"action": action}),
            headers={"content-type": "application/json"},
            content=json.dumps({"filename": file}).encode(),
        )
        try:
            response = await asyncio.wait_for(self.inner.handle_async_request(request), SLOT_TIMEOUT_S)
            data = _SlotReply.model_validate_json(await response.aread())
        except (httpx.HTTPError, ValueError, TimeoutError):  # pydantic's ValidationError is a ValueError
            return 0
        if response.status_code != 200:
            return 0
        return data.n_written or data.n_read or 0

    def _routed(self, request: httpx.Request, body: bytes) -> httpx.Request:
        """The request aimed at the started local server (started here on first need), else as it is."""
        if self.start is None:
            return request
        if self.start_error is not None:
            raise self.start_error  # a server that failed to start is not retried per request
        if self.target is None:
            # Started in the event loop's own thread on purpose: Linux ties the server's life to
            # the thread that forked it, and a worker thread ends long before rag-eval does.
            try:
                self.target = httpx.URL(self.start())
            except Exception as exc:
                self.start_error = exc
                raise
        url = request.url.copy_with(scheme=self.target.scheme, host=self.target.host, port=self.target.port)
        headers = [(k, v) for k, v in request.headers.items() if k.lower() != "host"]
        return httpx.Request(request.method, url, headers=headers, content=body, extensions=request.extensions)

    def _revived(self, sent_to: httpx.URL | None) -> bool:
        """Whether the local server a request was sent to (``sent_to``) had exited and another runs
        now: started again here, or already by a request sent beside it (the session's ``start``
        does it, at most a few times; past that its ConfigError stops the run)."""
        if self.start is None or sent_to is None:
            return False
        try:
            url = httpx.URL(self.start())
        except Exception as exc:
            self.start_error = exc
            raise
        if url == sent_to:
            return False  # still running: the error is the request's own
        if url != self.target and self.slots is not None:
            self.slots.server_started_anew()
        self.target = url
        return True

    async def aclose(self) -> None:
        await self.inner.aclose()


def _response(status: int, content: bytes, headers: list, request: httpx.Request) -> httpx.Response:
    return httpx.Response(status, content=content, headers=headers, request=request)


class _SlotReply(BaseModel):
    """llama-server's answer to a slot save (``n_written``) or restore (``n_read``): the bytes moved."""

    n_written: int | None = None
    n_read: int | None = None


class _Message(BaseModel):
    content: str | None = None


class _Choice(BaseModel):
    """A choice of a chat completion, as far as the client reads it (logprobs stay in ``raw``)."""

    message: _Message | None = None
    finish_reason: str | None = None


class _ChatBody(BaseModel):
    """An OpenAI-compatible chat completion body, as far as the client reads it."""

    choices: list[_Choice] | None = None
    usage: TokenUsage | None = None


def _complete(content: bytes) -> bool:
    """Only whole JSON responses with choices are worth caching."""
    try:
        return bool(_ChatBody.model_validate_json(content).choices)
    except ValueError:  # not JSON, or not a chat completion (pydantic's ValidationError)
        return False


@dataclass
class ChatResult:
    """One chat completion, or the error that ended its retries."""

    text: str | None
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    finish_reason: str | None = None
    error: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


class LLM:
    """A chat model behind the client layer. Create it inside the run's event loop."""

    def __init__(
        self,
        cfg: LLMConfig,
        *,
        base_url: str,
        model: str,
        cache: ResponseCache | None,
        api_key: str = "not-needed",
        inner: httpx.AsyncBaseTransport | None = None,
        identity: str | None = None,
        start: Callable[[], str] | None = None,
        slots: SlotLibrary | None = None,
    ):
        """``identity`` replaces the base URL in cache keys; ``start`` starts a local server on first
        need; ``slots``: its saved slots (see ``CachingTransport``)."""
        from openai import AsyncOpenAI  # noqa: PLC0415

        self.cfg, self.base_url, self.model = cfg, base_url, model
        self.identity = identity or base_url.rstrip("/")
        self.usage = Usage.counter(model, price_input=cfg.prices.input, price_output=cfg.prices.output)
        self.transport = CachingTransport(self.identity, self.usage, cache, cfg.concurrency, inner, start, slots)
        self.http = httpx.AsyncClient(transport=self.transport, timeout=cfg.timeout_s)
        self.client = AsyncOpenAI(
            base_url=base_url,
            api_key=api_key,
            # openai annotates its own fork of httpx (httpx2); it sends through httpx's AsyncClient alike.
            http_client=self.http,  # type: ignore[arg-type]
            timeout=cfg.timeout_s,
            max_retries=cfg.max_retries,
        )

    async def chat(
        self,
        messages: list[dict],
        *,
        response_format: dict | None = None,
        max_tokens: int | None = None,
        logprobs: int | None = None,
        stop: list[str] | None = None,
    ) -> ChatResult:
        """One completion; failures after the client's retries come back as ``error``, never raised.

        ``logprobs``: ask for that many top alternatives of every generated token (``raw`` holds them);
        ``stop``: strings that end the reply (not part of it). A last message of role ``assistant``
        is the forced start of the reply where the endpoint continues it (llama-server does).
        """
        import openai  # noqa: PLC0415

        # The optional settings are sent only when set (a key present changes the request, its cache key too).
        params: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.cfg.temperature,
            "max_tokens": max_tokens or self.cfg.max_tokens,
            **({"seed": self.cfg.seed} if self.cfg.seed is not None else {}),
            **({"response_format": response_format} if response_format is not None else {}),
            **({"logprobs": True, "top_logprobs": logprobs} if logprobs else {}),
            **({"stop": stop} if stop else {}),
        }
        start = time.perf_counter()
        try:
            # The plain POST of the openai client: its retries and errors, without the per-call
            # typing and parsing that cost more CPU than the whole rest of the layer.
            raw = await self.client.post("/chat/completions", body=params, cast_to=httpx.Response)
            data = raw.json()
        except openai.APIError as exc:
            if isinstance(self.transport.start_error, RagEvalError):
                raise self.transport.start_error from None  # the local server cannot start: stop the run
            self.usage.failures += 1
            return ChatResult(None, self.model, latency_s=time.perf_counter() - start, error=_describe(exc))
        except ValueError as exc:
            self.usage.failures += 1
            return ChatResult(None, self.model, error=f"the server's response is not JSON: {exc}")
        try:
            body = _ChatBody.model_validate(data)
        except ValueError as exc:  # pydantic's ValidationError: JSON, but not a chat completion's shape
            self.usage.failures += 1
            what = str(exc).splitlines()[0]
            return ChatResult(
                None, self.model, error=f"the server's response is not a chat completion: {what}", raw=data
            )
        choice = body.choices[0] if body.choices else _Choice()
        usage = body.usage or TokenUsage()
        return ChatResult(
            text=choice.message.content if choice.message else None,
            model=self.model,
            prompt_tokens=usage.prompt_tokens or 0,
            completion_tokens=usage.completion_tokens or 0,
            latency_s=float(raw.headers.get(LATENCY_HEADER) or 0.0),
            cached=raw.headers.get(CACHE_HEADER) == "hit",
            finish_reason=choice.finish_reason,
            error=None if body.choices else "the response had no choices",
            raw=data,
        )

    async def aclose(self) -> None:
        await self.client.close()


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    return redact(f"{name} (HTTP {status}): {exc}" if status else f"{name}: {exc}")


_SECRETS: set[str] = set()


def redact(text: str) -> str:
    """The text with every API key this process has read replaced by ``***``: error messages are
    recorded in the run folder, and a server may echo the credentials it was sent."""
    for secret in _SECRETS:
        text = text.replace(secret, "***")
    return text


def api_key(cfg: LLMConfig, where: str) -> str:
    """The key from the configured environment variable (never from the config file itself)."""
    if cfg.provider == "local" and not cfg.api_key_env:
        return "not-needed"
    var = cfg.api_key_env or "OPENAI_API_KEY"
    key = os.environ.get(var)
    if not key:
        if cfg.base_url and not cfg.api_key_env:
            return "not-needed"  # a local OpenAI-compatible server usually wants none
        raise ConfigError(
            Problem(
                where,
                f"the environment variable {var} is not set",
                f"export {var}=... or set api_key_env to the variable that holds the key",
            )
        )
    if len(key) >= 8:
        _SECRETS.add(key)
    return key
