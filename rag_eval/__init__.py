"""rag-eval: audit a retrieval-augmented generation system, stage by stage."""

# Importing rag_eval changes no environment variable: rag_eval.offline.go_offline() sets Ragas'
# telemetry off and the hubs offline where a model or Ragas is loaded, and in the CLI.

import sys
import types

from rag_eval.version import __version__

# The API's audit/retrieval/compare/lint/judge_check share names with submodules
# (rag_eval/retrieval/, lint.py, ...). Importing a submodule sets it as an attribute of this
# package; this keeps the function instead (``from rag_eval.lint import ...`` still works, since
# it reads sys.modules).
_API_NAMES = frozenset({"retrieval", "lint", "compare", "judge_check", "diff"})


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value) -> None:
        if name in _API_NAMES and isinstance(value, types.ModuleType) and callable(self.__dict__.get(name)):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


from rag_eval.api import (  # noqa: E402  (the package class above must be set first)
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
from rag_eval.errors import ConfigError, DataError, RagEvalError  # noqa: E402

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
