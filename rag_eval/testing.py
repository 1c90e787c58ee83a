"""rag-eval in pytest: gates as assertions, and an audit run once per test session.

In a test module::

    from rag_eval.testing import assert_gates, audit_fixture

    audit_result = audit_fixture("configs/demo.yaml")   # one audit per session, shared by tests

    def test_quality(audit_result):
        assert_gates(audit_result)                        # the config's gates
        assert_gates(audit_result, {"retrieval.hybrid.mrr": ">= 0.6"})

This module is also a pytest plugin (registered by the package): ``pytest --rag-eval-config
CONFIG`` gives every test the ``rag_eval_result`` fixture, the audit of that config.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from rag_eval.api import ConfigLike, Result

# This module is a pytest plugin, imported by every pytest session of an environment where
# rag-eval is installed: the audit itself (rag_eval.api and every stage) is imported where a test
# asks for it, never when the plugin loads.


class GateFailure(AssertionError):
    """One or more quality gates failed; the message lists each figure, its interval and the
    questions behind it."""


def assert_gates(result: Result, gates: dict[str, str] | None = None) -> None:
    """Fail (``GateFailure``, an AssertionError) when a gate fails: the config's gates, or ``gates``.
    The run's own criteria (read back from its report) are the judges its gates read, whatever
    config was loaded since (another fixture's, whose criteria are registered now)."""
    from rag_eval.judges.registry import criteria_registered  # noqa: PLC0415  (plugin: see the top)
    from rag_eval.labels.columns import criteria_of  # noqa: PLC0415
    from rag_eval.report.gates import describe_failure  # noqa: PLC0415

    with criteria_registered(criteria_of(result.typed_report)):
        results = result.gates(gates)
        failed = [r for r in results if not r.passed]
        body = "\n".join(describe_failure(r, result.summary_json, result.report, result.run_dir) for r in failed)
    if failed:
        raise GateFailure(f"{len(failed)} of {len(results)} rag-eval gates failed ({result.run_dir}):\n{body}")


def audit_fixture(config: ConfigLike, *, stage: str = "audit", name: str | None = None, **kwargs: Any):
    """A session-scoped pytest fixture that runs ``rag_eval.audit`` (or ``retrieval`` with
    ``stage="retrieval"``) once and returns its Result. Assign it to a module-level name; that
    name is the fixture's name unless ``name`` is given."""
    import rag_eval.api as api  # noqa: PLC0415  (plugin: see the top)

    run = {"audit": api.audit, "retrieval": api.retrieval, "compare": api.compare}[stage]

    @pytest.fixture(scope="session", name=name)
    def _audit() -> Result:
        return run(config, **kwargs)

    return _audit


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rag-eval")
    group.addoption("--rag-eval-config", help="audit config for the rag_eval_result fixture")
    group.addoption(
        "--rag-eval-stage",
        choices=["audit", "retrieval"],
        default="audit",
        help="run the whole audit (default) or the retrieval stage only",
    )
    parser.addini("rag_eval_config", "audit config for the rag_eval_result fixture")


@pytest.fixture(scope="session")
def rag_eval_result(request: pytest.FixtureRequest) -> Result:
    """The audit of ``--rag-eval-config`` (or the ``rag_eval_config`` ini option), run once."""
    config = request.config.getoption("--rag-eval-config") or request.config.getini("rag_eval_config")
    if not config:
        pytest.fail("rag_eval_result needs --rag-eval-config CONFIG (or rag_eval_config in the pytest ini)")
    path = Path(config)
    if not path.is_absolute():
        path = Path(request.config.rootpath) / path if not path.exists() else path
    stage = request.config.getoption("--rag-eval-stage")
    import rag_eval.api as api  # noqa: PLC0415  (plugin: see the top)

    return (api.retrieval if stage == "retrieval" else api.audit)(path)
