"""Issue 50's study: fit the citations judge's blend of the model's P(supported) with the sentence's
words in its cited passages, and save it with a cut-off and a band as the embedded model's shipped
calibration of the ``citations`` judge.

    python benchmarks/citations/fit_blend.py --save

Fitted on the packets of the parts ``tuning`` and ``holdout`` (attrs and the eight corpora whose
figures were read before this method was chosen, so none of them is held out any longer); the part
``fresh`` (made after the method was chosen, labelled blind before any judge ran on it) is never
read here: ``agreement.py`` measures it.

Per cited claim sentence that the readers also call a cited claim: the model's own P(supported by
the cited passages) (from the response cache: the judge's first run), the word evidence of
``rag_eval.calibration.lexical.cited_support`` (the sentence's content words and code names found in
the cited passages, and how many more the best other given passage holds), and the readers'
``union_supports``. The blend is the L2 logistic model of ``lexical.fit_blend``; the cut-off
maximises balanced accuracy (``cutoffs.fit_cutoff``); the band is the narrowest that leaves the
decided sentences at least 0.90 in agreement with the readers (``uncertain.fit_band``). The figures
printed out of fold refit all three on the other folds.

The judge's other question, whether any given passage supports a claim whose citations do not (it
tells ``miscited`` from ``unsupported``), gets a blend of its own (``blend_every_passage``): fitted
the same way on every claim sentence, the model's P of the judge's request with every passage
(from the response cache, else asked) against the readers' ``any_supports``, its intercept shifted
so that the one saved cut-off decides it where its own fitted cut-off would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from importlib.resources import files
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from rag_eval.cache_dirs import cache_root
from rag_eval.calibration.cutoffs import SHIPPED, fit_cutoff, fold_assignment, save
from rag_eval.calibration.lexical import Blend, cited_support, fit_blend, logit
from rag_eval.judges.citations_judge import PROMPT, numbered
from rag_eval.judges.scored import ScoredJudges
from rag_eval.judges.uncertain import fit_band
from rag_eval.llm.session import LLMSession
from rag_eval.llm.settings import LLMConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
import agreement  # noqa: E402  (the study's packets, labels and judge run)

FITTED_ON = "issue 50 study: attrs + 8 corpora (benchmarks/citations, parts tuning and holdout)"
TARGET = 0.90


async def p_every_passage(questions: list[tuple[str, str, list[str]]]) -> list[float | None]:
    """The model's P(yes) of each (question, sentence, passages): is the sentence supported by every
    given passage together? The judge's own request (its prompt, through the response cache)."""
    session = LLMSession(cache_root(), use_cache=True)
    llm = session.llm(LLMConfig(provider="local", repack=True, threads=2), "the citations calibration")
    scored = ScoredJudges.load(llm, None)
    out = []
    try:
        for question, sentence, passages in questions:
            values = {"context": numbered(dict(enumerate(passages))), "question": question, "statement": sentence}
            d = await scored.prompts[PROMPT].ask_with(llm, values)
            out.append(None if d.error else d.p("yes"))
    finally:
        await session.aclose()
    session.close()
    return out


def rows_of(parts: tuple[str, ...]) -> tuple[list[dict], list[dict]]:
    """Each cited claim sentence of the packets of ``parts`` (the model's P by its cited passages,
    the word evidence, the readers' union word), and each claim sentence (the model's P by every
    given passage, the word evidence there, the readers' "any passage" word)."""
    key = json.loads((agreement.DATA / "packet-key.json").read_text())
    packets = [p for p in agreement.packets_all() if key[p["packet_id"]]["part"] in parts]
    labels = agreement.labels_all()
    judged, _ = asyncio.run(agreement.judge_all(packets, 2, model_alone=True))
    cited, every, asks = [], [], []
    for p in packets:
        j, _ = judged[p["packet_id"]]
        contexts = [agreement.passage_text(c)[1] for c in p["contexts"]]
        lab = labels[p["packet_id"]]
        raw = lab.get("sentences") or []
        humans = [agreement.human_sentence(h, s) for h, s in zip(raw, p["sentences"])]
        for r, h, hr in zip((j.details or {}).get("sentences") or [], humans, raw):
            if not (r.get("claim") and h["claim"]):
                continue
            if hr.get("any_supports") is not None:
                words = cited_support(r["sentence"], contexts, list(range(len(contexts))))
                every.append(
                    {"packet_id": p["packet_id"], "features": words.features(), "supported": bool(hr["any_supports"])}
                )
                asks.append((p["question"], r["sentence"], contexts))
            if not r.get("cited") or not h.get("cites") or r.get("p_supported") is None:
                continue
            words = cited_support(r["sentence"], contexts, r["cited"])
            cited.append(
                {
                    "packet_id": p["packet_id"],
                    "part": key[p["packet_id"]]["part"],
                    "p_model": float(r["p_supported"]),
                    "features": words.features(),
                    "supported": bool(h["union"]),
                }
            )
    for row, p in zip(every, asyncio.run(p_every_passage(asks)), strict=True):
        row["p_model"] = p
    return cited, [r for r in every if r["p_model"] is not None]


def fit_all(rows: list[dict]) -> dict:
    """The blend, cut-off and band fitted on ``rows``."""
    y = np.array([r["supported"] for r in rows], bool)
    blend = fit_blend([r["p_model"] for r in rows], [r["features"] for r in rows], list(y), fitted_on=FITTED_ON)
    probs = np.array([blend.p(r["p_model"], r["features"]) for r in rows])
    cut = fit_cutoff(probs, y)
    band = fit_band([[p] for p in probs], y, cut, target=TARGET)
    return {"blend": blend, "cutoff": cut, "band": band}


def out_of_fold(rows: list[dict], folds: int = 5, seed: int = 0, with_band: bool = True) -> dict:
    """Decided agreement and uncertain share with blend, cut-off and band fitted on the other folds
    (``with_band`` False: every case decided at the cut-off)."""
    y = np.array([r["supported"] for r in rows], bool)
    fold_of = fold_assignment(y, folds, seed)
    decided = right = 0
    for f in range(folds):
        train = [rows[i] for i in np.flatnonzero(fold_of != f)]
        fit = fit_all(train)
        for i in np.flatnonzero(fold_of == f):
            p = fit["blend"].p(rows[i]["p_model"], rows[i]["features"])
            if with_band and fit["band"].low <= p < fit["band"].high:
                continue
            decided += 1
            right += (p >= fit["cutoff"]) == y[i]
    return {
        "decided_accuracy": round(right / decided, 4) if decided else None,
        "uncertain_share": round(1 - decided / len(rows), 4),
        "n_decided": decided,
        "n": len(rows),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--save", action="store_true", help="save into the shipped calibration file")
    ap.add_argument("--json", type=Path, help="write the fit and each input's AUC against the readers here")
    args = ap.parse_args(argv)
    rows, every = rows_of(("tuning", "holdout"))
    fit = fit_all(rows)
    band = fit["band"]
    oof = out_of_fold(rows)
    # The question against every passage: its own blend and cut-off, the intercept shifted so that
    # the judge's one cut-off decides it where its own would (no band of its own: the saved band is
    # the recall question's).
    fit_every = fit_all(every)
    b = fit_every["blend"]
    shifted = Blend(
        b.intercept + logit(fit["cutoff"]) - logit(fit_every["cutoff"]), b.model, b.weights, b.fitted_on, b.n
    )
    oof_every = out_of_fold(every, with_band=False)
    entry = {
        "cutoff": fit["cutoff"],
        "fitted_on": FITTED_ON,
        "blend": fit["blend"].to_dict(),
        "band": [band.low, band.high],
        "band_target": TARGET,
        "band_reached": band.reached,
        "band_out_of_fold": oof,
        "blend_every_passage": shifted.to_dict(),
        "every_passage_out_of_fold": oof_every,
        "n": len(rows),
        "sources": ["benchmarks/citations (tuning + holdout), fit_blend.py"],
    }
    y = [r["supported"] for r in rows]
    # How well each input alone separates the readers' yes from no, whatever the cut-off.
    aucs = {"model": round(float(roc_auc_score(y, [r["p_model"] for r in rows])), 4)}
    for name in rows[0]["features"]:
        sign = -1.0 if name == "elsewhere_gap" else 1.0  # more of the words elsewhere: less supported
        aucs[name] = round(float(roc_auc_score(y, [sign * r["features"][name] for r in rows])), 4)
    aucs["blend"] = round(float(roc_auc_score(y, [fit["blend"].p(r["p_model"], r["features"]) for r in rows])), 4)
    ye = [r["supported"] for r in every]
    aucs_every = {
        "model": round(float(roc_auc_score(ye, [r["p_model"] for r in every])), 4),
        "word_share": round(float(roc_auc_score(ye, [r["features"]["word_share"] for r in every])), 4),
        "blend": round(float(roc_auc_score(ye, [shifted.p(r["p_model"], r["features"]) for r in every])), 4),
    }
    result = {
        "command": "python benchmarks/citations/fit_blend.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "sentences": len(rows),
        "readers_supported": sum(y),
        "auc": aucs,
        "every_passage": {"sentences": len(every), "readers_supported": sum(ye), "auc": aucs_every},
        **entry,
    }
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    if args.save:
        session = LLMSession(cache_root(), use_cache=True)
        llm = session.llm(LLMConfig(provider="local", repack=True), "the citations calibration")
        scored = ScoredJudges.load(llm, None)
        path = Path(str(files("rag_eval.calibration").joinpath(SHIPPED)))
        saved = save(llm.identity, "citations", scored.prompt_hash("citations"), entry, path)
        session.close()
        print(f"saved in {saved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
