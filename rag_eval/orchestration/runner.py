"""The audits a config asks for: retrieval alone, the whole audit, prompts compared, and test-set
health; each runs ``run_pipeline`` over the config's answer source (``sources.source_for``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_eval.answers.answer_records import Answer
from rag_eval.config import AuditConfig
from rag_eval.data.inputs import Inputs, load_inputs
from rag_eval.errors import ConfigError, Problem
from rag_eval.orchestration.compare import check_same_contexts, comparison_section
from rag_eval.orchestration.pipeline import AnswerSource, run_pipeline
from rag_eval.orchestration.sequential import run_until_settled
from rag_eval.orchestration.sources import SOURCES, GeneratedAnswers, source_for
from rag_eval.preflight import check_gate_figures
from rag_eval.report.files import write_report
from rag_eval.report.report_records import Report, SequentialStop
from rag_eval.retrievers.health import run_lint
from rag_eval.rundir import lock_run, read_jsonl, read_report_json

__all__ = ["load_inputs", "run_audit", "run_compare", "run_lint", "run_retrieval"]


def run_retrieval(cfg: AuditConfig, *, out: str | None = None, inputs: Inputs | None = None) -> Path:
    """Stage 1 alone: writes retrieval.jsonl, summary.json and report.md; returns the run folder.
    ``inputs``: the corpus and test set already loaded (default: from the config's files). A
    deployed system is asked (its retrieval comes with its replies) and nothing is judged."""
    check_gate_figures(cfg)  # a typo in a gate costs no run
    if cfg.system is not None:
        cfg = cfg.model_copy(update={"judges": None})
        return run_pipeline(cfg, source_for(cfg), out=out, inputs=inputs)
    return run_pipeline(cfg, GeneratedAnswers(generate=False), out=out, inputs=inputs)


def run_audit(
    cfg: AuditConfig,
    *,
    out: str | None = None,
    use_cache: bool = True,
    resume: Path | bool | None = None,
    inputs: Inputs | None = None,
    source: AnswerSource | str | None = None,
    resume_with: str | None = None,
) -> Path:
    """Retrieval, generation, judges, attribution and report; returns the run folder.

    ``resume``: True continues the newest unfinished run of this config, a path continues that
    run; finished records are reused and only the missing work is done. ``inputs``: the corpus and
    test set already loaded (default: from the config's files). ``source``: where the answers come
    from, an ``AnswerSource`` or its kind in ``SOURCES`` (default: the config's system, else its
    prompts). ``resume_with``: the command that continues the run if it stops (``run_pipeline``).
    """
    if isinstance(source, str):
        if source not in SOURCES:
            raise ConfigError(Problem("source", SOURCES.unknown(source), "name a registered source, or register yours"))
        source = SOURCES[source]()
    if source is None:
        source = source_for(cfg)
        if cfg.system is None and cfg.generation is None:
            raise ConfigError(
                Problem(
                    cfg.where("generation"),
                    "rag-eval run needs a generation section",
                    "add generation: {retriever: ..., top_k: 5}, or use rag-eval retrieval",
                )
            )
        check_gate_figures(cfg)  # the config's own answers: a typo in a gate costs no audit
    return run_pipeline(
        cfg, source, out=out, use_cache=use_cache, resume=resume, inputs=inputs, resume_with=resume_with
    )


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
    # The comparison is written into the run's report: as the audit's writer, holding the folder
    # (review 54 L2: a `report` or `--resume` from another shell in between would see it half done).
    lock = lock_run(run_dir)
    try:
        report = Report.load(read_report_json(run_dir))
        generations = [a for a in map(Answer.load, read_jsonl(run_dir / "generation.jsonl")) if not a.failed]
        check_same_contexts(list[Answer | dict[str, Any]](generations))
        report.comparison = comparison_section(cfg, report, {q.id: q.answerable for q in inputs.questions})
        if sequential is not None:
            report.comparison.sequential = SequentialStop.load(sequential)
        write_report(run_dir, report)
    finally:
        lock.close()
    return run_dir
