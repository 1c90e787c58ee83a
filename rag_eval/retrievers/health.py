"""Test-set health from a config: its retrievers run in memory, then ``lint``'s findings."""

from __future__ import annotations

from rag_eval.cache_dirs import cache_root
from rag_eval.config import AuditConfig
from rag_eval.data.inputs import Inputs, load_inputs
from rag_eval.retrievers.factory import run_retrievers
from rag_eval.retrievers.lint import Finding, lint
from rag_eval.retrievers.stage import evaluate


def run_lint(cfg: AuditConfig, inputs: Inputs | None = None) -> list[Finding]:
    """Test-set health findings, with the size check computed from an in-memory retrieval run."""
    inputs = inputs or load_inputs(cfg)
    rankings = run_retrievers(cfg, inputs.corpus, inputs.questions, cache_root(cfg.cache_folder))
    res = evaluate(cfg, inputs.corpus, inputs.questions, rankings)
    return lint(cfg, inputs.corpus, inputs.questions, res)
