"""Retrievers of other frameworks plugged in from a config: a LlamaIndex retriever (or index) and a
Haystack retriever component, each built by ``factory()``. A returned node or document is a chunk
of the corpus by its id (``id_key`` of its metadata, else its own id), else by its text; one that
is neither stops the run naming the question and the id."""

from __future__ import annotations

from typing import Any

from rag_eval.errors import ConfigError, DataError, Problem
from rag_eval.progress import track
from rag_eval.retrievers.custom import import_object
from rag_eval.retrievers.mapping import TextMatcher, chunk_of, document_passage, node_passage
from rag_eval.retrievers.rankings import Rankings, RetrieverContext
from rag_eval.retrievers.settings import HaystackConfig, LlamaIndexConfig
from rag_eval.types import Corpus, Question


class _FrameworkRetriever:
    """Shared by both: build the object, then map each returned item to a corpus chunk."""

    kind = ""

    def __init__(
        self,
        corpus: Corpus,
        cfg: LlamaIndexConfig | HaystackConfig,
        name: str,
        context: RetrieverContext | None = None,
    ):
        self.corpus, self.id_key, self.name = corpus, cfg.id_key, name
        self.where = f"retrieval.retrievers.{name}.factory"
        self.built = import_object(cfg.factory, self.where)()
        self.matcher = TextMatcher(corpus)

    def items(self, question: str, depth: int) -> list[tuple[Any, str | None, float | None]]:
        """(returned id, text, score) of each item, best first."""
        raise NotImplementedError

    def rank(self, questions: list[Question], depth: int) -> Rankings:
        lists = []
        for q in track(questions, f"{self.name}: searching"):
            try:
                items = self.items(q.question, depth)[:depth]
            except Exception as exc:  # the user's retriever; name the question that broke it
                raise DataError(
                    Problem(
                        f"retriever '{self.name}', question '{q.id}'",
                        f"the {self.kind} retriever raised {type(exc).__name__}: {exc}",
                        "fix the retriever the factory returns",
                    )
                ) from exc
            pairs = []
            for pos, (cid, text, _score) in enumerate(items):
                idx = chunk_of(self.corpus, self.matcher, cid, text)
                if idx is None:
                    raise DataError(
                        Problem(
                            f"retriever '{self.name}', question '{q.id}'",
                            f"returned {'id ' + repr(cid) if cid is not None else 'a passage'} that is no chunk of "
                            "the corpus (by id or by text)",
                            f"index the corpus's chunks with their ids ({'metadata[' + repr(self.id_key) + ']' if self.id_key else 'as node/document ids'}), "
                            "or set id_key to the metadata key that holds them",
                        )
                    )
                # Ranked in the order returned; the framework's score (if any) is not on one scale across retrievers.
                pairs.append((idx, float(len(items) - pos)))
            lists.append(pairs)
        return Rankings.from_lists(lists, depth)


class LlamaIndexRetriever(_FrameworkRetriever):
    """``factory()`` returns a LlamaIndex retriever (``.retrieve(str)`` -> NodeWithScore list) or an
    index (``as_retriever(similarity_top_k=depth)`` is used)."""

    kind = "LlamaIndex"

    def __init__(
        self, corpus: Corpus, cfg: LlamaIndexConfig, name: str = "llamaindex", context: RetrieverContext | None = None
    ):
        super().__init__(corpus, cfg, name, context)
        if not hasattr(self.built, "retrieve") and not hasattr(self.built, "as_retriever"):
            raise ConfigError(
                Problem(
                    self.where,
                    f"'{cfg.factory}' returned {type(self.built).__name__}, not a LlamaIndex retriever or index",
                    "return e.g. index.as_retriever() or a BaseRetriever",
                )
            )

    def items(self, question: str, depth: int):
        retriever = self.built
        if not hasattr(retriever, "retrieve"):
            retriever = retriever.as_retriever(similarity_top_k=depth)
        return [(p.id, p.text, p.score) for p in (node_passage(n, self.id_key) for n in retriever.retrieve(question))]


class HaystackRetriever(_FrameworkRetriever):
    """``factory()`` returns a Haystack retriever component (``run(query=..., top_k=...)`` ->
    ``{"documents": [...]}``)."""

    kind = "Haystack"

    def __init__(
        self, corpus: Corpus, cfg: HaystackConfig, name: str = "haystack", context: RetrieverContext | None = None
    ):
        super().__init__(corpus, cfg, name, context)
        if not hasattr(self.built, "run"):
            raise ConfigError(
                Problem(
                    self.where,
                    f"'{cfg.factory}' returned {type(self.built).__name__}, not a Haystack retriever component",
                    "return e.g. InMemoryBM25Retriever(document_store)",
                )
            )

    def items(self, question: str, depth: int):
        try:
            out = self.built.run(query=question, top_k=depth)
        except TypeError:  # a retriever without top_k
            out = self.built.run(query=question)
        docs = out.get("documents", []) if isinstance(out, dict) else []
        return [(p.id, p.text, p.score) for p in (document_passage(d, self.id_key) for d in docs)]
