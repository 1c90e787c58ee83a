"""``rag-eval traces``: production traces judged, attributed and drawn to label."""

from __future__ import annotations

import argparse
from typing import Any

from rag_eval import api, progress
from rag_eval.base_records import required
from rag_eval.commands.common import add_command, gate_results
from rag_eval.orchestration.sources import LABELS_DRAWN


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        "traces",
        "audit production traces (OTLP JSON with OpenInference attributes, as Phoenix exports them)",
        "Read OpenTelemetry trace exports (OTLP JSON; the Collector's JSON lines; opentelemetry-sdk console "
        "spans) with OpenInference attributes: the root span's question and answer, the retriever spans' "
        "documents. Judge every complete trace (the config's judges), attribute failures (retrieval misses by "
        "the context-recall judge, or by the labels when the config names a corpus and a test set the traces' "
        "questions are in), draw a seeded sample to label; traces missing a part are counted and named.",
        config=False,
    )
    p.add_argument("files", nargs="+", help="trace export files (JSON or JSON lines)")
    p.add_argument("--config", required=True, help="YAML with name and judges (optionally corpus and test_set)")
    p.add_argument("--out", help="folder for run folders (default: report.out in the config)")
    p.add_argument(
        "--labels", type=int, default=LABELS_DRAWN, help=f"traces drawn to label (default {LABELS_DRAWN}; 0: none)"
    )
    p.add_argument("--seed", type=int, help="seed of the draw (default: stats.seed)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the LLM response cache")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    result = api.judge_traces(
        args.files,
        config=args.config,
        out=args.out,
        labels=args.labels,
        seed=args.seed,
        use_cache=not args.no_cache,
        progress=progress.shown(),
        gates=api.Gates("traces", files=False),
    )
    t = required(result.report.traces, "the report's traces section")
    skipped = ", ".join(f"{n} {why}" for why, n in t.skipped.items()) or "none"
    print(f"traces: {t.read} read, {t.audited} audited; skipped: {skipped}")
    for s in t.skipped_traces[:10]:
        print(f"    skipped {s.trace_id} ({s.reason}): {s.question or '(no question)'}")
    if len(t.skipped_traces) > 10:
        print(f"    ... and {len(t.skipped_traces) - 10} more (report.md)")
    for line in t.skipped_lines[:10]:
        print(f"    skipped {line.file}:{line.line} ({line.reason}): {line.detail}")
    if len(t.skipped_lines) > 10:
        print(f"    ... and {len(t.skipped_lines) - 10} more unreadable parts (report.md)")
    failures = result.report.failures
    if failures is not None and failures.any:  # as `run` says it: how many, the first error
        print(failures.line())
    print(f"run folder: {result.run_dir} (report.md, report.html, summary.json, labels/)")
    results = gate_results(result)
    for r in results:
        print(f"gate {r.message}")
    return 0 if all(r.passed for r in results) else 1
