"""The baseline and the current code audited side by side in one run on one machine.

    python benchmarks/audit_cost/audit_cost.py --side-by-side [--base 5d4b0e0] [--rounds 2]
    python benchmarks/audit_cost/audit_cost.py --bench-repack [--rounds 3]

``--side-by-side``: the baseline commit is checked out in a temporary ``git worktree`` and run with
``PYTHONPATH`` pointing at it, sharing this checkout's virtualenv, llama-server binary and
assembled model; the current working tree is the other arm. Each round runs both arms, in
alternating order (base first in odd rounds, current first in even ones), each from an empty
response cache and an empty embedding cache, through ``logged_run.py``, which logs every request
the model answered. Per arm: calls, prompt tokens sent and evaluated, completion tokens, model
seconds (llama-server's own prompt_ms + predicted_ms), per judged answer and per kind of request;
and the figures reported (summary.json's judged figures and outcomes, and every verdict of
judgements.jsonl), listed where the two arms differ. Token and call counts do not depend on the
machine's load; model seconds do: run it alone on the machine for the timings.

``--bench-repack``: llama-bench's prompt (pp512) and generation (tg64) speed of the embedded
model with the weights repacked and not (``--repack 1/0``), in interleaved rounds.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from statistics import mean

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BASE = "5d4b0e0"
SUMS = ("calls", "prompt_tokens", "evaluated", "completion_tokens", "model_ms")


def worktree(commit: str, where: Path) -> Path:
    """A detached checkout of ``commit`` (removed by ``drop_worktree``)."""
    subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(where), commit], cwd=ROOT, check=True)
    return where


def drop_worktree(where: Path) -> None:
    subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=ROOT, check=False)


def run_arm(tree: Path, config: str, work: Path, seed: Path | None) -> tuple[Path, Path, float]:
    """One audit of ``config`` (relative to ``tree``) by the code in ``tree``, from an empty
    response cache: (run folder, request log, wall seconds). ``seed``: a cache folder whose
    embeddings and BM25 indexes are copied in first (no model call reads them)."""
    work.mkdir(parents=True)
    for part in ("embeddings", "bm25"):
        if seed is not None and (seed / part).is_dir():
            shutil.copytree(seed / part, work / "cache" / part)
    log = work / "requests.jsonl"
    env = {**os.environ, "PYTHONPATH": str(tree), "RAG_EVAL_CACHE_DIR": str(work / "cache")}
    cmd = [
        sys.executable,
        str(HERE / "logged_run.py"),
        str(log),
        "--",
        "-q",
        "run",
        config,
        "--out",
        str(work / "runs"),
    ]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    (work / "stderr.txt").write_text(proc.stderr)
    if proc.returncode not in (0, 1):  # 1: a failed gate, the audit is whole
        sys.exit(f"{' '.join(cmd)} in {tree} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return next((work / "runs").iterdir()), log, wall


def read_log(log: Path) -> list[dict]:
    return [json.loads(x) for x in log.read_text().splitlines() if x.strip()] if log.exists() else []


def totals(rows: list[dict]) -> dict[str, float]:
    out = {k: 0.0 for k in SUMS}
    for r in rows:
        out["calls"] += 1
        for k in SUMS[1:]:
            out[k] += r.get(k, 0)
    return out


def per_kind(rows: list[dict]) -> dict[str, dict]:
    kinds: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        kinds[r["kind"]].append(r)
    return {k: _rounded(totals(v)) for k, v in sorted(kinds.items())}


def _rounded(t: dict[str, float]) -> dict:
    return {
        "calls": int(t["calls"]),
        "prompt_tokens": int(t["prompt_tokens"]),
        "evaluated": int(t["evaluated"]),
        "completion_tokens": int(t["completion_tokens"]),
        "model_s": round(t["model_ms"] / 1000, 1),
    }


def judged_answers(run_dir: Path) -> int:
    gens = [json.loads(x) for x in (run_dir / "generation.jsonl").read_text().splitlines() if x.strip()]
    return len({(g["question_id"], g["prompt"]) for g in gens if g.get("error") is None})


def reported(run_dir: Path) -> dict:
    """What the report shows, as comparable values: the judged figures, the outcome counts, and
    every verdict (judge, question, prompt) -> status, verdict and score."""
    summary = json.loads((run_dir / "summary.json").read_text())
    figures = {
        f"{prompt} {name}": round(f["value"], 4) if f.get("value") is not None else None
        for prompt, figs in (summary.get("generation") or {}).items()
        for name, f in figs.items()
    }
    outcomes = {
        f"{prompt} {name}": o.get("count")
        for prompt, outs in (summary.get("attribution") or {}).items()
        for name, o in outs.items()
    }
    verdicts = {}
    path = run_dir / "judgements.jsonl"
    for line in path.read_text().splitlines() if path.exists() else []:
        j = json.loads(line)
        score = j.get("score")
        verdicts[f"{j['judge']} {j['question_id']} {j['prompt']}"] = [
            j.get("status"),
            j.get("verdict"),
            round(score, 3) if isinstance(score, float) else score,
        ]
    return {"figures": figures, "outcomes": outcomes, "verdicts": verdicts}


def differences(a: dict, b: dict) -> dict[str, list]:
    """Per part of ``reported``: the keys whose values differ, with both values."""
    out = {}
    for part in a:
        keys = sorted(set(a[part]) | set(b[part]))
        out[part] = [[k, a[part].get(k), b[part].get(k)] for k in keys if a[part].get(k) != b[part].get(k)]
    return out


def arm_figures(run_dir: Path, log: Path, wall: float) -> dict:
    rows = read_log(log)
    t = totals(rows)
    judging = totals([r for r in rows if r["kind"] != "generation"])
    n = judged_answers(run_dir)
    return {
        "judged_answers": n,
        **_rounded(t),
        "wall_s": round(wall),
        "model_s_per_judged_answer": round(t["model_ms"] / 1000 / max(1, n), 1),
        "judging_model_s_per_judged_answer": round(judging["model_ms"] / 1000 / max(1, n), 1),
        "evaluated_per_judged_answer": round(judging["evaluated"] / max(1, n)),
        "completion_tokens_per_judged_answer": round(t["completion_tokens"] / max(1, n)),
        "kinds": per_kind(rows),
    }


def side_by_side(
    base: str,
    rounds: int,
    config: str,
    keep: bool,
    only: str | None = None,
    seed: Path | None = None,
    current: str | None = None,
) -> dict:
    """Both arms (or ``only`` one), ``rounds`` times, interleaved; the section written into result.json.
    ``current``: a commit for the current arm (checked out like the base), else this working tree."""
    work = Path(tempfile.mkdtemp(prefix="rag-eval-side-by-side-"))
    # A killed run still removes its worktrees (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped (SIGTERM)"))
    base_tree = worktree(base, work / "base")
    current_tree = worktree(current, work / "current") if current else ROOT
    arms = {"base": base_tree, "current": current_tree}
    runs: dict[str, list[dict]] = {arm: [] for arm in arms if only in (None, arm)}
    seen: dict[str, dict] = {}
    try:
        for r in range(rounds):
            for arm in [a for a in (("base", "current") if r % 2 == 0 else ("current", "base")) if a in runs]:
                print(f"round {r + 1} of {rounds}: {arm} ({arms[arm]})", flush=True)
                run_dir, log, wall = run_arm(arms[arm], config, work / f"{arm}-{r + 1}", seed)
                figs = arm_figures(run_dir, log, wall)
                runs[arm].append(figs)
                seen.setdefault(arm, reported(run_dir))
                print(
                    f"  {figs['calls']} calls, {figs['prompt_tokens']} prompt tokens sent, {figs['evaluated']} "
                    f"evaluated, {figs['completion_tokens']} generated, model {figs['model_s']} s "
                    f"({figs['model_s_per_judged_answer']} s per judged answer), wall {figs['wall_s']} s",
                    flush=True,
                )
    finally:
        drop_worktree(base_tree)
        if current:
            drop_worktree(current_tree)
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"run folders kept in {work}")
    if only is not None:
        return {"base": base, "rounds": rounds, "config": config, "arms": runs, "reported": seen}
    per_answer = {arm: mean(x["model_s_per_judged_answer"] for x in runs[arm]) for arm in runs}
    diff = differences(seen["base"], seen["current"])
    section = {
        "base": base,
        "current": current or "working tree",
        "rounds": rounds,
        "config": config,
        "arms": runs,
        "ratio_model_s_per_judged_answer": round(per_answer["current"] / max(1e-9, per_answer["base"]), 2),
        "ratio_evaluated": round(
            mean(x["evaluated"] for x in runs["current"]) / max(1, mean(x["evaluated"] for x in runs["base"])), 2
        ),
        "ratio_completion_tokens": round(
            mean(x["completion_tokens"] for x in runs["current"])
            / max(1, mean(x["completion_tokens"] for x in runs["base"])),
            2,
        ),
        "ratio_calls": round(
            mean(x["calls"] for x in runs["current"]) / max(1, mean(x["calls"] for x in runs["base"])), 2
        ),
        "figures_differ": diff,  # every part, an empty list where nothing differs
        "verdicts_compared": len(seen["base"]["verdicts"]),
    }
    section["floor"] = floor(section)
    print(json.dumps({k: v for k, v in section.items() if k != "arms"}, indent=1))
    return section


# The requests the own judges' changes do not touch: the three Ragas metrics' (Ragas' prompts; the
# user named the metrics) and the answers themselves. The server's settings and cache still move
# their time, so their share is no hard floor.
FIXED_KINDS = ("generation", "ragas_")


def floor(section: dict) -> dict:
    """What the current arm's ``FIXED_KINDS`` requests alone take, per round on average, against
    the base arm's whole model time (totals; per judged answer where both arms judged as many)."""
    fixed = mean(
        sum(k["model_s"] for name, k in run["kinds"].items() if name.startswith(FIXED_KINDS))
        for run in section["arms"]["current"]
    )
    base = mean(run["model_s"] for run in section["arms"]["base"])
    judged = {run["judged_answers"] for arm in ("base", "current") for run in section["arms"][arm]}
    if len(judged) != 1:
        raise ValueError(f"the arms judged different numbers of answers ({sorted(judged)}): no share to compare")
    return {
        "judged_answers": judged.pop(),
        "fixed_kinds": list(FIXED_KINDS),
        "fixed_model_s": round(fixed, 1),
        "base_model_s": round(base, 1),
        "ratio": round(fixed / max(1e-9, base), 2),
    }


def bench_repack(rounds: int, threads: int) -> dict:
    """llama-bench pp512 / tg64 tokens per second, repack on and off in interleaved rounds."""
    sys.path.insert(0, str(ROOT))
    from rag_eval.llm.local import default_model_path, server_binary  # noqa: PLC0415

    bench = server_binary().resolve().parent / "llama-bench"
    model = default_model_path()
    speeds: dict[str, dict[str, list[float]]] = {"repack": defaultdict(list), "no_repack": defaultdict(list)}
    for r in range(rounds):
        for setting in ("repack", "no_repack") if r % 2 == 0 else ("no_repack", "repack"):
            cmd = [str(bench), "-m", str(model), "-t", str(threads), "-p", "512", "-n", "64", "-r", "1"]
            cmd += ["--repack", "1" if setting == "repack" else "0", "-o", "json"]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
            for test in json.loads(proc.stdout):
                name = f"pp{test['n_prompt']}" if test["n_prompt"] else f"tg{test['n_gen']}"
                speeds[setting][name].append(round(float(test["avg_ts"]), 2))
            print(f"round {r + 1}: {setting} {dict(speeds[setting])}", flush=True)
    means = {s: {k: round(mean(v), 2) for k, v in d.items()} for s, d in speeds.items()}
    faster = {k: round(means["no_repack"][k] / means["repack"][k], 3) for k in means["repack"]}
    return {
        "threads": threads,
        "rounds": rounds,
        "tokens_per_s": {s: dict(d) for s, d in speeds.items()},
        "mean": means,
        "no_repack_over_repack": faster,
    }


def write(name: str, section: dict, command: str, started: datetime, out: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from run_info import commit, machine  # noqa: PLC0415

    result = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    result[name] = {
        "command": command,
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "machine": machine(),
        **section,
    }
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {name} to {out}")
