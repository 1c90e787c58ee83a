"""rag_eval.offline: the environment is set where models and Ragas load, never by importing rag_eval."""

import os
import subprocess
import sys

from rag_eval.offline import OFFLINE_ENV, go_offline

from .conftest import ROOT

CHECK = """
import json, os
before = dict(os.environ)
import rag_eval, rag_eval.testing, rag_eval.cli, rag_eval.api
print(json.dumps(sorted(k for k in set(os.environ) | set(before) if os.environ.get(k) != before.get(k))))
"""


def test_importing_rag_eval_and_its_pytest_plugin_changes_no_environment_variable():
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_ENV}
    out = subprocess.run(
        [sys.executable, "-c", CHECK], env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_going_offline_keeps_what_the_user_set(monkeypatch):
    for name in OFFLINE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    go_offline()
    assert os.environ["RAGAS_DO_NOT_TRACK"] == "true" and os.environ["HF_HUB_OFFLINE"] == "1"
    assert os.environ["TOKENIZERS_PARALLELISM"] == "true"


def test_the_cli_goes_offline_before_any_command():
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_ENV}
    code = (
        "import os, rag_eval.cli as c; code = c.main(['validate', 'no-such-config.yaml']); "
        "print(code, os.environ.get('RAGAS_DO_NOT_TRACK'), os.environ.get('HF_HUB_OFFLINE'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True
    )
    assert out.stdout.split()[-3:] == ["2", "true", "1"], out.stderr
