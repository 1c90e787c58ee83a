"""Shared fixtures: a small corpus and test set on disk, and an isolated cache folder."""

import json
from pathlib import Path

import pytest

from rag_eval import progress

ROOT = Path(__file__).resolve().parents[1]
PEP_SECTIONS = ROOT.parent / "shared" / "benchmarks" / "pep" / "sections.json"  # an extra, when present
# Shipped with the tests: 40 sections (one a topic, text cut at 1,500 characters) of the Python
# reference topics in pydoc_data.topics (Python 3.11), in the PEP file's format {id, title, text}.
SECTIONS = ROOT / "tests" / "data" / "sections.json"
# Section files the corpus-wide checks run on: the shipped one always, the PEP one where it exists.
SECTION_FILES = [
    pytest.param(SECTIONS, id="shipped"),
    pytest.param(
        PEP_SECTIONS,
        id="pep",
        marks=pytest.mark.skipif(not PEP_SECTIONS.exists(), reason="the PEP corpus is in ../shared (optional)"),
    ),
]

SMALL_CORPUS = [
    {"id": "py/lists", "title": "Lists", "text": "Lists are mutable sequences, typically used to store collections."},
    {
        "id": "py/tuples",
        "title": "Tuples",
        "text": "Tuples are immutable sequences, typically used to store heterogeneous data.",
    },
    {"id": "py/dicts", "title": "Dictionaries", "text": "A mapping object maps hashable values to arbitrary objects."},
    {"id": "py/sets", "title": "Sets", "text": "A set object is an unordered collection of distinct hashable objects."},
    {
        "id": "py/with",
        "title": "The with statement",
        "text": "The with statement wraps a block with methods of a context manager.",
    },
]
SMALL_QUESTIONS = [
    {
        "id": "q1",
        "question": "Which sequence type can be changed in place?",
        "answer_in": "py/lists",
        "reference": "Lists.",
    },
    {
        "id": "q2",
        "question": "What is a set?",
        "evidence": "unordered collection of distinct hashable objects",
        "reference": "An unordered collection of distinct hashable objects.",
    },
    {
        "id": "q3",
        "question": "How do I wrap a block with a context manager?",
        "answer_in": {"py/with": 2, "py/sets": 0},
    },
    {"id": "q4", "question": "Who wrote the Python tutorial?", "answerable": False},
]


@pytest.fixture(autouse=True)
def _quiet_and_isolated(tmp_path_factory, monkeypatch):
    progress.set_enabled(False)
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
    # repack: auto resolved to the layout the tests' expectations were written under, without
    # probing (tests/llm/test_weight_layout.py lifts it).
    monkeypatch.setenv("RAG_EVAL_REPACK", "1")


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def small_project(tmp_path):
    """A folder with corpus.jsonl, questions.jsonl and audit.yaml (bm25 only); returns the folder."""
    write_jsonl(tmp_path / "corpus.jsonl", SMALL_CORPUS)
    write_jsonl(tmp_path / "questions.jsonl", SMALL_QUESTIONS)
    (tmp_path / "audit.yaml").write_text(
        "name: small\n"
        "corpus: {path: corpus.jsonl}\n"
        "test_set: {path: questions.jsonl}\n"
        "retrieval:\n"
        "  k: [1, 3]\n"
        "  depth: 5\n"
        "  retrievers:\n"
        "    bm25: {type: bm25}\n"
        f"report: {{out: {tmp_path / 'runs'}}}\n"
    )
    return tmp_path
