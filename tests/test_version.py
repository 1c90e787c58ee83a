"""One version, read from the leaf module rag_eval/version.py by the package, the CLI, the report
and the installed metadata."""

import importlib.metadata
import subprocess
import sys

import rag_eval
from rag_eval import version


def test_one_version_everywhere():
    assert rag_eval.__version__ == version.__version__
    assert version.__version__.count(".") == 2 and all(p.isdigit() for p in version.__version__.split("."))
    # pyproject.toml takes its version from the leaf module, so the installed metadata agrees.
    assert importlib.metadata.version("rag-eval") == version.__version__
    out = subprocess.run([sys.executable, "-m", "rag_eval.cli", "--version"], capture_output=True, text=True)
    assert out.stdout.strip() == f"rag-eval {version.__version__}"
