"""One model's calls, cache hits, failures, tokens and cost: counted live by the client layer
(``llm/client.py``) and written as a row of ``llm_usage.json`` and the report's usage tables, which
read it back as the same record."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, field_validator

from rag_eval.base_records import Model, Num


def _whole(v: Any) -> Any:
    """A count some servers write as a float (12.0, 12.5) read as the whole number below it."""
    return int(v) if isinstance(v, float) and v == v and abs(v) != float("inf") else v


class TokenUsage(BaseModel):
    """A response body's ``usage`` (OpenAI's chat completion)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    _counts = field_validator("prompt_tokens", "completion_tokens", mode="before")(_whole)


class ServerTimings(BaseModel):
    """A response body's ``timings`` (llama-server's): prompt tokens evaluated and reused from its
    KV cache, and the milliseconds spent on the prompt and the answer."""

    prompt_n: int | None = None
    cache_n: int | None = None
    prompt_ms: float | None = None
    predicted_ms: float | None = None

    _counts = field_validator("prompt_n", "cache_n", mode="before")(_whole)


class _Counted(BaseModel):
    """What ``Usage.record`` reads of a response body (the rest of it is left unread)."""

    usage: TokenUsage | None = None
    timings: ServerTimings | None = None


class Usage(Model):
    """Calls, cache hits, failures and tokens of one model; cost from the price table."""

    model: str = ""
    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    shared: int = 0  # identical requests in flight at once, answered by one call
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # From llama-server's per-response timings (absent elsewhere): prompt tokens evaluated and
    # reused from its KV cache, and the milliseconds the model itself spent.
    prompt_evaluated: int = 0
    prompt_reused: int = 0
    # Saved slots of earlier servers loaded before a request, and slots saved (rag_eval/llm/slots.py).
    prefix_restored: int = 0
    prefix_saved: int = 0
    model_ms: Num = 0
    price_input: Num | None = None  # per million prompt tokens
    price_output: Num | None = None
    cost: Num = 0  # as written when the run ended; ``priced()`` is the cost of the counts now

    @classmethod
    def counter(cls, model: str, price_input: float = 0.0, price_output: float = 0.0) -> Usage:
        """A count that starts at zero for one model, as the client keeps it while calls run."""
        return cls(model=model, model_ms=0.0, price_input=price_input, price_output=price_output)

    def priced(self) -> float:
        """The cost of the tokens counted so far at the prices."""
        return (
            self.prompt_tokens * (self.price_input or 0.0) + self.completion_tokens * (self.price_output or 0.0)
        ) / 1e6

    def record(self, body: bytes) -> None:
        """Add the tokens and server timings of one response body (OpenAI's ``usage``, llama-server's
        ``timings``); a body that is not JSON adds nothing."""
        try:
            data = _Counted.model_validate_json(body)
        except ValueError:  # not JSON, or not a body of this shape (pydantic's ValidationError)
            return
        usage = data.usage or TokenUsage()
        self.prompt_tokens += usage.prompt_tokens or 0
        self.completion_tokens += usage.completion_tokens or 0
        timings = data.timings or ServerTimings()
        self.prompt_evaluated += timings.prompt_n or 0
        self.prompt_reused += timings.cache_n or 0
        self.model_ms += float(timings.prompt_ms or 0) + float(timings.predicted_ms or 0)

    def to_dict(self) -> dict[str, Any]:
        """Every count and the cost now (a row of ``llm_usage.json``)."""
        return {**self.model_dump(mode="json", exclude={"cost"}), "cost": self.priced()}


def since(now: Usage, before: Usage) -> Usage:
    """The calls and tokens counted between ``before`` (a copy taken then) and ``now``."""
    counts = {
        k: getattr(now, k) - getattr(before, k)
        for k, f in Usage.model_fields.items()
        if k != "cost" and f.annotation in (int, Num)
    }
    return now.model_copy(update=counts)
