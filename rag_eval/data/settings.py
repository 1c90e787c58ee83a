"""The data stage's settings: where the corpus and the test set come from (``corpus:``, ``test_set:``)."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
    model_validator,
)

from rag_eval.config_base import Settings


class ChunkerConfig(Settings):
    """How a folder of documents is split into chunks."""

    type: Literal["heading", "fixed"] = Field(
        "heading",
        description="heading: one chunk per section, cut at every underlined (reST or setext) heading and, in "
        "Markdown files (.md, .markdown, .mdx, .qmd, ..., and a .txt whose every '# ' line stands before a blank "
        "line), every # heading outside a code fence (a # line of a .rst file, or one before code, is a comment); "
        "text before the first heading is the chunk <file>#intro, a document of headings alone is skipped, said "
        "on the console; fixed: pieces of at most size characters, "
        "cut at paragraph, line and word breaks (langchain's RecursiveCharacterTextSplitter)",
    )
    size: int = Field(
        1500,
        gt=0,
        description="fixed: characters per chunk at most; unused by heading (its long sections are cut at max_chars)",
    )
    overlap: int = Field(
        200,
        ge=0,
        description="characters shared by consecutive pieces of a cut text, so that a sentence on a cut is whole "
        "in one of them (fixed; heading when max_chars cuts a section, at most max_chars / 2); must be below size",
    )
    max_chars: int | None = Field(None, gt=0, description="heading: split sections longer than this")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkerConfig:
        if self.overlap >= self.size:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than size ({self.size})")
        return self


class CorpusFields(Settings):
    """Which columns of a JSON/CSV/Parquet corpus hold each field."""

    id: str = Field(
        "id", description="column of the chunk id, unique per chunk; labels and run files name chunks by it"
    )
    text: str = Field("text", description="column of the chunk's text (required, not empty)")
    title: str = Field(
        "title",
        description="column of the chunk's title (optional): retrievers index title and text together, and "
        "evidence quotes are looked for in both",
    )
    doc_id: str = Field(
        "doc_id",
        description="column of the document a chunk belongs to (optional): a question's doc_id restricts where its "
        "evidence is looked for, and chunks of one document are joined when a quote spans a cut",
    )


class CorpusConfig(Settings):
    """Where the chunks come from: exactly one of source, path or folder."""

    source: Literal["python-docs", "given"] | None = Field(
        None, description="python-docs, or given: rows passed from Python (rag_eval.audit(config, corpus=...))"
    )
    path: str | None = Field(
        None,
        description="a file of chunks: JSON array or JSON Lines (one chunk per record), CSV/TSV with a header row, "
        "or Parquet; columns named by fields; relative to the config's folder",
    )
    folder: str | None = Field(
        None,
        description="a folder of documents (searched recursively), split into chunks by chunker; chunk ids are "
        "<relative path>#<section> (heading) or <relative path>#<piece number> (fixed)",
    )
    chunker: ChunkerConfig = ChunkerConfig()
    extensions: list[str] = Field(
        [".md", ".markdown", ".txt", ".rst"],
        description="folder: the file extensions read as documents (case-insensitive, the dot optional); other "
        "files are skipped",
    )
    fields: CorpusFields = CorpusFields()

    @model_validator(mode="after")
    def _exactly_one(self) -> CorpusConfig:
        given = [k for k in ("source", "path", "folder") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of source (python-docs), path (a JSON, JSONL, CSV or Parquet file) "
                f"or folder (a folder of documents); got {', '.join(given) or 'none'}"
            )
        return self


class TestSetConfig(Settings):
    """Where the questions come from: a file, or rows passed from Python (``source: given``)."""

    path: str | None = Field(
        None,
        description="the questions: JSON Lines, or a JSON array for a .json file; relative to the config's folder",
    )
    source: Literal["given"] | None = Field(
        None, description="given: the questions are passed from Python (rag_eval.audit(config, test_set=rows))"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> TestSetConfig:
        if (self.path is None) == (self.source is None):
            raise ValueError("give exactly one of path (a JSONL/JSON file) or source: given (rows from Python)")
        return self
