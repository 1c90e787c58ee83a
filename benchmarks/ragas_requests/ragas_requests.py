"""The Ragas metrics under ``judges.ragas_requests`` guided and native, and through Ragas' own API,
side by side on the demo's answers: one run, one embedded server, no response cache.

    python benchmarks/ragas_requests/ragas_requests.py [--run RUN_DIR] [--config configs/demo.yaml] [--json FILE]

RUN_DIR: a finished run folder of the config (its generation.jsonl: the answers and their
contexts). Without one, the config's retrieval and generation run first (judges left out: they are
what is measured here), with the user's response cache, so the answers are the demo's.

Every answer is judged by faithfulness, every answerable question with a reference by context
precision and context recall, three ways: rag-eval's ``guided`` requests, its ``native`` ones, and
Ragas' own public API (``llm_factory`` over a plain ``AsyncOpenAI`` client, each metric's
``ascore``) on the same server. Baseline: Ragas' own API. Printed per metric: each way's scores,
the agreement of guided and native with it (same side of 0.5), whether native equals it exactly
(score and requests: the point of the setting), model seconds (llama-server's timings), calls and
tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import httpx

from rag_eval import progress
from rag_eval.config import load_config
from rag_eval.judges.judging import _contexts
from rag_eval.llm.client import LLM
from rag_eval.llm.local import MODEL_NAME, LocalServer, ServerSettings, default_model_path
from rag_eval.llm.usage import Usage
from rag_eval.offline import go_offline
from rag_eval.orchestration.runner import load_inputs, run_audit

ROOT = Path(__file__).resolve().parents[2]
METRICS = ("context_recall", "faithfulness", "context_precision")  # cheapest first: a cut-short run keeps most
WAYS = ("guided", "native", "ragas")


class Recording(httpx.AsyncBaseTransport):
    """Sends to the server and keeps every chat request's body and its usage."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.bodies: list[str] = []
        self.usage = Usage.counter(MODEL_NAME)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        response = await self.inner.handle_async_request(request)
        content = await response.aread()
        if request.url.path.endswith("/chat/completions"):
            self.bodies.append(json.dumps(json.loads(body), sort_keys=True))
            self.usage.calls += 1
            if response.status_code == 200:
                self.usage.record(content)
        headers = [
            (k, v) for k, v in response.headers.items() if k.lower() not in ("content-encoding", "content-length")
        ]
        return httpx.Response(response.status_code, content=content, headers=headers, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def answers(args, cfg) -> list[dict]:
    """The run's answers (one per question and prompt) with their contexts' texts, as judged."""
    run_dir = Path(args.run) if args.run else None
    if run_dir is None:
        out = tempfile.mkdtemp(prefix="rag-eval-ragas-requests-")
        run_dir = run_audit(cfg.model_copy(update={"judges": None}), out=out)
        print(f"answers: {run_dir}")
    inputs = load_inputs(cfg)
    by_id = {q.id: q for q in inputs.questions}
    rows, failed = [], []
    for line in (run_dir / "generation.jsonl").read_text().splitlines():
        g = json.loads(line)
        if g.get("error") is not None or not g.get("answer"):
            failed.append(g["question_id"])
        else:
            q = by_id[g["question_id"]]
            ctx = _contexts(inputs.corpus, g["contexts"], cfg.generation.max_context_chars)
            rows.append(
                {"id": q.id, "question": q.question, "reference": q.reference, "answer": g["answer"], "contexts": ctx}
            )
    if failed:
        print(f"answers: {len(rows)} judged; left out, their generation failed: {', '.join(failed)}", file=sys.stderr)
    return rows


async def through_rag_eval(requests: str, metric: str, rows: list[dict], cfg, base_url: str) -> tuple[list, Recording]:
    """One metric on every row with rag-eval's Ragas judges, uncached."""
    from rag_eval.judges.ragas_judges import RagasJudges

    rec = Recording()
    llm_cfg = cfg.judges.llm.model_copy(update={"concurrency": cfg.judges.llm.parallel, "timeout_s": 900})
    llm = LLM(llm_cfg, base_url=base_url, model=MODEL_NAME, cache=None, inner=rec)
    r = RagasJudges(llm, json_schema=llm_cfg.json_schema, requests=requests)

    async def one(x):
        if metric == "faithfulness":
            return await r.judge_faithfulness(x["id"], "b", x["question"], x["answer"], x["contexts"])
        if metric == "context_precision":
            return await r.judge_context_precision(x["id"], "b", x["question"], x["reference"], x["contexts"])
        return await r.judge_context_recall(x["id"], "b", x["question"], x["reference"], x["contexts"])

    try:
        js = await asyncio.gather(*(one(x) for x in rows))
    finally:
        await llm.aclose()
    return [j.score if j.status == "judged" else None for j in js], rec


async def through_ragas(metric: str, rows: list[dict], base_url: str) -> tuple[list, Recording]:
    """One metric on every row through Ragas' own API, all at once as Ragas' executor sends them."""
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics.collections import ContextPrecisionWithReference, ContextRecall, Faithfulness

    rec = Recording()
    http = httpx.AsyncClient(transport=rec, timeout=900)
    client = AsyncOpenAI(base_url=base_url, api_key="not-needed", http_client=http, timeout=900, max_retries=0)
    llm = llm_factory(MODEL_NAME, client=client)

    async def one(x):
        try:
            if metric == "faithfulness":
                m = Faithfulness(llm=llm)
                s = await m.ascore(user_input=x["question"], response=x["answer"], retrieved_contexts=x["contexts"])
            elif metric == "context_precision":
                m = ContextPrecisionWithReference(llm=llm)
                s = await m.ascore(user_input=x["question"], reference=x["reference"], retrieved_contexts=x["contexts"])
            else:
                m = ContextRecall(llm=llm)
                s = await m.ascore(user_input=x["question"], retrieved_contexts=x["contexts"], reference=x["reference"])
        except Exception as exc:  # an unparseable output after instructor's retries: no score, as in rag-eval
            print(f"  ragas {metric} {x['id']}: {type(exc).__name__}", file=sys.stderr)
            return None
        return None if s.value is None or math.isnan(s.value) else float(s.value)

    try:
        scores = await asyncio.gather(*(one(x) for x in rows))
    finally:
        await http.aclose()
    return list(scores), rec


def side(score: float | None) -> bool | None:
    return None if score is None else score >= 0.5


def agree(a: list, b: list) -> str:
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    return f"{sum(side(x) == side(y) for x, y in pairs)} of {len(pairs)}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=str(ROOT / "configs" / "demo.yaml"))
    parser.add_argument("--run", help="a finished run folder of the config (default: generate the answers)")
    parser.add_argument("--json", help="write every score and figure here")
    parser.add_argument(
        "--base-url", help="an OpenAI-compatible server already running (default: start the embedded one)"
    )
    args = parser.parse_args()
    progress.set_enabled(False)
    go_offline()
    cfg = load_config(Path(args.config))
    rows = answers(args, cfg)
    with_ref = [x for x in rows if x["reference"]]
    jcfg = cfg.judges.llm
    server = None
    if not args.base_url:
        settings = ServerSettings.from_config(jcfg.model_dump())
        server = LocalServer(default_model_path(), threads=jcfg.threads, settings=settings).start()
    base_url = args.base_url or server.base_url
    results: dict = {"answers": [x["id"] for x in rows], "metrics": {}}
    try:
        for metric in METRICS:
            todo = rows if metric == "faithfulness" else with_ref
            out = {"ids": [x["id"] for x in todo]}
            for way in WAYS:
                start = time.perf_counter()
                if way == "ragas":
                    scores, rec = asyncio.run(through_ragas(metric, todo, base_url))
                else:
                    scores, rec = asyncio.run(through_rag_eval(way, metric, todo, cfg, base_url))
                u = rec.usage
                out[way] = {
                    "scores": scores,
                    "wall_s": round(time.perf_counter() - start, 1),
                    "model_s": round(u.model_ms / 1000, 1),
                    "calls": u.calls,
                    "prompt_tokens": u.prompt_tokens,
                    "completion_tokens": u.completion_tokens,
                    "bodies": rec.bodies,
                }
                print(f"{metric} {way}: {u.calls} calls, {u.model_ms / 1000:.0f} model s, scores {scores}", flush=True)
            results["metrics"][metric] = out
            if args.json:
                Path(args.json).write_text(json.dumps(results) + "\n")  # so far, bodies included
    finally:
        if server is not None:
            server.stop()
    report(results)
    if args.json:
        for m in results["metrics"].values():
            for way in WAYS:
                m[way]["n_distinct_requests"] = len(set(m[way].pop("bodies")))
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


def report(results: dict) -> None:
    """The per-metric table and the agreements."""
    fmt = lambda s: "–" if s is None else f"{s:.2f}"  # noqa: E731
    for metric, m in results["metrics"].items():
        g, n, r = (m[w]["scores"] for w in WAYS)
        print(f"\n{metric} ({len(m['ids'])} answers)")
        print("  " + " ".join(f"{i:>7}" for i in m["ids"]))
        for way in WAYS:
            print(f"  {' '.join(f'{fmt(s):>7}' for s in m[way]['scores'])}  {way}")
        # As sets: rag-eval's client sends identical requests in flight at once only once (two
        # contexts of one question with the same text), Ragas' own client sends each.
        same_requests = set(m["native"]["bodies"]) == set(m["ragas"]["bodies"])
        m["agreement"] = {
            "guided_vs_ragas_same_side": agree(g, r),
            "native_vs_ragas_same_side": agree(n, r),
            "guided_vs_native_same_side": agree(g, n),
            "native_equals_ragas": sum(a == b for a, b in zip(n, r)),
            "native_requests_equal_ragas": same_requests,
        }
        a = m["agreement"]
        print(
            f"  same side of 0.5: guided/ragas {a['guided_vs_ragas_same_side']}, native/ragas "
            f"{a['native_vs_ragas_same_side']}, guided/native {a['guided_vs_native_same_side']}; native == ragas "
            f"exactly {a['native_equals_ragas']} of {len(n)}; native's requests == ragas' {same_requests}"
        )
        for way in WAYS:
            w = m[way]
            print(
                f"  {way}: {w['model_s']} model s ({w['model_s'] / max(m['ragas']['model_s'], 1e-9):.2f}x ragas), "
                f"{w['calls']} calls, {w['prompt_tokens']} prompt / {w['completion_tokens']} completion tokens, "
                f"wall {w['wall_s']} s"
            )
    tot = {w: sum(m[w]["model_s"] for m in results["metrics"].values()) for w in WAYS}
    comp = {w: sum(m[w]["completion_tokens"] for m in results["metrics"].values()) for w in WAYS}
    results["total_model_s"], results["total_completion_tokens"] = tot, comp
    print(
        "\nall three metrics: model s "
        + ", ".join(f"{w} {tot[w]:.0f} ({tot[w] / max(tot['ragas'], 1e-9):.2f}x)" for w in WAYS)
        + "; completion tokens "
        + ", ".join(f"{w} {comp[w]}" for w in WAYS)
    )


if __name__ == "__main__":
    main()
