"""How far the criteria can get on the study's answers, whatever the number of labels (no model run).

Two measurements beside ``criteria_study.py analyse``, both from the judged file and the labels as
they stand:

``ceiling``: each part measured by the criterion adapted as ``rag-eval report --labels F --adapt``
adapts it (``calibration.adaptation.adapt``, method v4) on **every** labelled answer of the other
parts (some 400-500 labels of other corpora, mostly the citing prompt's, instead of 20 of the part
itself) at the criterion's aim: how far labels of other answers take the embedded model's P(pass)
and the word features. Not held out by question (the second and fourth parts share marshmallow's
questions) nor from the method's choice (v4 was chosen on five of the six parts). Writes
``results/result-ceiling.json``.

``curve``: the fourth fresh part with more of its own labels (10 to 60, drawn within it as
``analyse`` draws them, each draw measured on the answers it did not label) at the criteria's aim,
and with 20 labels at lower aims (0.65 to 0.80; a user's ``aim``). Chosen after the part was read:
it says how the figures move, not what a held-out part would give. Writes ``results/result-curve.json``.

``readers``: the fourth fresh part labelled a second time, by three more blind readers
(``data/labels-second/``: the same packets and page, no first label, no judge output), against the
first readers' labels: agreement and Cohen's kappa per criterion, and the v4 figures at 20 labels
drawn within the part (as ``analyse`` draws them, from the first readers) measured against the
second readers and on the answers both readers agree on. Writes ``results/result-readers.json``.

    python benchmarks/criteria/limits.py ceiling
    python benchmarks/criteria/limits.py curve
    python benchmarks/criteria/limits.py readers
"""

from __future__ import annotations

import argparse
import dataclasses
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


CURVE_NS = (10, 20, 30, 40, 50, 60)
CURVE_AIMS = (0.65, 0.70, 0.75, 0.80)


def _at(name: str, rows: list[dict], truth: dict[str, bool], n: int, draws: int) -> dict:
    """v4 with ``n`` labels drawn within ``rows`` (``analyse``'s figures for that n)."""
    before = cs.NS
    cs.NS = (n,)
    try:
        [row] = [r for r in cs._figures_on(name, rows, rows, truth, draws, within=True) if r["how"] == "both"]
    finally:
        cs.NS = before
    keys = ("decided_accuracy_pooled", "uncertain_share", "draws_meeting_target", "measured_on")
    return {"n": n, **{k: row[k] for k in keys}}


def curve(draws: int = 20) -> dict:
    """Per criterion of the target, on the fourth fresh part: the figures with more labels of the
    part (``CURVE_NS``) at the criterion's aim, and with 20 labels at each of ``CURVE_AIMS``."""
    load_config(cs.CONFIG)
    truth_all = cs.labels()
    out: dict = {}
    declared = registered_criteria()
    with criteria_registered(declared):
        rows = [r for r in judged_rows() if r["part"] == "fresh4"]
    for name in ("names_api", "quotes_context"):
        truth = {pid: t[name] for pid, t in truth_all.items()}
        mine = [r for r in rows if r["criterion"] == name]
        with criteria_registered(declared):
            by_n = [_at(name, mine, truth, n, draws) for n in CURVE_NS]
        by_aim = []
        for aim in CURVE_AIMS:
            with criteria_registered({**declared, name: dataclasses.replace(declared[name], aim=aim)}):
                by_aim.append({"aim": aim, **_at(name, mine, truth, 20, draws)})
        for r in (*by_n, *by_aim):
            r["meets_target"] = bool(
                r["decided_accuracy_pooled"] is not None
                and r["decided_accuracy_pooled"] >= cs.TARGET_ACCURACY
                and r["uncertain_share"] <= cs.TARGET_UNCERTAIN
            )
        out[name] = {
            "kind": cs.KIND[name],
            "aim": declared[name].aim,
            "by_labels": by_n,
            "by_aim_at_20": by_aim,
            "fewest_labels_meeting_target": next((r["n"] for r in by_n if r["meets_target"]), None),
            "highest_aim_meeting_target_at_20": max((r["aim"] for r in by_aim if r["meets_target"]), default=None),
            "aims_meeting_target_at_20": sum(r["meets_target"] for r in by_aim),
            "aims_tried": len(by_aim),
        }
    return {
        "command": f"python benchmarks/criteria/limits.py curve --draws {draws}",
        "what": "the fourth fresh part with 10-60 of its own labels at the aim, and 20 labels at aims 0.65-0.80 "
        "(chosen after the part was read: how the figures move, not a held-out figure)",
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
    c = sub.add_parser("curve", help="more labels and lower aims on the fourth fresh part: results/result-curve.json")
    c.add_argument("--draws", type=int, default=20)
    args = parser.parse_args(argv)
    result = (
        ceiling()
        if args.command == "ceiling"
        else readers(args.draws)
        if args.command == "readers"
        else curve(args.draws)
    )
    path = cs.RESULTS / f"result-{args.command}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    for name, c in result["criteria"].items():
        if args.command == "curve":
            for r in (*c["by_labels"], *c["by_aim_at_20"]):
                print(
                    f"{name:15} aim {r.get('aim', c['aim'])} n={r['n']:2}: right {r['decided_accuracy_pooled']:.2f}, "
                    f"uncertain {r['uncertain_share']:.2f}, draws meeting {r['draws_meeting_target']}, "
                    f"measured on {r['measured_on']}"
                )
        elif args.command == "ceiling":
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
