"""How BM25 retrieval scales: rag-eval's sparse-matrix BM25 against rank-bm25 (the baseline,
measured in the same run), on synthetic corpora built from text that ships with Python.

The corpus: sentences of the reference topics (pydoc_data.topics) and of stdlib docstrings, shuffled
(seeded) into chunks of 3-8 sentences, as many chunks as asked. Questions: sentences of the same
text with a few words dropped. For each size and stage it prints the time and the peak memory it added:

- BM25: tokenizing, index build, and search with top-10 selection for every question; the per-query
  time of rank-bm25 (the baseline, on the first queries, in the same run), the ratio, and whether
  the top 10 are identical;
- dense: embedding (the packaged model up to --real-embeddings-up-to chunks, seeded random unit
  vectors above, which cost the same to score), exact search in question blocks from a
  memory-mapped file (depth 100, exact rank of one labelled chunk per question), and FAISS HNSW
  with its recall@10 against exact search;
- the whole `rag-eval retrieval` stage (inputs, one BM25 retriever with an empty cache, metrics,
  diagnosis, lint, records, report) over the stdlib's Python source in 8-line chunks (--stage-sizes,
  100,000 by default) and --queries questions, once labelled by chunk id and once by evidence quote
  with a reference, against bare rank-bm25 on the same chunks and questions (index build plus every
  question, extrapolated from the first --baseline-queries), in the same run: the ratio (goal < 0.05x);
- metrics: hit@10, MRR and nDCG@10 over --metric-queries synthetic rankings against ranx;
- the growth of each search with corpus size (linear: time grows as the size does).

    python benchmarks/scale/scale.py                      # 10k and 100k chunks, 1,000 questions
    python benchmarks/scale/scale.py --sizes 10000 100000 1000000
    python benchmarks/scale/scale.py --sizes --no-dense --stage-sizes 100000 --metric-queries 0   # the stage alone

What it measured is merged into result.json (--result; '-': none): each part it measured (BM25 and
dense rows by corpus size, embedding, HNSW, metrics, the stage's rows by size) replaces that part,
with the run's command, date, commit and machine (load average included) under ``runs``; the parts
it did not measure stay as they were.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import resource
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from run_info import commit, machine  # noqa: E402

RESULT = Path(__file__).with_name("result.json")
sys.path.insert(0, str(ROOT))


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


class PeakRss:
    """Peak resident memory over a block, above what the process held when it began (sampled
    every 10 ms from /proc, so memory-mapped pages read count too)."""

    def __enter__(self) -> PeakRss:
        import threading

        self.start = self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    @staticmethod
    def _rss() -> float:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * resource.getpagesize() / 2**20

    def _watch(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self._rss())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def mb(self) -> float:
        return self.peak - self.start


def bm25_stage(docs, q_tokens, tok, baseline_queries: int) -> dict:
    from rank_bm25 import BM25Okapi

    from rag_eval.retrievers.bm25 import SparseBm25
    from rag_eval.retrievers.rankings import Rankings

    with PeakRss() as mem:
        t = time.perf_counter()
        index = SparseBm25.build((tok(d) for d in docs), 1.5, 0.75, 0.25)  # tokenized as it goes
        t_build = time.perf_counter() - t
        t = time.perf_counter()
        ranked = Rankings.from_scorer(
            lambda rows: index.scores([q_tokens[i] for i in rows]), len(q_tokens), len(docs), 10
        )
        t_search = time.perf_counter() - t
    m = min(baseline_queries, len(q_tokens))
    t = time.perf_counter()
    ref = BM25Okapi([tok(d) for d in docs], k1=1.5, b=0.75, epsilon=0.25)
    t_ref_build = time.perf_counter() - t
    t = time.perf_counter()
    ref_scores = [ref.get_scores(q) for q in q_tokens[:m]]
    ref_top = [np.argsort(-r, kind="stable")[:10] for r in ref_scores]
    t_ref = (time.perf_counter() - t) / m
    same = sum((r == ranked.top[i]).all() for i, r in enumerate(ref_top))
    # Two chunks whose scores are mathematically equal can come out 1e-13 apart in either
    # implementation (the order of summation differs), which swaps their places.
    ties = sum(
        not (r == ranked.top[i]).all()
        and np.allclose(ref_scores[i][r], ref_scores[i][ranked.top[i]], rtol=0, atol=1e-9)
        for i, r in enumerate(ref_top)
    )
    per_q = t_search / len(q_tokens)
    return {
        "tokenize+build s": t_build,
        "search s": t_search,
        "ms/query": per_q * 1000,
        "rank_bm25 ms/query": t_ref * 1000,
        "rank_bm25 build s": t_ref_build,
        "vs rank_bm25": f"{t_ref / per_q:.0f}x",
        "identical top10": f"{same}/{m}" + (f" +{ties} tie" if ties else ""),
        "+MB": mem.mb,
        "_result": {
            "bm25_build_s": round(t_build, 2),
            "bm25_ms_per_query": round(per_q * 1000, 2),
            "rank_bm25_ms_per_query": round(t_ref * 1000, 1),
            "ratio": round(t_ref / per_q),
            "top10_identical": f"{same} of {m}" + (f", {ties} tie" + ("s" if ties > 1 else "") if ties else ""),
            "bm25_mb": round(mem.mb),
        },
    }


def source_chunks(n: int, lines: int = 8) -> list[dict]:
    """The standard library's Python source (every ``.py`` file, sorted by path) in chunks of
    ``lines`` lines, the first ``n``: ``{id: "path:first line", text, doc_id: path}``."""
    import sysconfig

    lib = Path(sysconfig.get_paths()["stdlib"])
    out: list[dict] = []
    for path in sorted(p for p in lib.rglob("*.py") if "site-packages" not in p.parts):
        try:
            text = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        rel = path.relative_to(lib).as_posix()
        for s in range(0, len(text), lines):
            body = "\n".join(text[s : s + lines])
            if body.strip():
                out.append({"id": f"{rel}:{s + 1}", "text": body, "doc_id": rel})
            if len(out) == n:
                return out
    return out


def labelled_questions(chunks: list[dict], n: int, seed: int = 6) -> list[dict]:
    """Questions about chunks of the corpus, labelled as users label them: each is a line of one
    chunk (of at least 4 words) with a few words dropped; ``chunk`` is its id, ``evidence`` and
    ``reference`` the line."""
    rng = np.random.default_rng(seed)
    out: list[dict] = []
    while len(out) < n:
        c = chunks[int(rng.integers(0, len(chunks)))]
        lines = [line.strip() for line in c["text"].splitlines() if len(re.findall(r"[a-z0-9_]+", line.lower())) >= 4]
        if not lines:
            continue
        line = lines[int(rng.integers(0, len(lines)))]
        words = line.split()
        keep = rng.random(len(words)) > 0.3
        question = " ".join(w for w, k in zip(words, keep) if k) or words[0]
        out.append({"id": f"q{len(out)}", "question": question, "chunk": c["id"], "evidence": line, "reference": line})
    return out


def retrieval_stage(chunks: list[dict], questions: list[dict], folder: Path, baseline_queries: int) -> dict:
    """``rag-eval retrieval`` (the whole stage: inputs, one BM25 retriever with an empty cache,
    metrics, diagnosis, lint, records, report) against bare rank-bm25 (its index build plus every
    question, extrapolated from the first ``baseline_queries``) on the same corpus and questions, in
    the same run; once with the questions labelled by chunk id (``ids``) and once by evidence quote
    with a reference answer (``quotes``)."""
    import json

    import yaml
    from rank_bm25 import BM25Okapi

    from rag_eval import api
    from rag_eval.retrievers.bm25 import make_tokenizer
    from rag_eval.retrievers.settings import Bm25Config

    cfg = Bm25Config(type="bm25")
    tok = make_tokenizer(cfg.tokenizer, cfg.lowercase)
    t = time.perf_counter()
    ref = BM25Okapi([tok(c["text"]) for c in chunks], k1=cfg.k1, b=cfg.b, epsilon=cfg.epsilon)
    build = time.perf_counter() - t
    m = min(baseline_queries, len(questions))
    t = time.perf_counter()
    ref_scores = {q["id"]: ref.get_scores(tok(q["question"])) for q in questions[:m]}
    per_query = (time.perf_counter() - t) / m
    baseline = build + per_query * len(questions)
    del ref
    print(
        f"rank-bm25 on {len(chunks)} chunks: build {build:.1f} s, {per_query * 1000:.0f} ms/question "
        f"(first {m}): {baseline:.0f} s for {len(questions)} questions",
        flush=True,
    )
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in chunks))
    test_sets = {
        "ids": [{"id": q["id"], "question": q["question"], "answer_in": q["chunk"]} for q in questions],
        "quotes": [{k: v for k, v in q.items() if k != "chunk"} for q in questions],
    }
    row: dict = {"chunks": len(chunks), "questions": len(questions), "rank_bm25 s": baseline}
    result = {
        "chunks": len(chunks),
        "questions": len(questions),
        "rank_bm25_questions": m,
        "rank_bm25_build_s": round(build, 1),
        "rank_bm25_s": round(baseline, 1),
    }
    row["_result"] = result
    for name, qs in test_sets.items():
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
        audit = {
            "name": f"scale-{name}",
            "corpus": {"path": "corpus.jsonl"},
            "test_set": {"path": f"{name}.jsonl"},
            "retrieval": {"k": [1, 5, 10], "retrievers": {"bm25": {"type": "bm25"}}},
            "report": {"out": "runs"},
            "cache_dir": f"cache-{name}",
        }
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(audit))
        t = time.perf_counter()
        run = api.retrieval(str(folder / f"{name}.yaml"))
        took = time.perf_counter() - t
        # The stage's top 10 against rank-bm25's for the questions it ran (two chunks whose scores
        # are equal to 1e-9 may come out in the other order: the two sum in a different order).
        same = ties = 0
        for line in (run.run_dir / "retrieval.jsonl").open(encoding="utf-8"):
            rec = json.loads(line)
            if rec["question_id"] not in ref_scores:
                continue
            scores = ref_scores[rec["question_id"]]
            want = [chunks[i]["id"] for i in np.argsort(-scores, kind="stable")[:10]]
            got = [r["id"] for r in rec["retrieved"][:10]]
            same += got == want
            ties += got != want and np.allclose(
                sorted(scores, reverse=True)[:10], [r["score"] for r in rec["retrieved"][:10]], rtol=0, atol=1e-9
            )
        result[f"{name}_top10_identical"] = f"{same} of {m}" + (
            f", {ties} tie" + ("s" if ties > 1 else "") if ties else ""
        )
        row[f"{name} s"] = took
        row[f"{name} ratio"] = f"{took / baseline:.3f}x"
        result[f"{name}_s"] = round(took, 2)
        result[f"{name}_ratio"] = round(took / baseline, 3)
        print(
            f"rag-eval retrieval, test set labelled by {name}: {took:.1f} s, {took / baseline:.3f}x; top 10 as "
            f"rank-bm25's: {result[f'{name}_top10_identical']}",
            flush=True,
        )
    return row


def embeddings(docs: list[str], real: bool, seed: int = 2) -> tuple[np.ndarray, float]:
    """Passage embeddings: the packaged model's (real) or seeded random unit vectors of the same
    shape (384), and the seconds taken."""
    t = time.perf_counter()
    if real:
        from sentence_transformers import SentenceTransformer

        from rag_eval.retrievers.dense import resolve_model

        model = SentenceTransformer(str(resolve_model("all-MiniLM-L6-v2")), device="cpu")
        emb = model.encode(docs, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    else:
        rng = np.random.default_rng(seed)
        emb = np.empty((len(docs), 384), dtype=np.float32)
        for s in range(0, len(docs), 65536):
            x = rng.standard_normal((min(65536, len(docs) - s), 384), dtype=np.float32)
            emb[s : s + len(x)] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return emb.astype(np.float32), time.perf_counter() - t


def dense_stage(passages: np.ndarray, queries_emb: np.ndarray, folder: Path, hnsw: bool) -> dict:
    """Exact block scoring from a memory-mapped file; optionally HNSW with recall@10 against it."""
    from rag_eval.retrievers.ann import build_hnsw, recall_at, search
    from rag_eval.retrievers.rankings import Rankings

    path = folder / "passages.npy"
    np.save(path, passages)
    mapped = np.load(path, mmap_mode="r")
    wanted = [[int(i)] for i in np.random.default_rng(3).integers(0, len(passages), len(queries_emb))]
    with PeakRss() as mem:
        t = time.perf_counter()
        exact = Rankings.from_scorer(
            lambda rows: queries_emb[rows] @ mapped.T, len(queries_emb), len(passages), 100, wanted
        )
        t_exact = time.perf_counter() - t
    out = {"exact s": t_exact, "exact ms/query": 1000 * t_exact / len(queries_emb), "exact +MB": mem.mb}
    if hnsw:
        t = time.perf_counter()
        index = build_hnsw(passages, 32)
        out["hnsw build s"] = time.perf_counter() - t
        t = time.perf_counter()
        top, _ = search(index, queries_emb, 100, 128)
        out["hnsw ms/query"] = 1000 * (time.perf_counter() - t) / len(queries_emb)
        out["hnsw recall@10"] = recall_at(top, exact.top, 10)
        del index
    return out


def metrics_stage(n_queries: int, n_chunks: int, depth: int = 100) -> dict:
    """hit@10, MRR and nDCG@10 over ``n_queries`` synthetic runs: rag-eval against ranx."""
    from ranx import Qrels, Run, evaluate

    from rag_eval.metrics import parse_metric, relevance_data

    rng = np.random.default_rng(4)
    ranked = [[f"c{j}" for j in rng.choice(n_chunks, depth, replace=False)] for _ in range(n_queries)]
    qrels = [{r[int(rng.integers(0, depth))]: 1, f"c{int(rng.integers(0, n_chunks))}": 2} for r in ranked]
    names = ["hit@10", "mrr", "ndcg@10"]
    t = time.perf_counter()
    data = relevance_data(ranked, qrels, depth)
    ours = {n: parse_metric(n).compute(data).mean() for n in names}
    t_ours = time.perf_counter() - t
    # ranx compiles its metrics with numba on first use: warm it up so that only the work is timed.
    evaluate(Qrels({"w": {"a": 1}}), Run({"w": {"a": 1.0, "b": 0.5}}), ["hit_rate@10", "mrr", "ndcg@10"])
    t = time.perf_counter()
    run = Run({f"q{i}": {c: float(depth - j) for j, c in enumerate(r)} for i, r in enumerate(ranked)})
    qr = Qrels({f"q{i}": q for i, q in enumerate(qrels)})
    theirs = evaluate(qr, run, [{"hit@10": "hit_rate@10"}.get(n, n) for n in names])
    theirs = {n: theirs[{"hit@10": "hit_rate@10"}.get(n, n)] for n in names}
    t_ranx = time.perf_counter() - t
    agree = all(abs(ours[n] - theirs[n]) < 1e-9 for n in names)
    return {
        "queries": n_queries,
        "_result": {"rag_eval_s": round(t_ours, 2), "ranx_s": round(t_ranx, 1), "ratio": round(t_ours / t_ranx, 2)},
        "rag-eval s": t_ours,
        "ranx s": t_ranx,
        "ratio": f"{t_ours / t_ranx:.2f}",
        "same values": agree,
    }


def table(rows: list[dict], first: str) -> None:
    keys = [k for k in rows[0] if not k.startswith("_")]
    print("  ".join(f"{k:>14}" for k in keys))
    for r in rows:
        print("  ".join(f"{r[k]:>14.2f}" if isinstance(r[k], float) else f"{r[k]!s:>14}" for k in keys))


def merge_rows(old: list[dict], new: list[dict]) -> list[dict]:
    """The rows of ``old`` with those of ``new`` merged in by chunk count (a measured field replaces
    the old one, the others stay), in order of chunk count."""
    by_size = {r["chunks"]: dict(r) for r in old}
    for r in new:
        by_size.setdefault(r["chunks"], {}).update(r)
    return [by_size[n] for n in sorted(by_size)]


def write_result(path: Path, parts: dict[str, dict], run: dict) -> None:
    """Merges what this run measured into the result file: each part it measured (BM25 and dense
    rows by chunk count, embedding, HNSW, metrics, the stage's rows by chunk count) replaces that
    part, with this run's command, date, commit and machine under ``runs``; every other part and row
    stays as the earlier run that measured it left it."""
    result = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    result["source"] = (
        "written by benchmarks/scale/scale.py; each part holds the figures of the last run that measured it, "
        "and runs[part] names that run (command, date, commit, machine); a part without a runs entry is from "
        "before the script wrote this file (commit 3baaa20, transcribed by hand)"
    )
    runs = result.setdefault("runs", {})
    for part, value in parts.items():
        if part in ("bm25", "dense"):
            result["rows"] = merge_rows(result.get("rows", []), value["rows"])
            if part == "bm25":
                result["questions"], result["rank_bm25_questions"] = value["questions"], value["rank_bm25_questions"]
        elif part == "stage":
            stage = result.setdefault("stage", {})
            stage["goal_ratio"] = 0.05
            stage["rows"] = merge_rows(stage.get("rows", []), value["rows"])
        else:
            result.setdefault(part, {}).update(value)
        runs[part] = run
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


def growth(rows: list[dict], key: str) -> str:
    """How a stage's time grew against corpus size between consecutive sizes (1.0: linear)."""
    parts = []
    for a, b in zip(rows, rows[1:]):
        parts.append(
            f"{a['chunks']}->{b['chunks']}: time x{b[key] / a[key]:.1f} for size x{b['chunks'] / a['chunks']:.0f}"
        )
    return "; ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--baseline-queries", type=int, default=20, help="queries timed with rank-bm25")
    ap.add_argument("--real-embeddings-up-to", type=int, default=10_000, help="larger corpora get random unit vectors")
    ap.add_argument("--hnsw-up-to", type=int, default=100_000)
    ap.add_argument("--metric-queries", type=int, default=100_000, help="0: the metrics are not timed")
    ap.add_argument("--no-dense", action="store_true")
    ap.add_argument(
        "--stage-sizes",
        type=int,
        nargs="*",
        default=[100_000],
        help="chunks of the stdlib's source (8 lines each; 108k at most) on which the whole `rag-eval retrieval` "
        "stage is timed against rank-bm25 (none: skip)",
    )
    ap.add_argument(
        "--result",
        type=Path,
        default=RESULT,
        help="the result file the figures are merged into (default: %(default)s); '-' writes none",
    )
    args = ap.parse_args()
    started, before = datetime.now(UTC), machine()

    import tempfile

    from rag_eval.retrievers.bm25 import make_tokenizer

    tok = make_tokenizer(r"[a-z0-9_]+")
    t = time.perf_counter()
    sents = sentences()
    print(
        f"{len(sents)} distinct sentences from the stdlib in {time.perf_counter() - t:.1f} s; {args.queries} questions"
    )
    qs = queries(sents, args.queries)
    q_tokens = [tok(q) for q in qs]
    bm25_rows, dense_rows = [], []
    embedded: dict = {}
    hnsw: dict = {"M": 32, "ef_search": 128}
    work = Path(tempfile.mkdtemp(prefix="rag-eval-scale-"))
    stage_rows = []
    for n in args.stage_sizes:
        chunks = source_chunks(n)
        folder = Path(tempfile.mkdtemp(prefix="rag-eval-stage-", dir=work))
        stage_rows.append(
            retrieval_stage(chunks, labelled_questions(chunks, args.queries), folder, args.baseline_queries)
        )
    for n in args.sizes:
        docs = corpus(sents, n)
        row = {"chunks": n, **bm25_stage(docs, q_tokens, tok, args.baseline_queries)}
        bm25_rows.append(row)
        if args.no_dense:
            continue
        real = n <= args.real_embeddings_up_to
        passages, t_embed = embeddings(docs, real)
        q_emb, _ = embeddings(qs, real, seed=5)
        del docs
        row = {"chunks": n, "embeddings": "model" if real else "random", "embed s": t_embed}
        row |= dense_stage(passages, q_emb, work, n <= args.hnsw_up_to)
        dense_rows.append(row)
        if real:
            embedded = {"chunks_per_s": round(n / t_embed), "chunks": n, "seconds": round(t_embed)}
        if "hnsw recall@10" in row:
            kind = f"{'real' if real else 'random'}_{n // 1000}k"
            hnsw[f"{kind}_recall_at_10"] = round(row["hnsw recall@10"], 2)
            if real:
                hnsw[f"{kind}_ms_per_query"] = round(row["hnsw ms/query"], 2)
                hnsw[f"{kind}_build_s"] = round(row["hnsw build s"], 2)
        del passages
    if bm25_rows:
        print("\nBM25 (sparse matrix, rank-bm25 the baseline on the first queries; +MB: peak memory above the start)")
        table(bm25_rows, "chunks")
        print("growth of search:", growth(bm25_rows, "search s"))
    if dense_rows:
        print("\nDense (exact: blocks over a memory-mapped file, depth 100; HNSW: FAISS M=32, efSearch 128)")
        table(dense_rows, "chunks")
        print("growth of exact search:", growth(dense_rows, "exact s"))
    if stage_rows:
        print(
            "\n`rag-eval retrieval` with one BM25 retriever over the stdlib's source in 8-line chunks (empty cache; "
            "inputs, ranking, metrics, diagnosis, lint, records, report) against bare rank-bm25 (build + every "
            "question, extrapolated) in the same run:"
        )
        table(stage_rows, "chunks")
    metrics = None
    if args.metric_queries:
        print("\nMetrics (hit@10, MRR, nDCG@10, depth 100): rag-eval against ranx (ratio < 1: rag-eval faster)")
        metrics = metrics_stage(args.metric_queries, 1_000_000)
        table([metrics], "queries")
    if str(args.result) == "-":
        return
    parts: dict[str, dict] = {}
    if bm25_rows:
        rows = [{"chunks": r["chunks"], **r["_result"]} for r in bm25_rows]
        parts["bm25"] = {"rows": rows, "questions": args.queries, "rank_bm25_questions": args.baseline_queries}
    if dense_rows:
        rows = [
            {
                "chunks": r["chunks"],
                "dense_ms_per_query": round(r["exact ms/query"], 2),
                "dense_mb": round(r["exact +MB"]),
            }
            for r in dense_rows
        ]
        parts["dense"] = {"rows": rows}
    if embedded:
        parts["embedding"] = embedded
    if len(hnsw) > 2:
        parts["hnsw"] = hnsw
    if metrics is not None:
        parts[f"metrics_{args.metric_queries // 1000}k_questions"] = metrics["_result"]
    if stage_rows:
        parts["stage"] = {"rows": [r["_result"] for r in stage_rows]}
    run = {
        "command": "python benchmarks/scale/scale.py " + " ".join(sys.argv[1:]),
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "machine": {**before, "load_average_1m_end": machine()["load_average_1m"]},
    }
    write_result(args.result, parts, run)
    print(f"\nmerged into {args.result}: {', '.join(parts)}")


if __name__ == "__main__":
    main()
