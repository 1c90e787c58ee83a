"""What an offline audit costs with the embedded model: calls, tokens, time, and how close the
wall time comes to the time the model alone needs.

    python benchmarks/audit_cost/audit_cost.py [--config configs/demo.yaml] [--sample N]

Runs the config from an empty response cache (the model and embeddings stay cached) in a fresh
process and reads llm_usage.json: calls, prompt tokens sent, evaluated and reused from the
server's KV cache (llama-server's timings), completion tokens per audited answer, seconds per
judged answer, and wall time / model time. Baseline named in the issue (the previous release, same
demo, 8 questions): 60 calls, 53.3k prompt tokens sent, 39% evaluated, 515 completion tokens per
audited answer, 13.5 min. Targets: evaluated <= 15% of sent, <= 258 completion tokens per answer,
demo <= 5 min.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=str(ROOT / "configs" / "demo.yaml"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rag-eval-cost-"))
    env = {**os.environ, "RAG_EVAL_CACHE_DIR": str(work / "cache")}
    # Embeddings from the user's cache would make the first stage faster; copy none: the
    # retrieval stage is a few seconds next to the model.
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "rag_eval.cli", "-q", "run", args.config, "--out", str(work / "runs")],
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    if out.returncode not in (0, 1):
        sys.exit(out.stderr)
    run_dir = next((work / "runs").iterdir())
    usage = json.loads((run_dir / "llm_usage.json").read_text())
    gens = [json.loads(x) for x in (run_dir / "generation.jsonl").read_text().splitlines()]
    judged = len({(g["question_id"], g["prompt"]) for g in gens if g.get("error") is None})
    u = {
        k: sum(x.get(k, 0) for x in usage)
        for k in ("calls", "prompt_tokens", "completion_tokens", "prompt_evaluated", "prompt_reused", "model_ms")
    }
    sent = u["prompt_tokens"]
    print(f"config {args.config}: {judged} audited answers, {u['calls']} calls, wall {wall:.0f} s")
    print(
        f"prompt tokens sent {sent}, evaluated {u['prompt_evaluated']} ({u['prompt_evaluated'] / max(1, sent):.0%}), "
        f"reused from the KV cache {u['prompt_reused']}"
    )
    print(
        f"completion tokens {u['completion_tokens']} ({u['completion_tokens'] / max(1, judged):.0f} per audited answer; "
        "baseline 515)"
    )
    print(f"seconds per audited answer (generation + judges): {wall / max(1, judged):.1f}")
    model_s = u["model_ms"] / 1000
    print(f"model time {model_s:.0f} s; wall / model = {wall / max(1e-9, model_s):.2f}x")
    by_kind(work / "cache" / "llm-cache.sqlite3", len(gens))


def by_kind(db_path: Path, n_generations: int) -> None:
    """Calls, tokens and model seconds per kind of request, read back from the response cache in
    the order the responses came (generation first, then the judges: Ragas' steps told apart by
    the first key of their JSON output, the yes/no judges by their plain-text verdict)."""
    import sqlite3
    from collections import defaultdict

    kinds: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0.0])
    with sqlite3.connect(db_path) as db:
        bodies = [b for (b,) in db.execute("SELECT body FROM responses ORDER BY created")]
    for i, body in enumerate(bodies):
        d = json.loads(body)
        t, text = d.get("timings") or {}, d["choices"][0]["message"]["content"] or ""
        if i < n_generations:
            kind = "generation"
        elif text.lstrip().startswith("{"):
            kind = "ragas " + {"statements": "faithfulness", "reason": "context_precision"}.get(
                text.split('"')[1] if '"' in text else "", "context_recall"
            )
        else:
            kind = "yes/no judges"
        k = kinds[kind]
        k[0] += 1
        k[1] += d["usage"]["prompt_tokens"]
        k[2] += t.get("prompt_n", 0)
        k[3] += d["usage"]["completion_tokens"]
        k[4] += (t.get("prompt_ms", 0) + t.get("predicted_ms", 0)) / 1000
    print(f"{'kind':<28}{'calls':>6}{'sent':>8}{'evaluated':>11}{'completion':>11}{'model s':>9}")
    for kind, (n, sent, ev, comp, sec) in sorted(kinds.items(), key=lambda x: -x[1][4]):
        print(f"{kind:<28}{n:>6}{sent:>8}{ev:>7} {ev / max(1, sent):>3.0%}{comp:>11}{sec:>9.0f}")


if __name__ == "__main__":
    main()
