"""Files shipped inside the package: the default prompts (``prompts/`` of the source tree,
installed as ``rag_eval.prompts``)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def shipped_prompt(relative: str) -> Path:
    """A prompt file or folder shipped with rag-eval, e.g. ``answer.md`` or ``judges``."""
    return Path(str(files("rag_eval.prompts").joinpath(relative)))
