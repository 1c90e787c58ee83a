"""rag-eval: audit a retrieval-augmented generation system, stage by stage."""

# Importing rag_eval changes no environment variable: rag_eval.offline.go_offline() sets Ragas'
# telemetry off and the hubs offline where a model or Ragas is loaded, and in the CLI.

from rag_eval.api import (
    Result,
    as_config,
    audit,
    compare,
    diff,
    generate,
    judge_answers,
    judge_check,
    judge_traces,
    lint,
    load_run,
    retrieval,
)
from rag_eval.errors import ConfigError, DataError, RagEvalError
from rag_eval.version import __version__

load_config = as_config

__all__ = [
    "ConfigError",
    "DataError",
    "RagEvalError",
    "Result",
    "as_config",
    "audit",
    "compare",
    "diff",
    "generate",
    "judge_answers",
    "judge_check",
    "judge_traces",
    "lint",
    "load_config",
    "load_run",
    "retrieval",
    "__version__",
]
