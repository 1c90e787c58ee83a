"""One ``Usage``: the count the client layer keeps while calls run is the record the run folder's
``llm_usage.json`` and the report's usage tables read back (rag_eval/llm/usage.py)."""

from __future__ import annotations

import asyncio
import json

import pytest

from rag_eval.answers.answer_records import GenerationSection
from rag_eval.judges.judge_records import EscalationSection
from rag_eval.llm.client import LLM
from rag_eval.llm.settings import LLMConfig, PriceConfig
from rag_eval.llm.usage import Usage

BODY = json.dumps(
    {
        "usage": {"prompt_tokens": 120, "completion_tokens": 7},
        "timings": {"prompt_n": 100, "cache_n": 20, "prompt_ms": 12.5, "predicted_ms": 30},
    }
).encode()


def test_the_clients_count_is_the_record_the_report_reads():
    cfg = LLMConfig(provider="openai", model="m", prices=PriceConfig(input=0.15, output=0.6))

    async def made() -> LLM:  # the client is made inside an event loop, as a run makes it
        return LLM(cfg, base_url="http://127.0.0.1:9/v1", model="m", cache=None)

    llm = asyncio.run(made())
    assert type(llm.usage) is Usage
    llm.usage.calls += 1
    llm.usage.record(BODY)
    row = llm.usage.to_dict()
    # The row as llm_usage.json has always held it: every count, the prices, the cost at them.
    assert row == {
        "model": "m",
        "calls": 1,
        "cache_hits": 0,
        "failures": 0,
        "shared": 0,
        "prompt_tokens": 120,
        "completion_tokens": 7,
        "prompt_evaluated": 100,
        "prompt_reused": 20,
        "prefix_restored": 0,
        "prefix_saved": 0,
        "model_ms": 42.5,
        "price_input": 0.15,
        "price_output": 0.6,
        "cost": pytest.approx((120 * 0.15 + 7 * 0.6) / 1e6),
    }
    generation = GenerationSection(usage=[row])
    escalation = EscalationSection(usage=row)
    assert type(generation.usage[0]) is Usage and type(escalation.usage) is Usage
    assert generation.usage[0].cost == pytest.approx(llm.usage.priced()) and escalation.usage.prompt_reused == 20


def test_a_count_without_prices_writes_zero_prices_and_a_row_read_back_keeps_its_keys():
    row = Usage.counter("system: http://x").to_dict()
    assert (row["price_input"], row["price_output"], row["model_ms"], row["cost"]) == (0.0, 0.0, 0.0, 0.0)
    assert json.dumps(row).count("0.0") == 4
    # An older run's row without prices is read back as it was written.
    old = Usage.load({"model": "m", "calls": 3, "cost": 0})
    assert old.dump() == {"model": "m", "calls": 3, "cost": 0} and old.price_input is None
