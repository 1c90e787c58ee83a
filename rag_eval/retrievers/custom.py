"""The user's own retrievers: a Python callable, a LangChain retriever, a precomputed run file, or
the deployed system's own retrieval."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from rag_eval.data.records import read_text
from rag_eval.errors import ConfigError, DataError, Problem
from rag_eval.offline import go_offline
from rag_eval.progress import track
from rag_eval.retrievers.rankings import Rankings, RetrieverContext
from rag_eval.retrievers.settings import CallableConfig, LangchainConfig, RunFileConfig, SystemRetrieverConfig
from rag_eval.text import record_lines
from rag_eval.types import Corpus, Question


def import_object(spec: str, where: str) -> Any:
    """The object named by ``package.module:name``; ConfigError if it cannot be imported."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigError(
            Problem(
                where, f"'{spec}' is not of the form package.module:name", "write e.g. function: my_pkg.search:retrieve"
            )
        )
    go_offline()  # the user's module may load a model or a framework with telemetry (Haystack)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or any error raised while importing the user's module
        raise ConfigError(
            Problem(
                where,
                f"cannot import module '{module_name}': {exc}",
                "check the name and that the module is importable from the working folder",
            )
        ) from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(
            Problem(where, f"module '{module_name}' has no '{attr}'", "check the name after ':'")
        ) from None


def _known(corpus: Corpus, cid: Any, name: str, question: Question) -> int:
    idx = corpus.index.get(str(cid))
    if idx is None:
        raise DataError(
            Problem(
                f"retriever '{name}', question '{question.id}'",
                f"returned chunk id '{cid}', which is not in the corpus",
                "return the ids of the configured corpus",
            )
        )
    return idx


class CallableRetriever:
    """Calls ``function(question, k) -> [(chunk_id, score)]`` for each question."""

    def __init__(
        self, corpus: Corpus, cfg: CallableConfig, name: str = "callable", context: RetrieverContext | None = None
    ):
        self.corpus, self.name, function = corpus, name, cfg.function
        self.fn: Callable[[str, int], Any] = import_object(function, f"retrieval.retrievers.{name}.function")
        if not callable(self.fn):
            raise ConfigError(
                Problem(
                    f"retrieval.retrievers.{name}.function",
                    f"'{function}' is not callable",
                    "name a function (question, k) -> [(chunk_id, score)]",
                )
            )

    def rank(self, questions: list[Question], depth: int) -> Rankings:
        lists = []
        for q in track(questions, f"{self.name}: searching"):
            try:
                pairs = list(self.fn(q.question, depth))
            except Exception as exc:  # the user's code; report which question broke it
                raise DataError(
                    Problem(
                        f"retriever '{self.name}', question '{q.id}'",
                        f"the function raised {type(exc).__name__}: {exc}",
                        "fix the function; it must return [(chunk_id, score), ...]",
                    )
                ) from exc
            try:
                lists.append([(_known(self.corpus, cid, self.name, q), float(s)) for cid, s in pairs])
            except (TypeError, ValueError):
                raise DataError(
                    Problem(
                        f"retriever '{self.name}', question '{q.id}'",
                        f"returned {pairs[:3]!r}..., not (chunk_id, score) pairs",
                        "return a list of (chunk_id, float score) tuples",
                    )
                ) from None
        return Rankings.from_lists(lists, depth)


class LangchainRetriever:
    """A LangChain ``BaseRetriever`` built by ``factory()``; chunk ids from ``Document.metadata``.

    Scores come from ``metadata['score']`` when present, else from the order returned.
    """

    def __init__(
        self, corpus: Corpus, cfg: LangchainConfig, name: str = "langchain", context: RetrieverContext | None = None
    ):
        self.corpus, self.id_key, self.name, factory = corpus, cfg.id_key, name, cfg.factory
        where = f"retrieval.retrievers.{name}.factory"
        self.retriever = import_object(factory, where)()
        if not hasattr(self.retriever, "invoke"):
            raise ConfigError(
                Problem(
                    where,
                    f"'{factory}' returned {type(self.retriever).__name__}, not a LangChain retriever",
                    "return a BaseRetriever",
                )
            )

    def rank(self, questions: list[Question], depth: int) -> Rankings:
        lists = []
        for q in track(questions, f"{self.name}: searching"):
            docs = self.retriever.invoke(q.question)[:depth]
            pairs = []
            for pos, doc in enumerate(docs):
                cid = doc.metadata.get(self.id_key)
                if cid is None:
                    raise DataError(
                        Problem(
                            f"retriever '{self.name}', question '{q.id}'",
                            f"a Document has no metadata['{self.id_key}']",
                            "store each chunk id in Document.metadata, or set id_key",
                        )
                    )
                score = doc.metadata.get("score")
                pairs.append(
                    (
                        _known(self.corpus, cid, self.name, q),
                        float(score) if score is not None else float(len(docs) - pos),
                    )
                )
            lists.append(pairs)
        return Rankings.from_lists(lists, depth)


class RunRecord(BaseModel):
    """A line of a JSONL run file: a query, a document it retrieved and its score."""

    model_config = ConfigDict(extra="ignore")

    query_id: Any
    doc_id: Any
    score: Any


def read_run_file(path: Path) -> dict[str, list[tuple[str, float]]]:
    """``{query_id: [(doc_id, score)]}`` from a TREC run file or a JSONL of query_id, doc_id, score."""
    text = read_text(path, "run")
    run: dict[str, list[tuple[str, float]]] = {}
    for n, line in enumerate(record_lines(text), start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        if line.lstrip().startswith("{"):
            try:
                d = RunRecord.model_validate(json.loads(line))
                qid, did, score = str(d.query_id), str(d.doc_id), float(d.score)
            except json.JSONDecodeError as exc:
                raise DataError(Problem(where, f"malformed JSON: {exc.msg}", "one JSON object per line")) from None
            except (KeyError, TypeError, ValueError):
                raise DataError(
                    Problem(
                        where,
                        "a run record needs query_id, doc_id and a numeric score",
                        '{"query_id": "q1", "doc_id": "c7", "score": 3.2}',
                    )
                ) from None
        else:
            parts = line.split()
            try:
                qid, did, score = parts[0], parts[2], float(parts[4])
            except (IndexError, ValueError):
                raise DataError(
                    Problem(
                        where,
                        "not a TREC run line (query_id Q0 doc_id rank score tag)",
                        "use the TREC format or JSONL {query_id, doc_id, score}",
                    )
                ) from None
        run.setdefault(qid, []).append((did, score))
    return run


class RunFileRetriever:
    """Rankings read from a file; query ids are the test set's question ids."""

    def __init__(self, corpus: Corpus, cfg: RunFileConfig, name: str = "run", context: RetrieverContext | None = None):
        """``cfg.path`` is resolved by ``context.resolve_path`` (relative to the config's folder)."""
        path = (context or RetrieverContext()).resolve_path(cfg.path)
        self.corpus, self.name, self.path = corpus, name, path
        self.run = read_run_file(path)

    def rank(self, questions: list[Question], depth: int) -> Rankings:
        ids = {q.id for q in questions}
        if not ids & set(self.run):
            raise DataError(
                Problem(
                    str(self.path),
                    "no query id of the run file is a question id of the test set",
                    f"query ids must match the test set's ids (e.g. '{questions[0].id}')",
                )
            )
        lists = []
        for q in questions:
            pairs = []
            for did, s in self.run.get(q.id, []):
                idx = self.corpus.index.get(did)
                if idx is None:
                    raise DataError(
                        Problem(
                            str(self.path),
                            f"query '{q.id}' ranks '{did}', which is not in the corpus",
                            "the run must rank chunk ids of the configured corpus",
                        )
                    )
                pairs.append((idx, s))
            lists.append(pairs)
        return Rankings.from_lists(lists, depth)


class SystemRetriever:
    """The deployed system's own retrieval: the rankings measured from its replies, given before the
    build (``context.rankings[name]``); only ``rag-eval run`` asks the system for them."""

    def __init__(
        self, corpus: Corpus, cfg: SystemRetrieverConfig, name: str = "system", context: RetrieverContext | None = None
    ):
        context = context or RetrieverContext()
        if name not in context.rankings:
            raise ConfigError(
                Problem(
                    context.where(f"retrieval.retrievers.{name}"),
                    "the system's retrieval is measured from its replies, which only rag-eval run asks for",
                    "use rag-eval run (or rag_eval.audit) on a config with a system: section",
                )
            )
        self.rankings = context.rankings[name]

    def rank(self, questions: list[Question], depth: int) -> Rankings:
        return self.rankings
