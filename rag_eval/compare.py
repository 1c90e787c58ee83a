"""Prompts compared on identical retrieved contexts, question by question, with paired statistics.

Per pair of prompts and per metric, on the questions both prompts have a judged value for:
- ``correctness``: judged correct (1) or not (0), answerable questions with a reference;
- ``refusal_accuracy``: refused (1) or not, unanswerable questions;
- ``no_needless_refusal``: answered (1) or refused (0), answerable questions;
- ``faithfulness``: the Ragas score (continuous);
- ``ok``: the attribution outcome is ``ok`` or ``correct_refusal`` (1) or not.
Binary metrics use the exact sign test on discordant questions (McNemar); faithfulness the
paired permutation test; all with a paired bootstrap interval of the difference and Holm's
correction across metrics and pairs.
"""

from __future__ import annotations

import itertools

import numpy as np

from rag_eval.config import AuditConfig
from rag_eval.errors import DataError, Problem
from rag_eval.stats import Comparison, apply_holm, compare_paired

METRICS = ("correctness", "refusal_accuracy", "no_needless_refusal", "faithfulness", "ok")
BINARY = {"correctness", "refusal_accuracy", "no_needless_refusal", "ok"}


def check_same_contexts(generations: list[dict]) -> None:
    """Every prompt must have seen the same contexts for the same question."""
    seen: dict[str, tuple[str, list[str]]] = {}
    for g in generations:
        first = seen.setdefault(g["question_id"], (g["prompt"], g.get("contexts", [])))
        if first[1] != g.get("contexts", []):
            raise DataError(
                Problem(
                    f"question '{g['question_id']}'",
                    f"prompts '{first[0]}' and '{g['prompt']}' were given different contexts",
                    "a comparison needs one retrieval for every prompt; rerun rag-eval compare",
                )
            )


def per_question_values(report: dict, answerable: dict[str, bool]) -> dict[str, dict[str, dict[str, float]]]:
    """``{metric: {prompt: {question_id: value}}}`` from the judgements and outcomes of a run."""
    values: dict[str, dict[str, dict[str, float]]] = {m: {} for m in METRICS}
    for j in report["judges"]["records"]:
        if j["status"] != "judged":
            continue
        qid, prompt = j["question_id"], j["prompt"]
        if j["judge"] == "correctness":
            values["correctness"].setdefault(prompt, {})[qid] = float(j["verdict"] == "correct")
        elif j["judge"] == "faithfulness":
            values["faithfulness"].setdefault(prompt, {})[qid] = float(j["score"])
        elif j["judge"] == "refusal":
            refused = j["verdict"] == "refused"
            if answerable.get(qid):
                values["no_needless_refusal"].setdefault(prompt, {})[qid] = float(not refused)
            else:
                values["refusal_accuracy"].setdefault(prompt, {})[qid] = float(refused)
    for row in report.get("attribution", {}).get("rows", []):
        if row["outcome"] != "not_judged":
            values["ok"].setdefault(row["prompt"], {})[row["question_id"]] = float(
                row["outcome"] in ("ok", "correct_refusal")
            )
    return values


def compare_prompts(cfg: AuditConfig, report: dict, answerable: dict[str, bool]) -> list[Comparison]:
    """Every metric for every pair of prompts, Holm-corrected together."""
    st = cfg.stats
    values = per_question_values(report, answerable)
    prompts = list(cfg.generation.prompts)
    comparisons = []
    for metric in METRICS:
        for a, b in itertools.combinations(prompts, 2):
            va, vb = values[metric].get(a, {}), values[metric].get(b, {})
            common = sorted(set(va) & set(vb))
            if not common:
                continue
            comparisons.append(
                compare_paired(
                    np.array([va[q] for q in common]),
                    np.array([vb[q] for q in common]),
                    names=(a, b),
                    metric=metric,
                    binary=metric in BINARY,
                    n_resamples=st.permutation_resamples,
                    confidence=st.confidence,
                    seed=st.seed,
                    alpha=st.alpha,
                )
            )
    apply_holm(comparisons, alpha=st.alpha)
    return comparisons


def disagreements(report: dict) -> list[dict]:
    """Questions whose outcome differs between prompts, with every prompt's answer and judges."""
    rows = report.get("attribution", {}).get("rows", [])
    by_q: dict[str, list[dict]] = {}
    for r in rows:
        by_q.setdefault(r["question_id"], []).append(r)
    return [
        {
            "question_id": q,
            "question": rs[0]["question"],
            "answers": {
                r["prompt"]: {"outcome": r["outcome"], "answer": r["answer"], "why": r["why"], "judges": r["judges"]}
                for r in rs
            },
        }
        for q, rs in by_q.items()
        if len({r["outcome"] for r in rs}) > 1
    ]


def comparison_section(cfg: AuditConfig, report: dict, answerable: dict[str, bool]) -> dict:
    comps = compare_prompts(cfg, report, answerable)
    return {"comparisons": [c.to_dict() for c in comps], "disagreements": disagreements(report)}
