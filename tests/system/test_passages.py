"""A deployed service's own passages (not corpus chunks): they keep the service's ids in every
record, and a returned passage that holds a question's evidence quote is that quote's relevant item,
counted once, so recall and nDCG agree with hit@k."""

import json

import yaml

from rag_eval.cli import main
from rag_eval.retrievers.mapping import Passage
from rag_eval.system.http import SystemReply
from rag_eval.system.passages import map_replies, with_own_passages
from rag_eval.types import Chunk, Corpus, Question

from ..conftest import SMALL_CORPUS, write_jsonl
from .rag_service import RagService

# The service's own knowledge base: other chunking, other ids, the same facts.
SERVICE_KB = [
    {
        "id": "kb-17",
        "title": "Sets",
        "text": "Set types. A set object is an unordered collection of distinct hashable objects, used for membership.",
    },
    {"id": "kb-3", "title": "Lists", "text": "Sequences. Lists are mutable sequences, typically used to store items."},
    {"id": "kb-9", "title": "Context", "text": "The with statement wraps a block with methods of a context manager."},
]
QUESTIONS = [
    {"id": "q2", "question": "What is a set object?", "evidence": "unordered collection of distinct hashable objects"},
    {"id": "q1", "question": "Which sequences are mutable lists?", "evidence": "Lists are mutable sequences"},
]


def test_own_passages_keep_their_ids_and_count_once(tmp_path, capsys):
    write_jsonl(tmp_path / "corpus.jsonl", SMALL_CORPUS)
    write_jsonl(tmp_path / "questions.jsonl", QUESTIONS)
    with RagService(SERVICE_KB, k=3) as svc:
        cfg = {
            "name": "own",
            "corpus": {"path": "corpus.jsonl"},
            "test_set": {"path": "questions.jsonl"},
            "retrieval": {"k": [1, 3], "metrics": ["hit@3", "recall@3", "ndcg@3"]},
            "system": {
                "type": "http",
                "url": svc.url,
                "body": {"query": "{question}"},
                "answer": "$.data.answer",
                "contexts": "$.sources[*].text",
                "ids": "$.sources[*].id",
            },
            "report": {"out": "runs"},
        }
        (tmp_path / "own.yaml").write_text(yaml.safe_dump(cfg))
        assert main(["-q", "run", str(tmp_path / "own.yaml")]) == 0
    out = capsys.readouterr().out
    run = next((tmp_path / "runs").iterdir())
    summary = json.loads((run / "summary.json").read_text())
    figures = summary["retrieval"]["system"]
    assert figures["hit@3"]["value"] == 1.0
    assert figures["recall@3"]["value"] == 1.0 and figures["ndcg@3"]["value"] == 1.0
    records = {r["question_id"]: r for r in map(json.loads, (run / "retrieval.jsonl").read_text().splitlines())}
    # The service's ids, never a made-up ctx-... id.
    assert records["q2"]["retrieved"][0]["id"] == "kb-17"
    assert records["q2"]["relevant"] == {"kb-17": 1}
    everything = "".join(p.read_text(errors="ignore") for p in run.rglob("*") if p.is_file()) + out
    assert "ctx-" not in everything
    # The report names how many passages its answers were made on (3), not the retrieval depth, and
    # shows no prompt hash for a service.
    assert "## Generation (2 questions on system's top 3)" in (run / "report.md").read_text()
    html = (run / "report.html").read_text()
    assert "<code>None</code>" not in html and "<td>system</td><td>–</td>" in html


def test_a_quote_in_a_returned_passage_replaces_the_corpus_chunk():
    corpus = Corpus([Chunk("a", "Alpha holds the key fact here."), Chunk("b", "Beta.")], source="t")
    q = Question("q", "?", {"a": 1}, True, evidence=["the key fact"])
    replies = {
        "q": SystemReply("q", "x", [Passage("svc-1", "Rewritten: the key fact, told again."), Passage("b", None)])
    }
    mapped = map_replies(corpus, replies)
    assert mapped.ids["q"] == ["svc-1", "b"]
    (got,) = with_own_passages([q], mapped, len(corpus))
    assert got.qrels == {"a": 0, "svc-1": 1}
    # The same id given for another text stays visible as a second passage.
    replies["q"].passages.append(Passage("svc-1", "Something else entirely."))
    assert map_replies(corpus, replies).ids["q"] == ["svc-1", "b", "svc-1~2"]
