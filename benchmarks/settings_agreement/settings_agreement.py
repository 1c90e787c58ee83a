"""Do the judges decide the same under other server settings? (issue 25 item 4)

    python benchmarks/settings_agreement/settings_agreement.py [--set repack=false] [--cases hand,reporting] [--json F]

Kernels change numerics: a setting that makes the embedded server faster may move a probability
across its cut-off. Each own judge (refusal, correctness, faithfulness_yesno) is run on labelled
cases under today's defaults and under the changed settings (``--set KEY=VALUE``, the ``llm:``
options of ``provider: local``), with the shipped cut-offs, blends and bands, through the response
cache (a setting is part of the cache identity, so each side's requests are its own). Printed per
judge: how many decisions agree (a faithfulness decision is the answer's faithful / unfaithful; an
uncertain one is its own decision), the largest probability shift, and each side's agreement with
the labels. Target: agreement >= 0.97.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np

from rag_eval import progress
from rag_eval.cache_dirs import cache_root
from rag_eval.calibration.cutoffs import cutoffs_for
from rag_eval.judges.judge_check import kind_of, load_cases, predict
from rag_eval.judges.registry import FAITHFUL_SHARE, JUDGES
from rag_eval.judges.uncertain import bands_for, case_status
from rag_eval.llm.settings import LLMConfig

ROOT = Path(__file__).resolve().parents[2]
CASES = {
    "hand": ROOT / "data" / "judge-check" / "cases.jsonl",
    "reporting": ROOT / "benchmarks" / "real_answers" / "data" / "cases-reporting.jsonl",
    "tuning": ROOT / "benchmarks" / "real_answers" / "data" / "cases-tuning.jsonl",
}
OWN = ("refusal", "correctness", "faithfulness_yesno")


def _value(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text)
    except ValueError:
        return text


def decisions(name: str, cases: list[dict], preds: list, cutoffs: dict, bands: dict) -> list[tuple[str, float] | None]:
    """Per case: (decision, score) with the shipped cut-offs and bands; None where not judged."""
    out = []
    for c, p in zip(cases, preds, strict=True):
        if c["judge"] != kind_of(name) or p.error is not None:
            out.append(None)
            continue
        v = p.variant or name
        probs = np.asarray(p.probs, float)
        cut = cutoffs.get(v, 0.5)
        if JUDGES[name].check.reading == "statements":
            positive = bool(np.mean(probs >= cut) >= FAITHFUL_SHARE - 1e-9)
        else:
            positive = bool(probs[0] >= cut)
        band = bands.get(v)
        if band is not None and case_status(probs, band[0], band[1], FAITHFUL_SHARE)[0]:
            out.append(("uncertain", float(probs.min())))
        else:
            out.append(("yes" if positive else "no", float(probs.min())))
    return out


def totals(rows: dict) -> dict:
    """The decisions compared over every judge: how many, how many the same, and the share."""
    n = sum(r["n"] for r in rows.values())
    same = sum(r["same"] for r in rows.values())
    return {"n_total": n, "same_total": same, "agreement_total": same / n if n else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE of the changed settings (repeatable)")
    ap.add_argument("--cases", default="hand,reporting")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--add-totals", metavar="FILE", help="add the totals over the judges to a written result; no model")
    args = ap.parse_args()
    if args.add_totals:
        path = Path(args.add_totals)
        result = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps({**result, **totals(result["rows"])}, indent=1))
        return
    progress.set_enabled(True)
    changed = dict(kv.split("=", 1) for kv in args.set or ["repack=false"])
    changed = {k: _value(v) for k, v in changed.items()}
    cases = [c for part in args.cases.split(",") for c in load_cases(CASES[part])]
    # The baseline is the layout the shipped calibration was fitted under (repacked weights), not
    # the machine's probed default (``repack: auto``).
    before_cfg = LLMConfig(provider="local", repack=True)
    after_cfg = LLMConfig(provider="local", **{"repack": True, **changed})
    before, _, identity, scored = predict(cases, before_cfg, cache_root(), None, list(OWN))
    after, usage, identity_after, _ = predict(cases, after_cfg, cache_root(), None, list(OWN))
    cut_table, _ = cutoffs_for(identity, scored, {})
    bands, _ = bands_for(identity, scored, "auto", judges=list(OWN))
    band_table = {v: (b.low, b.high) for v, b in bands.items()}
    print(
        f"\nbefore: {identity}\nafter:  {identity_after}\n{len(cases)} cases; {sum(u['calls'] for u in usage)} requests sent for the changed settings"
    )
    rows = {}
    for name in OWN:
        a = decisions(name, cases, before[name], cut_table, band_table)
        b = decisions(name, cases, after[name], cut_table, band_table)
        both = [(x, y, c) for x, y, c in zip(a, b, cases, strict=True) if x is not None and y is not None]
        same = sum(x[0] == y[0] for x, y, _ in both)
        shift = max((abs(x[1] - y[1]) for x, y, _ in both), default=0.0)
        pos = JUDGES[name].check.kind.positive

        def right(side, both=both, pos=pos):
            dec = [(d, c) for d, c in ((t[side], t[2]) for t in both) if d[0] != "uncertain"]
            return sum((d[0] == "yes") == (c["label"] == pos) for d, c in dec), len(dec)

        rows[name] = {
            "n": len(both),
            "same": same,
            "agreement": same / len(both) if both else None,
            "largest_shift": shift,
            "labels_before": right(0),
            "labels_after": right(1),
            "differing": [c["id"] for x, y, c in both if x[0] != y[0]],
            # How each differing decision moved: into or out of the uncertain band, or across the cut-off.
            "moves": dict(Counter(f"{x[0]}->{y[0]}" for x, y, _ in both if x[0] != y[0])),
        }
        r = rows[name]
        print(
            f"{name:<20} decisions agree {same}/{len(both)} ({r['agreement']:.3f}); largest shift in P {shift:.3f}; "
            f"agree with labels before {r['labels_before'][0]}/{r['labels_before'][1]}, after {r['labels_after'][0]}/{r['labels_after'][1]}"
            + (f"; moved: {', '.join(f'{k} {v}' for k, v in sorted(r['moves'].items()))}" if r["moves"] else "")
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"changed": changed, "rows": rows, **totals(rows)}, indent=1))


if __name__ == "__main__":
    main()
