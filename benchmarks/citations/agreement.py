"""Issue 50's study: the citations judge against the blind readers' labels.

    python benchmarks/citations/agreement.py --json benchmarks/citations/results/result.json

Reads the packets (``data/packets-*.jsonl``), their key (``data/packet-key.json``: model answer or
moved citation, and the part) and the readers' labels (``data/labels/labels-*.jsonl``, written by
readers who saw no judge output, per ``data/labeller.md``), runs the ``citations`` judge on the
embedded model (every request through the response cache: a rerun asks nothing again), and reports
per part (tuning: attrs, where the citing prompt was tuned; holdout: every other corpus):

- per-sentence support: the judge's decision that a claim's cited passages support it against the
  readers' ``union_supports``, over the sentences both call claims that cite a given document
  (uncertain decisions counted apart, and their share);
- per-citation precision: the judge's "needed" against ALCE's rule applied to the readers' labels
  (needed unless it alone does not support the sentence and the sentence's other citations do);
- per-answer ``miscited`` and ``uncited``: the answer's verdict as the readers' labels make it
  (unsupported > miscited > uncited > cited, as the judge decides) against the judge's;
- moved citations found: the share of the moved-citation answers whose verdict is miscited or
  unsupported (their citation fails);
- model time per cited answer (seconds of the judge's requests, the machine's load recorded).

Do not run before the readers' labels exist. `--no-cache` asks every request again (the seconds are
then model time; a cached packet is not timed); `--time N` asks again only N cited packets, spread
evenly over the packets in file order, and takes the others from the cache (a run alone on the
machine: the seconds are the time of a cited answer's requests).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

from sklearn.metrics import roc_auc_score

from rag_eval.cache_dirs import cache_root
from rag_eval.calibration.cutoffs import blends_for, cutoffs_for, saved_band
from rag_eval.judges.citations_judge import DEFAULT_BAND, band_from, judge_citations
from rag_eval.judges.registry import Inputs
from rag_eval.judges.scored import ScoredJudges
from rag_eval.llm.session import LLMSession
from rag_eval.llm.settings import LLMConfig
from rag_eval.types import Chunk

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
JUDGE_KINDS = ("supported", "uncertain", "unsupported", "miscited", "uncited")
ORDER = {"supported": 0, "uncited": 1, "miscited": 2, "unsupported": 3}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def passage_text(shown: str) -> tuple[str, str]:
    """(title, text) of a context as the packet shows it: ``[n] title`` then the text."""
    head, _, text = shown.partition("\n")
    return head.split("] ", 1)[-1], text


def human_sentence(lab: dict, packet_sentence: dict) -> dict:
    """A reader's sentence as the judge's kinds name it, with each citation's relevance (ALCE's rule)."""
    claim = bool(lab.get("claim"))
    cites = packet_sentence["cites"]
    if not claim:
        return {"claim": False}
    each = list(lab.get("each_supports") or [])
    union = lab.get("union_supports")
    anywhere = lab.get("any_supports")
    if cites:
        kind = "supported" if union else ("miscited" if anywhere else "unsupported")
    else:
        kind = "uncited" if anywhere else "unsupported"
    relevant = []
    for i in range(len(cites)):
        alone = bool(each[i]) if i < len(each) else False
        others = any(bool(x) for j, x in enumerate(each) if j != i) or (union and len(cites) > 2 and not alone)
        relevant.append(bool(union) and (alone or not others))
    relevant += [False] * len(packet_sentence.get("cites_no_given_document") or [])
    return {"claim": True, "union": union, "kind": kind, "relevant": relevant, "cites": bool(cites)}


def verdict(kinds: list[str]) -> str:
    worst = max(kinds, key=lambda k: ORDER[k], default="supported")
    return "cited" if worst == "supported" else worst


def calls_made(session: LLMSession) -> int:
    """The model calls the session has made so far (cache hits not counted)."""
    return sum(int(u["calls"]) for u in session.usage())


def packets_all() -> list[dict]:
    """Every packet of the study, corpus by corpus."""
    return [p for path in sorted(DATA.glob("packets-*.jsonl")) for p in read_jsonl(path)]


def labels_all() -> dict[str, dict]:
    """The readers' labels by packet id."""
    return {r["packet_id"]: r for path in sorted((DATA / "labels").glob("labels-*.jsonl")) for r in read_jsonl(path)}


async def judge_all(
    packets: list[dict], threads: int, use_cache: bool = True, model_alone: bool = False
) -> tuple[dict[str, tuple], list[dict]]:
    """Each packet's judgement with the seconds it took, or None where every request came from the
    response cache (a cached answer's time is no model time). ``model_alone``: decided on the
    model's P at 0.5 with the default band, as before the blend (``fit_blend.py``); else with the
    shipped calibration of the ``citations`` judge, as an audit decides."""
    session = LLMSession(cache_root(), use_cache=use_cache)
    llm = session.llm(LLMConfig(provider="local", repack=True, threads=threads), "the citations study")
    scored = ScoredJudges.load(llm, None)
    scored.citation_band = DEFAULT_BAND
    if not model_alone:
        scored.cutoffs, scored.calibrated = cutoffs_for(llm.identity, scored, {})
        scored.blends = blends_for(llm.identity, scored)
        scored.citation_band = band_from("auto", saved=saved_band(llm.identity, "citations", scored))
    out = {}
    try:
        for p in packets:
            chunks = []
            for n, shown in enumerate(p["contexts"], 1):
                title, text = passage_text(shown)
                chunks.append(Chunk(f"doc-{n}", text, title))
            x = Inputs(p["packet_id"], "cite", p["question"], p["answer"], [c.text for c in chunks], None, chunks)
            t0, calls = time.perf_counter(), calls_made(session)
            j = await judge_citations(scored, x)
            seconds = time.perf_counter() - t0 if calls_made(session) > calls else None
            out[p["packet_id"]] = (j, seconds)
    finally:
        await session.aclose()
    usage = session.usage()
    session.close()
    return out, usage


def share(hits: int, n: int) -> float | None:
    return round(hits / n, 4) if n else None


def auc(scores: list[tuple[float, bool]]) -> float | None:
    """The area under the ROC curve of P(supported) against the readers' labels (None: one class)."""
    ys = [y for _, y in scores]
    if not any(ys) or all(ys):
        return None
    return round(float(roc_auc_score(ys, [p for p, _ in scores])), 4)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-cache", action="store_true", help="ask the model every request (the times are model time)")
    ap.add_argument(
        "--time", type=int, default=0, metavar="N", help="ask N cited packets again, timed; the rest cached"
    )
    ap.add_argument(
        "--model-alone", action="store_true", help="decide on the model's P at 0.5 (the judge before its blend)"
    )
    ap.add_argument("--parts", help="only these parts (comma-separated: tuning, holdout, fresh, fresh2); default all")
    args = ap.parse_args(argv)
    key = json.loads((DATA / "packet-key.json").read_text())
    packets = packets_all()
    if args.parts:
        packets = [p for p in packets if key[p["packet_id"]]["part"] in args.parts.split(",")]
    labels = labels_all()
    missing = [p["packet_id"] for p in packets if p["packet_id"] not in labels]
    if missing:
        print(f"{len(missing)} packets have no label (first {missing[0]}): label them first", file=sys.stderr)
        return 2
    load = os.getloadavg()
    cited = [p for p in packets if any(s["cites"] for s in p["sentences"])]
    step = max(1, len(cited) // args.time) if args.time else 0
    timed = {p["packet_id"] for p in cited[::step][: args.time]} if args.time else set()
    judged, usage = asyncio.run(
        judge_all(packets, args.threads, use_cache=not args.no_cache, model_alone=args.model_alone)
    )
    if timed:
        again, usage_timed = asyncio.run(
            judge_all(
                [p for p in packets if p["packet_id"] in timed],
                args.threads,
                use_cache=False,
                model_alone=args.model_alone,
            )
        )
        # The verdicts are the cached run's; the seconds, the timed run's.
        judged = {pid: (j, again[pid][1] if pid in again else None) for pid, (j, _) in judged.items()}
        usage = usage + usage_timed
    parts: dict[str, dict] = {}
    for p in packets:
        pid = p["packet_id"]
        k = key[pid]
        part = parts.setdefault(
            k["part"],
            {
                "support": [],
                "scores": [],
                "model_scores": [],
                "precision": [],
                "answers": [],
                "moved": [],
                "seconds": [],
                "kinds": [],
                "dropped_judge_only": 0,
                "dropped_readers_only": 0,
            },
        )
        j, seconds = judged[pid]
        rows = (j.details or {}).get("sentences") or []
        lab = labels[pid]
        hs = [human_sentence(h, s) for h, s in zip(lab.get("sentences") or [], p["sentences"])]
        if any(s["cites"] for s in p["sentences"]) and seconds is not None:
            part["seconds"].append(seconds)
        for r, h in zip(rows, hs):
            judge_cited_claim = bool(r.get("claim") and r.get("cited"))
            readers_cited_claim = bool(h["claim"] and h.get("cites"))
            # Compared only where both call it a cited claim; the others are counted, by who called it one.
            part["dropped_judge_only"] += judge_cited_claim and not readers_cited_claim
            part["dropped_readers_only"] += readers_cited_claim and not judge_cited_claim
            if not (judge_cited_claim and readers_cited_claim):
                continue
            judge_says = None if r.get("kind") == "uncertain" else r.get("kind") == "supported"
            part["support"].append((judge_says, bool(h["union"])))
            part["kinds"].append((k["kind"], bool(h["union"]), r.get("kind")))
            if r.get("p_supported") is not None:
                part["scores"].append((float(r["p_supported"]), bool(h["union"])))
                p_model = r["p_model"] if r.get("p_model") is not None else r["p_supported"]
                part["model_scores"].append((float(p_model), bool(h["union"])))
            for c, hr in zip(r.get("citations") or [], h["relevant"]):
                if c.get("relevant") is not None:
                    part["precision"].append((bool(c["relevant"]), hr))
        human_kinds = [h["kind"] for h in hs if h["claim"]]
        if human_kinds:
            part["answers"].append((j.verdict if j.status == "judged" else j.status, verdict(human_kinds)))
        if k["kind"] == "moved":
            part["moved"].append(j.status == "judged" and j.verdict in ("miscited", "unsupported"))
    result: dict = {
        "command": "python benchmarks/citations/agreement.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "method": "the model's P at 0.5, band 0.3-0.7"
        if args.model_alone
        else "the shipped calibration: blend of the model's P with the cited passages' words (fit_blend.py)",
        "model_load_1min": round(load[0], 2),
        "model_load_1min_at_end": round(os.getloadavg()[0], 2),
        "usage": usage,
        "parts": {},
    }
    for name, d in parts.items():
        decided = [(a, b) for a, b in d["support"] if a is not None]
        answers = [(a, b) for a, b in d["answers"] if a in ("cited", "miscited", "uncited", "unsupported")]
        support_hits = sum(a == b for a, b in decided)
        precision_hits = sum(a == b for a, b in d["precision"])
        miscited_hits = sum((a == "miscited") == (b == "miscited") for a, b in answers)
        uncited_hits = sum((a == "uncited") == (b == "uncited") for a, b in answers)
        result["parts"][name] = {
            "sentences": len(d["support"]),
            "sentences_decided": len(decided),
            "dropped_judge_only": d["dropped_judge_only"],
            "dropped_readers_only": d["dropped_readers_only"],
            "support_agreement": share(support_hits, len(decided)),
            "support_agreement_pair": [
                support_hits,
                len(decided),
            ],  # agreed of judged: the docs write it with its Wilson interval
            "uncertain_share": share(len(d["support"]) - len(decided), len(d["support"])),
            "readers_supported": sum(b for _, b in d["support"]),
            # The judge's sentence kinds, by the packet's kind (moved citation or not) and the readers' word.
            "judge_kinds": {
                kind: {
                    ("supported" if union else "not_supported"): {
                        j: sum(1 for kd, u, jk in d["kinds"] if (kd, u, jk) == (kind, union, j)) for j in JUDGE_KINDS
                    }
                    for union in (True, False)
                }
                for kind in sorted({kd for kd, _, _ in d["kinds"]})
            },
            # Support decided right per packet kind (the model's own answers, moved citations, references).
            "support_agreement_by_kind": {
                kind: [
                    sum(1 for kd, u, jk in d["kinds"] if kd == kind and jk != "uncertain" and (jk == "supported") == u),
                    sum(1 for kd, _, jk in d["kinds"] if kd == kind and jk != "uncertain"),
                ]
                for kind in sorted({kd for kd, _, _ in d["kinds"]})
            },
            # How well the decided P(supported) (the blend's, or the model's with --model-alone) and the
            # model's own separate the readers' yes from no, whatever the cut-off.
            "support_auc": auc(d["scores"]),
            "model_auc": auc(d["model_scores"]),
            "citations": len(d["precision"]),
            "precision_agreement": share(precision_hits, len(d["precision"])),
            "precision_agreement_pair": [
                precision_hits,
                len(d["precision"]),
            ],  # agreed of judged: the docs write it with its Wilson interval
            "answers": len(d["answers"]),
            "answers_uncertain": len(d["answers"]) - len(answers),
            "miscited_agreement": share(miscited_hits, len(answers)),
            "miscited_agreement_pair": [
                miscited_hits,
                len(answers),
            ],  # agreed of judged: the docs write it with its Wilson interval
            "uncited_agreement": share(uncited_hits, len(answers)),
            "uncited_agreement_pair": [
                uncited_hits,
                len(answers),
            ],  # agreed of judged: the docs write it with its Wilson interval
            "moved": len(d["moved"]),
            "moved_found": share(sum(d["moved"]), len(d["moved"])),
            "moved_found_pair": [
                sum(d["moved"]),
                len(d["moved"]),
            ],  # agreed of judged: the docs write it with its Wilson interval
            "seconds_per_cited_answer": round(sum(d["seconds"]) / len(d["seconds"]), 1) if d["seconds"] else None,
            "timed_answers": len(d["seconds"]),
        }
    print(json.dumps(result["parts"], indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
