"""Loading a corpus from a JSON/JSONL/CSV/Parquet file, a folder of documents, or python-docs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rag_eval.config import AuditConfig
from rag_eval.data.chunking import slugify, split_by_heading, split_fixed, unique_ids
from rag_eval.data.frames import records_from
from rag_eval.data.python_docs import python_docs_corpus
from rag_eval.data.records import Record, read_records
from rag_eval.data.settings import CorpusConfig
from rag_eval.errors import ConfigError, DataError, Problem
from rag_eval.offline import go_offline
from rag_eval.progress import say
from rag_eval.types import Chunk, Corpus

TABLE_FORMATS = {".csv": "csv", ".tsv": "csv", ".parquet": "parquet"}


def load_corpus(cfg: AuditConfig, given: Any = None) -> Corpus:
    """The corpus the config names, or ``given`` (rows from Python) for ``source: given``; raises
    DataError listing every bad record."""
    cc = cfg.corpus
    if given is not None or cc.source == "given":
        if given is None:
            raise ConfigError(
                Problem(
                    cfg.where("corpus.source"),
                    "corpus: {source: given} needs the corpus passed from Python",
                    "call rag_eval.audit(config, corpus=rows), or name a path, folder or python-docs",
                )
            )
        if isinstance(given, Corpus):
            return given

        corpus = Corpus(_chunks_from_records(records_from(given, "corpus"), cc), source="corpus (given)")
    elif cc.source == "python-docs":
        corpus = python_docs_corpus()
    elif cc.folder:
        corpus = _from_folder(cfg.existing_path("corpus.folder", cc.folder, "corpus", folder=True), cc)
    else:
        path = cfg.existing_path("corpus.path", cc.path or "", "corpus")
        records = _table_records(path) if path.suffix.lower() in TABLE_FORMATS else read_records(path, "corpus")
        corpus = Corpus(_chunks_from_records(records, cc), source=str(path))
    if not corpus.chunks:
        raise DataError(
            Problem(corpus.source, "the corpus has no chunks", "point corpus at a file or folder that holds documents")
        )
    return corpus


def _table_records(path: Path) -> list[Record]:
    if not path.is_file():
        raise DataError(Problem(str(path), "the corpus file does not exist", "check corpus.path in the config"))
    go_offline()
    from datasets import Dataset  # noqa: PLC0415

    try:
        if TABLE_FORMATS[path.suffix.lower()] == "csv":
            sep = "\t" if path.suffix.lower() == ".tsv" else ","
            ds = Dataset.from_csv(str(path), sep=sep, keep_in_memory=True)
        else:
            ds = Dataset.from_parquet(str(path), keep_in_memory=True)
    except Exception as exc:  # datasets raises many types for unreadable tables
        raise DataError(
            Problem(
                str(path),
                f"cannot read the table: {exc}",
                "check that it is a valid CSV (with a header row) or Parquet file",
            )
        ) from None
    # CSV rows start on line 2, after the header.
    offset = 2 if TABLE_FORMATS[path.suffix.lower()] == "csv" else 1
    label = "line" if offset == 2 else "row"
    return [
        Record(dict(row), f"{path}:{i + offset}" if offset == 2 else f"{path} ({label} {i + 1})")
        for i, row in enumerate(ds)
    ]


def _chunks_from_records(records: list[Record], cc: CorpusConfig) -> list[Chunk]:
    f = cc.fields
    chunks: list[Chunk] = []
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    known = {f.id, f.text, f.title, f.doc_id, "metadata"}
    for rec in records:
        d = rec.data
        cid, text = d.get(f.id), d.get(f.text)
        if cid is None or (isinstance(cid, str) and not cid.strip()):
            problems.append(
                Problem(
                    rec.where,
                    f"chunk has no '{f.id}'",
                    f"give every chunk a unique '{f.id}' (or map another column with corpus.fields.id)",
                )
            )
            continue
        cid = str(cid)
        if not isinstance(text, str) or not text.strip():
            problems.append(
                Problem(
                    rec.where,
                    f"chunk '{cid}' has no '{f.text}' (or it is empty)",
                    "add its text, or map another column with corpus.fields.text",
                )
            )
            continue
        if cid in seen:
            problems.append(
                Problem(
                    rec.where,
                    f"duplicate chunk id '{cid}' (first at {seen[cid]})",
                    "chunk ids must be unique; rename one of them",
                )
            )
            continue
        seen[cid] = rec.where
        meta = d.get("metadata")
        extra = {k: v for k, v in d.items() if k not in known} if len(d) > 2 else {}
        if isinstance(meta, dict):
            extra.update(meta)
        chunks.append(Chunk(cid, text, str(d.get(f.title) or ""), str(d.get(f.doc_id) or ""), extra))
    if problems:
        raise DataError(problems)
    return chunks


def _from_folder(folder: Path, cc: CorpusConfig) -> Corpus:
    if not folder.is_dir():
        raise DataError(Problem(str(folder), "the corpus folder does not exist", "check corpus.folder in the config"))
    exts = {e.lower() if e.startswith(".") else f".{e.lower()}" for e in cc.extensions}
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in exts)
    if not files:
        raise DataError(
            Problem(
                str(folder),
                f"no documents with extensions {sorted(exts)} in the folder",
                "add documents, or list their extensions in corpus.extensions",
            )
        )
    chunks: list[Chunk] = []
    problems = []
    empty: list[str] = []
    for path in files:
        rel = path.relative_to(folder).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(str(path), f"cannot read the document: {exc}", "make it readable UTF-8 text"))
            continue
        got = chunk_document(rel, text, cc)
        if not got:
            empty.append(rel)
        chunks.extend(got)
    if problems:
        raise DataError(problems)
    if empty:
        shown = ", ".join(empty[:5]) + (f" and {len(empty) - 5} more" if len(empty) > 5 else "")
        say(
            f"corpus: {len(empty)} document{'s' * (len(empty) > 1)} with no text under {'their' if len(empty) > 1 else 'its'} headings skipped ({shown})"
        )
    if not chunks:
        raise DataError(
            Problem(
                str(folder), "no document in the folder holds any text", "add documents with text under their headings"
            )
        )
    return Corpus(chunks, source=str(folder))


# The extensions whose "# ..." lines are headings; a .txt file is read as Markdown where its "# "
# lines each stand before a blank line (a heading's look), not before code as a comment does.
MARKDOWN = (".md", ".markdown", ".mdx", ".mdown", ".mkd", ".qmd", ".rmd")
_HASH_LINE = re.compile(r"^#{1,6}\s+\S")


def reads_as_markdown(doc_id: str, text: str) -> bool:
    """Whether a document's "# ..." lines are headings: a Markdown file, or a .txt file whose every
    "# " line outside a code fence is followed by a blank line (llms.txt, Markdown exported as
    text); a comment line of a shell or Python snippet is followed by code."""
    suffix = Path(doc_id).suffix.lower()
    if suffix in MARKDOWN:
        return True
    if suffix != ".txt":
        return False
    lines, fence, found = text.splitlines(), "", False
    for i, line in enumerate(lines):
        marker = line.lstrip()[:3]
        if marker in ("```", "~~~") and (not fence or marker == fence):
            fence = "" if fence else marker
            continue
        if fence or not _HASH_LINE.match(line):
            continue
        found = True
        if i + 1 < len(lines) and lines[i + 1].strip():
            return False
    return found


def chunk_document(doc_id: str, text: str, cc: CorpusConfig) -> list[Chunk]:
    """Chunks of one document under the configured chunker; ids are ``<doc_id>#<part>``."""
    ch = cc.chunker
    pieces: list[tuple[str, str]] = []
    if ch.type == "fixed":
        pieces = [("", p) for p in split_fixed(text, ch.size, ch.overlap)]
        ids = [f"{doc_id}#{i}" for i in range(len(pieces))]
    else:
        markdown = reads_as_markdown(doc_id, text)
        for s in split_by_heading(text, markdown=markdown):
            if not s.text.strip():
                continue  # a document of a heading alone (a stub) holds nothing to retrieve
            if ch.max_chars and len(s.text) > ch.max_chars:
                pieces += [
                    (s.heading, p) for p in split_fixed(s.text, ch.max_chars, min(ch.overlap, ch.max_chars // 2))
                ]
            else:
                pieces.append((s.heading, s.text))
        ids = unique_ids([f"{doc_id}#{slugify(h) if h else 'intro'}" for h, _ in pieces])
    title_base = Path(doc_id).stem
    return [Chunk(id=cid, text=body, title=h or title_base, doc_id=doc_id) for cid, (h, body) in zip(ids, pieces)]
