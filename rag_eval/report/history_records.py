"""A system's runs over time (``history.collect_history``, what ``rag-eval history --json``
writes), typed for the history page."""

from __future__ import annotations

from typing import Any

from rag_eval.base_records import Figure, Model


class RunChange(Model):
    """What changed since the run before: ``kind`` config, corpus, test_set or version."""

    kind: str = ""
    what: str = ""


class HistoryTestSet(Model):
    ids: list[str] = []


class HistoryRun(Model):
    """One finished run: its headline figures and what changed since the run before it."""

    run: str = ""
    path: str = ""
    name: str = ""
    created: str = ""
    rag_eval_version: str | None = None
    corpus: dict[str, Any] = {}
    test_set: HistoryTestSet = HistoryTestSet()
    config: dict[str, Any] = {}
    figures: dict[str, Figure] = {}
    judges: dict[str, dict[str, str]] = {}  # what decided each scored judge (``judge_settings``)
    changes: list[RunChange] = []


class HistoryData(Model):
    """Every config's runs in time order, and the unfinished runs left out."""

    runs_dir: str = ""
    systems: dict[str, list[HistoryRun]] = {}
    unfinished: list[str] = []
    unfinished_why: dict[str, str] = {}  # run name -> why it has no results (a failure's reason)
