"""Running every configured retriever in dependency order (hybrid and rerank after their parts)."""

from __future__ import annotations

from pathlib import Path

from rag_eval.config import (
    AuditConfig,
    Bm25Config,
    CallableConfig,
    DenseConfig,
    HaystackConfig,
    HybridConfig,
    LangchainConfig,
    LlamaIndexConfig,
    RerankConfig,
    RunFileConfig,
    SystemRetrieverConfig,
)
from rag_eval.engine import make_engine
from rag_eval.errors import ConfigError, Problem
from rag_eval.retrievers.bm25 import Bm25Retriever
from rag_eval.retrievers.custom import CallableRetriever, LangchainRetriever, RunFileRetriever
from rag_eval.retrievers.dense import DenseRetriever
from rag_eval.retrievers.frameworks import framework_retriever
from rag_eval.retrievers.hybrid import fuse
from rag_eval.retrievers.rankings import Rankings, relevant_indices
from rag_eval.retrievers.rerank import Reranker
from rag_eval.types import Corpus, Question


def dependency_order(cfg: AuditConfig) -> list[str]:
    """Retriever names so that each comes after the retrievers it fuses or re-ranks."""
    rs = cfg.retrieval.retrievers
    order: list[str] = []

    def visit(name: str, stack: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in stack:
            raise ConfigError(
                Problem(
                    cfg.where(f"retrieval.retrievers.{name}"),
                    "retrievers refer to each other in a cycle: " + " -> ".join(stack + (name,)),
                    "break the cycle",
                )
            )
        r = rs[name]
        for dep in r.of if isinstance(r, HybridConfig) else [r.of] if isinstance(r, RerankConfig) else []:
            visit(dep, stack + (name,))
        order.append(name)

    for name in rs:
        visit(name, ())
    return order


def run_retrievers(
    cfg: AuditConfig, corpus: Corpus, questions: list[Question], cache_dir: Path, given: dict | None = None
) -> dict[str, Rankings]:
    """Rankings of every configured retriever, keyed by name in config order; ``given`` holds
    rankings made elsewhere (the deployed system's), by name."""
    engine = make_engine(cfg.engine)
    depth = cfg.retrieval.depth
    wanted = relevant_indices(corpus, questions)
    results: dict[str, Rankings] = {}
    for name in dependency_order(cfg):
        r = cfg.retrieval.retrievers[name]
        if isinstance(r, Bm25Config):
            results[name] = Bm25Retriever(corpus, r, name, cache_dir).rank(questions, depth)
        elif isinstance(r, DenseConfig):
            results[name] = DenseRetriever(corpus, r, cache_dir, name, engine).rank(questions, depth)
        elif isinstance(r, HybridConfig):
            results[name] = fuse([results[p] for p in r.of], len(corpus), depth, r.rrf_k, r.weights, wanted)
        elif isinstance(r, RerankConfig):
            results[name] = Reranker(corpus, r, results[r.of], name).rank(questions, depth)
        elif isinstance(r, CallableConfig):
            results[name] = CallableRetriever(corpus, r.function, name).rank(questions, depth)
        elif isinstance(r, LangchainConfig):
            results[name] = LangchainRetriever(corpus, r.factory, r.id_key, name).rank(questions, depth)
        elif isinstance(r, RunFileConfig):
            results[name] = RunFileRetriever(corpus, cfg.resolve_path(r.path), name).rank(questions, depth)
        elif isinstance(r, SystemRetrieverConfig):
            results[name] = _given(cfg, name, given)
        elif isinstance(r, (LlamaIndexConfig, HaystackConfig)):
            results[name] = framework_retriever(corpus, r, name).rank(questions, depth)
    return {name: results[name] for name in cfg.retrieval.retrievers}


def _given(cfg: AuditConfig, name: str, given: dict | None) -> Rankings:
    if not given or name not in given:
        raise ConfigError(
            Problem(
                cfg.where(f"retrieval.retrievers.{name}"),
                "the system's retrieval is measured from its replies, which only rag-eval run asks for",
                "use rag-eval run (or rag_eval.audit) on a config with a system: section",
            )
        )
    return given[name]
