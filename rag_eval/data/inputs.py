"""The inputs of an audit: the corpus and the test set, loaded and validated before anything runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval.config import AuditConfig
from rag_eval.data.corpus import load_corpus
from rag_eval.data.frames import records_from
from rag_eval.data.records import collection_paused
from rag_eval.data.testset import load_test_set, questions_from_records
from rag_eval.errors import ConfigError, Problem
from rag_eval.types import Corpus, Question

GIVEN_TEST_SET = "test set (given)"
GIVEN_CORPUS = "corpus (given)"


@dataclass
class Inputs:
    """The validated corpus and test set of an audit."""

    corpus: Corpus
    questions: list[Question]
    test_set_path: Path

    @property
    def given(self) -> bool:
        """Rows passed from Python (not the config's files) make the corpus or the test set."""
        return self.corpus.source == GIVEN_CORPUS or str(self.test_set_path) == GIVEN_TEST_SET


def load_inputs(cfg: AuditConfig, corpus: Any = None, test_set: Any = None) -> Inputs:
    """Load the corpus and the test set (from the config's files, or rows given from Python); every
    problem raises DataError before anything runs."""
    with collection_paused():
        return _load_inputs(cfg, corpus, test_set)


def _load_inputs(cfg: AuditConfig, corpus: Any, test_set: Any) -> Inputs:
    loaded = load_corpus(cfg, corpus)
    if test_set is not None:
        questions = questions_from_records(records_from(test_set, "test set"), loaded, GIVEN_TEST_SET)
        return Inputs(loaded, questions, Path(GIVEN_TEST_SET))
    if cfg.test_set.path is None:
        raise ConfigError(
            Problem(
                cfg.where("test_set.source"),
                "test_set: {source: given} needs the questions passed from Python",
                "call rag_eval.audit(config, test_set=rows), or give test_set: {path: ...}",
            )
        )
    path = cfg.existing_path("test_set.path", cfg.test_set.path, "test set")
    return Inputs(loaded, load_test_set(path, loaded), path)
