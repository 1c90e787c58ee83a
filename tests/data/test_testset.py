"""Test-set labels through the CLI: a verbatim quote that a fixed-size chunk boundary cuts labels the
adjacent chunks it spans (graded by the share each holds) with a lint note, and never stops the run;
a missing test set names the config line and the folder relative paths start at."""

import json

from rag_eval.cli import main
from rag_eval.data.corpus import chunk_document
from rag_eval.data.settings import ChunkerConfig, CorpusConfig
from rag_eval.data.testset import merge_overlapping, normalise

SENTENCES = [
    f"Rule {i} of the grammar says that the {w} token is kept as the parser reads it, the last one given."
    for i, w in enumerate(["name", "number", "string", "operator", "delimiter", "keyword", "comment", "newline"] * 3)
]
DOC = "# Lexical analysis\n\n" + " ".join(SENTENCES) + "\n"
FIXED = {"type": "fixed", "size": 350, "overlap": 40}


def _cut_sentence() -> tuple[str, list[str]]:
    """A sentence of DOC that no fixed-size chunk holds whole, and the ids of the chunks."""
    chunks = chunk_document("lexical.md", DOC, CorpusConfig(folder="docs", chunker=ChunkerConfig(**FIXED)))
    texts = [normalise(c.text) for c in chunks]
    cut = next(s for s in SENTENCES if not any(s in t for t in texts))
    return cut, [c.id for c in chunks]


def _project(tmp_path, questions: list[dict], chunker: dict = FIXED) -> str:
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "lexical.md").write_text(DOC)
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    (tmp_path / "audit.yaml").write_text(
        "name: cut\n"
        f"corpus: {{folder: docs, chunker: {json.dumps(chunker)}}}\n"
        "test_set: {path: questions.jsonl}\n"
        "retrieval: {k: [1, 3], depth: 10, retrievers: {bm25: {type: bm25}}}\n"
        "report: {out: runs}\n"
    )
    return str(tmp_path / "audit.yaml")


def test_a_quote_cut_by_a_chunk_boundary_labels_the_chunks_it_spans(tmp_path, capsys):
    cut, ids = _cut_sentence()
    questions = [
        {"id": "q01", "question": "What does rule 0 keep?", "evidence": SENTENCES[0]},
        {"id": "q04", "question": "Which token does the cut rule keep?", "evidence": cut},
        {"id": "q05", "question": "Who designed the grammar?", "answerable": False},
    ]
    config = _project(tmp_path, questions)
    assert main(["-q", "validate", config]) == 0
    out = capsys.readouterr().out
    assert "note: 1 evidence quote of 1 question spans adjacent chunks" in out
    assert "q04" in out

    assert main(["-q", "retrieval", config]) == 0
    run = next((tmp_path / "runs").iterdir())
    records = {r["question_id"]: r for r in map(json.loads, (run / "retrieval.jsonl").read_text().splitlines())}
    relevant = records["q04"]["relevant"]
    # Two adjacent chunks of the document, each graded by its share of the quote.
    assert len(relevant) == 2
    first, second = sorted(relevant, key=ids.index)
    assert ids.index(second) == ids.index(first) + 1
    assert all(0 < g < 1 for g in relevant.values())
    assert sum(relevant.values()) >= 0.99
    # A quote no boundary cut stays a whole-chunk label.
    assert set(records["q01"]["relevant"].values()) == {1}
    summary = json.loads((run / "summary.json").read_text())
    assert summary["lint"]["split_evidence"] == {"severity": "info", "questions": 1}
    assert "`split_evidence`: 1 evidence quote of 1 question spans adjacent chunks" in (run / "report.md").read_text()


def test_the_heading_chunker_keeps_the_quote_whole(tmp_path, capsys):
    cut, _ = _cut_sentence()
    config = _project(tmp_path, [{"id": "q04", "question": "Which?", "evidence": cut}], {"type": "heading"})
    assert main(["-q", "validate", config]) == 0
    assert "spans adjacent chunks" not in capsys.readouterr().out


def test_merge_counts_each_overlap_once():
    merged, spans = merge_overlapping(["the parser reads it, the last", "the last one given. Rule 2", "Rule 3 says"])
    assert merged == "the parser reads it, the last one given. Rule 2 Rule 3 says"
    assert [merged[a:b] for a, b in spans] == [
        "the parser reads it, the last",
        "the last one given. Rule 2",
        "Rule 3 says",
    ]
    # A partial word is not an overlap.
    assert merge_overlapping(["a cat", "cattle run"])[0] == "a cat cattle run"


def test_a_missing_test_set_names_the_config_line_and_the_folder(tmp_path, capsys, monkeypatch):
    config = _project(tmp_path, [{"id": "q01", "question": "What?", "evidence": SENTENCES[0]}], {"type": "heading"})
    text = (tmp_path / "audit.yaml").read_text().replace("questions.jsonl", "qs/missing.jsonl")
    (tmp_path / "audit.yaml").write_text(text)
    monkeypatch.chdir(tmp_path.parent)
    assert main(["-q", "validate", config]) == 2
    err = capsys.readouterr().err
    assert f"{config}:3 (test_set.path)" in err
    assert "the test set file 'qs/missing.jsonl' does not exist" in err
    assert f"looked for {tmp_path / 'qs' / 'missing.jsonl'}" in err
    assert f"relative paths start at the config's folder ({tmp_path.resolve()}" in err
    assert "relative to the working folder" not in err


def test_quotes_are_found_from_postings_as_by_reading_every_chunk():
    """On a corpus above SCAN_TEXTS a quote is looked for only in the chunks holding its inner words
    (texts normalised when read): the same chunks as a scan of every normalised chunk, with
    whitespace that differs, quotes that start or end with punctuation, repeated common words,
    non-ASCII words and a quote of one word."""
    import random

    from rag_eval.data.testset import SCAN_TEXTS, EvidenceIndex, PhraseIndex, words
    from rag_eval.types import Chunk, Corpus

    rng = random.Random(5)
    vocab = ["self", "x", "return", "foo_bar", "Zoë", "déjà", "(a)", "b,", "=", "the", "if", "y[0]"]
    chunks = [
        Chunk(f"c{i}", "\n    ".join(" ".join(rng.choices(vocab, k=6)) for _ in range(3)), "T" if i % 7 else "")
        for i in range(SCAN_TEXTS + 500)
    ]
    corpus = Corpus(chunks, "t")
    texts = [normalise(f"{c.title}\n{c.text}") for c in chunks]
    quotes = [" ".join(rng.choices(vocab, k=rng.randint(1, 5))) for _ in range(60)]
    quotes += ["(a) self", "self x (a)", "return\n  foo_bar x", "Zoë déjà", "T self"]
    index = EvidenceIndex(corpus, quotes)
    for q in quotes:
        want = [c.id for c, t in zip(chunks, texts) if normalise(q) in t]
        assert index.find(q) == want, q
    # A quote with a rare inner word reads only the chunks that hold it.
    rare = EvidenceIndex(Corpus([*chunks, Chunk("r", "x = alpha(beta)")], "t"), ["= alpha(beta"])
    assert rare.find("=  alpha(beta") == ["r"]
    assert [i for i, t in enumerate(rare.texts.made) if t is not None] == [len(chunks)]
    # Words as the regex reads them, ASCII or not.
    for t in ["a_b c-d", "Zoë déjà-vu x1", "\x1c\x7fA\tb", ""]:
        assert words(t) == __import__("re").findall(r"\w+", t)
    # A phrase none of whose words has a character on both sides is looked for in every text.
    flat = PhraseIndex(texts, ["self"])
    assert flat.find("self") == [i for i, t in enumerate(texts) if "self" in t]


def test_evidence_naming_another_corpus_form_s_document_says_how_to_use_it_here(tmp_path, capsys):
    """User trial 3 F3: a set generated from a folder corpus names its documents ('functional.md');
    on the same texts as a JSONL corpus the fix said only "check the doc_id"."""
    cut, _ = _cut_sentence()
    cfg = _project(tmp_path, [{"id": "q1", "question": "What does rule 1 say?", "evidence": cut, "doc_id": "x/y.rst"}])
    assert main(["validate", cfg]) == 2
    err = capsys.readouterr().err
    assert "questions.jsonl:1 (question 'q1'): evidence doc_id 'x/y.rst' is not a document of the corpus" in err
    assert "remove doc_id to look the quote up in every document" in err and "this corpus's: lexical.md" in err
