"""The own judges adapted to each corpus from a few of its labels, measured as a user meets it (issue 41).

    python benchmarks/adapted_judges/adapted_judges.py predict [--parts tuning,reporting,holdout,fresh]
    python benchmarks/adapted_judges/adapted_judges.py simulate [--draws 20] [--corpora a,b] [--json F]
    python benchmarks/adapted_judges/adapted_judges.py choose            # the priors, on the earlier corpora only
    python benchmarks/adapted_judges/adapted_judges.py examples [--corpora a,b] [--n 20] [--k 3]   # (c), model calls
    python benchmarks/adapted_judges/adapted_judges.py halueval [--items 340-380]   # no labels: the shipped judges on HaluEval

``predict`` asks the embedded model once per case (the response cache keeps every request) for the
model's own probability of each decision, and writes it with the word evidence and the readers'
label to ``benchmarks/adapted_judges/inputs-<part>.json``: everything the simulation needs, so it
runs without a model.

``simulate``: for each corpus of ``benchmarks/real_answers/data`` and each n in 0, 10, 20, 30, 50 labels, seeded
draws of the corpus' questions as ``rag-eval label --n`` draws them (the active draw: inclusion
probabilities that favour uncertain, outcome-deciding verdicts of the shipped judges; every prompt's
answer to a drawn question is labelled), each judge adapted on the drawn answers'
labels (``rag_eval/calibration/adaptation.py``: (a) cut-off and band, (b) blend weights, both), and the
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "real_answers"))

from real_judges import word_features  # noqa: E402

from rag_eval.calibration.adaptation import HOW, Decider, Item, adapt  # noqa: E402
from rag_eval.calibration.lexical import Blend  # noqa: E402
from rag_eval.judges.registry import FAITHFUL_SHARE, JUDGES  # noqa: E402
from rag_eval.labels.active import inclusion_probabilities, systematic_draw  # noqa: E402
from rag_eval.stats import wilson_interval  # noqa: E402

REAL = ROOT / "benchmarks" / "real_answers" / "data"
OUT = ROOT / "benchmarks" / "adapted_judges"
JUDGES_RUN = ("refusal", "correctness", "faithfulness_yesno")
KIND = {"refusal": "refusal", "correctness": "correctness", "faithfulness_yesno": "faithfulness"}
TARGET = {"refusal": 0.95, "correctness": 0.90, "faithfulness_yesno": 0.90}
MAX_UNCERTAIN = 0.25
NS = (0, 10, 20, 30, 50)
# The earlier corpora (the priors are chosen on them) and the blind part (measured once, at the end).
EARLIER = ("python", "attrs", "structlog", "dotenv", "tinytag", "tenacity", "tabulate")
BLIND = ("parse", "xmltodict")


# The faithfulness statements' model P(supported) with the full contexts, as asked by the shipped
# prompt, kept per statement by benchmarks/real_answers/faithfulness_variants.py (the "shipped" variant) for the
# tuning, reporting and holdout parts: read from there instead of asked again (about 500 requests
# with 2,100 characters of contexts each, an hour of this 2-core machine).
STORED_FAITHFULNESS = ROOT / "benchmarks" / "real_answers" / "results" / "faithfulness-variants-result.json"


def _stored_faithfulness() -> dict[str, list[float]]:
    if not STORED_FAITHFULNESS.exists():
        # Asking the ~500 statements again would take an hour and could change the figures.
        raise SystemExit(
            f"{STORED_FAITHFULNESS} is missing: run benchmarks/real_answers/faithfulness_variants.py first"
        )
    data = json.loads(STORED_FAITHFULNESS.read_text())
    return dict(zip(data["ids"], data["probs"]["shipped"], strict=True))


def predict_parts(parts: list[str]) -> None:
    """The model's own probabilities of every case of ``parts`` (cached requests), with word evidence."""
    from rag_eval import progress
    from rag_eval.judges.judge_check import load_cases
    from rag_eval.judges.scored import split_statements
    from rag_eval.judges.yesno import YesNoPrompt
    from rag_eval.llm.settings import LLMConfig

    # The decision is read from the first token's probabilities; the reason the judge writes after
    # it is not needed here, so each request stops after one token (same prompt, same first token).
    YesNoPrompt.ask.__kwdefaults__["max_tokens"] = 1
    progress.set_enabled(True)
    llm = LLMConfig(provider="local", repack=True)
    OUT.mkdir(parents=True, exist_ok=True)
    stored = _stored_faithfulness()
    for part in parts:
        cases = load_cases(REAL / f"cases-{part}.jsonl")
        t0 = time.perf_counter()
        # Faithfulness cases whose statements' probabilities are stored are not asked again.
        known = {
            c["id"]: stored[c["id"]]
            for c in cases
            if c["id"] in stored and len(stored[c["id"]]) == len(split_statements(c["answer"]))
        }
        rows, calls, identity = predict_rows(cases, known, llm)
        path = OUT / f"inputs-{part}.json"
        path.write_text(json.dumps({"model": identity, "part": part, "rows": rows}, indent=0) + "\n")
        print(
            f"{part}: {len(rows)} decisions ({len(known)} faithfulness cases from {STORED_FAITHFULNESS.name}), "
            f"{calls} model calls, {time.perf_counter() - t0:.0f} s -> {path}"
        )


def predict_rows(cases: list[dict], known: dict[str, list[float]], llm) -> tuple[list[dict], int, str]:
    """One row per (case, judge): the model's probabilities (``known`` ones not asked), the word
    evidence and the label; with the number of model calls and the model's identity."""
    from rag_eval.cache_dirs import cache_root
    from rag_eval.judges.judge_check import Prediction, predict

    ask = [c for c in cases if c["id"] not in known]
    raw_ask, usage, identity, _ = predict(ask, llm, cache_root(), None, list(JUDGES_RUN), blends=False)
    index = {c["id"]: i for i, c in enumerate(ask)}
    raw = {
        name: [
            raw_ask[name][index[c["id"]]]
            if c["id"] in index
            else Prediction(probs=known[c["id"]], score=min(known[c["id"]]), variant=name)
            if name == "faithfulness_yesno"
            else Prediction(error="not run")
            for c in cases
        ]
        for name in JUDGES_RUN
    }
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
                    "stored": c["id"] in known and name == "faithfulness_yesno",
                }
            )
    calls = sum(u["calls"] for u in usage)
    return rows, calls, identity


HALUEVAL = ROOT.parent / "shared" / "data" / "halueval-qa" / "qa_dev.jsonl"


def halueval_run(start: int, stop: int, draws: int) -> dict:
    """No loss without labels, and what 10 or 20 labels do, on HaluEval QA items ``start..stop-1``
    (``../shared/data/halueval-qa``): the shipped judges on every case (n = 0; an adapted judge
    with no label is the shipped one), and adapted as ``simulate`` adapts, on one-token requests."""
    from rag_eval import progress
    from rag_eval.judges.judge_check import halueval_cases
    from rag_eval.judges.yesno import YesNoPrompt
    from rag_eval.llm.settings import LLMConfig

    YesNoPrompt.ask.__kwdefaults__["max_tokens"] = 1
    progress.set_enabled(True)
    cases = halueval_cases(HALUEVAL, start, stop)
    if not cases:
        raise SystemExit(
            f"{HALUEVAL}: no items in {start}-{stop} (the file has {len(HALUEVAL.read_text().splitlines())})"
        )
    # One answer per (item, answer text): the hallucinated answer is judged for faithfulness and correctness.
    kind = {"f1": "right", "f0": "hallucinated", "c1": "stating", "c0": "hallucinated"}
    for c in cases:
        item_id, suffix = c["id"].split("-")
        c["case_of"] = f"halueval/{kind[suffix]}/{item_id}"
    t0 = time.perf_counter()
    rows, calls, identity = predict_rows(cases, {}, LLMConfig(provider="local", repack=True))
    rows = [r for r in rows if r["error"] is None]
    results = simulate(rows, ["halueval"], draws, ns=(0, 10, 20))
    shipped = {r["judge"]: r for r in results if r["how"] == "shipped"}
    return {
        "command": f"python benchmarks/adapted_judges/adapted_judges.py halueval --items {start}-{stop} --draws {draws}",
        "items": [start, stop],
        "model": identity,
        "calls": calls,
        "seconds": round(time.perf_counter() - t0, 1),
        "shipped": shipped,
        "results": results,
        "rows": rows,  # what the simulation read: it reruns without a model
    }


def load_inputs() -> list[dict]:
    rows = []
    for path in sorted(OUT.glob("inputs-*.json")):
        data = json.loads(path.read_text())
        rows += [{**r, "part": data["part"]} for r in data["rows"] if r["error"] is None]
    return rows


def shipped_deciders() -> dict[str, Decider]:
    """Each prompt variant's decider as shipped (``rag_eval/calibration/calibration_embedded.json``)."""
    table = json.loads((ROOT / "rag_eval" / "calibration" / "calibration_embedded.json").read_text())
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
    """Each variant adapted on the labelled rows: with ``priors`` where given, else its judge's."""
    out = dict(shipped)
    for variant in {r["variant"] for r in labelled}:
        mine = [r for r in labelled if r["variant"] == variant]
        out[variant] = adapt(shipped[variant], [item(r) for r in mine], how, judge=mine[0]["judge"], **priors)
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
            # "unadapted": the shipped judge on the same draws' other answers (the fair comparison: an
            # active draw takes the unsure answers, so what is left is easier than the whole corpus).
            for how in ("shipped",) if n == 0 else ("unadapted", *hows):
                counts = {j: [] for j in JUDGES_RUN}
                for d in range(1 if n == 0 else draws):
                    chosen = draw(mine, shipped, n, seed=1000 * d + n) if n else set()
                    lab = [r for r in mine if r["case_of"] in chosen]
                    rest = [r for r in mine if r["case_of"] not in chosen]
                    deciders = shipped if how in ("shipped", "unadapted") else adapted(shipped, lab, how, **priors)
                    for j, c in evaluate(deciders, rest).items():
                        counts[j].append(c)
                for j, cs in counts.items():
                    if not cs:
                        continue
                    right, dec, total = (np.array([c[i] for c in cs]) for i in range(3))
                    acc = np.where(dec > 0, right / np.maximum(dec, 1), np.nan)
                    unc = 1 - dec / np.maximum(total, 1)
                    # Draws re-measure the same answers: the interval is that of one draw's mean
                    # counts (pooling the draws' counts would count each answer ``draws`` times).
                    one = (int(round(right.mean())), int(round(dec.mean())))
                    pooled = wilson_interval(*one) if one[1] else None
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
        for how in ("shipped", "unadapted", *HOW):
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
                        # How far the medians are from the target (0 where met).
                        "accuracy_missed_by": max(0.0, TARGET[j] - float(np.median(accs))) if accs else None,
                        "uncertain_over_by": max(
                            0.0, float(np.median([r["uncertain_share"] for r in rs])) - MAX_UNCERTAIN
                        ),
                    }
                )
    return out


def smallest_n(summ: list[dict], how: str = "both") -> dict[str, int | None]:
    """Per judge, the fewest labels (n <= 30) at which the median over the corpora meets the target
    (n = 0: the shipped judge already does); None where no n does."""
    out: dict[str, int | None] = {}
    for j in JUDGES_RUN:
        ok = [
            x["n"]
            for x in summ
            if x["judge"] == j
            and x["how"] in (how, "shipped")
            and x["n"] <= 30
            and x["median_decided_accuracy"] is not None
            and x["median_decided_accuracy"] >= TARGET[j] - 1e-9
            and x["median_uncertain_share"] <= MAX_UNCERTAIN + 1e-9
        ]
        out[j] = min(ok) if ok else None
    return out


def _print(results: list[dict], summ: list[dict]) -> None:
    print(f"{'judge':<20}{'how':<9}{'n':>3}  {'corpora':>7}  {'median decided':>14}  {'median uncertain':>16}  meeting")
    for s in summ:
        acc = s["median_decided_accuracy"]
        print(
            f"{s['judge']:<20}{s['how']:<9}{s['n']:>3}  {s['corpora']:>7}  {acc if acc is None else f'{acc:.3f}':>14}  "
            f"{s['median_uncertain_share']:>16.3f}  {s['corpora_meeting_target']}"
        )


def choose(rows: list[dict], draws: int, corpora: list[str]) -> dict:
    """Per judge, the priors that do best on ``corpora`` (the earlier ones): the mean over corpora
    and n in 10..30 of decided accuracy, less what the uncertain share exceeds 25%; beside it the
    same score of the shipped judge on the same answers (n = 0 is measured on every answer, so the
    shipped score here is the shipped judge on each draw's other answers)."""
    grid_cut = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
    grid_w = (0.02, 0.05, 0.1, 0.25, 0.5, 1.0)
    ns = (10, 20, 30)

    def score(res: list[dict], judge: str) -> float:
        vals = [
            r["decided_accuracy"] - max(0.0, r["uncertain_share"] - MAX_UNCERTAIN)
            for r in res
            if r["judge"] == judge and r["decided_accuracy"] is not None
        ]
        return float(np.mean(vals)) if vals else float("nan")

    # The shipped judge on the same draws' other answers: adapted with priors so strong nothing moves.
    still = simulate(rows, corpora, draws, hows=("both",), ns=ns, prior_cutoff=1e-6, prior_weights=1e-6)
    table = []
    for pc in grid_cut:
        for pw in grid_w:
            res = simulate(rows, corpora, draws, hows=("both",), ns=ns, prior_cutoff=pc, prior_weights=pw)
            table.append({"prior_cutoff": pc, "prior_weights": pw, **{j: score(res, j) for j in JUDGES_RUN}})
    best = {}
    for j in JUDGES_RUN:
        b = max(table, key=lambda t: t[j])
        best[j] = {
            "prior_cutoff": b["prior_cutoff"],
            "prior_weights": b["prior_weights"],
            "score": b[j],
            "shipped": score(still, j),
        }
        print(
            f"{j}: best prior_cutoff {b['prior_cutoff']} prior_weights {b['prior_weights']}: {b[j]:.4f} (shipped on the same answers {score(still, j):.4f})"
        )
    return {"corpora": corpora, "draws": draws, "grid": table, "best": best}


EXAMPLES_LEAD = (
    "Here are candidate answers to other questions about the same documents, each with the verdict a careful "
    "person gave it:\n\n"
)
EXAMPLE = "Question: {question}\nReference answer: {reference}\nCandidate answer: {answer}\nVerdict: {verdict}\n\n"


def with_examples(template: str, examples: list[dict]) -> str:
    """The correctness prompt with labelled answers of the corpus as worked examples before the one to judge."""
    shown = "".join(
        EXAMPLE.format(
            question=e["question"],
            reference=e["reference"],
            answer=e["answer"],
            verdict="Yes (it states the reference answer)"
            if e["positive"]
            else "No (it does not state the reference answer)",
        )
        for e in examples
    )
    return EXAMPLES_LEAD + shown + "Now the answer to judge:\n\n" + template


def examples_run(corpora: list[str], n: int, k: int, draws: int) -> dict:
    """(c): correctness with the ``k`` labelled answers nearest to the one judged as worked examples
    in its prompt (MiniLM on question + answer), alone and with (a)+(b) on top; ``n`` labels drawn
    as ``simulate`` draws them; measured on each corpus' other answers. Only correctness: refusal is
    at 0.98-1.00 already, and a faithfulness example needs a label per statement, which a labels
    file does not have."""
    import asyncio

    from sentence_transformers import SentenceTransformer

    from rag_eval.cache_dirs import cache_root
    from rag_eval.calibration.lexical import coverage
    from rag_eval.judges.judge_check import load_cases
    from rag_eval.judges.scored import ScoredJudges
    from rag_eval.judges.yesno import YesNoPrompt
    from rag_eval.llm.session import LLMSession
    from rag_eval.llm.settings import LLMConfig
    from rag_eval.retrievers.dense import resolve_model

    rows = load_inputs()
    cases = {c["id"]: c for path in REAL.glob("cases-*.jsonl") for c in load_cases(path)}
    shipped = shipped_deciders()
    # One token, as `predict` asks: the decision is the first token's probability.
    YesNoPrompt.ask.__kwdefaults__["max_tokens"] = 1
    encoder = SentenceTransformer(str(resolve_model("all-MiniLM-L6-v2")), device="cpu")
    session = LLMSession(cache_root())
    llm_cfg = LLMConfig(provider="local", repack=True)
    out: dict = {"n": n, "k": k, "draws": draws, "results": [], "cost": []}
    t0 = time.perf_counter()

    async def main() -> None:
        llm = session.llm(llm_cfg, "adapted_judges examples")
        scored = ScoredJudges.load(llm, None)
        calls = 0
        for corpus in corpora:
            spent = {"examples": [0, 0.0, 0], "plain": [0, 0.0, 0]}  # calls, seconds, prompt characters
            mine = [r for r in rows if r["corpus"] == corpus]
            corr = [r for r in mine if r["judge"] == "correctness"]
            if not corr:
                continue
            texts = [cases[r["id"]]["question"] + "\n" + cases[r["id"]]["answer"] for r in corr]
            emb = encoder.encode(texts, normalize_embeddings=True)
            for d in range(draws):
                chosen = draw(mine, shipped, n, seed=1000 * d + n)
                lab = [i for i, r in enumerate(corr) if r["case_of"] in chosen]
                rest = [i for i, r in enumerate(corr) if r["case_of"] not in chosen]
                if len(lab) < k or not rest:
                    continue

                async def ask(i: int, pool: list[int], corr=corr, emb=emb, spent=spent) -> tuple[float, dict]:
                    nonlocal calls
                    r = corr[i]
                    c = cases[r["id"]]
                    near = sorted(pool, key=lambda j: -float(emb[i] @ emb[j]))[:k]
                    ex = [{**cases[corr[j]["id"]], "positive": corr[j]["positive"]} for j in near]
                    base = scored.prompt_for(r["variant"])
                    prompt = YesNoPrompt(base.name, with_examples(base.template, ex), base.placeholders, base.labels)
                    values = {"question": c["question"], "reference": c["reference"], "answer": c["answer"]}
                    # The same request without examples, timed beside it: what (c) adds, in this run.
                    for kind, pr in (("plain", base), ("examples", prompt)):
                        t = time.perf_counter()
                        dec = await pr.ask(llm, **values)
                        spent[kind][0] += 1
                        spent[kind][1] += time.perf_counter() - t
                        spent[kind][2] += len(pr.render(**values))
                    calls += 1
                    return dec.p("yes") or 0.5, coverage(c["reference"], c["answer"]).features()

                # Labelled answers judged with examples from the other labelled ones (what (a)+(b) fit on).
                lab_p = [await ask(i, [j for j in lab if j != i]) for i in lab]
                rest_p = [await ask(i, lab) for i in rest]
                variants = {corr[i]["variant"] for i in lab + rest}
                for how in ("examples", "examples+both"):
                    deciders = dict(shipped)
                    if how == "examples+both":
                        for v in variants:
                            items = [
                                Item((p,), (f,), corr[i]["positive"])
                                for i, (p, f) in zip(lab, lab_p, strict=True)
                                if corr[i]["variant"] == v
                            ]
                            deciders[v] = adapt(shipped[v], items, "both", judge="correctness")
                    right = dec_n = 0
                    for i, (p, f) in zip(rest, rest_p, strict=True):
                        unsure, pos = deciders[corr[i]["variant"]].decide(Item((p,), (f,)))
                        if not unsure:
                            dec_n += 1
                            right += int(pos == corr[i]["positive"])
                    out["results"].append(
                        {
                            "corpus": corpus,
                            "draw": d,
                            "how": how,
                            "right": right,
                            "decided": dec_n,
                            "measured_on": len(rest),
                        }
                    )
                    print(
                        f"{corpus} draw {d} {how}: {right}/{dec_n} decided right, {len(rest) - dec_n}/{len(rest)} uncertain"
                    )
                # The same draw without examples, for the comparison.
                for how in ("both",):
                    dd = adapted(shipped, [r for r in mine if r["case_of"] in chosen], how)
                    c3 = evaluate(dd, [corr[i] for i in rest]).get("correctness", (0, 0, 0))
                    out["results"].append(
                        {
                            "corpus": corpus,
                            "draw": d,
                            "how": how,
                            "right": c3[0],
                            "decided": c3[1],
                            "measured_on": c3[2],
                        }
                    )
                    c0 = evaluate(shipped, [corr[i] for i in rest]).get("correctness", (0, 0, 0))
                    out["cost"].append(
                        {
                            "corpus": corpus,
                            "draw": d,
                            **{
                                f"{kind}_{what}": round(v[x], 1)
                                for kind, v in spent.items()
                                for x, what in enumerate(("calls", "seconds", "prompt_chars"))
                            },
                        }
                    )
                    out["results"].append(
                        {
                            "corpus": corpus,
                            "draw": d,
                            "how": "shipped",
                            "right": c0[0],
                            "decided": c0[1],
                            "measured_on": c0[2],
                        }
                    )
        out["calls"] = calls
        await session.aclose()

    try:
        asyncio.run(main())
    finally:
        session.close()
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"{out.get('calls')} model calls, {out['seconds']} s")
    return pool_examples(out)


def pool_examples(out: dict) -> dict:
    """(c)'s figures pooled over corpora and draws per method, and what its requests cost beside the
    same requests without examples (timed in the same run)."""
    pooled = {}
    for how in sorted({r["how"] for r in out["results"]}):
        rs = [r for r in out["results"] if r["how"] == how]
        right, dec, on = (sum(r[k] for r in rs) for k in ("right", "decided", "measured_on"))
        ci = wilson_interval(right, dec) if dec else None
        pooled[how] = {
            "right": right,
            "decided": dec,
            "measured_on": on,
            "decided_accuracy": right / dec if dec else None,
            "decided_accuracy_ci": [ci.ci_low, ci.ci_high] if ci else None,
            "uncertain_share": 1 - dec / on if on else None,
        }
    cost = (
        {k: sum(c[k] for c in out["cost"]) for k in out["cost"][0] if k not in ("corpus", "draw")}
        if out["cost"]
        else {}
    )
    if cost:
        cost["time_ratio"] = cost["examples_seconds"] / cost["plain_seconds"]
        cost["prompt_ratio"] = cost["examples_prompt_chars"] / cost["plain_prompt_chars"]
        cost["seconds_per_answer_examples"] = cost["examples_seconds"] / cost["examples_calls"]
        cost["seconds_per_answer_plain"] = cost["plain_seconds"] / cost["plain_calls"]
    return {**out, "pooled": pooled, "cost_total": cost}


DOCS = ROOT / "docs" / "validation" / "adapted-judges.md"
HALUEVAL_RESULT = "benchmarks/adapted_judges/halueval-result.json"


RESULT = "benchmarks/adapted_judges/result.json"
CHOICE = "benchmarks/adapted_judges/choose-result.json"
EXAMPLES = "benchmarks/adapted_judges/examples-result.json"


def _fig(path: str, key: str, fmt: str = "") -> str:
    """A placeholder the docs' figures hook fills from the result file when the site is built."""
    return "{{ fig " + path + " " + key + (" " + fmt if fmt else "") + " }}"


def write_docs(result: dict, examples: dict | None, choice: dict | None, halueval: dict | None = None) -> None:
    """docs/validation/adapted-judges.md: its tables laid out from the result files, every figure a
    placeholder that docs/hooks/figures.py reads from them when the site is built."""
    lines = [
        "# Judges adapted to a corpus: how many labels, and how far they go",
        "",
        "<!-- Laid out by `python benchmarks/adapted_judges/adapted_judges.py docs`; the figures are read from "
        f"{RESULT} when the site is built. -->",
        "",
        "Measured as a user meets it: for each labelled corpus of `benchmarks/real_answers/data` and n labelled answers, "
        "seeded draws of the corpus' questions as `rag-eval label` draws them (the active draw; every prompt's "
        "answer to a drawn question labelled), each judge adapted on the drawn answers' labels "
        "(`rag_eval/calibration/adaptation.py`) and measured on the corpus' **other** answers: decided verdicts right "
        "(uncertain ones set aside) and the share left uncertain. `shipped`: no label, every answer; `unadapted`: the "
        "shipped judge on the same draws' other answers (the fair comparison: the active draw takes the unsure "
        "answers, so the rest is easier than the whole corpus). `cutoff`: (a) the cut-off "
        "and band moved; `weights`: (b) the blend refitted; `both`: (b) then (a), the default of "
        "`rag-eval report --labels F --adapt`. A corpus is measured at n only while at least 10 of its answers "
        "remain unlabelled (30 answers: n <= 20; the blind corpora have 40).",
        "",
        "Reproduce: `python benchmarks/adapted_judges/adapted_judges.py predict` (model requests, cached; one token each, the "
        "verdict's probabilities), `python benchmarks/adapted_judges/adapted_judges.py choose`, then `python "
        f"benchmarks/adapted_judges/adapted_judges.py simulate --draws 10 --json {RESULT}` (no model); (c): `python "
        f"benchmarks/adapted_judges/adapted_judges.py examples --corpora tenacity,tabulate,parse,xmltodict --json {EXAMPLES}`; "
        f"no labels on HaluEval: `python benchmarks/adapted_judges/adapted_judges.py halueval` (writes {HALUEVAL_RESULT}).",
        "",
        "Targets (issue 41): with at most 30 labels, decided >= 0.90 right for correctness and faithfulness and "
        ">= 0.95 for refusal, each with <= 25% uncertain, on the rest of the corpus; with no labels, no loss "
        "against the shipped judges.",
        "",
        "The faithfulness statements' model probabilities of the tuning, reporting and holdout parts are the "
        "ones `benchmarks/real_answers/faithfulness_variants.py` stored (`faithfulness-variants-result.json`, the shipped "
        "prompt with the full contexts), not asked again.",
        "",
    ]
    b30 = "summary_blind[judge=faithfulness_yesno,how=both,n=30]"
    u30 = "summary_blind[judge=faithfulness_yesno,how=unadapted,n=30]"
    c30 = "summary_blind[judge=correctness,how=both,n=30]"
    a20 = "summary_all[judge={j},how={h},n=20]"
    if result.get("summary_blind"):
        lines += [
            "## What it shows",
            "",
            "- **The targets are not met.** On the blind part with 30 labels, faithfulness_yesno decides "
            f"{_fig(RESULT, b30 + '.median_decided_accuracy', '.2f')} right with "
            f"{_fig(RESULT, b30 + '.median_uncertain_share', '.2f')} uncertain, against "
            f"{_fig(RESULT, u30 + '.median_decided_accuracy', '.2f')} ({_fig(RESULT, u30 + '.median_uncertain_share', '.2f')} "
            "uncertain) for the shipped judge on the same answers (target 0.90, missed by "
            f"{_fig(RESULT, b30 + '.accuracy_missed_by', '.2f')}); correctness decides "
            f"{_fig(RESULT, c30 + '.median_decided_accuracy', '.2f')} right but leaves "
            f"{_fig(RESULT, c30 + '.median_uncertain_share', '.2f')} uncertain (target <= 0.25, over by "
            f"{_fig(RESULT, c30 + '.uncertain_over_by', '.2f')}); refusal meets its "
            "target with or without labels. Over all nine corpora with 20 labels (the most every corpus allows): "
            f"correctness {_fig(RESULT, a20.format(j='correctness', h='both') + '.median_decided_accuracy', '.2f')} right "
            f"with {_fig(RESULT, a20.format(j='correctness', h='both') + '.median_uncertain_share', '.2f')} uncertain, "
            f"faithfulness_yesno {_fig(RESULT, a20.format(j='faithfulness_yesno', h='both') + '.median_decided_accuracy', '.2f')} "
            f"with {_fig(RESULT, a20.format(j='faithfulness_yesno', h='both') + '.median_uncertain_share', '.2f')}, refusal "
            f"{_fig(RESULT, a20.format(j='refusal', h='both') + '.median_decided_accuracy', '.2f')}.",
            "- **Why so little moves.** The prior strengths were chosen on the earlier corpora measured before the "
            "blind part (below): there, no prior that lets 10-30 labels move a judge did better than the shipped "
            "judge on the same answers, so the chosen priors are the strongest of the grid and the adapted "
            "correctness judge equals the shipped one. The shipped calibration was fitted on pooled data that "
            "includes most earlier corpora (python and attrs are its tuning part, so their rows flatter the "
            "shipped judge), and 10-30 labels measure a corpus' own shift with an error larger than the shift. "
            "With these priors even 30 labels all against a correctness judge move its cut-off from 0.50 to about "
            "0.52; with weaker priors the same method moves a judge that is far off (tested: "
            "`tests/orchestration/test_adapt.py`).",
        ]
        if examples and examples.get("pooled"):
            ex, sh = "pooled.examples", "pooled.shipped"
            lines += [
                "- **(c) worked examples do not win either.** With the 3 labelled answers nearest to the one judged "
                "shown in the prompt (20 labels, one draw, four corpora; table below), correctness decides "
                f"{_fig(EXAMPLES, ex + '.decided_accuracy', '.2f')} right with {_fig(EXAMPLES, ex + '.uncertain_share', '.2f')} "
                f"uncertain, the shipped judge on the same answers {_fig(EXAMPLES, sh + '.decided_accuracy', '.2f')} with "
                f"{_fig(EXAMPLES, sh + '.uncertain_share', '.2f')}, at {_fig(EXAMPLES, 'cost_total.time_ratio', '.1f')}x the "
                "time of each judged answer (the examples come before the prompt's fixed part, so the server's "
                "prefix cache cannot keep it) and one more request per labelled answer. Not shipped.",
            ]
        if halueval:
            lines += [
                "- **With no labels nothing changes**: an adapted judge with 0 labels is the shipped one (tested), "
                "so the held-out figures stay what they were. On HaluEval QA items no judge was tuned or measured on "
                f"({halueval['items'][0]}-{halueval['items'][1] - 1}, `{halueval['command']}`), the shipped judges "
                "decide correctness "
                f"{_fig(HALUEVAL_RESULT, 'shipped.correctness.decided_accuracy', '.2f')} right "
                f"({_fig(HALUEVAL_RESULT, 'shipped.correctness.uncertain_share', '.2f')} uncertain) and "
                f"faithfulness_yesno {_fig(HALUEVAL_RESULT, 'shipped.faithfulness_yesno.decided_accuracy', '.2f')} "
                f"({_fig(HALUEVAL_RESULT, 'shipped.faithfulness_yesno.uncertain_share', '.2f')} uncertain); targets "
                "0.80 and 0.85.",
            ]
        lines += [
            "- **Not tried**: a faithfulness probe on the model's hidden states. The same probe on correctness "
            "(issue 41) reached about the model's own AUC; asking for hidden states needs a second model "
            "runtime beside llama-server, and the machine time went to the measurements above.",
            "",
        ]
    if result.get("smallest_n"):
        lines += [
            "## The fewest labels that reach the target",
            "",
            "The smallest n (at most 30) at which the median over the corpora meets the judge's target with `both` "
            "(0: the shipped judge already does; none: no n up to 30 does).",
            "",
            "| judge | all nine corpora | earlier corpora | blind part |",
            "|---|---|---|---|",
        ]
        for j in JUDGES_RUN:
            cells = [
                _fig(RESULT, f"smallest_n.{scope}.{j}") if result["smallest_n"][scope][j] is not None else "none"
                for scope in ("all", "earlier", "blind")
            ]
            lines.append(f"| {j} | " + " | ".join(cells) + " |")
        lines.append("")
    if choice:
        lines += [
            "## The priors, chosen on the earlier corpora",
            "",
            "`python benchmarks/adapted_judges/adapted_judges.py choose`: per judge, a grid of prior strengths (the cut-off "
            "shift's and the blend weights' standard deviations, in log-odds) scored on the earlier corpora measured "
            f"({', '.join(choice['corpora'])}): the mean over corpora, draws and n = 10, 20, 30 of decided accuracy "
            "less the uncertain share above 25%, beside the shipped judge on the same answers. The blind part was "
            "not looked at before this choice.",
            "",
            "| judge | prior (cut-off) | prior (weights) | adapted score | shipped score on the same answers |",
            "|---|---|---|---|---|",
        ]
        for j in choice["best"]:
            k = f"best.{j}"
            lines.append(
                f"| {j} | {_fig(CHOICE, k + '.prior_cutoff')} | {_fig(CHOICE, k + '.prior_weights')} | "
                f"{_fig(CHOICE, k + '.score', '.3f')} | {_fig(CHOICE, k + '.shipped', '.3f')} |"
            )
        lines.append("")
    for title, key in (
        ("Median over all nine corpora", "summary_all"),
        ("Median over the earlier corpora", "summary_earlier"),
        ("The blind part (parse, xmltodict)", "summary_blind"),
    ):
        summ = result.get(key) or []
        if not summ:
            continue
        lines += [
            f"## {title}",
            "",
            "| judge | how | n labels | corpora | median decided right | median uncertain | corpora meeting the target |",
            "|---|---|---|---|---|---|---|",
        ]
        for x in summ:
            k = f"{key}[judge={x['judge']},how={x['how']},n={x['n']}]"
            lines.append(
                f"| {x['judge']} | {x['how']} | {x['n']} | {_fig(RESULT, k + '.corpora')} | "
                f"{_fig(RESULT, k + '.median_decided_accuracy', '.2f') if x['median_decided_accuracy'] is not None else '–'} | "
                f"{_fig(RESULT, k + '.median_uncertain_share', '.2f')} | {_fig(RESULT, k + '.corpora_meeting_target')} |"
            )
        lines.append("")
    lines += [
        "## Per corpus",
        "",
        "| corpus | judge | how | n | decided right (mean over draws) | 95% CI (Wilson, a draw's mean counts) | uncertain | answers measured on |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["results"]:
        k = f"results[corpus={r['corpus']},judge={r['judge']},how={r['how']},n={r['n']}]"
        acc = _fig(RESULT, k + ".decided_accuracy", ".2f") if r["decided_accuracy"] is not None else "–"
        ci = (
            f"[{_fig(RESULT, k + '.decided_accuracy_ci[0]', '.2f')}, {_fig(RESULT, k + '.decided_accuracy_ci[1]', '.2f')}]"
            if r["decided_accuracy_ci"]
            else "–"
        )
        lines.append(
            f"| {r['corpus']} | {r['judge']} | {r['how']} | {r['n']} | {acc} | {ci} | "
            f"{_fig(RESULT, k + '.uncertain_share', '.2f')} | {_fig(RESULT, k + '.measured_on', '.0f')} |"
        )
    lines.append("")
    if examples:
        lines += [
            "## (c) Labelled answers as worked examples in the prompt",
            "",
            f"`python benchmarks/adapted_judges/adapted_judges.py examples --n {examples['n']} --k {examples['k']}`: correctness "
            f"with the {examples['k']} labelled answers nearest to the one judged (MiniLM on question and answer) "
            f"shown as worked examples, alone and with (a)+(b) on top; {_fig(EXAMPLES, 'calls')} judged answers, "
            f"{_fig(EXAMPLES, 'seconds')} s in all. Each answer was also asked without examples in the same run: "
            f"{_fig(EXAMPLES, 'cost_total.seconds_per_answer_examples', '.2f')} s against "
            f"{_fig(EXAMPLES, 'cost_total.seconds_per_answer_plain', '.2f')} s an answer "
            f"({_fig(EXAMPLES, 'cost_total.prompt_ratio', '.1f')}x the prompt characters), on a machine shared with "
            "other jobs; the examples' requests also cost one request per labelled answer (judged with the other "
            "labelled answers as its examples, which (a)+(b) on top fit on).",
            "",
            "| corpus | how | decided right | decided | measured on |",
            "|---|---|---|---|---|",
        ]
        for how in examples.get("pooled", {}):
            k = f"pooled.{how}"
            lines.append(
                f"| **all four** | {how} | {_fig(EXAMPLES, k + '.right')} | {_fig(EXAMPLES, k + '.decided')} | "
                f"{_fig(EXAMPLES, k + '.measured_on')} |"
            )
        for i, r in enumerate(examples["results"]):
            k = f"results[{i}]"
            lines.append(
                f"| {r['corpus']} | {r['how']} | {_fig(EXAMPLES, k + '.right')} | {_fig(EXAMPLES, k + '.decided')} | "
                f"{_fig(EXAMPLES, k + '.measured_on')} |"
            )
        lines.append("")
    DOCS.parent.mkdir(parents=True, exist_ok=True)
    DOCS.write_text("\n".join(lines))
    print(f"wrote {DOCS}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict")
    p.add_argument("--parts", default="tuning,reporting,holdout,fresh")
    s = sub.add_parser("simulate")
    s.add_argument("--draws", type=int, default=20)
    s.add_argument("--corpora", default=",".join(EARLIER + BLIND))
    s.add_argument("--json", type=Path)
    e = sub.add_parser("examples")
    e.add_argument("--corpora", default="tenacity,tabulate")
    e.add_argument("--n", type=int, default=20)
    e.add_argument("--k", type=int, default=3)
    e.add_argument("--draws", type=int, default=1)
    e.add_argument("--json", type=Path)
    h = sub.add_parser("halueval")
    h.add_argument("--items", default="340-380", help="HaluEval QA items START-STOP (never used for tuning)")
    h.add_argument("--draws", type=int, default=10)
    h.add_argument("--json", type=Path, default=ROOT / HALUEVAL_RESULT)
    sub.add_parser("docs")
    c = sub.add_parser("choose")
    c.add_argument("--draws", type=int, default=10)
    c.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.cmd == "predict":
        predict_parts(args.parts.split(","))
        return
    if args.cmd == "docs":
        load = lambda name: json.loads((OUT / name).read_text()) if (OUT / name).exists() else None  # noqa: E731
        write_docs(
            load("result.json"), load("examples-result.json"), load("choose-result.json"), load("halueval-result.json")
        )
        return
    if args.cmd == "halueval":
        a, b = (int(x) for x in args.items.split("-"))
        out = halueval_run(a, b, args.draws)
        args.json.write_text(json.dumps(out, indent=1) + "\n")
        for j, r in out["shipped"].items():
            print(f"{j}: shipped {r['decided_accuracy']:.3f} decided right, {r['uncertain_share']:.3f} uncertain")
        return
    if args.cmd == "examples":
        out = examples_run(args.corpora.split(","), args.n, args.k, args.draws)
        if args.json:
            args.json.write_text(json.dumps(out, indent=1) + "\n")
        return
    rows = load_inputs()
    if args.cmd == "choose":
        out = choose(rows, args.draws, [c for c in EARLIER if any(r["corpus"] == c for r in rows)])
    else:
        corpora = args.corpora.split(",")
        t0 = time.perf_counter()
        results = simulate(rows, corpora, args.draws)
        earlier = summary(results, [c for c in corpora if c in EARLIER])
        blind = summary(results, [c for c in corpora if c in BLIND])
        every = summary(results, corpora)
        print("earlier corpora:")
        _print(results, earlier)
        if blind:
            print("blind part:")
            _print(results, blind)
        print(f"{time.perf_counter() - t0:.0f} s")
        out = {
            "corpora": corpora,
            "draws": args.draws,
            "results": results,
            "summary_earlier": earlier,
            "summary_blind": blind,
            "summary_all": every,
            "smallest_n": {
                "all": smallest_n(every),
                "earlier": smallest_n(earlier),
                "blind": smallest_n(blind),
            },
        }
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
