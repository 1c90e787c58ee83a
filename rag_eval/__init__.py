"""rag-eval: audit a retrieval-augmented generation system, stage by stage."""

# Importing rag_eval changes no environment variable: rag_eval.offline.go_offline() sets Ragas'
# telemetry off and the hubs offline where a model or Ragas is loaded, and in the CLI.
#
# The API's functions are loaded on first use (PEP 562): the package's pytest plugin
# (rag_eval.testing) is imported by every pytest session of an environment where rag-eval is
# installed, and importing the whole audit (scipy, httpx, every stage) there would cost each of
# those sessions seconds. ``rag_eval.audit`` and ``from rag_eval import audit`` work as before.

from typing import TYPE_CHECKING

from rag_eval.errors import ConfigError, DataError, RagEvalError
from rag_eval.version import __version__

if TYPE_CHECKING:
    from rag_eval.api import (
        DrawnLabels,
        Findings,
        Gates,
        Result,
        as_config,
        audit,
        compare,
        diff,
        draw_labels,
        generate,
        history,
        judge_answers,
        judge_check,
        judge_traces,
        lint,
        load_run,
        read_run,
        render_report,
        retrieval,
        validate,
    )

    load_config = as_config

__all__ = [
    "ConfigError",
    "DataError",
    "DrawnLabels",
    "Findings",
    "Gates",
    "RagEvalError",
    "Result",
    "as_config",
    "audit",
    "compare",
    "diff",
    "draw_labels",
    "generate",
    "history",
    "judge_answers",
    "judge_check",
    "judge_traces",
    "lint",
    "load_config",
    "load_run",
    "read_run",
    "render_report",
    "retrieval",
    "validate",
    "__version__",
]
# What rag_eval.api provides (loaded on first use): the public names that are not defined here.
_API = frozenset(__all__) - {"ConfigError", "DataError", "RagEvalError", "__version__", "load_config"}


def __getattr__(name: str):
    if name in _API or name == "load_config":
        import rag_eval.api as api  # noqa: PLC0415  (loaded on first use, see above)

        value = getattr(api, "as_config" if name == "load_config" else name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rag_eval' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _API | {"load_config"})
