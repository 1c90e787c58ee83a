"""How far can the judges be trusted? Every judge on a hand-labelled set, against the labels.

The set (``data/judge-check/cases.jsonl``) holds cases for the correctness judge (correct,
partial, incorrect), the refusal judge (refused, answered; hedges and short answers included)
and faithfulness (faithful, unfaithful: the Ragas score at or above the threshold counts as
faithful). Reports accuracy with a Wilson interval and Cohen's kappa with a bootstrap interval.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from rag_eval.config import LLMConfig
from rag_eval.data.records import read_records
from rag_eval.errors import DataError, Problem
from rag_eval.stats import Estimate, bootstrap_kappa, wilson_interval

LABELS = {
    "correctness": ("correct", "partial", "incorrect"),
    "refusal": ("refused", "answered"),
    "faithfulness": ("faithful", "unfaithful"),
}
NEEDS = {
    "correctness": ("question", "reference", "answer"),
    "refusal": ("question", "answer"),
    "faithfulness": ("question", "contexts", "answer"),
}


@dataclass
class JudgeScore:
    judge: str
    accuracy: Estimate
    kappa: Estimate
    not_judged: int
    confusion: dict[str, dict[str, int]]


def load_cases(path: Path) -> list[dict]:
    cases, problems = [], []
    for rec in read_records(path, "judge-check"):
        d = rec.data
        judge = d.get("judge")
        if judge not in LABELS:
            problems.append(Problem(rec.where, f"judge must be one of {', '.join(LABELS)}, got {judge!r}", ""))
            continue
        missing = [f for f in NEEDS[judge] if not d.get(f)]
        if missing or d.get("label") not in LABELS[judge]:
            problems.append(
                Problem(
                    rec.where,
                    f"a {judge} case needs {', '.join(NEEDS[judge])} and a label in {LABELS[judge]}",
                    f"missing: {', '.join(missing) or 'label'}",
                )
            )
            continue
        cases.append(d)
    if problems:
        raise DataError(problems)
    return cases


async def _predict(cases: list[dict], llm, prompts_dir: Path, threshold: float, json_schema: bool) -> list:
    from rag_eval.judges.own import load_own_judges
    from rag_eval.judges.ragas_judges import RagasJudges
    from rag_eval.progress import track_async

    own = load_own_judges(prompts_dir, ["correctness", "refusal"])
    ragas = RagasJudges(llm, json_schema=json_schema) if any(c["judge"] == "faithfulness" for c in cases) else None

    async def one(i: int, c: dict):
        if c["judge"] == "faithfulness":
            j = await ragas.judge_faithfulness(c["id"], "check", c["question"], c["answer"], c["contexts"])
            pred = None if j.status != "judged" else ("faithful" if j.score >= threshold else "unfaithful")
        else:
            values = {k: c[k] for k in NEEDS[c["judge"]]}
            j = await own[c["judge"]].judge(
                llm, question_id=c["id"], prompt="check", parse_retries=1, json_schema=json_schema, **values
            )
            pred = j.verdict if j.status == "judged" else None
        return i, pred

    preds: list = [None] * len(cases)
    async for i, pred in track_async([one(i, c) for i, c in enumerate(cases)], "judge check"):
        preds[i] = pred
    return preds


def run_judge_check(
    cases_path: Path, llm_cfg: LLMConfig, cache_dir: Path, prompts_dir: Path, threshold: float = 0.5, seed: int = 0
) -> list[JudgeScore]:
    from rag_eval.llm.session import LLMSession

    cases = load_cases(cases_path)
    session = LLMSession(cache_dir)

    async def main():
        llm = session.llm(llm_cfg, "judge-check --llm")
        try:
            return await _predict(cases, llm, prompts_dir, threshold, llm_cfg.json_schema)
        finally:
            await session.aclose()

    try:
        preds = asyncio.run(main())
    finally:
        session.close()
    scores = []
    for judge in LABELS:
        idx = [i for i, c in enumerate(cases) if c["judge"] == judge]
        if not idx:
            continue
        judged = [i for i in idx if preds[i] is not None]
        labels = [cases[i]["label"] for i in judged]
        predicted = [preds[i] for i in judged]
        confusion = {lab: {p: 0 for p in LABELS[judge]} for lab in LABELS[judge]}
        for lab, p in zip(labels, predicted):
            confusion[lab][p] += 1
        scores.append(
            JudgeScore(
                judge,
                wilson_interval(sum(a == b for a, b in zip(labels, predicted)), len(judged)),
                bootstrap_kappa(labels, predicted, seed=seed),
                len(idx) - len(judged),
                confusion,
            )
        )
    return scores
