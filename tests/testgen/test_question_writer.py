"""Test-set generation: the draw, the verification rules (with a scripted model that errs in known
ways), the output loading as a test set, and the CLI's report."""

import json
import re

import pytest

from rag_eval.cli import main
from rag_eval.config import load_config
from rag_eval.data.testset import load_test_set
from rag_eval.testgen.question_writer import allocate, draw_chunks
from rag_eval.types import Chunk, Corpus

from ..conftest import write_jsonl
from ..scripted_server import ScriptedServer, structured_reply

DOCS = [
    ("lists", "Lists", "Lists are mutable sequences, typically used to store collections of homogeneous items."),
    ("tuples", "Tuples", "Tuples are immutable sequences, typically used to store collections of heterogeneous data."),
    (
        "dicts",
        "Dictionaries",
        "A mapping object maps hashable values to arbitrary objects. Mappings are mutable objects.",
    ),
    (
        "sets",
        "Sets",
        "A set object is an unordered collection of distinct hashable objects. Use it for membership tests.",
    ),
    (
        "with",
        "The with statement",
        "The with statement wraps the execution of a block with methods of a context manager.",
    ),
    (
        "zip",
        "zip()",
        "The builtin zip() iterates over several iterables in parallel, producing tuples with an item from each.",
    ),
]


def _corpus_file(tmp_path):
    rows = [{"id": f"{d}/main", "doc_id": d, "title": t, "text": x} for d, t, x in DOCS]
    return write_jsonl(tmp_path / "corpus.jsonl", rows)


def _reply(body):
    """A scripted generator: a good question for most passages; known faults for some."""
    text = body["messages"][-1]["content"]
    fmt = (body.get("response_format") or {}).get("json_schema", {}).get("name", "")
    if fmt.startswith("testgen_"):
        passage = text.split("Passage (from", 1)[1].split("\n", 1)[1].split("\n\nYour previous reply")[0]
        title = re.search(r'Passage \(from "(.*?)"\)', text).group(1)
        first = passage.split(". ")[0].strip().rstrip(".") + "."
        if fmt == "testgen_unanswerable":
            if "previous question was rejected" in text:
                return json.dumps({"question": "How many nanoseconds does a lookup take on a laptop?"})
            return json.dumps({"question": f"Who first proposed {title.lower()} for Python, and when?"})
        if "Tuples" in title and "previous reply was rejected" not in text:
            # A quote paraphrased instead of copied: rejected, then fixed on the retry.
            return json.dumps(
                {"question": "Which sequence cannot change?", "answer": "Tuples.", "quote": "tuples never change"}
            )
        if "Sets" in title:
            # The question copies the passage on both tries: dropped.
            return json.dumps({"question": first, "answer": "Mappings.", "quote": first})
        return json.dumps(
            {"question": f"What should I know about {title.lower()} in my programs?", "answer": first, "quote": first}
        )
    if "Does the passage give the information the question asks for?" in text:
        # The unanswerable check: the question about dictionaries is "answered"; no other is.
        return "Yes: it does." if "dictionaries" in text.split("Question:")[1].lower() else "No: it does not."
    return structured_reply(body)


@pytest.fixture
def project(tmp_path):
    _corpus_file(tmp_path)
    return tmp_path


def _config(project, base_url, n=6, mix="{fact: 0.5, unanswerable: 0.5}"):
    llm = f"{{provider: openai, model: scripted, base_url: '{base_url}', max_retries: 1}}"
    (project / "audit.yaml").write_text(
        "name: gen\ncorpus: {path: corpus.jsonl}\ntest_set: {path: questions.jsonl}\n"
        "retrieval:\n  k: [1, 3]\n  retrievers:\n    bm25: {type: bm25}\n"
        f"testgen: {{n: {n}, mix: {mix}, min_chunk_chars: 10, llm: {llm}}}\n"
    )
    return project / "audit.yaml"


def test_draw_spreads_over_documents_and_allocates_kinds():
    chunks = [Chunk(f"big/{i}", "x" * 300, doc_id="big") for i in range(50)] + [
        Chunk(f"d{i}/0", "y" * 300, doc_id=f"d{i}") for i in range(4)
    ]
    drawn = draw_chunks(Corpus(chunks, "t"), 10, seed=0, min_chars=200)
    docs = [c.doc_id for c in drawn]
    # Five documents in turn: the 50-chunk document gives 2 of 10, not 50/54 of them.
    assert sorted(set(docs)) == ["big", "d0", "d1", "d2", "d3"] and docs.count("big") == 2
    assert draw_chunks(Corpus(chunks, "t"), 10, seed=0, min_chars=200) == drawn  # seeded
    kinds = allocate({"fact": 0.35, "symbol": 0.2, "paraphrase": 0.2, "multi": 0.1, "unanswerable": 0.15}, 20)
    assert sorted(kinds.count(k) for k in set(kinds)) == [2, 3, 4, 4, 7]


def test_generate_keeps_only_verified_questions(project, capsys):
    with ScriptedServer(reply=_reply) as s:
        cfg = _config(project, s.base_url)
        assert main(["-q", "generate", str(cfg), "--out", str(project / "gen.jsonl")]) == 0
    out = capsys.readouterr().out
    report = json.loads((project / "gen.report.json").read_text())
    records = [json.loads(line) for line in (project / "gen.jsonl").read_text().splitlines()]
    by_chunk = {r["provenance"]["chunk_id"]: r for r in records if r["kind"] == "fact"}
    # Sets: copied wording on both tries, dropped; Tuples: quote fixed on the retry.
    assert "sets/main" not in by_chunk
    assert by_chunk["tuples/main"]["provenance"]["tries"] == 2
    assert report["dropped"].get("copied_wording", 0) >= 1
    for r in records:
        if r["kind"] == "fact":
            chunk = next(x for d, t, x in DOCS if r["provenance"]["chunk_id"] == f"{d}/main")
            assert r["evidence"] in chunk  # verified, verbatim
            assert "reference_supported (P=0.90)" in r["provenance"]["checks"]
        else:
            assert r["answerable"] is False and "dictionaries" not in r["question"].lower()
    # The question about dictionaries was answered by the corpus; its retry, told so, was kept.
    retried = [r for r in records if r["kind"] == "unanswerable" and r["provenance"]["tries"] == 2]
    assert [r["question"] for r in retried] == ["How many nanoseconds does a lookup take on a laptop?"]
    assert "answered_by_corpus" not in report["dropped"]
    assert report["kinds"] == {"fact": 3, "unanswerable": 3} and report["kept"] == 6
    assert report["quotes"] == {"verbatim": 4}  # tuples, sets (dropped later), zip, with: last drafts
    # The output is a test set as it stands: it loads, and lint ran on it.
    cfg = load_config(project / "audit.yaml")
    questions = load_test_set(project / "gen.jsonl", _load(cfg))
    assert len(questions) == 6 and sum(q.answerable for q in questions) == 3
    assert {f["code"] for f in report["lint"]} >= {"test_set_size"}
    assert "6 questions kept of" in out and "dropped:" in out


def _load(cfg):
    from rag_eval.data.corpus import load_corpus

    return load_corpus(cfg)


def test_generation_is_cached_across_runs(project):
    with ScriptedServer(reply=_reply) as s:
        cfg = _config(project, s.base_url, n=4)
        assert main(["-q", "generate", str(cfg), "--out", str(project / "a.jsonl")]) == 0
        first = s.calls
        assert main(["-q", "generate", str(cfg), "--out", str(project / "b.jsonl")]) == 0
        assert s.calls == first  # every call answered by the cache
    assert (project / "a.jsonl").read_text() == (project / "b.jsonl").read_text()


def test_a_loosely_copied_quote_snaps_to_the_passage_words():
    from rag_eval.testgen.question_writer import snap_quote

    passage = (
        'An object is true unless its class defines a "__bool__()" method that returns "False". '
        "An object whose value can change is said to be *mutable*; others are *immutable*."
    )
    # Quote marks and markup changed by the model: the passage's own characters come back.
    assert snap_quote("its class defines a `__bool__()` method that returns `False`.", passage) == (
        'its class defines a "__bool__()" method that returns "False"',
        1.0,
    )
    assert snap_quote("can change is said to be mutable; others are immutable", passage)[0] == (
        "can change is said to be *mutable*; others are *immutable*"
    )
    # Words changed: not the passage's words, no snap.
    assert snap_quote("objects that can be altered are mutable", passage) is None


def test_a_second_question_on_the_same_quote_or_one_that_sees_the_passage_is_dropped(project, capsys):
    """User trial 3 F2: "What does the `select` filter do?" and "... `select` function do?" on one
    passage and one quote were both kept (their words differ by one of two); "the given code snippet"
    was kept although a user never sees the passage."""
    import itertools

    from rag_eval.testgen.question_writer import SEES_THE_PASSAGE

    assert SEES_THE_PASSAGE.search("What is the purpose of the `round` function in the given code snippet?")
    assert SEES_THE_PASSAGE.search("According to the passage, what does zip return?")
    assert not SEES_THE_PASSAGE.search("How do I pass the given value to a filter?")
    assert not SEES_THE_PASSAGE.search("What does the text filter do in a template?")
    assert SEES_THE_PASSAGE.search("What does the example above print?")
    # Review 54 M8: "context" and "text" are words of the documents themselves.
    for ordinary in (
        "How do I return a value from the context manager?",
        "Which variables are available in the context of a Jinja template?",
        "How are globals passed in the context when rendering?",
        "How do I open a file in the text mode?",
    ):
        assert not SEES_THE_PASSAGE.search(ordinary), ordinary

    count = itertools.count()

    def reply(body):
        text = body["messages"][-1]["content"]
        fmt = (body.get("response_format") or {}).get("json_schema", {}).get("name", "")
        if fmt in ("testgen_fact", "testgen_symbol"):
            passage = text.split("Passage (from", 1)[1].split("\n", 1)[1].split("\n\nYour previous reply")[0]
            first = passage.split(". ")[0].strip().rstrip(".") + "."
            name = next(w for w in first.split() if len(w) >= 3)
            # A fact and a symbol question on each passage, worded apart by one word, on one quote.
            word = "filter" if fmt == "testgen_fact" else "function"
            if next(count) == 0 and "previous reply was rejected" not in text:
                return json.dumps({"question": "What does the given code snippet do?", "answer": first, "quote": first})
            return json.dumps({"question": f"What does the `{name}` {word} do?", "answer": first, "quote": first})
        return structured_reply(body)

    with ScriptedServer(reply=reply) as s:
        cfg = _config(project, s.base_url, n=12, mix="{fact: 0.5, symbol: 0.5}")
        assert main(["-q", "generate", str(cfg), "--out", str(project / "gen.jsonl")]) == 0
    report = json.loads((project / "gen.report.json").read_text())
    records = [json.loads(line) for line in (project / "gen.jsonl").read_text().splitlines()]
    pairs = [(r["provenance"]["chunk_id"], r["evidence"]) for r in records]
    assert len(pairs) == len(set(pairs)) and report["dropped"].get("same_evidence", 0) >= 1
    assert not [r for r in records if SEES_THE_PASSAGE.search(r["question"])]
    # User trial 3 L6: fewer kept than asked is said, with why.
    assert report["kept"] < 12 and "fewer than the 12 asked: the drafts of 4 rounds" in capsys.readouterr().out


def test_a_reference_that_restates_its_question_is_asked_again_then_dropped(project):
    """User trial 3 F2: "What is the last item in a sequence?" kept with the reference "The last item
    of a sequence is the last element in the sequence.", which any answer restating the question
    matches."""
    from rag_eval.words import added_to_question

    assert added_to_question(
        "The last item of a sequence is the last element in the sequence.", "What is the last item in a sequence?"
    ) == ["element"]
    assert added_to_question("255 characters.", "What is the default length at which truncate cuts text?") is None

    def reply(body):
        text = body["messages"][-1]["content"]
        fmt = (body.get("response_format") or {}).get("json_schema", {}).get("name", "")
        if fmt == "testgen_fact":
            passage = text.split("Passage (from", 1)[1].split("\n", 1)[1].split("\n\nYour previous reply")[0]
            title = re.search(r'Passage \(from "(.*?)"\)', text).group(1).lower()
            first = passage.split(". ")[0].strip().rstrip(".") + "."
            question = f"What is the main purpose of {title} objects?"
            restated = f"The main purpose of {title} objects is their purpose."
            if "Lists" in passage or "previous reply was rejected" not in text:
                return json.dumps({"question": question, "answer": restated, "quote": first})
            return json.dumps({"question": question, "answer": first, "quote": first})
        return structured_reply(body)

    with ScriptedServer(reply=reply) as s:
        cfg = _config(project, s.base_url, n=6, mix="{fact: 1.0}")
        assert main(["-q", "generate", str(cfg), "--out", str(project / "gen.jsonl")]) == 0
        bodies = list(s.bodies)
    report = json.loads((project / "gen.report.json").read_text())
    records = [json.loads(line) for line in (project / "gen.jsonl").read_text().splitlines()]
    assert records and all(added_to_question(r["reference"], r["question"]) is None for r in records)
    assert all(r["provenance"]["tries"] == 2 for r in records)  # each kept one was asked again
    assert report["dropped"].get("reference_restates_question", 0) >= 1  # the lists passage, twice restated
    retries = [
        b["messages"][-1]["content"] for b in bodies if "previous reply was rejected" in b["messages"][-1]["content"]
    ]
    assert retries and all("reference restates question" in t for t in retries)
