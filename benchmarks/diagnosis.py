"""How much of retrieval's misses the diagnosis explains, and whether its simulated fixes hold.

    python benchmarks/diagnosis.py

Two corpora, the demo's 67 questions (53 answerable, all labelled by evidence quotes):

- demo: the built-in python-docs corpus (reference topics split at headings);
- folder: the same topics written as a folder of Markdown files and chunked by rag-eval's heading
  chunker, so that re-chunking can be simulated.

For each it prints the misses per retriever (at k=5), the causes, the share left ``unclear``, and
the simulated fixes; then it applies each simulated fix that changes anything (the hybrid settings,
a new hybrid, another chunker) for real, reruns retrieval, and counts the fixes whose real effect
(misses fixed and caused, question by question) equals the simulation.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RETRIEVAL = {
    "k": [1, 5, 10],
    "retrievers": {
        "bm25": {"type": "bm25"},
        "dense": {"type": "dense"},
        "hybrid": {"type": "hybrid", "of": ["dense", "bm25"], "rrf_k": 60},
    },
}


def write_folder(folder: Path) -> None:
    from pydoc_data.topics import topics

    folder.mkdir(parents=True, exist_ok=True)
    for name, text in topics.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")


def applied(cfg: dict, fix: dict) -> tuple[dict, str]:
    """The config with a simulated fix really applied, and the retriever to compare (a new hybrid
    of a keyword and an embedding retriever is added as "proposed")."""
    out = {**cfg, "retrieval": {**cfg["retrieval"], "retrievers": dict(cfg["retrieval"]["retrievers"])}}
    name, change = fix["retriever"], fix["config"]
    if "corpus" in change:
        out["corpus"] = {**cfg["corpus"], **change["corpus"]}
    elif change.get("type") == "hybrid":
        out["retrieval"]["retrievers"]["proposed"] = change
        return out, "proposed"
    else:
        out["retrieval"]["retrievers"][name] = {**out["retrieval"]["retrievers"][name], **change}
    return out, name


def misses(result, name: str) -> set[str]:
    return {m["question_id"] for m in result.report["retrieval"]["misses"][name]}


def measure(label: str, cfg: dict, base: Path) -> tuple[int, int]:
    import rag_eval

    result = rag_eval.retrieval(cfg, base_dir=base)
    r = result.report["retrieval"]
    print(f"\n== {label}: {result.run_dir}")
    total = unclear = 0
    for name, rows in r["misses"].items():
        causes = Counter(m.get("diagnosis", {}).get("cause", "?") for m in rows)
        total += len(rows)
        unclear += causes.get("unclear", 0)
        print(f"{name}: {len(rows)} misses; " + ", ".join(f"{c} {n}" for c, n in causes.most_common()))
    print(f"unclear: {unclear} of {total} misses ({unclear / max(1, total):.0%})")
    held = tried = 0
    for fix in r["simulated_fixes"]:
        print("simulated:", fix["summary"])
        if fix["net"] == 0 and not fix["fixes"]:
            continue
        config, target = applied(cfg, fix)
        real = rag_eval.retrieval(config, base_dir=base)
        before, after = misses(result, fix["retriever"]), misses(real, target)
        # Only the questions the simulation covered (re-chunking: those labelled by quotes, here all).
        real_fixed, real_caused = sorted(before - after), sorted(after - before)
        ok = real_fixed == sorted(fix["fixes"]) and real_caused == sorted(fix["causes"])
        tried += 1
        held += ok
        print(f"  applied: fixes {len(real_fixed)}, causes {len(real_caused)} -> {'holds' if ok else 'DIFFERS'}")
    print(f"simulated fixes that hold when applied: {held} of {tried}")
    return unclear, total


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="rag-eval-diagnosis-"))
    write_folder(work / "topics")
    questions = str(ROOT / "data" / "python-docs" / "questions.jsonl")
    common = {"test_set": {"path": questions}, "retrieval": RETRIEVAL, "report": {"out": str(work / "runs")}}
    measure("demo (python-docs)", {"name": "diag-demo", "corpus": {"source": "python-docs"}, **common}, work)
    measure(
        "folder (reference topics as Markdown, heading chunker)",
        {"name": "diag-folder", "corpus": {"folder": "topics", "chunker": {"type": "heading"}}, **common},
        work,
    )


if __name__ == "__main__":
    main()
