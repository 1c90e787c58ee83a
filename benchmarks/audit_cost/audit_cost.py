"""What an offline audit costs with the embedded model: calls, tokens, time, and how close the
wall time comes to the time the model alone needs.

    python benchmarks/audit_cost/audit_cost.py [--config configs/demo.yaml]     # writes "demo"
    python benchmarks/audit_cost/audit_cost.py --make-demo                      # writes "make_demo"

Runs the config from an empty response cache (the model and embeddings stay cached) in a fresh
process and reads llm_usage.json: calls, prompt tokens sent, evaluated and reused from the
server's KV cache (llama-server's timings), completion tokens per audited answer, seconds per
judged answer, and wall time / model time, then the same per kind of request (read back from the
response cache). Baseline named in the issue (the previous release, same demo, 8 questions): 60
calls, 53.3k prompt tokens sent, 39% evaluated, 515 completion tokens per audited answer, 13.5 min.
Targets: evaluated <= 15% of sent, <= 258 completion tokens per answer, demo <= 5 min.

``--make-demo``: what a new user's first ``make demo`` costs. A fresh clone of this checkout's
commit (in a temporary folder) runs ``make setup`` and then ``make demo`` with an empty response
cache and model folder (``RAG_EVAL_CACHE_DIR``, ``RAG_EVAL_MODEL_DIR`` pointed at new folders), each
timed; then the same audit again from another folder, in a new process with the same cache.

Both write their figures into ``result.json`` beside this script (the file the docs page
``docs/validation/performance.md`` reads), each section with its command, date, commit and machine;
the other section is kept as it was.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from run_info import commit, machine  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import side_by_side  # noqa: E402

RESULT = Path(__file__).resolve().parent / "result.json"
PREVIOUS_RELEASE_COMPLETION_TOKENS_PER_ANSWER = 515  # the baseline, same demo
# Kinds of request (by_kind) and the result's names for them.
KINDS = {
    "ragas faithfulness": "ragas_faithfulness",
    "ragas context_precision": "ragas_context_precision",
    "ragas context_recall": "ragas_context_recall",
    "yes/no judges": "yesno_judges",
    "generation": "generation",
}
USAGE_KEYS = (
    "calls",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "prompt_evaluated",
    "prompt_reused",
    "model_ms",
)


def write_section(name: str, figures: dict, command: str, started: datetime, out: Path) -> None:
    """``figures`` as section ``name`` of the result file, with how and where they were measured."""
    result = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    result["source"] = (
        "written by benchmarks/audit_cost/audit_cost.py: `demo` by a plain run, `make_demo` by --make-demo; "
        "each section names its command, date, commit and machine"
    )
    result.pop("command", None)  # each section has its own
    result[name] = {
        "command": command,
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "machine": machine(),
        **figures,
    }
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {name} to {out}")


def usage_totals(run_dir: Path) -> dict[str, float]:
    """Calls, cache hits, tokens and model milliseconds of a run, over every model it called."""
    usage = json.loads((run_dir / "llm_usage.json").read_text())
    return {k: sum(x.get(k, 0) for x in usage) for k in USAGE_KEYS}


def audited_answers(run_dir: Path) -> tuple[int, int]:
    """(answers audited, generation records) of a run."""
    gens = [json.loads(x) for x in (run_dir / "generation.jsonl").read_text().splitlines() if x.strip()]
    return len({(g["question_id"], g["prompt"]) for g in gens if g.get("error") is None}), len(gens)


def reason_calls(run_dir: Path) -> int:
    """Requests made for the own judges' quoted reasons: the ``calls`` of every reason record (a dict
    with ``model_said``) in judgements.jsonl."""

    def walk(value: Any) -> int:
        if isinstance(value, dict):
            own = int(value.get("calls") or 0) if "model_said" in value and "calls" in value else 0
            return own + sum(walk(v) for v in value.values())
        if isinstance(value, list):
            return sum(walk(v) for v in value)
        return 0

    path = run_dir / "judgements.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return sum(walk(json.loads(line)) for line in lines if line.strip())


def by_kind(db_path: Path, n_generations: int) -> dict[str, dict[str, float]]:
    """Calls, tokens and model seconds per kind of request, read back from the response cache in
    the order the responses came (generation first, then the judges: Ragas' steps told apart by
    the first key of their JSON output, the yes/no judges by their plain-text verdict); printed."""
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
    return {kind: {"calls": v[0], "model_s": v[4]} for kind, v in kinds.items()}


def kind_figures(kinds: dict[str, dict[str, float]]) -> tuple[dict[str, float], float, float]:
    """The result's model seconds and calls per kind, the Ragas metrics' seconds and their share."""
    out: dict[str, float] = {}
    for kind, name in KINDS.items():
        k = kinds.get(kind, {"calls": 0, "model_s": 0.0})
        out[name] = round(k["model_s"])
        out[f"{name}_calls"] = int(k["calls"])
    ragas_s = sum(v["model_s"] for kind, v in kinds.items() if kind.startswith("ragas"))
    total_s = sum(v["model_s"] for v in kinds.values())
    return out, ragas_s, ragas_s / max(1e-9, total_s)


def timed(cmd: list[str], cwd: Path, env: dict, said: list[str] | None = None) -> float:
    """Seconds a command takes; exits with its error when it fails (exit 1 is a failed gate: kept).
    ``said`` gets the lines it printed."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    if said is not None:
        said += (proc.stdout + proc.stderr).splitlines()
    return time.perf_counter() - start


def setup_steps(lines: list[str]) -> list[dict]:
    """The set-up steps the Makefile timed (its lines ``set-up: WHAT in M min S s``)."""
    found = (re.match(r"set-up: (.+) in (\d+) min (\d+) s$", line.strip()) for line in lines)
    return [{"step": m[1], "s": int(m[2]) * 60 + int(m[3])} for m in found if m]


def timed_with_first_report(cmd: list[str], cwd: Path, env: dict, runs: Path) -> tuple[float, float | None]:
    """``timed``, and the seconds until the run folder's first report.md appeared (the retrieval
    report written before generation starts), polled once a second; None if none appeared."""
    start = time.perf_counter()
    first = None
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)
        while proc.poll() is None:
            if first is None and any(runs.glob("*/report.md")):
                first = time.perf_counter() - start
            time.sleep(1)
        if proc.returncode not in (0, 1):
            err.seek(0)
            sys.exit(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{err.read()[-3000:]}")
    return time.perf_counter() - start, first


def demo(config: str, out: Path) -> None:
    """The config's audit from an empty response cache: the ``demo`` section."""
    from rag_eval.config import load_config

    started = datetime.now(UTC)
    work = Path(tempfile.mkdtemp(prefix="rag-eval-cost-"))
    env = {**os.environ, "RAG_EVAL_CACHE_DIR": str(work / "cache")}
    # Embeddings from the user's cache would make the first stage faster; copy none: the
    # retrieval stage is a few seconds next to the model.
    wall = timed([sys.executable, "-m", "rag_eval.cli", "-q", "run", config, "--out", str(work / "runs")], ROOT, env)
    run_dir = next((work / "runs").iterdir())
    u = usage_totals(run_dir)
    judged, n_generations = audited_answers(run_dir)
    sent = u["prompt_tokens"]
    model_s = u["model_ms"] / 1000
    print(f"config {config}: {judged} audited answers, {u['calls']} calls, wall {wall:.0f} s")
    print(
        f"prompt tokens sent {sent}, evaluated {u['prompt_evaluated']} ({u['prompt_evaluated'] / max(1, sent):.0%}), "
        f"reused from the KV cache {u['prompt_reused']}"
    )
    print(
        f"completion tokens {u['completion_tokens']} ({u['completion_tokens'] / max(1, judged):.0f} per audited answer)"
    )
    print(f"seconds per audited answer (generation + judges): {wall / max(1, judged):.1f}")
    print(f"model time {model_s:.0f} s; wall / model = {wall / max(1e-9, model_s):.2f}x")
    per_kind, _, ragas_share = kind_figures(by_kind(work / "cache" / "llm-cache.sqlite3", n_generations))
    cfg = load_config(config)
    figures = {
        "config": config,
        "answers": judged,
        "judges": len(cfg.judges.metrics) if cfg.judges else 0,
        "calls": int(u["calls"]),
        "prompt_tokens_sent_k": round(sent / 1000, 1),
        "evaluated_share": round(u["prompt_evaluated"] / max(1, sent), 2),
        "completion_tokens_per_answer": round(u["completion_tokens"] / max(1, judged)),
        "previous_release_completion_tokens_per_answer": PREVIOUS_RELEASE_COMPLETION_TOKENS_PER_ANSWER,
        "minutes": round(wall / 60, 1),
        "model_minutes": round(model_s / 60, 1),
        "wall_over_model": round(wall / max(1e-9, model_s), 2),
        "model_s": per_kind,
        "ragas_share": round(ragas_share, 2),
    }
    shown = config if Path(config).resolve() != (ROOT / "configs" / "demo.yaml").resolve() else None
    command = "python benchmarks/audit_cost/audit_cost.py" + (f" --config {shown}" if shown else "")
    write_section("demo", figures, command, started, out)


def layout_of(models: Path) -> dict | None:
    """The weight layout ``repack: auto`` chose in a model folder (its kept probe), if one was kept."""
    try:
        kept = json.loads((models / "weight-layout.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = next(iter(kept.values()), None)
    return {k: entry.get(k) for k in ("repack", "audit_time_ratio", "why")} if entry else None


def probe_layout(times: int, threads: int) -> dict:
    """``repack: auto``'s probe run ``times`` times in a row (nothing kept): each audit-time ratio
    and choice, so that how near this machine sits to the margin shows."""
    sys.path.insert(0, str(ROOT))
    from rag_eval.llm import weight_layout  # noqa: PLC0415
    from rag_eval.llm.local import default_model_path, server_binary  # noqa: PLC0415

    bench = server_binary().resolve().parent / "llama-bench"
    probes = [weight_layout.bench(bench, default_model_path(), threads) for _ in range(times)]
    for p in probes:
        print(p.why, "->", "repack" if p.repack else "no repack", flush=True)
    return {
        "threads": threads,
        "prompt_tokens": weight_layout.PROMPT_TOKENS,
        "generated_tokens": weight_layout.GENERATED_TOKENS,
        "rounds": weight_layout.ROUNDS,
        "margin": weight_layout.MARGIN,
        "audit_mix": weight_layout.AUDIT_MIX,
        "ratios": [p.audit_time_ratio for p in probes],
        "ratio_min": min(p.audit_time_ratio or 1.0 for p in probes),
        "ratio_max": max(p.audit_time_ratio or 1.0 for p in probes),
        "chose_no_repack": sum(not p.repack for p in probes),
        "probes": [p.to_dict() for p in probes],
    }


def make_demo(out: Path, from_nothing: bool = False) -> None:
    """A new user's ``make setup`` and ``make demo`` in a fresh clone, then the audit again from
    another folder: the ``make_demo`` section. ``from_nothing``: with empty pip and llama.cpp wheel
    caches too (every package downloaded, llama.cpp built): the ``make_demo_from_nothing`` section."""
    started = datetime.now(UTC)
    work = Path(tempfile.mkdtemp(prefix="rag-eval-make-demo-"))
    clone = work / "rag-eval"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env = {
        **os.environ,
        "RAG_EVAL_CACHE_DIR": str(work / "cache"),
        "RAG_EVAL_MODEL_DIR": str(work / "models"),
        **({"PIP_CACHE_DIR": str(work / "pip-cache")} if from_nothing else {}),
    }
    env.pop("VIRTUAL_ENV", None)
    said: list[str] = []
    wheels = [f"LLAMA_WHEELS={work / 'llama-wheels'}"] if from_nothing else []
    setup_s = timed(["make", "setup", *wheels], clone, env, said)
    audit_s, first_report_s = timed_with_first_report(["make", "demo"], clone, env, clone / "runs")
    run_dir = next((clone / "runs").iterdir())
    u = usage_totals(run_dir)
    _, n_generations = audited_answers(run_dir)
    _, ragas_s, _ = kind_figures(by_kind(work / "cache" / "llm-cache.sqlite3", n_generations))
    # The same command again, from another folder, in a new process with the same cache.
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    rag_eval = str(clone / ".venv" / "bin" / "rag-eval")
    rerun_s = timed(
        [rag_eval, "run", str(clone / "configs" / "demo.yaml"), "--out", str(elsewhere / "runs")], elsewhere, env
    )
    rerun = usage_totals(next((elsewhere / "runs").iterdir()))
    model_s = u["model_ms"] / 1000
    figures = {
        "commit": commit(clone),
        "setup_s": round(setup_s),
        "from_nothing": from_nothing,
        "setup_steps": setup_steps(said),
        "audit_s": round(audit_s),
        "audit_min": round(audit_s / 60, 1),
        # From `make demo`'s start (after `make setup`): the retrieval report, readable while the model works.
        "first_report_s": round(first_report_s) if first_report_s is not None else None,
        "setup_and_first_report_min": round((setup_s + (first_report_s or audit_s)) / 60, 1),
        "setup_and_audit_min": round((setup_s + audit_s) / 60, 1),
        "calls": int(u["calls"]),
        "prompt_tokens_k": round(u["prompt_tokens"] / 1000, 1),
        "evaluated_k": round(u["prompt_evaluated"] / 1000, 1),
        "evaluated_share": round(u["prompt_evaluated"] / max(1, u["prompt_tokens"]), 2),
        "completion_tokens_k": round(u["completion_tokens"] / 1000, 1),
        "model_s": round(model_s),
        "model_share": round(model_s / max(1e-9, audit_s), 2),
        "reason_calls": reason_calls(run_dir),
        "ragas_model_s": round(ragas_s),
        "rerun_s": round(rerun_s),
        "rerun_calls": int(rerun["calls"]),
        "rerun_cache_answers": int(rerun["cache_hits"]),
        # What the first run's probe of the weight layout chose in the new model folder.
        "weight_layout": layout_of(work / "models"),
    }
    print(json.dumps(figures, indent=1))
    section = "make_demo_from_nothing" if from_nothing else "make_demo"
    command = "python benchmarks/audit_cost/audit_cost.py --make-demo" + (" --from-nothing" if from_nothing else "")
    write_section(section, figures, command, started, out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "configs" / "demo.yaml"))
    parser.add_argument("--make-demo", action="store_true", help="time make setup and make demo in a fresh clone")
    parser.add_argument(
        "--from-nothing", action="store_true", help="--make-demo with empty pip and llama.cpp wheel caches too"
    )
    parser.add_argument(
        "--side-by-side", action="store_true", help="the baseline (--base) and this working tree, interleaved rounds"
    )
    parser.add_argument("--base", default=side_by_side.BASE, help="the baseline commit (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of --side-by-side or --bench-repack")
    parser.add_argument("--keep", action="store_true", help="keep the run folders of --side-by-side")
    parser.add_argument("--only", choices=("base", "current"), help="--side-by-side: run one arm only")
    parser.add_argument("--current", help="--side-by-side: a commit for the current arm (default: this working tree)")
    parser.add_argument(
        "--seed-cache",
        type=Path,
        default=Path(os.environ.get("RAG_EVAL_CACHE_DIR") or Path.home() / ".cache" / "rag-eval"),
        help="--side-by-side: embeddings and BM25 indexes copied into each arm's empty cache (default: %(default)s)",
    )
    parser.add_argument(
        "--add-floor", action="store_true", help="add side_by_side.floor to result.json from its arms (no model run)"
    )
    parser.add_argument("--bench-repack", action="store_true", help="llama-bench with --repack 1 and 0, interleaved")
    parser.add_argument(
        "--probe-layout",
        type=int,
        metavar="N",
        help="repack: auto's probe (llama-bench) N times: how stable its choice is",
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2, help="llama-bench threads")
    parser.add_argument("--out", type=Path, default=RESULT, help="the result file (default: %(default)s)")
    args = parser.parse_args()
    if args.from_nothing and not args.make_demo:
        parser.error("--from-nothing goes with --make-demo")
    modes = [args.add_floor, args.side_by_side, args.bench_repack, bool(args.probe_layout), args.make_demo]
    if sum(modes) > 1:
        parser.error("give one of --add-floor, --side-by-side, --bench-repack, --probe-layout, --make-demo")
    started = datetime.now(UTC)
    if args.add_floor:
        result = json.loads(args.out.read_text())
        if "side_by_side" not in result:
            parser.error(f"{args.out} has no side_by_side section: run --side-by-side first")
        result["side_by_side"]["floor"] = side_by_side.floor(result["side_by_side"])
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result["side_by_side"]["floor"]))
    elif args.side_by_side:
        config = args.config if args.config != str(ROOT / "configs" / "demo.yaml") else "configs/demo.yaml"
        section = side_by_side.side_by_side(
            args.base, args.rounds, config, args.keep, args.only, args.seed_cache, args.current
        )
        command = f"python benchmarks/audit_cost/audit_cost.py --side-by-side --base {args.base} --rounds {args.rounds}"
        command += f" --current {args.current}" if args.current else ""
        command += f" --config {args.config}" if config != "configs/demo.yaml" else ""
        side_by_side.write("side_by_side", section, command, started, args.out)
    elif args.bench_repack:
        section = side_by_side.bench_repack(args.rounds, args.threads)
        command = f"python benchmarks/audit_cost/audit_cost.py --bench-repack --rounds {args.rounds}"
        side_by_side.write("repack", section, command, started, args.out)
    elif args.probe_layout:
        section = probe_layout(args.probe_layout, args.threads)
        command = f"python benchmarks/audit_cost/audit_cost.py --probe-layout {args.probe_layout}"
        side_by_side.write("layout_probe", section, command, started, args.out)
    elif args.make_demo:
        make_demo(args.out, args.from_nothing)
    else:
        demo(args.config, args.out)


if __name__ == "__main__":
    main()
