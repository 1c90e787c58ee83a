"""The client layer against a scripted server: retries, timeouts, recorded failures, the cache."""

import asyncio
import subprocess
import sys
import threading
import time

import pytest

from rag_eval.llm.client import LLM
from rag_eval.llm.response_cache import ResponseCache, cache_key
from rag_eval.llm.settings import LLMConfig

from ..scripted_server import ScriptedServer

MSG = [{"role": "user", "content": "hello"}]


def llm_cfg(**kw) -> LLMConfig:
    return LLMConfig(provider="openai", model="m", **{"max_retries": 2, "timeout_s": 5, **kw})


def ask(server, cache=None, messages=MSG, n=1, model="m", **kw):
    async def main():
        llm = LLM(llm_cfg(**kw), base_url=server.base_url, model=model, cache=cache)
        try:
            return await asyncio.gather(
                *(llm.chat(messages if n == 1 else [{"role": "user", "content": f"q{i}"}]) for i in range(n))
            ), llm.usage
        finally:
            await llm.aclose()

    return asyncio.run(main())


def test_retries_429_and_500_then_succeeds():
    script = {0: "429", 1: "500"}
    with ScriptedServer(lambda n, b: script.get(n, "ok")) as s:
        (result,), usage = ask(s)
    assert result.error is None and result.text == "ok: hello"
    assert s.calls == 3 and usage.calls == 3 and usage.failures == 0


def test_persistent_5xx_is_a_recorded_failure_not_an_exception():
    with ScriptedServer(lambda n, b: "500") as s:
        (result,), usage = ask(s, max_retries=2)
    assert s.calls == 3  # one try and two retries
    assert result.text is None and "HTTP 500" in result.error
    assert usage.failures == 1


def test_timeouts_are_retried_then_recorded():
    with ScriptedServer(lambda n, b: "sleep:3") as s:
        start = time.perf_counter()
        (result,), _ = ask(s, timeout_s=0.5, max_retries=1)
        elapsed = time.perf_counter() - start
    assert s.calls == 2
    assert "Timeout" in result.error
    assert elapsed < 5


def test_retry_after_is_honoured():
    with ScriptedServer(lambda n, b: "429" if n == 0 else "ok", retry_after="2") as s:
        start = time.perf_counter()
        (result,), _ = ask(s)
    assert result.error is None
    assert time.perf_counter() - start >= 2


def test_cache_key_changes_exactly_with_the_request():
    body = {"model": "m", "messages": MSG, "temperature": 0, "max_tokens": 10}
    base = cache_key("http://a/v1", body)
    assert cache_key("http://a/v1/", body) == base
    assert cache_key("http://a/v1", {**body, "user": "someone", "metadata": {"x": 1}}) == base
    assert cache_key("http://a/v1", dict(reversed(list(body.items())))) == base
    for changed in (
        {"model": "m2"},
        {"messages": [{"role": "user", "content": "hello!"}]},
        {"temperature": 0.5},
        {"max_tokens": 11},
        {"response_format": {"type": "json_object"}},
        {"seed": 1},
    ):
        assert cache_key("http://a/v1", {**body, **changed}) != base, changed
    assert cache_key("http://b/v1", body) != base


def test_rerun_makes_zero_calls_and_no_cache_makes_all(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite3")
    with ScriptedServer() as s:
        first, _ = ask(s, cache=cache, n=5)
        assert s.calls == 5
        second, usage = ask(s, cache=cache, n=5)
        assert s.calls == 5 and usage.cache_hits == 5 and usage.calls == 0
        assert [r.text for r in first] == [r.text for r in second] and all(r.cached for r in second)
        # A different model is a different request.
        ask(s, cache=cache, model="other")
        assert s.calls == 6
        # No cache: neither read nor written.
        ask(s, cache=None, n=5)
        assert s.calls == 11
    assert len(cache) == 6


def test_failures_are_not_cached(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite3")
    with ScriptedServer(lambda n, b: "500" if n < 3 else "ok") as s:
        (r1,), _ = ask(s, cache=cache, max_retries=2)
        (r2,), _ = ask(s, cache=cache, max_retries=2)
    assert r1.error and r2.error is None and s.calls == 4


def test_concurrency_is_bounded():
    active, peak = 0, 0
    full = threading.Condition()  # the server answers each request on its own thread

    def script(n, body):
        nonlocal active, peak
        with full:
            active += 1
            peak = max(peak, active)
            full.notify_all()
            # Hold each request until the bound is reached (or 5 s pass), so that a loaded machine
            # cannot make a client that does run 3 at once look serial.
            full.wait_for(lambda: peak >= 3, timeout=5)
        time.sleep(0.05)
        with full:
            active -= 1
        return "ok"

    with ScriptedServer(script) as s:
        results, _ = ask(s, n=12, concurrency=3)
    assert all(r.error is None for r in results) and s.calls == 12
    # Never more than the bound at once, and the bound is used: a serial client (peak 1) fails.
    assert peak == 3


WRITER = """
import asyncio, sys
from pathlib import Path
from rag_eval.llm.settings import LLMConfig
from rag_eval.llm.response_cache import ResponseCache
from rag_eval.llm.client import LLM

async def main():
    llm = LLM(LLMConfig(provider="openai", model="m", concurrency=8), base_url=sys.argv[1], model="m",
              cache=ResponseCache(Path(sys.argv[2])))
    rs = await asyncio.gather(*(llm.chat([{"role": "user", "content": f"q{i}"}]) for i in range(60)))
    assert all(r.error is None for r in rs)
    await llm.aclose()

asyncio.run(main())
"""


def test_two_concurrent_runs_share_a_cache_without_corrupting_it(tmp_path):
    path = tmp_path / "shared.sqlite3"
    with ScriptedServer(latency_s=0.01) as s:
        procs = [subprocess.Popen([sys.executable, "-c", WRITER, s.base_url, str(path)]) for _ in range(2)]
        assert [p.wait(timeout=120) for p in procs] == [0, 0]
        assert s.calls <= 120
        cache = ResponseCache(path)
        assert len(cache) == 60
        assert cache.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        calls = s.calls
        results, usage = ask(s, cache=cache, n=60)
        assert s.calls == calls and usage.cache_hits == 60


@pytest.mark.parametrize("action", ["malformed", "truncated"])
def test_odd_content_comes_back_as_text(action):
    with ScriptedServer(lambda n, b: action) as s:
        (r,), _ = ask(s)
    assert r.error is None and r.text
    assert r.finish_reason == ("length" if action == "truncated" else "stop")


def test_a_reply_in_another_shape_is_a_recorded_failure_not_an_exception():
    with ScriptedServer(lambda n, b: "odd-shape") as s:
        (r,), usage = ask(s)
    assert r.text is None and r.error.startswith("the server's response is not a chat completion")
    assert usage.failures == 1 and s.calls == 1


def test_a_float_token_count_is_read_as_the_whole_number_below_it():
    from rag_eval.llm.usage import ServerTimings, TokenUsage

    assert TokenUsage.model_validate({"prompt_tokens": 12.5, "completion_tokens": 3}).prompt_tokens == 12
    assert ServerTimings.model_validate({"prompt_n": 4.0, "cache_n": None}).prompt_n == 4
