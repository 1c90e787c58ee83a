"""Building the report (``report.records.Report``) from the stages' results: the one builder of
every audit (the config's, a deployed system's, supplied answers, traces), and summary.json."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from rag_eval.answers.answer_records import OWN_CONTEXTS, Answer, GenerationSection, PromptCounts
from rag_eval.attribution import GENERATION_FAILURES, OUTCOMES, RETRIEVAL_FAILURES, attribute, failed_criteria
from rag_eval.attribution.records import (
    AttributionRow,
    AttributionSection,
    ContextMark,
    FailureSplit,
    JudgeBrief,
    OutcomeShare,
)
from rag_eval.base_records import Figure, Model, Num, PairedComparison, required
from rag_eval.calibration.lexical import Blend
from rag_eval.config import AuditConfig
from rag_eval.data.testset import normalise
from rag_eval.judges.criteria import half_width_for, labels_for
from rag_eval.judges.judge_records import CriterionSection, EscalationSection, JudgesSection, JudgingInfo
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.judging import AdaptationNote, JudgedFigures
from rag_eval.judges.registry import FAITHFUL_SHARE
from rag_eval.llm.usage import Usage
from rag_eval.report.quotes import row_evidence
from rag_eval.report.report_records import CorpusInfo, LintFinding, Report, Summary, SuppliedInfo, TestSetInfo
from rag_eval.retrievers.diagnosis import CAUSES
from rag_eval.retrievers.retrieval_records import Miss, RetrievalSection, SimulatedFix
from rag_eval.retrievers.stage import RetrievalResults
from rag_eval.stats import bootstrap_mean, weighted_share
from rag_eval.types import Corpus, Question
from rag_eval.version import __version__

# Whether a question's answer was given a relevant context, and why not (None: the default why).
Retrieved = Callable[[Question], tuple[bool, str | None]]


def table_metrics(ks: list[int]) -> list[str]:
    """The headline columns: hit@1, hit@5, hit@10 (those measured), MRR, nDCG at the largest k."""
    hits = [f"hit@{k}" for k in ks if k in (1, 5, 10)] or [f"hit@{k}" for k in ks]
    return hits + ["mrr", f"ndcg@{10 if 10 in ks else max(ks)}"]


def retrieval_section(
    cfg: AuditConfig, res: RetrievalResults, corpus: Corpus, diagnoses: dict | None = None
) -> RetrievalSection:
    """Figures, comparisons and misses (with their diagnosed causes) of the retrieval stage."""
    diagnoses = diagnoses or {}
    misses: dict[str, list[Miss]] = {}
    for name, r in res.retrievers.items():
        rows = []
        for i, q in enumerate(res.questions):
            if not res.is_miss(name, i):
                continue
            found = diagnoses.get(name, {})
            rows.append(
                Miss(
                    question_id=q.id,
                    question=q.question,
                    rank=r.first_rank[i],
                    relevant=[cid for cid, g in q.qrels.items() if g > 0],
                    top=r.rankings.ids(corpus, i)[: res.miss_k],
                    **({"diagnosis": found[i].to_dict()} if i in found else {}),
                )
            )
        misses[name] = rows
    names = [s.name for s in res.metrics]
    hist = {name: rank_histogram([r.first_rank[i] for i in res.answerable]) for name, r in res.retrievers.items()}
    return RetrievalSection(
        simulated_fixes=[SimulatedFix.load(f) for f in res.simulated_fixes],
        index_notes={n: r.rankings.notes for n, r in res.retrievers.items() if r.rankings.notes},
        rank_histogram=hist,
        metrics=names,
        table=[m for m in table_metrics(cfg.retrieval.k) if m in names],
        miss_k=res.miss_k,
        retrievers={
            n: {m: Figure.load(e.to_dict()) for m, e in r.aggregates.items()} for n, r in res.retrievers.items()
        },
        comparisons=[PairedComparison.load(c.to_dict()) for c in res.comparisons],
        misses=misses,
    )


RANK_BUCKETS = ("1", "2", "3", "4", "5", "6-10", "11-20", "21-100", ">100 or none")


def rank_histogram(ranks: list[int | None]) -> dict[str, int]:
    """Answerable questions by the rank of their first relevant chunk."""
    out = dict.fromkeys(RANK_BUCKETS, 0)
    for r in ranks:
        key = (
            str(r)
            if r is not None and r <= 5
            else "6-10"
            if r is not None and r <= 10
            else "11-20"
            if r is not None and r <= 20
            else "21-100"
            if r is not None and r <= 100
            else ">100 or none"
        )
        out[key] += 1
    return out


def _header(cfg: AuditConfig) -> dict:
    return {
        "name": cfg.name,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "rag_eval_version": __version__,
    }


def build_report(
    cfg: AuditConfig,
    corpus: Corpus,
    res: RetrievalResults,
    *,
    test_set_path: str,
    findings: list | None = None,
    diagnoses: dict | None = None,
) -> Report:
    """The report of the retrieval stage; the later stages add their sections to it."""
    n_ans = len(res.answerable)
    return Report(
        **_header(cfg),
        corpus=CorpusInfo(source=corpus.source, chunks=len(corpus), fingerprint=corpus.fingerprint()[:16]),
        test_set=TestSetInfo(
            path=test_set_path,
            questions=len(res.questions),
            answerable=n_ans,
            unanswerable=len(res.questions) - n_ans,
        ),
        lint=[LintFinding.load(f.to_dict()) for f in findings or []],
        retrieval=retrieval_section(cfg, res, corpus, diagnoses),
    )


def supplied_report(cfg: AuditConfig, answers: int, recall_judge: str | None) -> Report:
    """The report of answers judged without retrieval labels; judging adds its sections to it."""
    note = (
        "no retrieval labels: a retrieval miss means the context-recall judge found the reference "
        "missing from the contexts"
        if recall_judge
        else "no retrieval labels and no context-recall judge: retrieval misses cannot be told apart"
    )
    return Report(**_header(cfg), supplied=SuppliedInfo(answers=answers, retrieval_decided_by=recall_judge, note=note))


def generation_section(
    cfg: AuditConfig,
    records: Sequence[Answer | dict[str, Any]],
    n_selected: int,
    usage: list[dict[str, Any]],
    n_total: int | None = None,
) -> GenerationSection:
    """Answers per prompt, failures, and model usage."""
    g = cfg.generation
    assert g is not None  # answers exist only where the config generates them (or a system answers)
    n_total = n_selected if n_total is None else n_total
    answers = [Answer.load(r) for r in records]
    prompts = {}
    for name in {r.prompt for r in answers} | set(g.prompts if not g.answers else []):
        mine = [r for r in answers if r.prompt == name]
        prompts[name] = PromptCounts(
            answered=sum(not r.failed for r in mine),
            failed=sum(r.failed for r in mine),
            prompt_hash=next((r.prompt_hash for r in mine), None),
        )
    return GenerationSection(
        retriever=g.retriever,
        top_k=g.top_k,
        questions=n_selected,
        sampled=n_selected < n_total,
        prompts=prompts,
        usage=[Usage.load(u) for u in usage],
        records=answers,
    )


def retrieved_in_top_k(cfg: AuditConfig, res: RetrievalResults) -> Retrieved:
    """A relevant chunk among the contexts given to the generator (its retriever's top k).
    A question outside the retrieval results (a deployed system that failed it) counts as
    retrieved, so its failed answer decides: not_judged."""
    g = cfg.generation
    assert g is not None  # the generator's retriever and k decide
    index = {q.id: i for i, q in enumerate(res.questions)}
    first = res.retrievers[g.retriever].first_rank
    top_k = g.top_k

    def retrieved(q: Question) -> tuple[bool, str | None]:
        i = index.get(q.id)
        if i is None:
            return True, None
        rank = first[i]
        return rank is not None and rank <= top_k, None

    return retrieved


def retrieved_by_recall(recall: str | None, judgements: list[Judgement]) -> Retrieved:
    """With no retrieval labels, a question's contexts missed when the context-recall judge
    ``recall`` found the reference absent from them (score under 0.5); why, with its reason."""
    verdicts = {j.question_id: j for j in judgements if j.judge == recall}

    def retrieved(q: Question) -> tuple[bool, str | None]:
        rj = verdicts.get(q.id)
        if rj and rj.status == "judged" and rj.score is not None and rj.score < 0.5:
            return False, f"{recall} {rj.score:.2f} < 0.5: the contexts do not hold the reference ({rj.reason or ''})"
        return True, None

    return retrieved


def attribution_section(
    cfg: AuditConfig,
    questions: list[Question],
    generations: list[Answer],
    judgements: list[Judgement],
    retrieved: Retrieved,
) -> AttributionSection:
    """Outcome per question and prompt, shares with Wilson intervals (weighted under a sample), the
    failure split, and the rows behind them. ``retrieved`` says whether a question's answer had a
    relevant context (and, where it did not, why)."""
    threshold = cfg.judges.faithfulness_threshold if cfg.judges else FAITHFUL_SHARE
    deciding = cfg.judges.deciding_faithfulness if cfg.judges else None
    by_id = {q.id: q for q in questions}
    by_answer: dict[tuple[str, str], dict[str, Judgement]] = {}
    for j in judgements:
        by_answer.setdefault((j.question_id, j.prompt), {})[j.judge] = j
    generations = [Answer.load(g) for g in generations]
    rows, shares, split = [], {}, {}
    for prompt in sorted({g.prompt for g in generations}):
        outcomes, weights = [], []
        for gen in (g for g in generations if g.prompt == prompt):
            q = by_id[gen.question_id]
            weights.append(1.0 if gen.weight is None else gen.weight)
            js = by_answer.get((q.id, prompt), {})
            got, miss_why = retrieved(q)
            relevant = {cid for cid, grade in q.qrels.items() if grade > 0}
            if gen.retriever == OWN_CONTEXTS and q.answerable and relevant:
                # The user's system retrieved these contexts: they, not a configured retriever, hold
                # the relevant passage or not (user trial 4 F12). A passage of its own (no chunk of the
                # corpus) is relevant where it holds an evidence quote, as a deployed system's is.
                got = own_contexts_hold(q, gen.contexts, relevant)
                miss_why = None if got else "no relevant passage among the contexts the answers file gives"
            outcome, why = attribute(
                q,
                got,
                gen,
                js,
                faithfulness_threshold=threshold,
                faithfulness_judge=deciding,
            )
            if outcome == "retrieval_miss" and miss_why:
                why = miss_why
            outcomes.append(outcome)
            rows.append(
                AttributionRow(
                    question_id=q.id,
                    question=q.question,
                    prompt=prompt,
                    outcome=outcome,
                    why=why,
                    answerable=q.answerable,
                    reference=q.reference,
                    contexts=[ContextMark(id=cid, relevant=cid in relevant) for cid in gen.contexts],
                    answer=gen.answer,
                    judges={name: judge_brief(j) for name, j in js.items()},
                    **({"failed_criteria": failed} if (failed := failed_criteria(js)) else {}),
                )
            )
        shares[prompt], split[prompt] = outcome_shares(outcomes, weights, cfg.stats.confidence)
    return AttributionSection(
        outcomes=list(OUTCOMES),
        shares=shares,
        split=split,
        rows=rows,
        faithfulness_threshold=threshold,
        faithfulness_judge=deciding,
    )


def own_contexts_hold(q: Question, contexts: list[str], relevant: set[str]) -> bool:
    """Whether an answers file's contexts (chunk ids, or passages of the user's own) hold the
    question's answer: a relevant chunk, or a passage holding one of its evidence quotes."""
    if relevant & set(contexts):
        return True
    quotes = [n for raw in q.evidence if (n := normalise(raw))]
    return any(quote in normalise(c) for c in contexts for quote in quotes)


def judge_brief(j: Judgement) -> JudgeBrief:
    """What an attribution row keeps of one judge's record."""
    return JudgeBrief(
        status=j.status,
        score=j.score,
        verdict=j.verdict,
        reason=j.reason,
        error=j.error,
        probability=j.probability,
        **row_evidence({"details": j.details}),
    )


def outcome_shares(
    outcomes: list[str], weights: list[float], confidence: float
) -> tuple[dict[str, OutcomeShare], FailureSplit]:
    """One prompt's share of each outcome with its interval (weighted: under a stratified sample each
    question stands for its stratum), and its failure split."""
    w = np.array(weights, dtype=float)
    shares = {
        o: OutcomeShare(
            **weighted_share(np.array([x == o for x in outcomes], dtype=float), w, confidence=confidence).to_dict(),
            count=outcomes.count(o),
        )
        for o in OUTCOMES
    }
    retrieval = sum(outcomes.count(o) for o in RETRIEVAL_FAILURES)
    generation = sum(outcomes.count(o) for o in GENERATION_FAILURES)
    return shares, FailureSplit(
        retrieval=retrieval,
        generation=generation,
        failures=retrieval + generation,
        not_judged=outcomes.count("not_judged"),
        uncertain=outcomes.count("uncertain"),
        questions=len(outcomes),
    )


def add_judging(
    report: Report,
    cfg: AuditConfig,
    questions: list[Question],
    generations: list[Answer],
    judgements: list[Judgement],
    retrieved: Retrieved,
    *,
    figures: JudgedFigures,
    reuse: JudgingInfo | dict | None = None,
    weights: dict[str, float] | None = None,
) -> Report:
    """The judges section (the figures the judging stage aggregated, ``figures``, kept typed) and
    attribution, added to ``report``; ``reuse`` is what the judging stage returned beside the
    verdicts (calibration, escalation); ``weights`` the sampling weight of each question."""
    jc, reuse = cfg.judges, JudgingInfo.load(reuse or {})
    assert jc is not None  # judging runs only with a judges section
    report.judges = JudgesSection(
        metrics=jc.metrics,
        faithfulness_judge=jc.deciding_faithfulness,
        faithfulness_threshold=jc.faithfulness_threshold,
        calibration=reuse.calibration,
        ragas_requests=reuse.ragas_requests,
        ragas_agreement=reuse.ragas_agreement,
        # Only where the configured model wrote answers: supplied, traced and a system's are others'.
        same_model=_same_model(cfg) and any(g.model not in ("supplied", "system") for g in generations),
        weighted=bool(weights),
        figures=figures.figures,
        records=judgements,
    )
    criteria = criteria_section(cfg, report.judges)
    if criteria:  # a report without criteria keeps the shape it had before they existed
        report.judges.criteria = criteria
    report.attribution = attribution_section(cfg, questions, generations, judgements, retrieved)
    if reuse.escalation is not None:
        # What the escalation did and cost, with the figures and outcome shares as the first judge alone left them.
        first = required(figures.without_escalation, "the judged figures without escalation")
        shares = attribution_section(cfg, questions, generations, first.records, retrieved).shares
        report.judges.escalation = EscalationSection.load(
            {
                **reuse.escalation,
                "figures_without": dump_figures(first.figures),
                "outcomes_without": {p: {o: s.dump() for o, s in sh.items()} for p, sh in shares.items()},
            }
        )
    return report


class RubricDetails(Model):
    """What a rubric criterion's judgement details hold for its report section (``judges/criteria.py``):
    the probability-weighted mean level (the other keys kept as they are)."""

    mean_level: Num | None = None


CRITERION_HALF_WIDTH = 0.10  # the interval a criterion's labels are counted for ("label N answers for ±0.10")


def criteria_section(cfg: AuditConfig, judges: JudgesSection) -> dict[str, CriterionSection]:
    """Each of the config's criteria: its definition, figure per prompt, a rubric's mean level per
    prompt, and how it decided (the cut-off and band it had; labels that would calibrate it)."""
    jc = required(cfg.judges, "the config's judges section")
    st = cfg.stats
    out = {}
    for name, c in jc.criteria.items():
        # Every answer the criterion judged: an uncertain pass or fail still has its level.
        mine = [r for r in judges.records if r.judge == name and r.status in ("judged", "uncertain")]
        means = {}
        for prompt in sorted({r.prompt for r in mine}) if c.levels else []:
            levels = [
                m for r in mine if r.prompt == prompt and (m := RubricDetails.load(r.details).mean_level) is not None
            ]
            if len(levels) == 1:  # one value has no interval (a bootstrap would say [v, v])
                means[prompt] = Figure(value=levels[0], n=1)
            elif levels:
                est = bootstrap_mean(
                    np.array(levels, dtype=float),
                    n_resamples=st.bootstrap_resamples,
                    confidence=st.confidence,
                    seed=st.seed,
                )
                means[prompt] = Figure.load(est.to_dict())
        cal = judges.calibration.get(name)
        calibrated = bool(cal and (cal.calibrated or cal.adapted))
        needed = None if calibrated else labels_for(CRITERION_HALF_WIDTH, st.confidence)
        out[name] = CriterionSection(
            question=c.question,
            sees=list(c.sees),
            applies=c.applies,
            passes=c.passes,
            levels=[c.levels[k] for k in sorted(c.levels)] if c.levels else [],
            pass_level=c.pass_level,
            steps=list(c.steps),
            gate_only=c.gate_only,
            counts_as_failure=c.counts_as_failure,
            aim=c.aim,
            figures={p: figs[name] for p, figs in judges.figures.items() if name in figs},
            mean_level=means,
            calibrated=calibrated,
            calibration=_criterion_calibration(
                cal, needed, len({(r.question_id, r.prompt) for r in mine}), st.confidence
            ),
            labels_needed=needed,
        )
    return out


def _criterion_calibration(cal, needed: int | None, judged: int, confidence: float) -> str:
    """How a criterion decided, in words: adapted, calibrated, or not (and the labels that would do it)."""
    if cal is None:
        return "decided by the model's word (no probability-scored judge ran)"
    band = next(iter(cal.bands.values()), None)
    where = (
        f"uncertain where P(pass) lies in [{band.low:.2f}, {band.high:.2f})"
        if band
        else "no band of uncertain decisions"
    )
    cut = f"cut-off {cal.cutoff:.3f}" if cal.cutoff is not None else "cut-off 0.5"
    blend = next(iter(cal.blends.values()), None) if cal.blends else None
    if blend:
        # Labels chose word features of the answer to weigh beside the model (adaptation.py).
        b = Blend.from_dict(blend)
        cut = f"decided on {b.describe()} of the model's log-odds and the answer's {', '.join(b.weights)}, {cut}"
        where = where.replace("P(pass)", "that P(pass)")
    not_used = f"; {cal.adaptation_not_used}" if cal.adaptation_not_used else ""
    if cal.adapted:
        a = AdaptationNote.load(next(iter(cal.adapted.values())))
        return f"adapted to this corpus with {a.labels} labels ({a.source}): {cut}, {where}"
    if cal.calibrated:
        return f"calibrated on labelled cases (judge-check --save): {cut}, {where}{not_used}"
    line = f"not calibrated: label {needed} answers for ±{CRITERION_HALF_WIDTH:.2f} ({cut}, {where})"
    if needed is not None and 0 < judged < needed:
        line += f"; this run judged {judged}, all of them labelled give about ±{half_width_for(judged, confidence):.2f}"
    return line + not_used


def dump_figures(figures: dict) -> dict:
    """``{prompt: {figure: {value, ci_low, ci_high, n, ...}}}`` as JSON."""
    return {p: {n: f.dump() for n, f in figs.items()} for p, figs in figures.items()}


def _same_model(cfg: AuditConfig) -> bool:
    """Whether the generator and the judge are the same model (a judge grading its own answers)."""
    if cfg.generation is None or cfg.judges is None:
        return False
    g, j = cfg.generation.llm, cfg.judges.llm
    return (g.provider, g.model, g.base_url, g.model_path) == (j.provider, j.model, j.base_url, j.model_path)


SUMMARY_COMPARISON = (
    "wins",
    "losses",
    "ties",
    "diff",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "test",
    "detectable",
    "verdict",
)
PROMPT_COMPARISON = ("wins", "losses", "ties", "diff", "ci_low", "ci_high", "p_value", "p_holm", "test", "verdict")


def _comparisons(comparisons: list[PairedComparison], keys: tuple[str, ...]) -> dict[str, dict]:
    """``<metric>.<A>_vs_<B>`` = the comparison's fields ``keys``."""
    out: dict[str, dict] = {}
    for c in comparisons:
        out.setdefault(c.metric, {})[c.pair] = c.picked(keys)
    return out


def summary(report: Report | dict) -> dict:
    """summary.json: every figure at ``retrieval.<retriever>.<metric>`` as {value, ci_low, ci_high, n},
    ``generation.<prompt>.<figure>``, ``attribution.<prompt>.<outcome>``, ``failure_split.<prompt>``,
    ``comparison.<metric>.<A>_vs_<B>``; each part present when its stage ran."""
    report = Report.load(report)
    parts: dict = {}
    r = report.retrieval
    if r is not None:
        parts |= dict(
            rag_eval_version=report.rag_eval_version,
            corpus=report.corpus,
            test_set=report.test_set,
            retrieval=r.retrievers,
            retrieval_comparison=_comparisons(r.comparisons, SUMMARY_COMPARISON),
            retrieval_misses={n: {"k": r.miss_k, "count": len(m)} for n, m in r.misses.items()},
            diagnosis={n: cause_counts(m) for n, m in r.misses.items()},
            simulated_fixes=[
                f.model_dump(mode="json", include={"retriever", "change", "config", "net", "summary"})
                | {"fixes": len(f.fixes), "causes": len(f.causes)}
                for f in r.simulated_fixes
            ],
            lint={f.code: {"severity": f.severity, "questions": len(f.questions)} for f in report.lint},
        )
    if report.supplied is not None:
        parts |= dict(supplied=report.supplied)
    if report.judges is not None:
        parts |= dict(generation=report.judges.figures)
    if report.comparison is not None:
        parts |= dict(comparison=_comparisons(report.comparison.comparisons, PROMPT_COMPARISON))
    if report.attribution is not None:
        parts |= dict(attribution=report.attribution.shares, failure_split=report.attribution.split)
    if report.generation is not None:
        g = report.generation
        parts |= dict(
            generation_counts={
                p: c.model_dump(exclude_unset=True, exclude={"prompt_hash"}) for p, c in g.prompts.items()
            },
            llm_usage=g.usage,
        )
    if report.system is not None:
        s = report.system
        parts |= dict(system={"questions": s.questions, "answered": s.answered, "failed": len(s.failed)})
    if report.failures is not None:
        parts |= dict(failures=report.failures)
    if report.traces is not None:
        t = report.traces
        parts |= dict(traces={"read": t.read, "audited": t.audited, "skipped": t.skipped})
        if r is None and report.labels is not None:  # with no retrieval, the labels are summed up here
            parts |= dict(labels=report.labels)
    return Summary(name=report.name, created=report.created, **parts).dump()


def cause_counts(misses: list[Miss]) -> dict[str, int]:
    """Misses per diagnosed cause, every cause present (0 where none)."""
    counts = dict.fromkeys(CAUSES, 0)
    for m in misses:
        if m.diagnosis is not None:
            counts[m.diagnosis.cause] += 1
    return counts
