"""Re-ranking another retriever's top chunks with a sentence-transformers cross-encoder."""

from __future__ import annotations

import numpy as np

from rag_eval.errors import ConfigError, Problem
from rag_eval.offline import go_offline
from rag_eval.progress import track
from rag_eval.retrievers.dense import resolve_model
from rag_eval.retrievers.rankings import Rankings, RetrieverContext
from rag_eval.retrievers.settings import RerankConfig
from rag_eval.types import Corpus, Question


class Reranker:
    """Scores the base retriever's top ``top_n`` with a cross-encoder; the rest keep base order below."""

    def __init__(
        self, corpus: Corpus, cfg: RerankConfig, name: str = "rerank", context: RetrieverContext | None = None
    ):
        """The base retriever's rankings are ``context.rankings[cfg.of]`` (made before)."""
        go_offline()
        from sentence_transformers import CrossEncoder  # noqa: PLC0415

        self.corpus, self.cfg, self.name = corpus, cfg, name
        self.base = (context or RetrieverContext()).rankings[cfg.of]
        try:
            self.model = CrossEncoder(str(resolve_model(cfg.model)), device="cpu")
        except Exception as exc:  # any loading failure means the same to the user
            raise ConfigError(
                Problem(
                    f"retrieval.retrievers.{name}.model",
                    f"cannot load cross-encoder '{cfg.model}': {exc}",
                    "give a local cross-encoder folder; rag-eval never downloads models",
                )
            ) from None

    def rank(self, questions: list[Question], depth: int) -> Rankings:
        lists = []
        for qi, q in enumerate(track(questions, f"{self.name}: re-ranking")):
            head = [i for i in self.base.top[qi][: self.cfg.top_n] if i >= 0]
            tail = [i for i in self.base.top[qi][self.cfg.top_n :] if i >= 0]
            scores = (
                self.model.predict(
                    [(q.question, self.corpus.chunks[i].passage) for i in head], batch_size=self.cfg.batch_size
                )
                if head
                else np.array([])
            )
            floor = float(np.min(scores)) - 1 if len(head) else 0.0
            pairs = [(i, float(s)) for i, s in zip(head, scores)]
            pairs += [(i, floor - 1 - j) for j, i in enumerate(tail)]
            lists.append(pairs)
        return Rankings.from_lists(lists, depth)
