"""Issue 50's study: blind packets of the citing prompt's answers, the moved-citation answers, and
the measurement of item 2 (answers with citations, refusals against the plain prompt).

    python benchmarks/citations/make_packets.py measure RUN_DIR... --json benchmarks/citations/results/answers-result.json
    python benchmarks/citations/make_packets.py packets RUN_DIR...
    python benchmarks/citations/make_packets.py add RUN_DIR... --part PART

``measure``: per corpus, of the citing prompt's answers, how many cite (at least one citation that
names a given context), how many decline (a sentence that only says the documents do not answer and
no claim), against the plain prompt's answers to the same questions on the same contexts (the
baseline answers of ``benchmarks/real_answers``, with their readers' refusal labels).

``packets``: one line per answer for a reader who sees no judge output (``data/packets-<corpus>.jsonl``):
the question, the contexts numbered as the model saw them, the answer, and its sentences each with
the numbers it cites (as ``rag_eval.judges.citations`` reads them). Besides the model's answers, the
moved-citation answers: for each answerable question whose one labelled passage is among the
contexts, the test set's reference answer (a correct answer) with its citation moved to another
given passage by a seeded draw, and for a seeded half of them the same answer citing the labelled
passage (``data/moved.jsonl`` records which, never shown to readers). A corpus without a run of the
citing prompt gives these alone, on hybrid's top 3 computed here as the run computes it. The packets of
a corpus are shuffled together under opaque ids; ``data/packet-key.json`` says which is which.
The held-out part is fixed by corpus before any judge runs (``PARTS``).

``add``: the runs' model answers appended to their corpora's packets under new ids, the packets
already there (and their labels) kept, the new ones in the key under ``--part``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

from rag_eval.answers.generation import number_contexts
from rag_eval.api import as_config
from rag_eval.cache_dirs import cache_root
from rag_eval.data.inputs import load_inputs
from rag_eval.judges.citations import read_citations
from rag_eval.judges.citations_judge import makes_claim
from rag_eval.retrievers.factory import run_retrievers
from rag_eval.types import Chunk

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
REAL = HERE.parent / "real_answers" / "data"
PROMPT = "cite"
SEED = 5050
# Fixed before any judge ran: the prompt was tuned on attrs; the eight other corpora were held out
# until the judge's blend was chosen on them (fit_blend.py); marshmallow is the fresh part, made and
# labelled after that choice, before any judge ran on it.
PARTS = {
    "marshmallow": "fresh",
    "attrs": "tuning",
    "structlog": "holdout",
    "python": "holdout",
    "dotenv": "holdout",
    "tinytag": "holdout",
    "tenacity": "holdout",
    "tabulate": "holdout",
    "parse": "holdout",
    "xmltodict": "holdout",
}


def corpus_of(run_dir: Path) -> str:
    return run_dir.name.removeprefix("citations-").rsplit("-", 2)[0]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def plain_answers() -> dict[tuple[str, str], dict]:
    """The plain prompt's (baseline) answers by (corpus, question id), with the readers' refusal label."""
    out = {}
    for path in sorted(REAL.glob("cases-*.jsonl")):
        for r in read_jsonl(path):
            corpus, prompt, qid = r["case_of"].split("/")
            if prompt == "baseline" and r["judge"] == "refusal":
                out[(corpus, qid)] = {"answer": r["answer"], "refused": r["label"] == "refused"}
    return out


def declines(answer: str, contexts: list[Chunk]) -> bool:
    """The answer makes no claim and says the documents do not answer (or says nothing)."""
    sentences = read_citations(answer or "", contexts).sentences
    return not any(makes_claim(s.text) for s in sentences)


class Corpus:
    """One corpus's config, inputs and chunks, and its answers of the citing prompt (from a run)."""

    def __init__(self, name: str, run_dir: Path | None):
        self.name, self.run_dir = name, run_dir
        self.cfg = as_config(DATA / f"{name}.yaml")
        self.inputs = load_inputs(self.cfg)
        self.chunks = {c.id: c for c in self.inputs.corpus.chunks}
        self.questions = {q.id: q for q in self.inputs.questions}
        self.max_chars = self.cfg.generation.max_context_chars
        self.answers = [g for g in read_jsonl(run_dir / "generation.jsonl") if g["prompt"] == PROMPT] if run_dir else []

    def given(self, ids: list[str]) -> list[Chunk]:
        return [self.chunks[c] for c in ids]

    def top3(self) -> dict[str, list[str]]:
        """Hybrid's top 3 per question, as the study's runs gave the generator: the run's where it
        answered every question, else computed here as the run computes it."""
        given = {g["question_id"]: g["contexts"] for g in self.answers}
        if set(given) >= set(self.questions):
            return given
        rankings = run_retrievers(self.cfg, self.inputs.corpus, self.inputs.questions, cache_root(None))
        ranking = rankings[self.cfg.generation.retriever]
        top = self.cfg.generation.top_k
        chunks = self.inputs.corpus.chunks
        computed = {
            q.id: [chunks[i].id for i in ranking.top[n][:top] if i >= 0] for n, q in enumerate(self.inputs.questions)
        }
        return {**computed, **given}


def packet(c: Corpus, qid: str, ids: list[str], answer: str) -> dict:
    chunks = c.given(ids)
    read = read_citations(answer, chunks)
    return {
        "question": c.questions[qid].question,
        "contexts": [number_contexts([ch], c.max_chars).replace("[1]", f"[{n}]", 1) for n, ch in enumerate(chunks, 1)],
        "answer": answer,
        "sentences": [
            {
                "n": i + 1,
                "sentence": s.display,
                "cites": [p + 1 for p in s.cited],
                "cites_no_given_document": [x.ref for x in s.citations if not x.resolved],
            }
            for i, s in enumerate(read.sentences)
        ],
    }


def moved_answers(c: Corpus, rng: random.Random) -> list[dict]:
    """The reference answer citing its labelled passage, the citation moved to another given one."""
    out = []
    for qid, ids in sorted(c.top3().items()):
        q = c.questions.get(qid)
        if q is None or not q.answerable or not q.reference:
            continue
        relevant = [n for n, cid in enumerate(ids) if q.qrels.get(cid, 0) > 0]
        if len(relevant) != 1 or len(ids) < 2:
            continue  # the passage that supports it must be one, and another must be there to move to
        right = relevant[0]
        wrong = rng.choice([n for n in range(len(ids)) if n != right])
        text = q.reference.strip()
        sentences = read_citations(text, c.given(ids)).sentences

        def citing(n: int, sentences=sentences) -> str:
            return " ".join(f"{s.text.rstrip('.')} [{n + 1}]." for s in sentences)

        out.append(
            {"question_id": qid, "contexts": ids, "answer": citing(wrong), "right": right + 1, "moved_to": wrong + 1}
        )
        # A seeded half also as written, citing the labelled passage: the readers see right citations too.
        if rng.random() < 0.5:
            out.append(
                {"question_id": qid, "contexts": ids, "answer": citing(right), "right": right + 1, "moved_to": None}
            )
    return out


def newest_runs(run_dirs: list[Path]) -> dict[str, Path]:
    runs: dict[str, Path] = {}
    for d in sorted(run_dirs):
        if (d / "generation.jsonl").exists():
            runs[corpus_of(d)] = d
    return runs


def measure(run_dirs: list[Path], out: Path | None, version: str = "shipped", prompt: Path | None = None) -> dict:
    plain = plain_answers()
    rows = {}
    for name, run_dir in newest_runs(run_dirs).items():
        c = Corpus(name, run_dir)
        cite = cites = declined = plain_declined = plain_refused = both = copied = 0
        example = (prompt or HERE.parents[1] / "prompts" / "answer_cite.md").read_text()
        for g in c.answers:
            if g.get("error"):
                continue
            chunks = c.given(g["contexts"])
            read = read_citations(g["answer"] or "", chunks)
            cite += 1
            cites += any(s.cited for s in read.sentences)
            # A sentence of the prompt's own example answer written again: the model copied it.
            copied += any(len(s.text.split()) >= 4 and s.text.rstrip(".") in example for s in read.sentences)
            d = declines(g["answer"], chunks)
            declined += d
            p = plain.get((name, g["question_id"]))
            if p is not None:
                pd = declines(p["answer"], chunks)
                plain_declined += pd
                plain_refused += p["refused"]
                both += 1
        rows[name] = {
            "part": PARTS[name],
            "answers": cite,
            "with_citations": cites,
            "copied_the_example": copied,
            "declined": declined,
            "plain_answers": both,
            "plain_declined": plain_declined,
            "plain_refused_by_readers": plain_refused,
            "seconds_per_answer": round(sum(g["latency_s"] for g in c.answers) / max(len(c.answers), 1), 1),
        }
    total = {
        k: sum(r[k] for r in rows.values())
        for k in (
            "answers",
            "with_citations",
            "copied_the_example",
            "declined",
            "plain_answers",
            "plain_declined",
            "plain_refused_by_readers",
        )
    }
    prompt = prompt or HERE.parents[1] / "prompts" / "answer_cite.md"
    result = {"corpora": rows, "total": total, "prompt": prompt.read_text(), "load_1min": round(os.getloadavg()[0], 2)}
    print(json.dumps({"corpora": rows, "total": total}, indent=1))
    if out:
        # One entry per prompt version measured, kept beside the others.
        kept = json.loads(out.read_text()) if out.exists() else {"versions": {}}
        kept["versions"][version] = result
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(kept, indent=1) + "\n")
    return result


def packets(run_dirs: list[Path], moved_from: list[str]) -> None:
    key_path = DATA / "packet-key.json"
    key: dict[str, dict] = json.loads(key_path.read_text()) if key_path.exists() else {}
    moved_path = DATA / "moved.jsonl"
    moved_log = read_jsonl(moved_path) if moved_path.exists() else []
    runs = newest_runs(run_dirs)
    # Only the corpora named (a run's, or --moved-from): the other corpora's packets stay as they were.
    for name in [n for n in PARTS if n in runs or n in moved_from]:
        key = {pid: k for pid, k in key.items() if k["corpus"] != name}
        moved_log = [m for m in moved_log if m["corpus"] != name]
        c = Corpus(name, runs.get(name))
        # One draw per corpus: a corpus made again (more answers) leaves the others' packets as they were.
        rng = random.Random(f"{SEED}-{name}")
        rows = []
        for g in c.answers:
            if not g.get("error") and g.get("answer"):
                rows.append(
                    (
                        {"kind": "model", "question_id": g["question_id"]},
                        packet(c, g["question_id"], g["contexts"], g["answer"]),
                    )
                )
        for m in moved_answers(c, rng):
            moved_log.append({"corpus": name, **m})
            rows.append(
                (
                    {"kind": "moved" if m["moved_to"] else "reference", "question_id": m["question_id"]},
                    packet(c, m["question_id"], m["contexts"], m["answer"]),
                )
            )
        rng.shuffle(rows)
        path = DATA / f"packets-{name}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for i, (what, p) in enumerate(rows, 1):
                pid = f"ci-{name[:3]}-{i:03d}"
                key[pid] = {"corpus": name, "part": PARTS[name], **what}
                fh.write(json.dumps({"packet_id": pid, **p}, ensure_ascii=False) + "\n")
        kinds = [w["kind"] for w, _ in rows]
        print(
            f"{len(rows)} packets in {path}: "
            + ", ".join(f"{k} {kinds.count(k)}" for k in ("model", "moved", "reference"))
        )
    key_path.write_text(json.dumps(key, indent=1, sort_keys=True) + "\n")
    moved_path.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in moved_log))


def add_model_answers(run_dirs: list[Path], part: str) -> None:
    """Packets of the runs' model answers appended to their corpora's packets, which stay as they
    are (their ids, their readers' labels): new ids after the corpus's last, in the key under ``part``
    (answers made after the parts were fixed are measured apart from them)."""
    key_path = DATA / "packet-key.json"
    key: dict[str, dict] = json.loads(key_path.read_text())
    for name, run_dir in newest_runs(run_dirs).items():
        c = Corpus(name, run_dir)
        path = DATA / f"packets-{name}.jsonl"
        kept = read_jsonl(path) if path.exists() else []
        done = {(key[p["packet_id"]]["kind"], key[p["packet_id"]]["question_id"]) for p in kept}
        rows = [
            (
                {"kind": "model", "question_id": g["question_id"]},
                packet(c, g["question_id"], g["contexts"], g["answer"]),
            )
            for g in c.answers
            if not g.get("error") and g.get("answer") and ("model", g["question_id"]) not in done
        ]
        random.Random(f"{SEED}-{name}-{part}").shuffle(rows)
        start = max((int(p["packet_id"].rsplit("-", 1)[1]) for p in kept), default=0)
        with path.open("a", encoding="utf-8") as fh:
            for i, (what, p) in enumerate(rows, start + 1):
                pid = f"ci-{name[:3]}-{i:03d}"
                key[pid] = {"corpus": name, "part": part, **what}
                fh.write(json.dumps({"packet_id": pid, **p}, ensure_ascii=False) + "\n")
        print(f"{len(rows)} model answers' packets appended to {path} (part {part})")
    key_path.write_text(json.dumps(key, indent=1, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    m = sub.add_parser("measure", help="answers with citations and refusals, citing against plain prompt")
    m.add_argument("runs", nargs="+", type=Path)
    m.add_argument("--json", type=Path)
    m.add_argument("--version", default="shipped", help="the name of the prompt version measured")
    m.add_argument("--prompt", type=Path, help="the prompt file of that version (default the shipped one)")
    p = sub.add_parser("packets", help="the blind packets, the moved citations and the key")
    p.add_argument("runs", nargs="*", type=Path)
    p.add_argument(
        "--moved-from", default="", help="corpora without a run to make moved answers from (comma-separated)"
    )
    a = sub.add_parser("add", help="append the runs' model answers to their corpora's packets, the rest kept")
    a.add_argument("runs", nargs="+", type=Path)
    a.add_argument("--part", required=True, help="the part these packets are measured in")
    args = ap.parse_args(argv)
    if args.what == "add":
        add_model_answers(args.runs, args.part)
    elif args.what == "measure":
        measure(args.runs, args.json, args.version, args.prompt)
    else:
        packets(args.runs, [x for x in args.moved_from.split(",") if x])
    return 0


if __name__ == "__main__":
    sys.exit(main())
