"""How rag-eval asks a sentence-transformers model for embeddings (here and on Ray workers alike)."""

from __future__ import annotations

import numpy as np


def encode_texts(model, texts: list[str], batch_size: int, *, progress: bool = False) -> np.ndarray:
    """Normalised float32 embeddings of ``texts``."""
    emb = model.encode(
        texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=progress
    )
    return np.asarray(emb, dtype=np.float32)
