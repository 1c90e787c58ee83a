"""Splitting documents into chunks: headings by file format, code fences, and documents holding
nothing but headings."""

import pytest

from rag_eval.config import AuditConfig
from rag_eval.data.chunking import split_by_heading
from rag_eval.data.corpus import chunk_document, load_corpus
from rag_eval.data.settings import CorpusConfig
from rag_eval.errors import DataError


def test_markdown_headings_split_and_fenced_hash_lines_do_not():
    text = "Intro line.\n\n# Install\n\n```sh\n# not a heading\npip install x\n```\n\n~~~\n# nor this\n~~~\n\n## Use\n\nCall it."
    got = [(s.heading, s.text) for s in split_by_heading(text)]
    assert [h for h, _ in got] == ["", "Install", "Use"]
    assert "# not a heading" in got[1][1] and "# nor this" in got[1][1]


def test_a_hash_line_of_a_text_or_rest_file_is_a_comment_not_a_heading():
    """User trial 4 F1: 'Setup\\n\\n# install with pip\\npip install httpx' became three chunks of
    two or three words, titled by the shell comments."""
    text = "Setup\n\n# install with pip\npip install httpx\n# then import it\nimport httpx\n"
    cc = CorpusConfig(folder="x")
    for name in ("notes.txt", "notes.rst"):
        [chunk] = chunk_document(name, text, cc)
        assert chunk.id == f"{name}#intro" and "# install with pip" in chunk.text and "import httpx" in chunk.text
    assert len(chunk_document("notes.md", text, cc)) == 3  # Markdown: those lines are headings
    # Underlined headings split every format.
    underlined = "Install\n=======\n\npip install httpx\n\nUse\n---\n\nimport httpx\n"
    assert [c.title for c in chunk_document("guide.txt", underlined, cc)] == ["Install", "Use"]


def test_a_document_of_headings_alone_is_skipped_and_said(tmp_path, capsys):
    """User trial 4 F2: a Markdown file holding only a heading was indexed as a chunk with no text."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Clients\n\nUse httpx.Client for connection pooling.\n")
    (docs / "stub.md").write_text("# Only a heading\n")
    cfg = AuditConfig.model_validate(
        {
            "name": "c",
            "corpus": {"folder": str(docs)},
            "test_set": {"path": "q.jsonl"},
            "retrieval": {"k": [1], "retrievers": {"bm25": {"type": "bm25"}}},
        }
    )
    from rag_eval import progress

    progress.set_enabled(True)  # the autouse fixture quiets it for every test
    corpus = load_corpus(cfg)
    assert [c.id for c in corpus.chunks] == ["a.md#clients"]
    assert "corpus: 1 document with no text under its headings skipped (stub.md)" in capsys.readouterr().err
    assert all(c.text for c in corpus.chunks)
    (docs / "a.md").write_text("# Nothing here\n")
    with pytest.raises(DataError, match="no document in the folder holds any text"):
        load_corpus(cfg)


def test_a_text_file_written_in_markdown_and_other_markdown_extensions_split_at_headings():
    """Review 55 M10: llms.txt (Markdown saved as text) and .mdx became one chunk each."""
    cc = CorpusConfig(folder="x")
    markdown = "# Install\n\nRun pip install x.\n\n# Configure\n\nEdit x.yaml.\n"
    for name in ("llms.txt", "guide.mdx", "guide.md"):
        assert [c.id for c in chunk_document(name, markdown, cc)] == [f"{name}#install", f"{name}#configure"]
    # A comment before code, as in trial 4 F1, is no heading; nor any '#' line of a .rst file.
    comments = "Setup\n\n# install with pip\npip install httpx\n"
    assert len(chunk_document("notes.txt", comments, cc)) == 1
    assert len(chunk_document("notes.rst", markdown, cc)) == 1
