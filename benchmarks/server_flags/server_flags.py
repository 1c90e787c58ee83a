"""The embedded model's server settings side by side, on the demo's own requests, in one run.

    python benchmarks/server_flags/server_flags.py [--record] [--sample 3] [--fast-binary PATH] [--base-binary PATH]
                                      [--only a,b] [--limit N]

1. The requests: the demo audit (configs/demo.yaml, a stratified sample of ``--sample`` questions)
   is run once through a recording proxy in front of the embedded server with today's settings,
   and every chat request is kept, in the order sent, in ``benchmarks/server_flags/demo-requests.jsonl.gz``
   (``--record`` makes it again; otherwise the file is reused, so every run replays the same work).
2. Each setting: a fresh llama-server with those flags replays the requests in that order, as many
   at once as it has slots (what the client sends with ``parallel: N``). Printed per setting: wall
   time, model time (llama-server's prompt_ms + predicted_ms), prompt tokens evaluated and their
   tokens/s, generated tokens/s, speculative drafts accepted, the ratio of wall time to the
   baseline's, and how many outputs are identical to the baseline's (verdicts and JSON included;
   kernels change numerics, so a few may differ).

``--fast-binary``: a llama-server built with the instruction sets the CPU runs (see
rag_eval/llm/cpu_probe.py); without it the builds are not compared.

``--base-binary``: the baseline's llama-server instead of the installed one, e.g. the portable AVX2
build the issue calls today's settings. The installed build then runs as ``installed`` (its
defaults) and ``installed-no-repack``, so one run gives the ratio of the shipped default, and of the
fastest setting, to the portable build.

Writes the figures into ``result.json`` beside this script (the file the docs page
``docs/validation/performance.md`` reads), with the command, date, commit and machine: a plain run
its top-level ``rows``, a ``--base-binary`` run the section ``against_portable`` (its baseline named
``portable``, the installed build ``probed``), a ``--limit N`` run the section ``first_N_requests``;
the other sections are kept as they were.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import http.server
import json
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from run_info import commit, machine  # noqa: E402

REQUESTS = ROOT / "benchmarks" / "server_flags" / "demo-requests.jsonl.gz"
RESULT = ROOT / "benchmarks" / "server_flags" / "result.json"
# The docs page's names for the settings of a --base-binary run.
AGAINST_PORTABLE = {"baseline": "portable", "installed": "probed", "installed-no-repack": "probed-no-repack"}

from rag_eval.llm.local import LocalServer, ServerSettings, default_model_path, server_binary  # noqa: E402


def _proxy(upstream: str, log: list[bytes]) -> http.server.ThreadingHTTPServer:
    """A loopback proxy to ``upstream`` that keeps each chat request's body."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.endswith("/chat/completions"):
                log.append(body)
            req = urllib.request.Request(
                upstream.rstrip("/") + self.path.removeprefix("/v1"), body, {"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(req, timeout=3600) as r:
                    status, data = r.status, r.read()
            except urllib.error.HTTPError as exc:
                status, data = exc.code, exc.read()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def record(sample: int) -> list[dict]:
    """The demo's chat requests, sent through the proxy by a real audit from an empty cache."""
    import rag_eval

    cfg = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    work = Path(tempfile.mkdtemp(prefix="rag-eval-flags-"))
    log: list[bytes] = []
    with LocalServer(default_model_path()) as server:
        proxy = _proxy(f"http://127.0.0.1:{server.port}/v1", log)
        url = f"http://127.0.0.1:{proxy.server_address[1]}/v1"
        cfg["generation"]["sample"] = sample
        # One at a time as the embedded server is called; no time-outs, so no retried duplicates.
        slow = {"base_url": url, "concurrency": 1, "timeout_s": 3600, "max_retries": 0}
        cfg["generation"]["llm"] = {**cfg["generation"]["llm"], **slow}
        cfg["judges"]["llm"] = {**cfg["judges"]["llm"], **slow}
        cfg["test_set"]["path"] = str(ROOT / "data" / "python-docs" / "questions.jsonl")
        cfg["generation"]["prompts"] = {"baseline": str(ROOT / "prompts" / "answer.md")}
        cfg.pop("gates", None)
        rag_eval.audit(cfg, out=str(work / "runs"), use_cache=False, progress=False)
        proxy.shutdown()
    requests = [json.loads(b) for b in dict.fromkeys(log)]  # a request sent twice is replayed once
    REQUESTS.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(REQUESTS, "wt", encoding="utf-8") as fh:
        for r in requests:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    return requests


@dataclass
class Outcome:
    name: str
    wall_s: float = 0.0
    model_ms: float = 0.0
    prompt_n: int = 0
    prompt_ms: float = 0.0
    predicted_n: int = 0
    predicted_ms: float = 0.0
    draft_n: int = 0
    draft_accepted: int = 0
    failures: int = 0
    outputs: list[str] = field(default_factory=list)


async def _replay(base_url: str, requests: list[dict], parallel: int, out: Outcome) -> None:
    order = asyncio.Semaphore(parallel)
    results: list[str] = [""] * len(requests)

    async def one(i: int, body: dict, client: httpx.AsyncClient) -> None:
        async with order:
            r = await client.post(f"{base_url}/chat/completions", json=body, timeout=900)
        if r.status_code != 200:
            out.failures += 1
            return
        data = r.json()
        t = data.get("timings") or {}
        out.prompt_n += int(t.get("prompt_n") or 0)
        out.prompt_ms += float(t.get("prompt_ms") or 0)
        out.predicted_n += int(t.get("predicted_n") or 0)
        out.predicted_ms += float(t.get("predicted_ms") or 0)
        out.draft_n += int(t.get("draft_n") or 0)
        out.draft_accepted += int(t.get("draft_n_accepted") or 0)
        results[i] = data["choices"][0]["message"].get("content") or ""

    async with httpx.AsyncClient() as client:
        # Started in order; the semaphore keeps the order in which the slots are taken.
        tasks = []
        for i, body in enumerate(requests):
            tasks.append(asyncio.create_task(one(i, body, client)))
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
    out.outputs = results
    out.model_ms = out.prompt_ms + out.predicted_ms


def measure(name: str, binary: Path, settings: ServerSettings, requests: list[dict]) -> Outcome:
    out = Outcome(name)
    with (
        tempfile.NamedTemporaryFile(suffix=".log") as log,
        LocalServer(default_model_path(), binary=binary, settings=settings, log_path=Path(log.name)) as server,
    ):
        start = time.perf_counter()
        asyncio.run(_replay(f"http://127.0.0.1:{server.port}/v1", requests, settings.parallel, out))
        out.wall_s = time.perf_counter() - start
    return out


def row(o: Outcome, base: Outcome, name: str, against: str) -> dict:
    """One setting's figures as the result file holds them."""
    return {
        "setting": name,
        "wall_s": round(o.wall_s, 1),
        "model_s": round(o.model_ms / 1000, 1),
        against: round(o.wall_s / base.wall_s, 2),
        "evaluated": o.prompt_n,
        "prompt_tps": round(o.prompt_n / max(1e-9, o.prompt_ms / 1000), 1),
        "gen_tps": round(o.predicted_n / max(1e-9, o.predicted_ms / 1000), 1),  # per sequence with slots > 1
        "drafts_accepted": f"{o.draft_accepted}/{o.draft_n}" if o.draft_n else None,
        "identical": f"{sum(a == b for a, b in zip(o.outputs, base.outputs, strict=True))}/{len(base.outputs)}",
        "failures": o.failures,
    }


def drift(rows: list[dict]) -> dict:
    """How far the machine drifted while the settings ran: the baseline measured again at the end
    against the first (``drift``), and each setting's wall time against the mean of the two
    (``vs_baselines_mean``, written into each row). Nothing where the baseline ran only once."""
    first, end = rows[0], next((r for r in rows if r["setting"] == "baseline-end"), None)
    if end is None:
        return {}
    mean = (first["wall_s"] + end["wall_s"]) / 2
    for r in rows:
        r["vs_baselines_mean"] = round(r["wall_s"] / mean, 2)
    return {"drift": round(end["wall_s"] / first["wall_s"], 2), "baselines_mean_s": round(mean, 1)}


def write_result(section: str | None, rows: list[dict], n_requests: int, started: datetime) -> None:
    """The rows into result.json: at its top level (``section`` None) or under ``section``."""
    result = json.loads(RESULT.read_text(encoding="utf-8")) if RESULT.exists() else {}
    result["source"] = (
        "written by benchmarks/server_flags/server_flags.py: the top level by a plain run, against_portable by "
        "--base-binary, first_N_requests by --limit N; each names its command, date, commit and machine, except a "
        "section with a source of its own, transcribed from a run made before the script wrote this file"
    )
    figures = {
        "command": "python " + " ".join([str(Path(sys.argv[0]).resolve().relative_to(ROOT)), *sys.argv[1:]]),
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "machine": machine(),
        "requests": n_requests,
        "rows": rows,
        **drift(rows),
    }
    if section is None:
        for stale in ("drift", "baselines_mean_s"):  # a run without baseline-end has no drift of its own
            result.pop(stale, None)
        result.update(figures)
    else:
        result[section] = figures
    RESULT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {section or 'rows'} to {RESULT}")


def main() -> None:
    started = datetime.now(UTC)
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", action="store_true", help="record the demo's requests again")
    parser.add_argument("--sample", type=int, default=3, help="questions of the demo to record")
    parser.add_argument("--fast-binary", type=Path, help="a llama-server built for this CPU's instruction sets")
    parser.add_argument(
        "--base-binary",
        type=Path,
        help="the baseline's llama-server (default: the installed one), e.g. a portable build",
    )
    parser.add_argument("--only", help="comma-separated setting names to run (the baseline always runs)")
    parser.add_argument("--limit", type=int, help="replay only the first N recorded requests")
    parser.add_argument("--section", help="write the rows into this section of result.json (default: by the run)")
    args = parser.parse_args()

    if args.record or not REQUESTS.exists():
        t0 = time.perf_counter()
        requests = record(args.sample)
        print(
            f"recorded {len(requests)} requests of the demo ({args.sample} questions) in {time.perf_counter() - t0:.0f} s"
        )
    with gzip.open(REQUESTS, "rt", encoding="utf-8") as fh:
        requests = [json.loads(line) for line in fh][: args.limit]
    installed = server_binary()
    portable = args.base_binary or installed
    fast = args.fast_binary or portable
    settings = {
        "baseline": (portable, ServerSettings()),
        "fa-off": (portable, ServerSettings(flash_attn="off")),
        "parallel2": (portable, ServerSettings(parallel=2)),
        "parallel4": (portable, ServerSettings(parallel=4)),
        "ngram": (portable, ServerSettings(speculative="ngram-simple", draft_max=16)),
        "no-repack": (portable, ServerSettings(repack=False)),
        # n-gram drafts on the layout repack: auto picks where prompt evaluation is the faster one
        # (a draft is checked like a short prompt).
        "no-repack-ngram": (portable, ServerSettings(repack=False, speculative="ngram-simple", draft_max=16)),
        "no-repack-ngram-mod": (portable, ServerSettings(repack=False, speculative="ngram-mod", draft_max=16)),
        "no-repack-ngram-map-k": (portable, ServerSettings(repack=False, speculative="ngram-map-k", draft_max=16)),
    }
    if args.base_binary:
        settings["installed"] = (installed, ServerSettings())
        settings["installed-no-repack"] = (installed, ServerSettings(repack=False))
    if args.fast_binary:
        settings["native"] = (fast, ServerSettings())
        settings["native-fa-off"] = (fast, ServerSettings(flash_attn="off"))
        settings["native-np2-spec"] = (fast, ServerSettings(parallel=2, speculative="ngram-simple"))
    # The baseline again at the end: how far the machine itself drifted during the run.
    settings["baseline-end"] = (portable, ServerSettings())
    chosen = set(args.only.split(",")) | {"baseline"} if args.only else set(settings)
    print(f"{len(requests)} requests, {sum(len(json.dumps(r)) for r in requests) / 1000:.0f} kB of request JSON")
    results = []
    for name, (binary, s) in settings.items():
        if name not in chosen:
            continue
        o = measure(name, binary, s, requests)
        results.append(o)
        base = results[0]
        same = sum(a == b for a, b in zip(o.outputs, base.outputs, strict=True))
        pp = o.prompt_n / max(1e-9, o.prompt_ms / 1000)
        tg = o.predicted_n / max(1e-9, o.predicted_ms / 1000)
        acc = f"{o.draft_accepted}/{o.draft_n}" if o.draft_n else "-"
        print(
            f"{name:16s} wall {o.wall_s:6.1f} s ({o.wall_s / base.wall_s:4.2f}x)  model {o.model_ms / 1000:6.1f} s  "
            f"prompt {o.prompt_n:6d} tok at {pp:6.1f}/s  gen {o.predicted_n:5d} tok at {tg:5.1f}/s  "
            f"drafts accepted {acc:>9s}  identical outputs {same}/{len(requests)}  failures {o.failures}",
            flush=True,
        )
    names = AGAINST_PORTABLE if args.base_binary else {}
    against = "vs_portable" if args.base_binary else "vs_baseline"
    rows = [row(o, results[0], names.get(o.name, o.name), against) for o in results]
    section = args.section or (
        f"first_{args.limit}_requests" if args.limit else "against_portable" if args.base_binary else None
    )
    write_result(section, rows, len(requests), started)


if __name__ == "__main__":
    sys.exit(main())
