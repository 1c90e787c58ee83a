"""Running an audit's stages from a config: load and validate, retrieve, write records and report."""

from __future__ import annotations

import json
from pathlib import Path

from rag_eval.answers.answer_records import Answer
from rag_eval.answers.generation import run_generation, select_questions
from rag_eval.cache_dirs import cache_root
from rag_eval.config import AuditConfig
from rag_eval.engine import make_engine
from rag_eval.errors import ConfigError, Problem
from rag_eval.judges.judging import run_judging
from rag_eval.judges.labels import label_run
from rag_eval.judges.registry import JUDGES
from rag_eval.judges.scored import split_statements
from rag_eval.llm.session import LLMSession
from rag_eval.orchestration.compare import check_same_contexts, comparison_section
from rag_eval.orchestration.sequential import run_until_settled
from rag_eval.orchestration.steps import (
    Inputs,
    _open_run,
    _say_reuse,
    _set_status,
    _start,
    load_inputs,
    retrieval_stage,
)
from rag_eval.progress import say
from rag_eval.report.assemble import add_judging, build_report, generation_section, retrieved_in_top_k
from rag_eval.report.files import write_report
from rag_eval.report.report_records import Report
from rag_eval.retrievers.factory import run_retrievers
from rag_eval.retrievers.lint import lint
from rag_eval.retrievers.stage import evaluate
from rag_eval.rundir import read_jsonl, write_json
from rag_eval.system.run import run_system_audit
from rag_eval.typed import StageReuse
from rag_eval.types import Question


def run_retrieval(cfg: AuditConfig, *, out: str | None = None, inputs: Inputs | None = None) -> Path:
    """Stage 1 alone: writes retrieval.jsonl, summary.json and report.md; returns the run folder.
    ``inputs``: the corpus and test set already loaded (default: from the config's files)."""
    if cfg.system is not None:  # the system's retrieval comes with its replies: ask it, judge nothing
        return run_system_audit(cfg.model_copy(update={"judges": None}), out=out, inputs=inputs)
    inputs, run_dir = _start(cfg, out, inputs)
    res, diagnoses, findings = retrieval_stage(cfg, inputs, run_dir)
    report = build_report(
        cfg, inputs.corpus, res, test_set_path=str(inputs.test_set_path), findings=findings, diagnoses=diagnoses
    )
    write_report(run_dir, report)
    return run_dir


def estimate_judge_calls(cfg: AuditConfig, questions: list[Question], generations: list[Answer]) -> int:
    """Upper bound of the judge calls, from each judge's calls per answer in the registry (answer-
    independent judges once per question; statements estimated from the answer's sentences)."""
    by_id = {q.id: q for q in questions}
    total, seen = 0, set()
    k = cfg.generation.top_k
    for g in generations:
        q = by_id.get(g.question_id)
        if q is None or g.failed:
            continue
        for name in cfg.judges.metrics:
            spec = JUDGES[name]
            if spec.applies(q.answerable, bool(q.reference), None) or (
                spec.answer_independent and (name, q.id) in seen
            ):
                continue
            seen.add((name, q.id))
            text = q.reference if "reference" in spec.needs and spec.answer_independent else g.answer or ""
            n = max(1, len(split_statements(text or "")))
            total += spec.calls(k, n) + (spec.reason_calls(k, n) if cfg.judges.reasons == "quote" else 0)
    return total


def _eta(calls: int, seconds: float) -> str:
    if not calls:
        return "nothing to call"
    return f"about {calls} calls x {seconds:.1f} s = {calls * seconds / 60:.1f} min"


def run_audit(
    cfg: AuditConfig,
    *,
    out: str | None = None,
    use_cache: bool = True,
    resume: Path | bool | None = None,
    inputs: Inputs | None = None,
) -> Path:
    """Retrieval, generation, judges, attribution and report; returns the run folder.

    ``resume``: True continues the newest unfinished run of this config, a path continues that
    run; finished records are reused and only the missing work is done. ``inputs``: the corpus and
    test set already loaded (default: from the config's files).
    """
    if cfg.system is not None:
        return run_system_audit(cfg, out=out, use_cache=use_cache, resume=resume, inputs=inputs)
    if cfg.generation is None:
        raise ConfigError(
            Problem(
                cfg.where("generation"),
                "rag-eval run needs a generation section",
                "add generation: {retriever: ..., top_k: 5}, or use rag-eval retrieval",
            )
        )
    inputs, run_dir = _open_run(cfg, out, resume, inputs)
    _set_status(run_dir, "started")
    config_path = str(Path(cfg.config_path).resolve()) if cfg.config_path else None
    res, diagnoses, findings = retrieval_stage(cfg, inputs, run_dir)
    report = build_report(
        cfg, inputs.corpus, res, test_set_path=str(inputs.test_set_path), findings=findings, diagnoses=diagnoses
    )
    report.config_path = config_path
    write_report(run_dir, report)
    g = cfg.generation

    session = LLMSession(
        cache_root(cfg.cache_folder), use_cache=use_cache, log_dir=run_dir, engine=make_engine(cfg.engine)
    )
    try:
        selected = select_questions(cfg, res)
        n_prompts = 1 if g.answers else len(g.prompts)
        sampled = f" (a stratified sample of {len(res.questions)})" if len(selected) < len(res.questions) else ""
        plan = "answers supplied" if g.answers else _eta(len(selected) * n_prompts, g.llm.expected_latency_s)
        say(
            f"generation: {len(selected)} questions{sampled} x {n_prompts} prompts on {g.retriever}'s top "
            f"{g.top_k}: {plan}"
        )
        records, gen_reuse = run_generation(cfg, inputs.corpus, res, session, run_dir)
        report.resume = {"generation": gen_reuse} if resume else None
        _say_reuse("answers", gen_reuse)
        report.generation = generation_section(cfg, records, len(selected), session.usage(), len(res.questions))
        write_report(run_dir, report)
        if cfg.judges is not None:
            answers = report.generation.records
            measured = [a.latency_s for a in answers if not a.cached and a.latency_s]
            latency = sum(measured) / len(measured) if measured else cfg.judges.llm.expected_latency_s
            calls = estimate_judge_calls(cfg, inputs.questions, records)
            say(
                f"judging {sum(not a.failed for a in answers)} answers with "
                f"{', '.join(cfg.judges.metrics)}: {_eta(calls, latency)} at most (cached calls are free)"
            )
            esc = cfg.judges.escalate
            if esc is not None:
                cap = f"at most {esc.max_calls} decisions" if esc.max_calls is not None else "no call limit"
                say(f"uncertain decisions are then asked again of {esc.llm.model or esc.llm.provider} ({cap})")
            judgements, judge_reuse = run_judging(cfg, inputs.corpus, inputs.questions, records, session, run_dir)
            if resume:
                report.resume["judgements"] = StageReuse(reused=judge_reuse.reused, redone=judge_reuse.redone)
            _say_reuse("judgements", judge_reuse)
            weights = {a.question_id: a.weight for a in answers if a.weight is not None}
            add_judging(
                report,
                cfg,
                res.questions,
                answers,
                judgements,
                retrieved_in_top_k(cfg, res),
                reuse=judge_reuse,
                weights=weights,
            )
            if cfg.judges.labels:
                report = label_run(report, run_dir, cfg.resolve_path(cfg.judges.labels), cfg.stats.confidence)
        report.generation.usage = session.usage()
    finally:
        write_json(run_dir / "llm_usage.json", session.usage())
        session.close()
    write_report(run_dir, report)
    _set_status(run_dir, "finished")
    return run_dir


def run_lint(cfg: AuditConfig, inputs: Inputs | None = None):
    """Test-set health findings, with the size check computed from an in-memory retrieval run."""
    inputs = inputs or load_inputs(cfg)
    rankings = run_retrievers(cfg, inputs.corpus, inputs.questions, cache_root(cfg.cache_folder))
    res = evaluate(cfg, inputs.corpus, inputs.questions, rankings)
    return lint(cfg, inputs.corpus, inputs.questions, res)


def run_compare(
    cfg: AuditConfig,
    *,
    out: str | None = None,
    use_cache: bool = True,
    inputs: Inputs | None = None,
    settle: dict | None = None,
) -> Path:
    """Every prompt on the same retrieved contexts, then paired comparisons; returns the run folder.
    ``settle`` ({batch, seed}): judge a seeded random order of the questions a batch at a time and
    stop once an always-valid test settles the differences (``rag_eval/orchestration/sequential.py``)."""
    if cfg.generation is None or cfg.judges is None or len(cfg.generation.prompts) < 2:
        raise ConfigError(
            Problem(
                cfg.where("generation.prompts"),
                "rag-eval compare needs two or more prompts and a judges section",
                "list the prompts under generation.prompts",
            )
        )
    inputs = inputs or load_inputs(cfg)
    sequential = None
    if settle is not None:
        if cfg.generation.sample:
            raise ConfigError(
                Problem(
                    cfg.where("generation.sample"),
                    "--stop-when-settled draws its own order of the questions",
                    "remove generation.sample, or drop --stop-when-settled",
                )
            )
        run_dir, sequential = run_until_settled(cfg, inputs, run_audit, out=out, use_cache=use_cache, **settle)
    else:
        run_dir = run_audit(cfg, out=out, use_cache=use_cache, inputs=inputs)
    report = Report.load(json.loads((run_dir / "report.json").read_text()))
    generations = [a for a in map(Answer.load, read_jsonl(run_dir / "generation.jsonl")) if not a.failed]
    check_same_contexts(generations)
    report.comparison = comparison_section(cfg, report, {q.id: q.answerable for q in inputs.questions})
    if sequential is not None:
        report.comparison.sequential = sequential
    write_report(run_dir, report)
    return run_dir
