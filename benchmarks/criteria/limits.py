"""How far the criteria can get on the study's answers, whatever the number of labels (no model run).

Two measurements beside ``criteria_study.py analyse``, both from the judged file and the labels as
they stand:

``ceiling``: each part measured by the criterion adapted as ``rag-eval report --labels F --adapt``
adapts it (``calibration.adaptation.adapt``, method v4) on **every** labelled answer of the other
parts (some 400-500 labels instead of 20): what the embedded model's P(pass) and the word features
can reach on answers they were not fitted to, at the criterion's aim. No method is chosen on it; it
says whether more labels could meet issue 48's target. Writes ``results/result-ceiling.json``.

``readers``: the fourth fresh part labelled a second time, by three more blind readers
(``data/labels-second/``: the same packets and page, no first label, no judge output), against the
first readers' labels: agreement and Cohen's kappa per criterion, and the v4 figures at 20 labels
drawn within the part (as ``analyse`` draws them, from the first readers) measured against the
second readers and on the answers both readers agree on. Writes ``results/result-readers.json``.

    python benchmarks/criteria/limits.py ceiling
    python benchmarks/criteria/limits.py readers
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import criteria_study as cs  # noqa: E402

from rag_eval.calibration.adaptation import adapt  # noqa: E402
from rag_eval.config import load_config  # noqa: E402
from rag_eval.judges.registry import criteria as registered_criteria  # noqa: E402
from rag_eval.judges.registry import criteria_registered  # noqa: E402
from rag_eval.stats import wilson_interval  # noqa: E402

SECOND = cs.DATA / "labels-second"
PART_ORDER = ("calibration", "heldout", "fresh", "fresh2", "fresh3", "fresh4")


def judged_rows() -> list[dict]:
    """Every judged decision with a label: its criterion, P(pass), word features, corpus and part."""
    judged = cs._jsonl(cs.JUDGED)
    cs._features(judged)
    key = cs.packet_key()
    truth = cs.labels()
    every = {**cs.PARTS, **cs.FRESH, **cs.FRESH2}
    fresh3 = set(json.loads(cs.FRESH3_KEY.read_text()))
    fresh4 = set(json.loads(cs.FRESH4_KEY.read_text()))
    rows = []
    for r in judged:
        pid = r["packet_id"]
        if r["p_pass"] is None or pid not in truth:
            continue
        corpus = cs._corpus(pid, key)
        part = "fresh3" if pid in fresh3 else "fresh4" if pid in fresh4 else every[corpus]
        rows.append({**r, "corpus": corpus, "part": part, "question": f"{corpus}/{key[pid].split('/')[-1]}"})
    return rows


def _share(right: int, decided: int, total: int) -> dict:
    acc = wilson_interval(right, decided) if decided else None
    return {
        "answers": total,
        "decided": decided,
        "decided_accuracy": right / decided if decided else None,
        "decided_accuracy_ci": [acc.ci_low, acc.ci_high] if acc else None,
        "uncertain_share": 1 - decided / total if total else None,
        "meets_target": bool(
            decided and right / decided >= cs.TARGET_ACCURACY and 1 - decided / total <= cs.TARGET_UNCERTAIN
        ),
    }


def ceiling() -> dict:
    """Per criterion and part: the criterion adapted on every labelled answer of the other parts,
    measured on this part (decided right, uncertain share, the features weighed, the decided
    probability's AUC); and every part's counts pooled."""
    load_config(cs.CONFIG)
    truth_all = cs.labels()
    out: dict = {}
    with criteria_registered(registered_criteria()):
        rows = judged_rows()
        for name in cs.CRITERIA:
            truth = {pid: t[name] for pid, t in truth_all.items()}
            mine = [r for r in rows if r["criterion"] == name]
            per_part, pooled = {}, np.zeros(3, int)
            for part in PART_ORDER:
                test = [r for r in mine if r["part"] == part]
                train = [cs._item(r, truth[r["packet_id"]]) for r in mine if r["part"] != part]
                if not test:
                    continue
                d = adapt(cs.SHIPPED, train, "both", judge=name)
                right, decided, total = cs.evaluate(d, test, truth)
                pooled += (right, decided, total)
                decided_p = [{**r, "p_pass": d.probs(cs._item(r))[0]} for r in test]
                per_part[part] = {
                    **_share(right, decided, total),
                    "labels": len(train),
                    "features": (d.notes or {}).get("features") or [],
                    "auc_model": cs._auc(test, truth),
                    "auc_decided": cs._auc(decided_p, truth),
                }
            out[name] = {
                "kind": cs.KIND[name],
                "parts": per_part,
                "pooled": _share(*(int(x) for x in pooled)),
                "parts_measured": len(per_part),
                "parts_meeting_target": sum(f["meets_target"] for f in per_part.values()),
            }
    return {
        "command": "python benchmarks/criteria/limits.py ceiling",
        "what": "each part measured by the criterion adapted (method v4, at its aim) on every labelled answer "
        "of the other parts",
        "targets": {"decided_accuracy": cs.TARGET_ACCURACY, "uncertain_share": cs.TARGET_UNCERTAIN},
        "criteria": out,
        "analysed": {"machine": cs.machine(), "commit": cs.commit()},
    }


def second_labels() -> dict[str, dict[str, bool]]:
    """The second readers' labels of the fourth fresh part, by packet."""
    found: dict[str, dict[str, bool]] = {}
    for path in sorted(SECOND.glob("labels-*.jsonl")):
        for r in cs._jsonl(path):
            found[r["packet_id"]] = {c: str(r[c]).strip().lower() == "yes" for c in cs.CRITERIA}
    return found


def kappa(a: list[bool], b: list[bool]) -> float | None:
    """Cohen's kappa of two readers' yes/no labels of the same answers."""
    x, y = np.array(a, bool), np.array(b, bool)
    observed = float(np.mean(x == y))
    chance = float(x.mean() * y.mean() + (1 - x.mean()) * (1 - y.mean()))
    return None if chance == 1 else (observed - chance) / (1 - chance)


def _figures_against(name: str, rows: list[dict], first: dict, other: dict, draws: int) -> dict:
    """v4 at 20 labels drawn within ``rows`` from the first readers' labels (as ``analyse`` draws
    them), each draw measured on the answers it did not label against ``other``'s labels (those
    ``other`` holds)."""
    counts = []
    for d in range(draws):
        chosen = cs.draw(rows, 20, seed=[48, 20, d])
        items = [cs._item(r, first[r["packet_id"]]) for r in rows if r["packet_id"] in chosen]
        decider = adapt(cs.SHIPPED, items, "both", judge=name)
        measured = [r for r in rows if r["packet_id"] not in chosen and r["packet_id"] in other]
        counts.append(cs.evaluate(decider, measured, other))
    return cs._figures(counts)


def readers(draws: int = 20) -> dict:
    """Agreement of the two readings of the fourth fresh part, and the v4 figures against each."""
    load_config(cs.CONFIG)
    first_all, second_all = cs.labels(), second_labels()
    if not second_all:
        raise SystemExit(f"no second reading yet: {SECOND.relative_to(cs.ROOT)} holds no labels file")
    out: dict = {}
    with criteria_registered(registered_criteria()):
        rows = [r for r in judged_rows() if r["part"] == "fresh4"]
        for name in cs.CRITERIA:
            mine = [r for r in rows if r["criterion"] == name]
            both = [r["packet_id"] for r in mine if r["packet_id"] in second_all]
            first = {pid: first_all[pid][name] for pid in first_all}
            second = {pid: second_all[pid][name] for pid in second_all}
            a, b = [first[p] for p in both], [second[p] for p in both]
            agreed = {p: first[p] for p in both if first[p] == second[p]}
            out[name] = {
                "kind": cs.KIND[name],
                "answers": len(both),
                "agreement": float(np.mean(np.array(a) == np.array(b))) if both else None,
                "kappa": kappa(a, b) if both else None,
                "pass_share_first": float(np.mean(a)) if both else None,
                "pass_share_second": float(np.mean(b)) if both else None,
                "agreed_answers": len(agreed),
                "at_20_first": _figures_against(name, mine, first, first, draws),
                "at_20_second": _figures_against(name, mine, first, second, draws),
                "at_20_agreed": _figures_against(name, mine, first, agreed, draws),
            }
    return {
        "command": f"python benchmarks/criteria/limits.py readers --draws {draws}",
        "what": "the fourth fresh part read twice, blind: agreement per criterion, and v4 with 20 labels drawn from "
        "the first reading, measured against the first, the second, and where both agree",
        "second_readers": sorted(p.name for p in SECOND.glob("labels-*.jsonl")),
        "criteria": out,
        "analysed": {"machine": cs.machine(), "commit": cs.commit()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("ceiling", help="every other part's labels: results/result-ceiling.json")
    r = sub.add_parser("readers", help="the fourth fresh part read twice: results/result-readers.json")
    r.add_argument("--draws", type=int, default=20)
    args = parser.parse_args(argv)
    result = ceiling() if args.command == "ceiling" else readers(args.draws)
    path = cs.RESULTS / f"result-{args.command}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    for name, c in result["criteria"].items():
        if args.command == "ceiling":
            for part, f in c["parts"].items():
                acc = f["decided_accuracy"]
                print(
                    f"{name:15} {part:12} labels {f['labels']:3}: decided right "
                    f"{'-' if acc is None else f'{acc:.2f}'}, uncertain {f['uncertain_share']:.2f}, "
                    f"AUC model {f['auc_model'] or float('nan'):.2f} decided {f['auc_decided'] or float('nan'):.2f}, "
                    f"features {','.join(f['features']) or '-'}"
                )
        else:
            print(
                f"{name:15} agreement {c['agreement']:.2f} kappa {c['kappa']:.2f} on {c['answers']}; at 20: "
                + ", ".join(
                    f"{k[6:]} {c[k]['decided_accuracy_pooled'] or float('nan'):.2f} right, "
                    f"{c[k]['uncertain_share']:.2f} uncertain"
                    for k in ("at_20_first", "at_20_second", "at_20_agreed")
                )
            )
    print(f"wrote {path.relative_to(cs.ROOT)}")


if __name__ == "__main__":
    main()
