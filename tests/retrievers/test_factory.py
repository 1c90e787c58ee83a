"""A retriever kind is one config class and one class: one defined here runs in an audit's
retrieval stage (alone and fused in a hybrid), and config validation knows its type and keys,
with no other file touched."""

import json
import re
from typing import ClassVar, Literal

import pytest

from rag_eval.cli import main
from rag_eval.config import load_config
from rag_eval.errors import ConfigError
from rag_eval.orchestration.runner import run_retrieval
from rag_eval.retrievers.rankings import Rankings, RetrieverContext
from rag_eval.retrievers.settings import RETRIEVER_KINDS, RetrieverKind, registered_retrievers
from rag_eval.types import Corpus, Question

from ..conftest import SMALL_CORPUS, SMALL_QUESTIONS
from ..plugins import install, plugins_read_again


def words(text: str, min_len: int) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= min_len}


class OverlapRetriever:
    """Ranks every chunk by the number of words (of at least ``min_len`` letters) it shares with
    the question."""

    def __init__(self, corpus: Corpus, cfg: "OverlapConfig", name: str, context: RetrieverContext | None = None):
        self.corpus, self.cfg, self.name = corpus, cfg, name

    def rank(self, questions: list[Question], depth: int) -> Rankings:
        lists = []
        for q in questions:
            mine = words(q.question, self.cfg.min_len)
            lists.append(
                [(i, float(len(mine & words(c.passage, self.cfg.min_len)))) for i, c in enumerate(self.corpus.chunks)]
            )
        return Rankings.from_lists(lists, depth)


class OverlapConfig(RetrieverKind):
    retriever: ClassVar[type] = OverlapRetriever
    type: Literal["overlap"]
    min_len: int = 4


def _write_config(project, retrievers: str):
    text = (project / "audit.yaml").read_text().replace("    bm25: {type: bm25}\n", retrievers)
    path = project / "kinds.yaml"
    path.write_text(text)
    return path


def _expected_rank(question: str, relevant: str, min_len: int) -> int:
    """The relevant chunk's rank, computed plainly: chunks sharing more words first, then corpus order."""
    scores = [len(words(question, min_len) & words(f"{c['title']}\n{c['text']}", min_len)) for c in SMALL_CORPUS]
    mine = next(i for i, c in enumerate(SMALL_CORPUS) if c["id"] == relevant)
    return 1 + sum(s > scores[mine] or (s == scores[mine] and i < mine) for i, s in enumerate(scores))


def test_a_retriever_kind_defined_here_runs_in_an_audit(small_project):
    relevant = {"q1": "py/lists", "q2": "py/sets", "q3": "py/with"}
    questions = {q["id"]: q["question"] for q in SMALL_QUESTIONS}
    ranks = [_expected_rank(questions[q], c, 4) for q, c in relevant.items()]
    assert ranks == [1, 4, 1]  # "What is a set?" shares no word of 4 letters: corpus order
    with registered_retrievers(OverlapConfig):
        cfg = load_config(
            _write_config(
                small_project,
                "    words: {type: overlap}\n    bm25: {type: bm25}\n    both: {type: hybrid, of: [words, bm25]}\n",
            )
        )
        assert cfg.retrieval.retrievers["words"] == OverlapConfig(type="overlap", min_len=4)
        run_dir = run_retrieval(cfg)
    summary = json.loads((run_dir / "summary.json").read_text())["retrieval"]
    assert summary["words"]["mrr"]["value"] == pytest.approx(sum(1 / r for r in ranks) / 3)
    assert summary["words"]["hit@1"]["value"] == pytest.approx(sum(r == 1 for r in ranks) / 3)
    assert summary["words"]["hit@1"]["n"] == 3  # the unanswerable question is left out
    assert set(summary) >= {"words", "bm25", "both"}
    records = [json.loads(line) for line in (run_dir / "retrieval.jsonl").read_text().splitlines()]
    for r in (r for r in records if r["retriever"] == "words"):
        plain = [len(words(r["question"], 4) & words(f"{c['title']}\n{c['text']}", 4)) for c in SMALL_CORPUS]
        order = sorted(range(len(SMALL_CORPUS)), key=lambda i: (-plain[i], i))
        assert [(x["id"], x["score"]) for x in r["retrieved"]] == [(SMALL_CORPUS[i]["id"], plain[i]) for i in order]
    assert {r["retriever"] for r in records} == {"words", "bm25", "both"}


def test_validation_knows_a_registered_kind_and_forgets_it_after(small_project):
    with registered_retrievers(OverlapConfig):
        assert "overlap" in RETRIEVER_KINDS
        with pytest.raises(ConfigError) as bad_key:
            load_config(_write_config(small_project, "    words: {type: overlap, min_lenght: 3}\n"))
        with pytest.raises(ConfigError) as bad_type:
            load_config(_write_config(small_project, "    words: {type: overlp}\n"))
    key, tag = bad_key.value.problems[0], bad_type.value.problems[0]
    assert "(retrieval.retrievers.words.min_lenght)" in key.where and key.what == "unknown key 'min_lenght'"
    assert key.fix.startswith("did you mean 'min_len'? known: min_len, type")
    assert tag.what == "unknown retriever type 'overlp'" and "did you mean 'overlap'?" in tag.fix
    assert "overlap" not in RETRIEVER_KINDS
    with pytest.raises(ConfigError, match="unknown retriever type 'overlap'"):
        load_config(_write_config(small_project, "    words: {type: overlap}\n"))
    with pytest.raises(ValueError, match="exists already"), registered_retrievers(RETRIEVER_KINDS["bm25"]):
        pass
    assert load_config(small_project / "audit.yaml").retrieval.retrievers["bm25"].tag() == "bm25"


def test_an_installed_plugins_kind_is_a_type_the_config_takes(small_project, monkeypatch, capsys):
    # A distribution that names its kind in the entry points rag_eval.retrievers: read before the
    # config is validated, its type joins the schema (and the error's list of types).
    install(
        small_project / "site",
        monkeypatch,
        """
        [rag_eval.retrievers]
        overlap = rag_eval_overlap:OverlapConfig
        """,
        {"rag_eval_overlap": "from tests.retrievers.test_factory import OverlapConfig\n"},
    )
    config = _write_config(small_project, "    words: {type: overlap, min_len: 3}\n")
    with plugins_read_again(RETRIEVER_KINDS):
        assert main(["validate", str(config)]) == 0, capsys.readouterr()
        assert load_config(config).retrieval.retrievers["words"] == OverlapConfig(type="overlap", min_len=3)
        config.write_text(config.read_text().replace("type: overlap", "type: overlapp"))
        assert main(["validate", str(config)]) == 2
        assert "unknown retriever type 'overlapp'" in capsys.readouterr().err
    assert "overlap" not in RETRIEVER_KINDS
    config.write_text(config.read_text().replace("type: overlapp", "type: overlap"))
    with pytest.raises(ConfigError, match="unknown retriever type 'overlap'"):
        load_config(config)
