"""Throughput of the client layer against a scripted server with a fixed 300 ms latency.

    python benchmarks/llm_client/llm_client.py [--out FILE]

Writes the figures to ``result.json`` beside this script (the file the docs page reads), with the
command, date, commit and machine. Baseline: the ideal time, 200 calls x 0.3 s / concurrency 16 = 3.75 s. Goal: within 1.15x.
Then the same 200 requests again through the disk cache: goal under 1 s with zero calls.
One warm-up call first loads the openai package's lazily built types (about 1.5 s, once per
process); it is timed and printed apart.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULT = Path(__file__).resolve().parent / "result.json"
# The scripted server is test support (tests/), beside the package in a checkout.
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from run_info import commit, machine  # noqa: E402

from rag_eval.llm.client import LLM  # noqa: E402
from rag_eval.llm.response_cache import ResponseCache  # noqa: E402
from rag_eval.llm.settings import LLMConfig  # noqa: E402
from tests.scripted_server import ScriptedServer  # noqa: E402

CALLS, CONCURRENCY, LATENCY = 200, 16, 0.3


async def batch(base_url: str, cache: ResponseCache | None, calls: int = CALLS) -> tuple[float, int, int]:
    llm = LLM(
        LLMConfig(provider="openai", model="m", concurrency=CONCURRENCY), base_url=base_url, model="m", cache=cache
    )
    start = time.perf_counter()
    results = await asyncio.gather(*(llm.chat([{"role": "user", "content": f"question {i}"}]) for i in range(calls)))
    elapsed = time.perf_counter() - start
    await llm.aclose()
    assert all(r.error is None for r in results)
    return elapsed, llm.usage.calls, llm.usage.cache_hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=RESULT, help="where the result goes (default: %(default)s)")
    args = parser.parse_args()
    cache = ResponseCache(Path(tempfile.mkdtemp()) / "bench.sqlite3")
    ideal = CALLS * LATENCY / CONCURRENCY
    with ScriptedServer(latency_s=LATENCY) as server:
        warmup = asyncio.run(batch(server.base_url, None, calls=1))[0]
        cold, calls, _ = asyncio.run(batch(server.base_url, cache))
        warm, warm_calls, hits = asyncio.run(batch(server.base_url, cache))
    print(f"{CALLS} calls, concurrency {CONCURRENCY}, server latency {LATENCY * 1000:.0f} ms")
    print(f"warm-up (one call, loads the openai types): {warmup:.2f}s")
    print(f"baseline (ideal {CALLS} x {LATENCY} s / {CONCURRENCY}): {ideal:.2f}s")
    print(f"client layer, cold: {cold:.2f}s ({calls} calls)  ratio {cold / ideal:.3f}x (goal <= 1.15x)")
    print(
        f"rerun from cache:   {warm:.3f}s ({warm_calls} calls, {hits} cache hits)  "
        f"ratio {warm / ideal:.3f}x of the baseline (goal < 1 s, 0 calls)"
    )
    result = {
        "calls": CALLS,
        "concurrency": CONCURRENCY,
        "latency_s": LATENCY,
        "warmup_s": round(warmup, 3),
        "ideal_s": ideal,
        "cold": {"seconds": round(cold, 3), "calls": calls, "ratio": round(cold / ideal, 3)},
        "cached": {"seconds": round(warm, 3), "calls": warm_calls, "cache_hits": hits},
        "command": "python benchmarks/llm_client/llm_client.py",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "machine": machine(),
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
