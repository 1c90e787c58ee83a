"""Where rag-eval keeps what it can reuse across runs (embeddings, LLM responses, models)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np


def cache_root(configured: str | None = None) -> Path:
    """``RAG_EVAL_CACHE_DIR``, else the config's ``cache_dir``, else ``~/.cache/rag-eval``."""
    root = os.environ.get("RAG_EVAL_CACHE_DIR") or configured or Path.home() / ".cache" / "rag-eval"
    return Path(root).expanduser()


def load_array(path: Path, mmap: bool = False) -> np.ndarray | None:
    """An array saved with ``np.save`` (memory-mapped read-only if ``mmap``), or None if absent or
    unreadable."""
    try:
        return np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except (OSError, ValueError):
        return None
