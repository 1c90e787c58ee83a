"""Loading a test set and resolving its labels (chunk ids or evidence quotes) to relevant chunks."""

from __future__ import annotations

import difflib
import hashlib
import re
from pathlib import Path
from typing import Any

from rag_eval.data.records import Record, read_records
from rag_eval.errors import DataError, Problem
from rag_eval.types import Corpus, Question

KNOWN_FIELDS = {"id", "question", "answer_in", "evidence", "doc_id", "reference", "answerable"}
_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Whitespace collapsed to single spaces; evidence matching compares these."""
    return _WS.sub(" ", text).strip()


def stable_id(question: str) -> str:
    """The id of a question that has none: a hash of its text, the same on every run."""
    return "q-" + hashlib.sha1(normalise(question).encode()).hexdigest()[:10]


class EvidenceIndex:
    """Finds the chunks whose text contains a quote, after whitespace normalisation."""

    def __init__(self, corpus: Corpus):
        self.corpus = corpus
        self.texts = [normalise(f"{c.title}\n{c.text}") for c in corpus.chunks]
        self.doc_ids = {c.doc_id for c in corpus.chunks}

    def find(self, quote: str, doc_id: str | None = None) -> list[str]:
        q = normalise(quote)
        return [
            c.id for c, t in zip(self.corpus.chunks, self.texts) if q in t and (doc_id is None or c.doc_id == doc_id)
        ]

    def closest(self, quote: str) -> tuple[str, str, bool] | None:
        """(chunk id, the nearest passage, whether only Markdown/reST markup differs) for a quote
        that matches no chunk: the chunk sharing the longest run of characters with it."""
        q = normalise(quote)
        plain = strip_markup(q)
        for c, t in zip(self.corpus.chunks, self.texts):
            if plain and plain in strip_markup(t):
                return c.id, _excerpt(t, strip_markup(t).find(plain), len(plain)), True
        best = None
        for c, t in zip(self.corpus.chunks, self.texts):
            m = difflib.SequenceMatcher(None, q, t, autojunk=False).find_longest_match(0, len(q), 0, len(t))
            if best is None or m.size > best[0]:
                best = (m.size, c.id, _excerpt(t, max(0, m.b - m.a), len(q)))
        if best is None or best[0] < min(12, len(q) // 3):
            return None
        return best[1], best[2], False


def strip_markup(text: str) -> str:
    """Text without inline Markdown/reST markup (backticks, emphasis, heading marks, link brackets)."""
    return normalise(re.sub(r"[`*_#>\[\]|]+", "", text))


def _excerpt(text: str, start: int, length: int) -> str:
    piece = text[max(0, start) : start + length + 20]
    return piece if len(piece) <= 120 else piece[:117] + "..."


def label_provenance(question: Question, corpus: Corpus) -> dict:
    """How a question's relevant chunks were labelled, for comparing runs over different corpora:
    its evidence quotes (they find their chunks in any chunking), and each chunk it names by id that
    no quote accounts for, with a hash of that chunk's passage (an id holds the same label across
    runs only while its passage is unchanged)."""
    quotes = [normalise(q) for q in question.evidence]
    by_id: dict[str, str] = {}
    for cid, grade in question.qrels.items():
        if grade <= 0 or cid not in corpus.index:
            continue
        chunk = corpus.chunks[corpus.index[cid]]
        passage = normalise(f"{chunk.title}\n{chunk.text}")
        if not any(q in passage for q in quotes):
            by_id[cid] = hashlib.sha1(passage.encode()).hexdigest()[:12]
    return {"evidence": list(question.evidence), "chunk_ids": by_id}


def load_test_set(path: Path, corpus: Corpus) -> list[Question]:
    """Every question of the file with its labels resolved; raises DataError listing all problems."""
    return questions_from_records(read_records(path, "test set"), corpus, str(path))


def questions_from_records(records: list[Record], corpus: Corpus, source: str) -> list[Question]:
    """Every question of the records (each naming its file and line, or its row) with labels resolved;
    raises DataError listing all problems."""
    index = EvidenceIndex(corpus)
    questions, problems = [], []
    first_seen: dict[str, str] = {}
    for rec in records:
        q, probs = _parse(rec, corpus, index)
        problems += probs
        if q is None:
            continue
        if q.id in first_seen:
            what = (
                f"duplicate question id '{q.id}'"
                if "id" in rec.data
                else f"the same question appears twice: {q.question[:60]!r}"
            )
            problems.append(
                Problem(
                    rec.where,
                    f"{what} (first at {first_seen[q.id]})",
                    "give each question its own id, or remove the repeat",
                )
            )
            continue
        first_seen[q.id] = rec.where
        questions.append(q)
    if problems:
        raise DataError(problems)
    if not questions:
        raise DataError(Problem(source, "the test set has no questions", "add questions to it"))
    if not any(q.answerable for q in questions):
        raise DataError(
            Problem(
                source,
                f"none of the {len(questions)} questions is answerable, so no retrieval figure can be measured",
                "label the questions the documents answer (answer_in or evidence); keep answerable: false only "
                "for those they cannot",
            )
        )
    return questions


def _parse(rec: Record, corpus: Corpus, index: EvidenceIndex) -> tuple[Question | None, list[Problem]]:
    d, where = rec.data, rec.where
    problems: list[Problem] = []
    text = d.get("question")
    if not isinstance(text, str) or not text.strip():
        return None, [Problem(where, "the question is missing or empty", 'add "question": "..."')]
    qid = str(d["id"]) if d.get("id") not in (None, "") else stable_id(text)
    label = f"{where} (question '{qid}')"

    answerable = d.get("answerable")
    if answerable is not None and not isinstance(answerable, bool):
        problems.append(
            Problem(
                label,
                f"answerable must be true or false, got {answerable!r}",
                "write answerable: false for questions the documents cannot answer",
            )
        )
        answerable = None

    qrels: dict[str, int] = {}
    matches: dict[str, int] = {}
    has_labels = d.get("answer_in") not in (None, [], {}, "") or d.get("evidence") not in (None, [], "")
    if d.get("answer_in") not in (None, [], {}, ""):
        qrels.update(_answer_in(d["answer_in"], corpus, label, problems))
    if d.get("evidence") not in (None, [], ""):
        for cid in _evidence(d["evidence"], d.get("doc_id"), index, label, problems, matches):
            qrels.setdefault(cid, 1)

    if answerable is False and has_labels:
        problems.append(
            Problem(
                label,
                "the question is marked answerable: false but carries labels",
                "remove answer_in/evidence, or drop answerable: false",
            )
        )
    elif answerable is None and not has_labels and not problems:
        problems.append(
            Problem(
                label,
                "the question has no labels",
                "add answer_in (chunk ids) or evidence (quotes), "
                "or answerable: false if the documents cannot answer it",
            )
        )
    reference = d.get("reference")
    if reference is not None and not isinstance(reference, str):
        problems.append(Problem(label, "reference must be a string", "write the reference answer as text"))
        reference = None
    meta = {k: v for k, v in d.items() if k not in KNOWN_FIELDS}
    if problems:
        return None, problems
    quotes = [e if isinstance(e, str) else e.get("quote", "") for e in _as_list(d.get("evidence"))]
    return Question(
        qid,
        text.strip(),
        qrels,
        answerable=answerable is not False,
        reference=reference,
        where=where,
        evidence=[q for q in quotes if isinstance(q, str) and q],
        metadata=meta,
        quote_matches=matches,
    ), []


def _as_list(value: Any) -> list:
    return [] if value in (None, "") else value if isinstance(value, list) else [value]


def _answer_in(value: Any, corpus: Corpus, label: str, problems: list[Problem]) -> dict[str, int]:
    if isinstance(value, (str, int)):
        items = {str(value): 1}
    elif isinstance(value, list):
        items = {str(v): 1 for v in value}
    elif isinstance(value, dict):
        items = {}
        for k, g in value.items():
            if isinstance(g, bool) or not isinstance(g, int) or g < 0:
                problems.append(
                    Problem(
                        label,
                        f"answer_in grade for '{k}' must be a non-negative integer, got {g!r}",
                        'write graded labels as {"chunk-id": 2, "other-id": 1}',
                    )
                )
                continue
            items[str(k)] = g
    else:
        problems.append(
            Problem(
                label,
                f"answer_in must be a chunk id, a list of ids or a map id -> grade, got {type(value).__name__}",
                'e.g. "answer_in": ["doc#intro"]',
            )
        )
        return {}
    for cid in list(items):
        if cid not in corpus.index:
            close = difflib.get_close_matches(cid, corpus.ids, n=3, cutoff=0.6)
            fix = (
                ("did you mean " + ", ".join(f"'{c}'" for c in close) + "?")
                if close
                else ("use an id from the corpus, or label with evidence quotes that survive re-chunking")
            )
            problems.append(Problem(label, f"answer_in names chunk '{cid}', which is not in the corpus", fix))
            del items[cid]
    if items and not any(g > 0 for g in items.values()):
        problems.append(
            Problem(
                label,
                "every answer_in grade is 0, so nothing is relevant",
                "give the answering chunk a grade of 1 or more",
            )
        )
    return items


def _evidence(
    value: Any,
    doc_id: Any,
    index: EvidenceIndex,
    label: str,
    problems: list[Problem],
    matches: dict[str, int] | None = None,
) -> list[str]:
    items = value if isinstance(value, list) else [value]
    found: list[str] = []
    for item in items:
        quote, restrict = (
            (item, doc_id)
            if isinstance(item, str)
            else ((item.get("quote"), item.get("doc_id", doc_id)) if isinstance(item, dict) else (None, None))
        )
        if not isinstance(quote, str) or not quote.strip():
            problems.append(
                Problem(
                    label,
                    f"evidence must be quotes (strings or {{quote, doc_id}}), got {item!r}",
                    'e.g. "evidence": ["exact words from the answering passage"]',
                )
            )
            continue
        if restrict is not None and str(restrict) not in index.doc_ids:
            close = difflib.get_close_matches(str(restrict), sorted(index.doc_ids), n=1)
            problems.append(
                Problem(
                    label,
                    f"evidence doc_id '{restrict}' is not a document of the corpus",
                    f"did you mean '{close[0]}'?" if close else "check the doc_id",
                )
            )
            continue
        ids = index.find(quote, None if restrict is None else str(restrict))
        if matches is not None:
            matches[quote] = len(ids)
        if not ids:
            short = normalise(quote)
            short = short if len(short) <= 80 else short[:77] + "..."
            near = index.closest(quote)
            if near and near[2]:
                fix = (
                    f"the passage in chunk '{near[0]}' has the same words with Markdown/reST markup (backticks, "
                    f"asterisks...): {near[1]!r}; copy the quote from the source file, markup included"
                )
            elif near:
                fix = f"the closest passage is in chunk '{near[0]}': {near[1]!r}; copy the words exactly from it"
            else:
                fix = (
                    "copy the words exactly from the passage (whitespace may differ, case may not); "
                    "a quote that spans two chunks matches neither, so shorten it"
                )
            problems.append(Problem(label, f"evidence quote {short!r} matches no chunk", fix))
        found += [i for i in ids if i not in found]
    return found
