"""Saved slots (``llm.prefix_store``) side by side: a new server with and without the library, in one run.

    python benchmarks/slot_library/slot_library.py [--limit N] [--base-binary PATH]

The demo's recorded requests (``benchmarks/server_flags/demo-requests.jsonl.gz``, see server_flags/server_flags.py) are split
by question: the requests of every question but the last are an earlier run, which fills the library
on a server of its own; the requests of the last question are the run measured, each on a fresh server
from an empty response cache, once without the library (``cold``, as every run started before) and
once with the library the earlier run left (``warm``). Both go one at a time in recorded order
through rag-eval's own client layer. Printed: model time (llama-server's prompt_ms + predicted_ms),
prompt tokens evaluated, slots restored and saved, and how many replies are identical.
``--base-binary``: also the later run on that llama-server (e.g. the portable AVX2 build, today's
settings of issue 25) without the library, first, as the baseline of the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUESTS = ROOT / "benchmarks" / "server_flags" / "demo-requests.jsonl.gz"
RESULT = Path(__file__).resolve().parent / "result.json"
sys.path.insert(0, str(ROOT / "benchmarks"))
from run_info import commit, machine  # noqa: E402

from rag_eval.llm.schedule import prompt_text  # noqa: E402
from rag_eval.llm.session import LLMSession  # noqa: E402
from rag_eval.llm.settings import LLMConfig  # noqa: E402


def by_question(requests: list[dict]) -> tuple[list[dict], list[dict]]:
    """(requests of every question but the last that any request names, those of the last): the
    library saves a beginning once it repeats, so the earlier run needs two questions or more."""
    lines = (ROOT / "data" / "python-docs" / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines if line.strip()]
    texts = [prompt_text(json.dumps(r).encode()) for r in requests]
    named = [next((q for q in questions if q in t), None) for t in texts]
    last = [q for q in named if q is not None][-1]
    return [r for r, q in zip(requests, named, strict=True) if q != last], [
        r for r, q in zip(requests, named, strict=True) if q == last
    ]


async def replay(cache: Path, requests: list[dict], store: bool, binary: Path | None = None) -> tuple[dict, list[str]]:
    """The requests one at a time through a new session (a new server); its usage (with ``wall_s``,
    from the first request, server start included, to the last reply) and replies."""
    t0 = time.perf_counter()
    session = LLMSession(cache)
    cfg = LLMConfig(
        provider="local",
        repack=True,  # the layout of the recorded runs (repack: auto may pick another here)
        prefix_store=store,
        timeout_s=3600,
        max_retries=0,
        server_binary=str(binary) if binary else None,
    )
    llm = session.llm(cfg, "benchmark")
    replies = []
    for body in requests:
        r = await llm.http.post(llm.base_url + "/chat/completions", content=json.dumps(body).encode())
        data = r.json()
        replies.append(json.dumps([c.get("message") for c in data.get("choices") or []]))
    await session.aclose()
    usage = {**session.usage()[0], "wall_s": time.perf_counter() - t0}
    session.close()
    return usage, replies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, help="measure only the first N requests of the later run")
    ap.add_argument("--base-binary", type=Path, help="also the later run on this llama-server, cold, as the baseline")
    ap.add_argument("--out", type=Path, default=RESULT, help="where the result goes (default: %(default)s)")
    args = ap.parse_args()
    with gzip.open(REQUESTS, "rt", encoding="utf-8") as fh:
        requests = [json.loads(line) for line in fh]
    earlier, later = by_question(requests)
    later = later[: args.limit]
    print(f"{len(requests)} recorded requests: {len(earlier)} of the earlier run's questions, {len(later)} measured")
    work = Path(tempfile.mkdtemp(prefix="rag-eval-slots-"))
    filled, _ = asyncio.run(replay(work / "warm", earlier, True))
    print(f"earlier run: {filled['calls']} calls, {filled['prefix_saved']} slots saved")
    rows = {}
    runs = [("cold", work / "cold", False, None), ("warm", work / "warm", True, None)]
    if args.base_binary:
        runs.insert(0, ("base", work / "base", False, args.base_binary))
    for name, cache, store, binary in runs:
        usage, replies = asyncio.run(replay(cache, later, store, binary))
        rows[name] = (usage, replies)
        print(
            f"{name:5s} wall {usage['wall_s']:6.1f} s  model {usage['model_ms'] / 1000:6.1f} s  prompt evaluated {usage['prompt_evaluated']:6d}  "
            f"calls {usage['calls']}  restored {usage['prefix_restored']}  saved {usage['prefix_saved']}",
            flush=True,
        )
    (cu, cr), (wu, wr) = rows["cold"], rows["warm"]
    same = sum(a == b for a, b in zip(cr, wr, strict=True))
    for i, (a, b) in enumerate(zip(cr, wr, strict=True)):
        if a != b:
            print(f"request {i} differs:\n  cold {a[:300]}\n  warm {b[:300]}")
    print(
        f"warm / cold: model time {wu['model_ms'] / cu['model_ms']:.2f}x, evaluated tokens "
        f"{wu['prompt_evaluated'] / cu['prompt_evaluated']:.2f}x; identical replies {same}/{len(later)}"
    )
    if "base" in rows:
        bu = rows["base"][0]
        print(
            "against the base binary, cold: "
            + ", ".join(f"{n} {rows[n][0]['model_ms'] / bu['model_ms']:.2f}x" for n in ("base", "cold", "warm"))
            + f" model time; evaluated tokens {bu['prompt_evaluated']} / {cu['prompt_evaluated']} / {wu['prompt_evaluated']}"
        )
    out = {
        "command": "python benchmarks/slot_library/slot_library.py"
        + (" --base-binary PORTABLE/llama-server" if args.base_binary else "")
        + (f" --limit {args.limit}" if args.limit else ""),
        "earlier_run": {"requests": len(earlier), "slots_saved": filled["prefix_saved"]},
        "later_run_requests": len(later),
        "identical_replies_warm_vs_cold": f"{same}/{len(later)}",
        "rows": {
            n: {k: u[k] for k in ("calls", "wall_s", "model_ms", "prompt_evaluated", "prefix_restored", "prefix_saved")}
            for n, (u, _) in rows.items()
        },
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "machine": machine(),
    }
    out["ratios"] = ratios(out["rows"])
    if (args.limit or not args.base_binary) and args.out == RESULT:
        # The docs page reads the base row and the full later run: a partial run goes elsewhere.
        print(f"not written to {RESULT}: a run with --limit or without --base-binary needs --out FILE")
        return
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"written to {args.out}")


def ratios(rows: dict[str, dict]) -> dict[str, float]:
    """The later run's model time, wall time and evaluated tokens against the cold run (the library
    alone) and, where the base binary ran, each row's model time against the base binary's."""
    cold, warm = rows["cold"], rows["warm"]
    out = {
        "warm_vs_cold_model": round(warm["model_ms"] / cold["model_ms"], 3),
        "warm_vs_cold_wall": round(warm["wall_s"] / cold["wall_s"], 3),
        "warm_vs_cold_evaluated": round(warm["prompt_evaluated"] / cold["prompt_evaluated"], 3),
    }
    if "base" in rows:
        out |= {
            f"{n}_vs_base_model": round(rows[n]["model_ms"] / rows["base"]["model_ms"], 3) for n in ("cold", "warm")
        }
    return out


if __name__ == "__main__":
    sys.exit(main())
