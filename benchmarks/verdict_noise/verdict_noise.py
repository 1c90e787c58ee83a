"""How far a verdict's probability moves by the server's state alone.

The same judge requests (judge-check's cases for correctness, refusal and faithfulness_yesno,
rendered as an audit renders them: the verdict alone, 2 tokens) are sent to one embedded
llama-server three times, in three orders (sorted, so neighbours share their beginnings; shuffled;
reversed), so each request meets other prompt-cache states. P(yes) of each request is compared
across the three. What it gives is ``judges.uncertain.NUMERIC_NOISE_LOGIT``'s ground.

    python benchmarks/verdict_noise/verdict_noise.py [--limit 100]      # ~10 min on 2 cores
    python benchmarks/verdict_noise/verdict_noise.py --from ROWS.json     # the summary of rows measured before
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rag_eval.judges import judge_check as jc
from rag_eval.judges.scored import ScoredJudges
from rag_eval.judges.yesno import (
    REASONS_WANTED,
    TOP_LOGPROBS,
    VERDICT_TOKENS,
    YES_NO,
    first_choice,
    label_probabilities,
)
from rag_eval.llm.session import LLMSession
from rag_eval.llm.settings import LLMConfig

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from run_info import commit, machine  # noqa: E402

OUT = Path(__file__).with_name("result.json")
JUDGES = ["correctness", "refusal", "faithfulness_yesno"]


class _Reply:
    """What the recorder answers every request (any yes/no reply will do: only the requests count)."""

    def __init__(self) -> None:
        top = [{"token": "Yes", "logprob": math.log(0.6)}, {"token": "No", "logprob": math.log(0.4)}]
        self.text, self.error, self.latency_s = 'Yes: "x"', None, 0.0
        self.raw = {
            "choices": [
                {"message": {"content": self.text}, "logprobs": {"content": [{"token": "Yes", "top_logprobs": top}]}}
            ]
        }


class _Recorder:
    """An LLM that keeps the text of every verdict request it is sent."""

    identity = model = "recorder"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def chat(self, messages, max_tokens=None, logprobs=None, **_):
        if logprobs:
            self.prompts.append(messages[-1]["content"])
        return _Reply()


async def _requests(limit: int) -> list[str]:
    """Up to ``limit`` distinct verdict requests of judge-check's cases, in a fixed shuffled order."""
    rec = _Recorder()
    REASONS_WANTED.set(False)
    await jc._predict(
        jc.as_cases(jc.load_cases(ROOT / "data/judge-check/cases.jsonl")),
        rec,
        ScoredJudges.load(rec, None),
        None,
        JUDGES,
    )
    prompts = list(dict.fromkeys(rec.prompts))
    random.Random(0).shuffle(prompts)
    return prompts[:limit]


async def _ask(llm, prompts: list[str], order: list[int]) -> dict[int, float | None]:
    out = {}
    for i in order:
        r = await llm.chat([{"role": "user", "content": prompts[i]}], max_tokens=VERDICT_TOKENS, logprobs=TOP_LOGPROBS)
        probs = label_probabilities(first_choice(r.raw), YES_NO)
        out[i] = probs["yes"] if probs else None
    return out


async def measure(limit: int) -> list[dict]:
    prompts = await _requests(limit)
    session = LLMSession(Path.home() / ".cache" / "rag-eval", use_cache=False)
    llm = session.llm(LLMConfig(provider="local"), "verdict_noise")
    n = len(prompts)
    try:
        runs = [
            await _ask(llm, prompts, sorted(range(n), key=lambda i: prompts[i])),
            await _ask(llm, prompts, list(range(n))),
            await _ask(llm, prompts, list(reversed(range(n)))),
        ]
    finally:
        await session.aclose()
        session.close()
    return [{"i": i, "a": runs[0][i], "b": runs[1][i], "c": runs[2][i], "chars": len(prompts[i])} for i in range(n)]


def summary(rows: list[dict]) -> dict:
    """The spread of P and of its log-odds across the three orders, per request."""
    p = np.array([[r["a"], r["b"], r["c"]] for r in rows if None not in (r["a"], r["b"], r["c"])], float)
    z = np.log(np.clip(p, 1e-9, 1 - 1e-9)) - np.log1p(-np.clip(p, 1e-9, 1 - 1e-9))
    out = {"requests": len(p)}
    for name, x in (("p", np.ptp(p, 1)), ("logit", np.ptp(z, 1))):
        out[name] = {
            "share_moved": round(float(np.mean(x > 0)), 3),
            "median": round(float(np.median(x)), 5),
            "p90": round(float(np.quantile(x, 0.9)), 5),
            "p99": round(float(np.quantile(x, 0.99)), 5),
            "max": round(float(x.max()), 5),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--from", dest="rows", type=Path, help="summarise rows this script measured before")
    args = ap.parse_args()
    started = time.time()
    rows = json.loads(args.rows.read_text()) if args.rows else asyncio.run(measure(args.limit))
    result = {
        "command": "python benchmarks/verdict_noise/verdict_noise.py " + " ".join(sys.argv[1:]),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "machine": machine(),
        "seconds": round(time.time() - started),
        "spread": summary(rows),
        "rows": rows,
    }
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["spread"], indent=1))


if __name__ == "__main__":
    main()
