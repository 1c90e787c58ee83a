"""The own judges adapted to each corpus from a few of its labels, measured as a user meets it (issue 41).

    python benchmarks/adapted_judges.py predict [--parts tuning,reporting,holdout,fresh]
    python benchmarks/adapted_judges.py simulate [--draws 20] [--corpora a,b] [--json F]
    python benchmarks/adapted_judges.py choose            # the priors, on the seven earlier corpora only

``predict`` asks the embedded model once per case (the response cache keeps every request) for the
model's own probability of each decision, and writes it with the word evidence and the readers'
label to ``benchmarks/adapted_judges/inputs-<part>.json``: everything the simulation needs, so it
runs without a model.

``simulate``: for each corpus of ``data/real-answers`` and each n in 0, 10, 20, 30, 50 labels, seeded
draws of the corpus' questions as ``rag-eval label --n`` draws them (the active draw: inclusion
probabilities that favour uncertain, outcome-deciding verdicts of the shipped judges; every prompt's
answer to a drawn question is labelled), each judge adapted on the drawn answers'
labels (``rag_eval/judges/adaptation.py``: (a) cut-off and band, (b) blend weights, both), and the
decided accuracy and uncertain share measured on the corpus' OTHER answers. Targets (issue 41): with
at most 30 labels, decided >= 0.90 right for correctness and faithfulness and >= 0.95 for refusal,
each with <= 25% uncertain, median over the corpora and on the blind part alone.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from real_judges import word_features  # noqa: E402

from rag_eval.judges.active import inclusion_probabilities, systematic_draw  # noqa: E402
from rag_eval.judges.adaptation import HOW, Decider, Item, adapt  # noqa: E402
from rag_eval.judges.lexical import Blend  # noqa: E402
from rag_eval.judges.registry import FAITHFUL_SHARE, JUDGES  # noqa: E402
from rag_eval.stats import wilson_interval  # noqa: E402

REAL = ROOT / "data" / "real-answers"
OUT = ROOT / "benchmarks" / "adapted_judges"
JUDGES_RUN = ("refusal", "correctness", "faithfulness_yesno")
KIND = {"refusal": "refusal", "correctness": "correctness", "faithfulness_yesno": "faithfulness"}
TARGET = {"refusal": 0.95, "correctness": 0.90, "faithfulness_yesno": 0.90}
MAX_UNCERTAIN = 0.25
NS = (0, 10, 20, 30, 50)
# The earlier corpora (the priors are chosen on them) and the blind part (measured once, at the end).
EARLIER = ("python", "attrs", "structlog", "dotenv", "tinytag", "tenacity", "tabulate")
BLIND = ("parse", "xmltodict")


def predict_parts(parts: list[str]) -> None:
    """The model's own probabilities of every case of ``parts`` (cached requests), with word evidence."""
    from rag_eval import progress
    from rag_eval.cache_dirs import cache_root
    from rag_eval.config import LLMConfig
    from rag_eval.judges.judge_check import load_cases, predict

    progress.set_enabled(True)
    llm = LLMConfig(provider="local", repack=True)
    OUT.mkdir(parents=True, exist_ok=True)
    for part in parts:
        cases = load_cases(REAL / f"cases-{part}.jsonl")
        t0 = time.perf_counter()
        raw, usage, identity, _ = predict(cases, llm, cache_root(), None, list(JUDGES_RUN), blends=False)
        rows = []
        for name in JUDGES_RUN:
            positive = JUDGES[name].check.kind.positive
            for c, pred in zip(cases, raw[name], strict=True):
                if c["judge"] != KIND[name]:
                    continue
                rows.append(
                    {
                        "id": c["id"],
                        "case_of": c["case_of"],
                        "corpus": c["case_of"].split("/")[0],
                        "judge": name,
                        "variant": pred.variant or name,
                        "positive": c["label"] == positive,
                        "error": pred.error,
                        "p_model": pred.probs,
                        "features": None if pred.error else word_features(name, c),
                    }
                )
        calls = sum(u["calls"] for u in usage)
        path = OUT / f"inputs-{part}.json"
        path.write_text(json.dumps({"model": identity, "part": part, "rows": rows}, indent=0) + "\n")
        print(f"{part}: {len(rows)} decisions, {calls} model calls, {time.perf_counter() - t0:.0f} s -> {path}")


def load_inputs() -> list[dict]:
    rows = []
    for path in sorted(OUT.glob("inputs-*.json")):
        data = json.loads(path.read_text())
        rows += [{**r, "part": data["part"]} for r in data["rows"] if r["error"] is None]
    return rows


def shipped_deciders() -> dict[str, Decider]:
    """Each prompt variant's decider as shipped (``rag_eval/judges/calibration_embedded.json``)."""
    table = json.loads((ROOT / "rag_eval" / "judges" / "calibration_embedded.json").read_text())
    out = {}
    for key, e in table.items():
        variant = key.split("|")[1]
        if "cutoff" not in e:
            continue
        band = e.get("band")
        threshold = FAITHFUL_SHARE if variant.startswith("faithfulness") else None
        out[variant] = Decider(
            Blend.from_dict(e["blend"]) if e.get("blend") else None,
            float(e["cutoff"]),
            (float(band[0]), float(band[1])) if band else None,
            threshold,
        )
    return out


def item(row: dict, labelled: bool = True) -> Item:
    feats = tuple(row["features"]) if row["features"] else ()
    return Item(tuple(row["p_model"]), feats, bool(row["positive"]) if labelled else None)


def _question(row: dict) -> str:
    return row["case_of"].split("/")[-1]


def _uncertainty(decider: Decider, row: dict) -> float:
    """How unsure the shipped decision is (as ``rag-eval label``'s active draw reads a record)."""
    it = item(row, labelled=False)
    unsure, _ = decider.decide(it)
    if unsure:
        return 0.5
    return 1.0 / (1.0 + math.exp(abs(decider.score(it) - math.log(decider.cutoff / (1 - decider.cutoff)))))


def draw(rows: list[dict], shipped: dict[str, Decider], n_answers: int, seed: int) -> set[str]:
    """The answers (``case_of``) labelled: whole questions drawn as the active draw of ``rag-eval
    label`` draws them, until ``n_answers`` answers."""
    questions = sorted({_question(r) for r in rows})
    per_q = len({r["case_of"] for r in rows}) / len(questions)
    n_q = min(len(questions), max(1, round(n_answers / per_q)))
    score = dict.fromkeys(questions, 0.0)
    for r in rows:
        score[_question(r)] = max(score[_question(r)], _uncertainty(shipped[r["variant"]], r))
    pi = inclusion_probabilities(np.sqrt([score[q] for q in questions]), n_q)
    chosen = {q for q, c in zip(questions, systematic_draw(pi, seed), strict=True) if c}
    return {r["case_of"] for r in rows if _question(r) in chosen}


def evaluate(deciders: dict[str, Decider], rows: list[dict]) -> dict[str, tuple[int, int, int]]:
    """Per judge: (decided right, decided, all) on ``rows``."""
    out: dict[str, list[int]] = {}
    for r in rows:
        unsure, pos = deciders[r["variant"]].decide(item(r, labelled=False))
        c = out.setdefault(r["judge"], [0, 0, 0])
        c[2] += 1
        if not unsure:
            c[1] += 1
            c[0] += int(pos == r["positive"])
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def adapted(shipped: dict[str, Decider], labelled: list[dict], how: str, **priors: float) -> dict[str, Decider]:
    out = dict(shipped)
    for variant in {r["variant"] for r in labelled}:
        items = [item(r) for r in labelled if r["variant"] == variant]
        out[variant] = adapt(shipped[variant], items, how, **priors)
    return out


def simulate(rows: list[dict], corpora: list[str], draws: int, hows=HOW, ns=NS, **priors: float) -> list[dict]:
    shipped = shipped_deciders()
    results = []
    for corpus in corpora:
        mine = [r for r in rows if r["corpus"] == corpus]
        if not mine:
            continue
        answers = sorted({r["case_of"] for r in mine})
        for n in ns:
            # At least 10 answers must remain to measure on.
            if n and len(answers) - n < 10:
                continue
            for how in ("shipped",) if n == 0 else hows:
                counts = {j: [] for j in JUDGES_RUN}
                for d in range(1 if n == 0 else draws):
                    chosen = draw(mine, shipped, n, seed=1000 * d + n) if n else set()
                    lab = [r for r in mine if r["case_of"] in chosen]
                    rest = [r for r in mine if r["case_of"] not in chosen]
                    deciders = shipped if n == 0 else adapted(shipped, lab, how, **priors)
                    for j, c in evaluate(deciders, rest).items():
                        counts[j].append(c)
                for j, cs in counts.items():
                    if not cs:
                        continue
                    right, dec, total = (np.array([c[i] for c in cs]) for i in range(3))
                    acc = np.where(dec > 0, right / np.maximum(dec, 1), np.nan)
                    unc = 1 - dec / np.maximum(total, 1)
                    pooled = wilson_interval(int(right.sum()), int(dec.sum())) if dec.sum() else None
                    results.append(
                        {
                            "corpus": corpus,
                            "judge": j,
                            "n": n,
                            "how": how,
                            "draws": len(cs),
                            "decided_accuracy": float(np.nanmean(acc)) if np.isfinite(acc).any() else None,
                            "decided_accuracy_ci": [pooled.ci_low, pooled.ci_high] if pooled else None,
                            "draw_range": [float(np.nanpercentile(acc, 5)), float(np.nanpercentile(acc, 95))]
                            if np.isfinite(acc).any()
                            else None,
                            "uncertain_share": float(unc.mean()),
                            "measured_on": float(total.mean()),
                        }
                    )
    return results


def meets(r: dict) -> bool:
    acc = r["decided_accuracy"]
    return acc is not None and acc >= TARGET[r["judge"]] - 1e-9 and r["uncertain_share"] <= MAX_UNCERTAIN + 1e-9


def summary(results: list[dict], corpora: list[str]) -> list[dict]:
    """Per judge, method and n: the median over ``corpora`` of decided accuracy and uncertain share."""
    out = []
    for j in JUDGES_RUN:
        for how in ("shipped", *HOW):
            for n in NS:
                rs = [
                    r for r in results if r["judge"] == j and r["how"] == how and r["n"] == n and r["corpus"] in corpora
                ]
                if not rs:
                    continue
                accs = [r["decided_accuracy"] for r in rs if r["decided_accuracy"] is not None]
                out.append(
                    {
                        "judge": j,
                        "how": how,
                        "n": n,
                        "corpora": len(rs),
                        "median_decided_accuracy": float(np.median(accs)) if accs else None,
                        "median_uncertain_share": float(np.median([r["uncertain_share"] for r in rs])),
                        "corpora_meeting_target": sum(meets(r) for r in rs),
                    }
                )
    return out


def _print(results: list[dict], summ: list[dict]) -> None:
    print(f"{'judge':<20}{'how':<9}{'n':>3}  {'corpora':>7}  {'median decided':>14}  {'median uncertain':>16}  meeting")
    for s in summ:
        acc = s["median_decided_accuracy"]
        print(
            f"{s['judge']:<20}{s['how']:<9}{s['n']:>3}  {s['corpora']:>7}  {acc if acc is None else f'{acc:.3f}':>14}  "
            f"{s['median_uncertain_share']:>16.3f}  {s['corpora_meeting_target']}"
        )


def choose(rows: list[dict], draws: int) -> dict:
    """The priors that do best on the earlier corpora: the mean over corpora and n in 10..30 of
    decided accuracy, less what the uncertain share exceeds 25%, per judge, averaged."""
    grid_cut = (0.25, 0.5, 1.0, 2.0, 4.0)
    grid_w = (0.1, 0.25, 0.5, 1.0, 2.0)
    table = []
    for pc in grid_cut:
        for pw in grid_w:
            res = simulate(
                rows, list(EARLIER), draws, hows=("both",), ns=(10, 20, 30), prior_cutoff=pc, prior_weights=pw
            )
            vals = [
                r["decided_accuracy"] - max(0.0, r["uncertain_share"] - MAX_UNCERTAIN)
                for r in res
                if r["decided_accuracy"] is not None
            ]
            table.append({"prior_cutoff": pc, "prior_weights": pw, "score": float(np.mean(vals))})
            print(f"prior_cutoff {pc:<5} prior_weights {pw:<5} score {np.mean(vals):.4f}")
    best = max(table, key=lambda t: t["score"])
    print(f"best: {best}")
    return {"grid": table, "best": best}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict")
    p.add_argument("--parts", default="tuning,reporting,holdout,fresh")
    s = sub.add_parser("simulate")
    s.add_argument("--draws", type=int, default=20)
    s.add_argument("--corpora", default=",".join(EARLIER))
    s.add_argument("--json", type=Path)
    c = sub.add_parser("choose")
    c.add_argument("--draws", type=int, default=10)
    c.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.cmd == "predict":
        predict_parts(args.parts.split(","))
        return
    rows = load_inputs()
    if args.cmd == "choose":
        out = choose(rows, args.draws)
    else:
        corpora = args.corpora.split(",")
        t0 = time.perf_counter()
        results = simulate(rows, corpora, args.draws)
        summ = summary(results, corpora)
        _print(results, summ)
        print(f"{time.perf_counter() - t0:.0f} s")
        out = {"corpora": corpora, "draws": args.draws, "results": results, "summary": summ}
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
