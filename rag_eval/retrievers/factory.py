"""Running every configured retriever in dependency order (hybrid and rerank after their parts).

Each retriever config names its class (``RetrieverKind.retriever``); every class is built the same
way, ``Class(corpus, cfg, name, context)``, so a new kind needs nothing here."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from rag_eval.config import AuditConfig
from rag_eval.data.records import collection_paused
from rag_eval.engine import make_engine
from rag_eval.errors import ConfigError, Problem
from rag_eval.retrievers.rankings import Rankings, Retriever, RetrieverContext
from rag_eval.retrievers.settings import RetrieverKind
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
        for dep in rs[name].parts():
            visit(dep, stack + (name,))
        order.append(name)

    for name in rs:
        visit(name, ())
    return order


def retriever_class(kind: RetrieverKind) -> type[Retriever]:
    """The class a retriever config names (imported now when named by ``package.module:Class``)."""
    target = type(kind).retriever
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)
    return target


@collection_paused()
def run_retrievers(
    cfg: AuditConfig, corpus: Corpus, questions: list[Question], cache_dir: Path, given: dict | None = None
) -> dict[str, Rankings]:
    """Rankings of every configured retriever, keyed by name in config order; ``given`` holds
    rankings made elsewhere (the deployed system's), by name."""

    context = RetrieverContext(cache_dir, make_engine(cfg.engine), dict(given or {}), cfg.resolve_path, cfg.where)
    depth = cfg.retrieval.depth
    for name in dependency_order(cfg):
        r = cfg.retrieval.retrievers[name]
        make: Callable[..., Retriever] = retriever_class(r)  # every kind is built the same way
        context.rankings[name] = make(corpus, r, name, context).rank(questions, depth)
    return {name: context.rankings[name] for name in cfg.retrieval.retrievers}
