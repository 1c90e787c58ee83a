"""How BM25 retrieval scales: rag-eval's sparse-matrix BM25 against rank-bm25 (the baseline,
measured in the same run), on synthetic corpora built from text that ships with Python.

The corpus: sentences of the reference topics (pydoc_data.topics) and of stdlib docstrings, shuffled
(seeded) into chunks of 3-8 sentences, as many chunks as asked. Questions: sentences of the same
text with a few words dropped. For each size it prints the index build time, the per-query search
time of both implementations, each including its top-10 selection (rank-bm25 on a subset of
queries, since it is slow), their ratio,
whether the rankings are identical (top 10 of every compared query), and peak memory.

    python benchmarks/scale.py                      # 10k and 100k chunks
    python benchmarks/scale.py --sizes 10000 100000 1000000 --queries 1000
"""

from __future__ import annotations

import argparse
import importlib
import re
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def sentences() -> list[str]:
    """Sentences of the reference topics and of stdlib module, class and function docstrings."""
    from pydoc_data.topics import topics

    texts = list(topics.values())
    warnings.simplefilter("ignore")
    # The standard library only (never the scripts beside this one, nor installed packages).
    for name in sorted(sys.stdlib_module_names):
        if name.startswith(("_", "test", "idlelib", "tkinter", "turtle", "antigravity", "this", "pydoc")):
            continue
        try:
            m = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - any stdlib module that does not import here is skipped
            continue
        texts.append(m.__doc__ or "")
        for obj in list(vars(m).values()):
            doc = getattr(obj, "__doc__", None)
            if isinstance(doc, str):
                texts.append(doc)
    out = []
    for t in texts:
        out += [s.strip() for s in re.split(r"(?<=[.!?])\s+", " ".join(t.split())) if len(s.split()) >= 4]
    return sorted(set(out))


def corpus(sents: list[str], n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 9, size=n)
    picks = rng.integers(0, len(sents), size=int(sizes.sum()))
    out, i = [], 0
    for s in sizes:
        out.append(" ".join(sents[j] for j in picks[i : i + s]))
        i += s
    return out


def queries(sents: list[str], n: int, seed: int = 1) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for j in rng.integers(0, len(sents), size=n):
        words = sents[j].split()
        keep = rng.random(len(words)) > 0.3
        out.append(" ".join(w for w, k in zip(words, keep) if k) or words[0])
    return out


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--baseline-queries", type=int, default=20, help="queries timed with rank-bm25")
    args = ap.parse_args()

    from rank_bm25 import BM25Okapi

    from rag_eval.retrieval.base import top_k
    from rag_eval.retrieval.bm25 import SparseBm25, make_tokenizer

    tok = make_tokenizer(r"[a-z0-9_]+")
    t = time.perf_counter()
    sents = sentences()
    print(f"{len(sents)} distinct sentences from the stdlib in {time.perf_counter() - t:.1f} s")
    qs = queries(sents, args.queries)
    q_tokens = [tok(q) for q in qs]
    print(
        f"{'chunks':>9} {'tokenize s':>10} {'build s':>8} {'sparse ms/q':>12} {'rank_bm25 ms/q':>15} {'ratio':>7} {'identical':>10} {'peak MB':>8}"
    )
    for n in args.sizes:
        docs = corpus(sents, n)
        t = time.perf_counter()
        toks = [tok(d) for d in docs]
        t_tok = time.perf_counter() - t
        t = time.perf_counter()
        index = SparseBm25.build(toks, 1.5, 0.75, 0.25)
        t_build = time.perf_counter() - t
        t = time.perf_counter()
        tops = []
        for i in range(0, len(q_tokens), 64):
            s = index.scores(q_tokens[i : i + 64])
            tops.append(top_k(s, 10))
        t_sparse = (time.perf_counter() - t) / len(q_tokens)
        top = np.vstack(tops)
        ref = BM25Okapi(toks, k1=1.5, b=0.75, epsilon=0.25)
        m = min(args.baseline_queries, len(q_tokens))
        t = time.perf_counter()
        ref_top = [np.argsort(-ref.get_scores(q), kind="stable")[:10] for q in q_tokens[:m]]
        t_ref = (time.perf_counter() - t) / m
        same = all((r == top[i]).all() for i, r in enumerate(ref_top))
        print(
            f"{n:>9} {t_tok:>10.1f} {t_build:>8.1f} {t_sparse * 1000:>12.2f} {t_ref * 1000:>15.1f} "
            f"{t_ref / t_sparse:>6.0f}x {str(same) + f' ({m})':>10} {peak_mb():>8.0f}"
        )
        del ref, index, toks, docs


if __name__ == "__main__":
    main()
