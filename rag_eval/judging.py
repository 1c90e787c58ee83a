"""The judging stage: every configured judge on every generated answer, recorded as it completes.

Applicability: correctness needs an answerable question with a reference; context precision and
recall need a reference; faithfulness runs only on answers the refusal judge did not call a
refusal. A judge that fails gives ``not_judged`` with its error; what does not apply is
``skipped`` with the reason. A rerun skips what is already in ``judgements.jsonl``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np

from rag_eval.config import AuditConfig
from rag_eval.judges.base import Judgement
from rag_eval.progress import track_async
from rag_eval.stats import Estimate, bootstrap_mean, wilson_interval
from rag_eval.types import Corpus, Question


def read_judgements(path: Path) -> dict[tuple[str, str, str], dict]:
    """Finished judgements keyed by (judge, question id, prompt); not_judged ones are retried."""
    from rag_eval.rundir import read_jsonl

    return {(r["judge"], r["question_id"], r["prompt"]): r for r in read_jsonl(path) if r["status"] != "not_judged"}


def _contexts(corpus: Corpus, ids: list[str], max_chars: int) -> list[str]:
    out = []
    for cid in ids:
        c = corpus.chunks[corpus.index[cid]] if cid in corpus.index else None
        text = c.text if c else cid
        out.append(text if len(text) <= max_chars else text[:max_chars])
    return out


async def judge_answer(
    cfg: AuditConfig,
    q: Question,
    gen: dict,
    contexts: list[str],
    llm,
    own: dict,
    ragas,
    done: dict,
    emit=lambda j: None,
) -> list[Judgement | dict]:
    """Every judge's verdict on one answer, in dependency order (refusal before faithfulness)."""
    metrics = cfg.judges.metrics
    jc = cfg.judges
    qid, prompt = q.id, gen["prompt"]
    out: list[Judgement | dict] = []

    def own_judge(name: str, **values: str):
        return lambda: own[name].judge(
            llm,
            question_id=qid,
            prompt=prompt,
            parse_retries=jc.parse_retries,
            json_schema=jc.llm.json_schema,
            **values,
        )

    def skip(name: str, why: str) -> Judgement:
        if (name, qid, prompt) in done:
            return done[(name, qid, prompt)]
        j = Judgement(name, qid, prompt, "skipped", reason=why)
        emit(j)
        return j

    async def run(name: str, make) -> Judgement | dict:
        if (name, qid, prompt) in done:
            return done[(name, qid, prompt)]
        result = await make()
        emit(result)
        return result

    answer = gen.get("answer")
    if gen.get("error") is not None or not answer:
        why = f"no answer to judge: {gen.get('error') or 'the answer is empty'}"
        failed = [Judgement(m, qid, prompt, "not_judged", error=why) for m in metrics]
        for j in failed:
            emit(j)
        return failed

    refused = None
    if "refusal" in metrics:
        r = await run("refusal", own_judge("refusal", question=q.question, answer=answer))
        out.append(r)
        status = r["status"] if isinstance(r, dict) else r.status
        verdict = r["verdict"] if isinstance(r, dict) else r.verdict
        refused = verdict == "refused" if status == "judged" else None

    tasks = []
    if "faithfulness" in metrics:
        if refused:
            out.append(skip("faithfulness", "the answer is a refusal"))
        else:
            tasks.append(
                run("faithfulness", lambda: ragas.judge_faithfulness(qid, prompt, q.question, answer, contexts))
            )
    if "correctness" in metrics:
        if not q.answerable or not q.reference:
            out.append(skip("correctness", "unanswerable question" if not q.answerable else "no reference answer"))
        else:
            tasks.append(
                run("correctness", own_judge("correctness", question=q.question, reference=q.reference, answer=answer))
            )
    for name, fn in (("context_precision", "judge_context_precision"), ("context_recall", "judge_context_recall")):
        if name in metrics:
            if not q.reference:
                out.append(skip(name, "no reference answer"))
            else:
                tasks.append(
                    run(name, lambda fn=fn: getattr(ragas, fn)(qid, prompt, q.question, q.reference, contexts))
                )
    out += await asyncio.gather(*tasks)
    return out


async def judge_all(
    cfg: AuditConfig, corpus: Corpus, questions: list[Question], generations: list[dict], llm, out: Path
) -> list[dict]:
    """Judgements for every generation record, appended to ``out`` as each answer's are complete."""
    from rag_eval.judges.own import load_own_judges
    from rag_eval.judges.ragas_judges import RagasJudges

    jc = cfg.judges
    own = load_own_judges(cfg.resolve_path(jc.prompts_dir), jc.metrics)
    needs_ragas = {"faithfulness", "context_precision", "context_recall"} & set(jc.metrics)
    ragas = RagasJudges(llm, json_schema=jc.llm.json_schema) if needs_ragas else None
    done = read_judgements(out)
    by_id = {q.id: q for q in questions}
    max_chars = cfg.generation.max_context_chars if cfg.generation else 2000
    records = []
    # Questions are judged a few at a time (as many as the model serves at once), so that each
    # question finishes early and a killed run loses little; each verdict is written as it comes.
    gate = asyncio.Semaphore(llm.cfg.concurrency)
    with out.open("a", encoding="utf-8") as fh:

        def emit(j: Judgement | dict) -> None:
            rec = j if isinstance(j, dict) else j.to_dict()
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            fh.flush()

        async def one(g: dict) -> list:
            async with gate:
                contexts = _contexts(corpus, g["contexts"], max_chars)
                return await judge_answer(cfg, by_id[g["question_id"]], g, contexts, llm, own, ragas, done, emit)

        jobs = [one(g) for g in generations if g["question_id"] in by_id]
        async for batch in track_async(jobs, "judging answers"):
            records += [j if isinstance(j, dict) else j.to_dict() for j in batch]
    return records


def run_judging(
    cfg: AuditConfig, corpus: Corpus, questions: list[Question], generations: list[dict], session, run_dir: Path
) -> list[dict]:
    async def main() -> list[dict]:
        llm = session.llm(cfg.judges.llm, cfg.where("judges.llm"))
        try:
            return await judge_all(cfg, corpus, questions, generations, llm, run_dir / "judgements.jsonl")
        finally:
            await session.aclose()

    return asyncio.run(main())


def aggregate(cfg: AuditConfig, questions: list[Question], judgements: list[dict]) -> dict[str, dict[str, dict]]:
    """``{prompt: {metric: {value, ci_low, ci_high, n, n_not_judged}}}``; not-judged never enter a mean.

    Scores (faithfulness, context precision and recall) are means with bootstrap intervals;
    ``correctness`` is the share judged correct and ``refusal_accuracy`` the share of unanswerable
    questions refused, ``needless_refusal`` the share of answerable ones refused (Wilson intervals).
    """
    st = cfg.stats
    answerable = {q.id: q.answerable for q in questions}
    out: dict[str, dict[str, dict]] = {}
    for prompt in sorted({j["prompt"] for j in judgements}):
        mine = [j for j in judgements if j["prompt"] == prompt]
        figs: dict[str, dict] = {}
        for name in ("faithfulness", "context_precision", "context_recall"):
            rows = [j for j in mine if j["judge"] == name]
            if not rows:
                continue
            scores = np.array([j["score"] for j in rows if j["status"] == "judged"], dtype=float)
            est = bootstrap_mean(scores, n_resamples=st.bootstrap_resamples, confidence=st.confidence, seed=st.seed)
            figs[name] = _with_excluded(est, rows)
        rows = [j for j in mine if j["judge"] == "correctness"]
        if rows:
            judged = [j for j in rows if j["status"] == "judged"]
            est = wilson_interval(sum(j["verdict"] == "correct" for j in judged), len(judged), confidence=st.confidence)
            figs["correctness"] = _with_excluded(est, rows)
        rows = [j for j in mine if j["judge"] == "refusal"]
        for key, want in (("refusal_accuracy", False), ("needless_refusal", True)):
            part = [j for j in rows if answerable.get(j["question_id"]) is want]
            if part:
                judged = [j for j in part if j["status"] == "judged"]
                est = wilson_interval(
                    sum(j["verdict"] == "refused" for j in judged), len(judged), confidence=st.confidence
                )
                figs[key] = _with_excluded(est, part)
        out[prompt] = figs
    return out


def _with_excluded(est: Estimate, rows: list[dict]) -> dict:
    return {**est.to_dict(), "n_not_judged": sum(j["status"] == "not_judged" for j in rows)}
