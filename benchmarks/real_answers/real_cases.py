"""Real RAG answers, labelled blind, as judge-check cases (issue 28).

The embedded model answered questions over three documentation corpora with three prompts
(``benchmarks/real_answers/data/*.yaml``: the shipped ``answer.md`` and ``answer_strict.md``, and ``loose.md``,
which invites the model's own knowledge). Readers who saw only the question, the reference answer,
the contexts exactly as the model saw them and the answer labelled each one before any judge ran.

    python benchmarks/real_answers/real_cases.py packets RUN_DIR...   # blind packets (no prompt name, shuffled)
    python benchmarks/real_answers/real_cases.py cases                # labels -> judge-check cases, per part

Parts are fixed by corpus before any judge ran on them: the Python reference topics and the attrs
docs tune (calibration, uncertain bands, prompt variants); the structlog docs report; the
python-dotenv and tinytag READMEs (``holdout/``) are a second report, added after every fit.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "benchmarks" / "real_answers" / "data"
PACKETS = REAL / "packets"
LABELS = REAL / "labels"
# dotenv and tinytag (their PyPI READMEs, licences beside them) came later, from docs in neither
# data/ nor ../shared/ until then: a second held-out part that no cut-off, band or blend was fitted on.
# tenacity and tabulate (their PyPI READMEs, licences beside them in fresh/) came after the holdout
# had been looked at: the third held-out part.
PARTS = {
    "python": "tuning",
    "attrs": "tuning",
    "structlog": "reporting",
    "dotenv": "holdout",
    "tinytag": "holdout",
    "tenacity": "fresh",
    "tabulate": "fresh",
    # parse and xmltodict (blind/): the part the adapted judges' final figure is measured on (issue 41),
    # labelled before any judge or adaptation ran on it.
    "parse": "blind",
    "xmltodict": "blind",
}


def _corpus_name(run_dir: Path) -> str:
    name = run_dir.name.rsplit("-", 2)[0]
    return name.removeprefix("real-answers-")


def packets(run_dirs: list[Path]) -> None:
    """Blind packets of every generated answer: what a reader needs, nothing of any judge or prompt."""
    from rag_eval.answers.generation import format_contexts
    from rag_eval.api import as_config
    from rag_eval.data.inputs import load_inputs

    rows = []
    for run_dir in run_dirs:
        corpus_name = _corpus_name(run_dir)
        cfg = as_config(REAL / f"{corpus_name}.yaml")
        inputs = load_inputs(cfg)
        by_id = {c.id: c for c in inputs.corpus.chunks}
        questions = {q.id: q for q in inputs.questions}
        for line in (run_dir / "generation.jsonl").read_text().splitlines():
            g = json.loads(line)
            if g.get("error"):
                continue
            q = questions[g["question_id"]]
            chunks = [by_id[c] for c in g["contexts"]]
            rows.append(
                {
                    "case_id": f"{corpus_name}/{g['prompt']}/{q.id}",
                    "question": q.question,
                    "reference": q.reference or None,
                    # Each context exactly as the prompt showed it: "[id] title", then the text cut.
                    "contexts": [format_contexts([c], cfg.generation.max_context_chars) for c in chunks],
                    "answer": g["answer"],
                }
            )
    rng = random.Random(2812)
    rng.shuffle(rows)
    PACKETS.mkdir(parents=True, exist_ok=True)
    # The case id names the prompt; readers get an opaque packet id instead.
    key_path = REAL / "packet-key.json"
    key = json.loads(key_path.read_text()) if key_path.exists() else {}
    names = sorted({r["case_id"].split("/")[0] for r in rows})
    for corpus_name in names:
        mine = [r for r in rows if r["case_id"].startswith(corpus_name + "/")]
        key = {pid: cid for pid, cid in key.items() if not cid.startswith(corpus_name + "/")}
        with (PACKETS / f"packets-{corpus_name}.jsonl").open("w", encoding="utf-8") as fh:
            for i, r in enumerate(mine):
                pid = f"{corpus_name[:2]}-{i + 1:03d}"
                key[pid] = r["case_id"]
                blind = {"packet_id": pid, **{k: v for k, v in r.items() if k != "case_id"}}
                fh.write(json.dumps(blind, ensure_ascii=False) + "\n")
        print(f"{len(mine)} packets in {PACKETS / f'packets-{corpus_name}.jsonl'}")
    key_path.write_text(json.dumps(key, indent=1, sort_keys=True) + "\n")


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def cases() -> None:
    """The readers' labels joined to their packets, written as judge-check cases, one file per part.

    refusal: every answer (refused / answered); correctness: answers not refused whose question has
    a reference (correct / partial / incorrect); faithfulness: answers not refused (faithful = every
    claim supported by the contexts shown). The readers' per-context usefulness and per-statement
    recall labels go to ``ragas-labels.jsonl`` for the Ragas metrics' agreement.
    """
    key = json.loads((REAL / "packet-key.json").read_text())
    packets = {p["packet_id"]: p for f in sorted(PACKETS.glob("packets-*.jsonl")) for p in _read_jsonl(f)}
    labels = {lab["packet_id"]: lab for f in sorted(LABELS.glob("labels-*.jsonl")) for lab in _read_jsonl(f)}
    # A corpus counts once every packet of it is labelled (they are labelled corpus by corpus).
    corpora = {key[p].split("/")[0] for p in packets}
    unlabelled = {c for c in corpora if any(key[p].startswith(c + "/") and p not in labels for p in packets)}
    for c in sorted(unlabelled):
        print(f"{c}: not every packet is labelled yet; left out")
    packets = {p: v for p, v in packets.items() if key[p].split("/")[0] not in unlabelled}
    out: dict[str, list[dict]] = {part: [] for part in dict.fromkeys(PARTS.values())}
    ragas: list[dict] = []
    for pid in sorted(packets, key=lambda p: key[p]):
        p, lab, case_id = packets[pid], labels[pid], key[pid]
        corpus_name = case_id.split("/")[0]
        part, source = PARTS[corpus_name], f"real-{corpus_name}"
        base = {"source": source, "question": p["question"], "answer": p["answer"], "case_of": case_id}
        refused = lab["refused"] is True
        out[part].append(
            {"id": f"{case_id}/refusal", "judge": "refusal", **base, "label": "refused" if refused else "answered"}
        )
        if not refused and p.get("reference"):
            out[part].append(
                {
                    "id": f"{case_id}/correctness",
                    "judge": "correctness",
                    **base,
                    "reference": p["reference"],
                    "label": lab["correct"],
                }
            )
        if not refused:
            out[part].append(
                {
                    "id": f"{case_id}/faithfulness",
                    "judge": "faithfulness",
                    **base,
                    "contexts": p["contexts"],
                    "label": "faithful" if lab["faithful"] else "unfaithful",
                    "unsupported_claims": lab.get("unsupported_claims") or [],
                }
            )
        ragas.append(
            {
                "id": case_id,
                "part": part,
                "source": source,
                "question": p["question"],
                "reference": p.get("reference"),
                "contexts": p["contexts"],
                "answer": p["answer"],
                "refused": refused,
                "faithful": lab["faithful"],
                "contexts_help": lab["contexts_help"],
                "reference_statements": lab.get("reference_statements") or [],
                "answerable_from_contexts": lab["answerable_from_contexts"],
            }
        )
    for part, rows in out.items():
        path = REAL / f"cases-{part}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        print(f"{path.relative_to(ROOT)}: {len(rows)} cases")
    with (REAL / "ragas-labels.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in ragas)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("packets")
    p.add_argument("run_dirs", nargs="+", type=Path)
    sub.add_parser("cases")
    args = ap.parse_args()
    if args.cmd == "packets":
        packets(args.run_dirs)
    else:
        cases()


if __name__ == "__main__":
    main()
