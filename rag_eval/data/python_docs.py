"""The built-in demo corpus: the Python reference topics shipped in every Python install."""

from __future__ import annotations

import sys

from rag_eval.data.chunking import slugify, split_by_heading, unique_ids
from rag_eval.types import Chunk, Corpus


def python_docs_corpus() -> Corpus:
    """One chunk per section of each ``pydoc_data.topics`` topic, split at its headings.

    Chunk ids are ``<topic>/<section-slug>``; ``doc_id`` is the topic. Long sections are kept
    whole on purpose: they are part of what the demo audits.
    """
    from pydoc_data.topics import topics  # noqa: PLC0415

    chunks: list[Chunk] = []
    for topic in sorted(topics):
        sections = split_by_heading(topics[topic])
        ids = unique_ids([f"{topic}/{slugify(s.heading or topic)}" for s in sections])
        for cid, s in zip(ids, sections):
            chunks.append(Chunk(id=cid, text=s.text, title=s.heading or topic, doc_id=topic))
    version = ".".join(map(str, sys.version_info[:2]))
    return Corpus(chunks, source=f"python-docs (pydoc_data.topics, Python {version})")
