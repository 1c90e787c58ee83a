"""The environment rag-eval needs around the libraries it loads: no telemetry, no hub downloads.

Set where a model or Ragas is loaded (and by the CLI), never at import time: importing rag_eval
(as its pytest plugin does in every test session of an environment where it is installed) leaves
the environment of other people's code alone.
"""

from __future__ import annotations

import os

OFFLINE_ENV = {
    # Ragas phones home unless told not to; rag-eval never lets it.
    "RAGAS_DO_NOT_TRACK": "true",
    # Haystack's, for haystack retrievers and systems.
    "HAYSTACK_TELEMETRY_ENABLED": "False",
    # Models and data sets are never fetched from a hub at run time.
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
}


def go_offline() -> None:
    """Set each variable of ``OFFLINE_ENV`` that the user has not set (theirs wins)."""
    for name, value in OFFLINE_ENV.items():
        os.environ.setdefault(name, value)
