"""The checks ``rag-eval run`` makes before its first model call, made without calling anything:
``rag-eval validate`` runs them so that a config it passes does not fail on them later.

Each check raises the same ConfigError / DataError the run would; every problem found is raised
together."""

from __future__ import annotations

import asyncio

from rag_eval.answers.generation import load_prompts
from rag_eval.config import AuditConfig
from rag_eval.errors import ConfigError, Problem, RagEvalError
from rag_eval.judges.registry import JUDGES, figures
from rag_eval.judges.scored import ScoredJudges
from rag_eval.llm.client import api_key
from rag_eval.llm.settings import LLMConfig
from rag_eval.metrics import default_metrics, parse_metric
from rag_eval.report.gates import unknown_figures
from rag_eval.retrievers.custom import import_object
from rag_eval.retrievers.settings import (
    CallableConfig,
    HaystackConfig,
    LangchainConfig,
    LlamaIndexConfig,
    RunFileConfig,
)
from rag_eval.system.http import HttpSystem
from rag_eval.system.settings import HaystackSystemConfig, HttpSystemConfig, LlamaIndexSystemConfig


def preflight(cfg: AuditConfig) -> None:
    """Every check of the run's set-up (your retrievers' imports and run files, the system's URL and
    secrets, prompt files, judge prompts, labels and answers files, API keys); raises one error
    listing every problem."""
    problems: list[Problem] = []
    for check in (_retrievers, _system, _generation, _judges, check_gate_figures):
        try:
            check(cfg)
        except RagEvalError as exc:
            problems += exc.problems
    if problems:
        raise ConfigError(problems)


def _retrievers(cfg: AuditConfig) -> None:
    """Your own retrievers: their functions and factories import (none is called), run files exist."""
    for name, r in cfg.retrieval.retrievers.items():
        at = f"retrieval.retrievers.{name}"
        if isinstance(r, CallableConfig):
            import_object(r.function, cfg.where(f"{at}.function"))
        elif isinstance(r, (LangchainConfig, LlamaIndexConfig, HaystackConfig)):
            import_object(r.factory, cfg.where(f"{at}.factory"))
        elif isinstance(r, RunFileConfig):
            cfg.existing_path(f"{at}.path", r.path, "run")


def _system(cfg: AuditConfig) -> None:
    s = cfg.system
    if s is None:
        return
    if isinstance(s, HttpSystemConfig):
        # The client the run builds: the URL once ${VAR}s are filled in, and the headers' variables.
        system = HttpSystem(s, None, cfg.where("system"))
        asyncio.run(system.aclose())
    elif isinstance(s, (LlamaIndexSystemConfig, HaystackSystemConfig)):
        # The factory is imported, not called: building the user's pipeline may call models.
        import_object(s.factory, cfg.where("system.factory"))


def _generation(cfg: AuditConfig) -> None:
    g = cfg.generation
    if g is None or cfg.system is not None:
        return
    if g.answers:
        if g.answers.endswith((".jsonl", ".json")) or "/" in g.answers:
            cfg.existing_path("generation.answers", g.answers, "answers")
        else:
            import_object(g.answers, cfg.where("generation.answers"))
        return
    load_prompts(cfg)
    _llm(g.llm, cfg.where("generation.llm"))


def _judges(cfg: AuditConfig) -> None:
    jc = cfg.judges
    if jc is None:
        return
    if any(JUDGES[m].family == "scored" for m in jc.metrics):
        folder = (
            cfg.existing_path("judges.prompts_dir", jc.prompts_dir, "judges' prompts", True) if jc.prompts_dir else None
        )
        ScoredJudges.load(None, folder)
    if jc.labels:
        cfg.existing_path("judges.labels", jc.labels, "labels")
    _llm(jc.llm, cfg.where("judges.llm"))
    if jc.escalate is not None:
        _llm(jc.escalate.llm, cfg.where("judges.escalate.llm"))


def _llm(llm: LLMConfig, where: str) -> None:
    api_key(llm, where)


def check_gate_figures(cfg: AuditConfig) -> None:
    """ConfigError naming each gate whose figure no run of this config can have (``gates.unknown_figures``)."""
    g = cfg.generation
    # Supplied answers and a system's answers name their own prompts.
    prompts = list(g.prompts) if g is not None and cfg.system is None and not g.answers else None
    if cfg.judges is not None:
        cfg.judges.register_criteria()  # a criterion's figure is its name
    problems = unknown_figures(
        cfg.gates,
        list(cfg.retrieval.retrievers),
        [_metric_name(m) for m in cfg.retrieval.metrics or []] or default_metrics(cfg.retrieval.k),
        prompts,
        lambda figure: f"{cfg.where('gates')}: {figure}",
        sorted({f.name for _, f in figures(list(JUDGES))}),
    )
    if problems:
        raise ConfigError(problems)


def _metric_name(name: str) -> str:
    """A metric as the summary names it (``Hit@5`` is ``hit@5``); an unknown one as written (the
    config's own check names it)."""
    try:
        return parse_metric(name).name
    except ValueError:
        return name
