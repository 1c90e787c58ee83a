"""How much of retrieval's misses the diagnosis explains, and whether its simulated fixes hold.

    python benchmarks/diagnosis/diagnosis.py

Two corpora, the demo's 67 questions (53 answerable, all labelled by evidence quotes):

- demo: the built-in python-docs corpus (reference topics split at headings);
- folder: the same topics written as a folder of Markdown files and chunked by rag-eval's heading
  chunker, so that re-chunking can be simulated.

For each it prints the misses per retriever (at k=5), the causes, the share left ``unclear``, and
the simulated fixes; then it applies each simulated fix that changes anything (the hybrid settings,
a new hybrid, another chunker) for real, reruns retrieval, and counts the fixes whose real effect
(misses fixed and caused, question by question) equals the simulation.

Then it measures the causes against blind expert readings (``benchmarks/diagnosis/data/``, built by
``benchmarks/diagnosis/diagnosis_set.py``): for each corpus, with its ``part`` (``PARTS``: tuning, the
Python topics, attrs' and structlog's docs, whose disagreements were read to set the rules;
held-out, marshmallow's docs, read blind after the rules were frozen and never tuned on), the
share of misses whose cause equals the reader's primary cause, or the primary or secondary (95%
Wilson intervals), per cause precision and recall, agreement on whether re-chunking fixes the
miss, and how often an advised fix that the simulation confirmed, applied for real, fixes the
miss; then the same pooled per part.

    python benchmarks/diagnosis/diagnosis.py              # both
    python benchmarks/diagnosis/diagnosis.py --agreement  # only the agreement with the readings

The last agreement run is in ``benchmarks/diagnosis/result.txt`` (text) and
``benchmarks/diagnosis/result.json`` (one record per corpus and per part, each with its
``part``). A corpus with no readings yet is skipped.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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
    return {m["question_id"] for m in result.report.dump()["retrieval"]["misses"][name]}


def measure(label: str, cfg: dict, base: Path) -> tuple[int, int]:
    import rag_eval

    result = rag_eval.retrieval(cfg, base_dir=base)
    r = result.report.dump()["retrieval"]
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


LABELS = ROOT / "benchmarks" / "diagnosis" / "data" / "labels"


def load_labels(folder: Path = LABELS) -> dict[str, dict]:
    """The blind readings: ``{miss_id: {primary, secondary, rechunk_fixes, note}}``."""
    import json

    out = {}
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out[row["miss_id"]] = row
    return out


def agreement(pairs: list[tuple[str, dict]]) -> dict:
    """Agreement of the tool's causes with the readings: ``pairs`` of (tool cause, reading).

    ``primary``: the tool's cause is the reader's primary; ``either``: it is the primary or the
    secondary. Per cause: precision (of the misses the tool gives that cause, the share the reader
    reads as primary) and recall (of the misses the reader reads so, the share the tool gives)."""
    from rag_eval.stats import wilson_interval

    n = len(pairs)
    primary = sum(t == r["primary"] for t, r in pairs)
    either = sum(t in (r["primary"], r.get("secondary")) for t, r in pairs)
    causes = sorted({t for t, _ in pairs} | {r["primary"] for _, r in pairs})
    per = {}
    for c in causes:
        given = [r for t, r in pairs if t == c]
        read = [t for t, r in pairs if r["primary"] == c]
        per[c] = {
            "given": len(given),
            "read": len(read),
            "precision": sum(r["primary"] == c for r in given) / len(given) if given else None,
            "recall": sum(t == c for t in read) / len(read) if read else None,
        }
    return {
        "n": n,
        "primary": wilson_interval(primary, n).to_dict(),
        "either": wilson_interval(either, n).to_dict(),
        "per_cause": per,
    }


def _fix_record(fixes: list[dict], retriever: str, qid: str, change: str) -> dict | None:
    return next((f for f in fixes if f["retriever"] == retriever and f["change"] == change and qid in f["fixes"]), None)


def measure_agreement(work: Path) -> list[dict]:
    """Causes against the blind readings, per corpus and pooled per part; confirmed fixes applied
    for real. Returns one record per corpus and per part (each with its ``part``)."""
    import json
    import re

    import rag_eval
    from benchmarks.diagnosis.diagnosis_set import PARTS, corpus_configs, miss_id, run
    from rag_eval.cache_dirs import cache_root
    from rag_eval.retrievers.diagnosis import diagnose_with_fixes

    labels = load_labels()
    print(f"\n== agreement with {len(labels)} blind readings ({LABELS.relative_to(ROOT)})")
    records, pooled = [], {}
    for name, cfg_dict in corpus_configs(work).items():
        if not any(m.startswith(f"{name}/") for m in labels):
            print(f"\n{name} ({PARTS[name]} part): no readings yet, skipped")
            continue
        cfg, corpus, res = run(cfg_dict)
        diagnoses = diagnose_with_fixes(cfg, corpus, res, cache_root(cfg.cache_folder))
        pairs, rechunk, advised = [], [], {}
        for retriever, per in diagnoses.items():
            for q, d in per.items():
                qid = res.questions[q].id
                reading = labels.get(miss_id(name, retriever, qid))
                if reading is None:
                    continue
                pairs.append((d.cause, reading))
                tool_rechunk = any(
                    f["retriever"] == retriever and "corpus" in f["config"] and qid in f["fixes"]
                    for f in res.simulated_fixes
                )
                rechunk.append(tool_rechunk == bool(reading.get("rechunk_fixes")))
                m = re.search(r"confirmed: (?:simulated re-chunking \()?(.+?)\)? fixes this miss", d.decided)
                if m:
                    fix = _fix_record(res.simulated_fixes, retriever, qid, m.group(1))
                    if fix:
                        advised.setdefault(fix["change"] + "|" + retriever, (fix, []))[1].append(qid)
        held = tried = 0
        for fix, qids in advised.values():
            config, target = applied(cfg_dict, fix)
            real = rag_eval.retrieval(config, base_dir=work)
            still = misses(real, target)
            tried += len(qids)
            held += sum(q not in still for q in qids)
        record = {
            "corpus": name,
            "part": PARTS[name],
            **agreement(pairs),
            "rechunk_agrees": sum(rechunk),
            "advised_fixes_applied": tried,
            "advised_fixes_fix": held,
        }
        records.append(record)
        print_agreement(record)
        part = pooled.setdefault(PARTS[name], {"pairs": [], "rechunk": 0, "tried": 0, "held": 0, "corpora": []})
        part["pairs"] += pairs
        part["rechunk"] += sum(rechunk)
        part["tried"] += tried
        part["held"] += held
        part["corpora"].append(name)
    for name, part in pooled.items():
        record = {
            "corpus": "+".join(part["corpora"]),
            "part": name,
            **agreement(part["pairs"]),
            "rechunk_agrees": part["rechunk"],
            "advised_fixes_applied": part["tried"],
            "advised_fixes_fix": part["held"],
        }
        records.append(record)
        print_agreement(record, pooled=True)
    out = ROOT / "benchmarks" / "diagnosis" / "result.json"
    out.write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
    print(f"\nwritten: {out.relative_to(ROOT)}")
    return records


def print_agreement(record: dict, pooled: bool = False) -> None:
    """One corpus's (or one part's pooled) agreement, as the benchmark prints it."""
    what = (
        f"all {record['part']} parts ({record['corpus']})" if pooled else f"{record['corpus']} ({record['part']} part)"
    )
    print(f"\n{what}: {record['n']} labelled misses")
    for key, label in (("primary", "cause = reader's primary"), ("either", "cause = primary or secondary")):
        e = record[key]
        if e["value"] is not None:
            print(f"  {label}: {e['value']:.0%} [{e['ci_low']:.0%}, {e['ci_high']:.0%}]")
    print("  cause            given  read  precision  recall")
    for c, v in record["per_cause"].items():
        p = "–" if v["precision"] is None else f"{v['precision']:.2f}"
        r = "–" if v["recall"] is None else f"{v['recall']:.2f}"
        print(f"  {c:16} {v['given']:5} {v['read']:5} {p:>10} {r:>7}")
    if record["n"]:
        print(f"  re-chunking fixes it (tool's simulation = reader): {record['rechunk_agrees']} of {record['n']}")
    print(
        "  advised fixes confirmed by simulation, applied for real: "
        f"fix {record['advised_fixes_fix']} of {record['advised_fixes_applied']} misses"
    )


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="rag-eval-diagnosis-"))
    if "--agreement" not in sys.argv:
        write_folder(work / "topics")
        questions = str(ROOT / "data" / "python-docs" / "questions.jsonl")
        common = {"test_set": {"path": questions}, "retrieval": RETRIEVAL, "report": {"out": str(work / "runs")}}
        measure("demo (python-docs)", {"name": "diag-demo", "corpus": {"source": "python-docs"}, **common}, work)
        measure(
            "folder (reference topics as Markdown, heading chunker)",
            {"name": "diag-folder", "corpus": {"folder": "topics", "chunker": {"type": "heading"}}, **common},
            work,
        )
    measure_agreement(work)


if __name__ == "__main__":
    main()
