"""The pytest helpers (``rag_eval/testing.py``) with the user's own criteria."""

import pytest

from rag_eval.api import audit
from rag_eval.config import load_config
from rag_eval.judges.registry import set_criteria
from rag_eval.testing import GateFailure, assert_gates

from . import scripted_server
from .judges import test_criteria as criteria_case
from .scripted_server import ScriptedServer


@pytest.fixture(autouse=True)
def _no_criteria_left():
    yield
    set_criteria({})


def test_assert_gates_names_the_answers_a_criterion_failed_whatever_config_loaded_since(small_project, monkeypatch):
    """A session audits a config with criteria, then loads another (a second audit_fixture, a
    notebook): a gate on a criterion of the first still fails naming the answers that failed it."""
    for marker in criteria_case.ANSWERS:
        (small_project / f"{marker[-1].lower()}.md").write_text(
            f"{marker}\nDocuments:\n{{contexts}}\n\nQuestion: {{question}}\nAnswer:"
        )
    monkeypatch.setattr(scripted_server, "first_token_logprobs", criteria_case.level_logprobs)
    with ScriptedServer(reply=criteria_case.reply, probability=criteria_case.probability) as s:
        result = audit(criteria_case._config(small_project, s.base_url))
        load_config(criteria_case._config(small_project, s.base_url, criteria="", name="plain"))
    with pytest.raises(GateFailure) as failed:
        assert_gates(result, {"generation.a.names_type": ">= 0.9"})
    message = str(failed.value)
    assert "rag-eval gates failed" in message
    assert "generation.a.names_type = 0.6667" in message
    assert "    q3: fail" in message  # the answer behind it, with the judge's reason
    assert_gates(result, {"generation.a.names_type": ">= 0.5"})
