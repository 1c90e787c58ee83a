"""Loading a test set and resolving its labels (chunk ids or evidence quotes) to relevant chunks."""

from __future__ import annotations

import difflib
import hashlib
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np
from pydantic import BaseModel, ConfigDict

from rag_eval.data.records import Record, read_records
from rag_eval.errors import DataError, Problem
from rag_eval.types import Corpus, Question

KNOWN_FIELDS = {"id", "question", "answer_in", "evidence", "doc_id", "reference", "answerable"}
_WS = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


# ASCII characters that are not word characters, as spaces: an ASCII text's words are then its
# split() (the regex engine's \w+ is slower, checking each character against Unicode's tables).
_ASCII_NON_WORD = str.maketrans({chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_")})


def words(text: str) -> list[str]:
    """The words of a text: its runs of word characters (``\\w+``)."""
    return text.translate(_ASCII_NON_WORD).split() if text.isascii() else _WORD.findall(text)


def normalise(text: str) -> str:
    """Whitespace collapsed to single spaces; evidence matching compares these."""
    return _WS.sub(" ", text).strip()


def stable_id(question: str) -> str:
    """The id of a question that has none: a hash of its text, the same on every run."""
    return "q-" + hashlib.sha1(normalise(question).encode()).hexdigest()[:10]


# Up to this many texts a phrase is looked for in each; above it, only in the texts holding its rarest word.
SCAN_TEXTS = 2000
# Texts few enough to look in for a phrase, once its rarest inner words have narrowed them down.
NARROW = 16


class LazyTexts(Sequence[str]):
    """``n`` texts, each made by ``make(i)`` when first read and kept (a large corpus's texts that
    only a few lookups need)."""

    def __init__(self, n: int, make: Callable[[int], str]):
        self.make = make
        self.made: list[str | None] = [None] * n

    def __len__(self) -> int:
        return len(self.made)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        t = self.made[i]
        if t is None:
            t = self.made[i] = self.make(i)
        return t

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))


class PhraseIndex:
    """Finds the texts (whitespace-normalised) that contain a phrase. On a large corpus a phrase is
    looked for only in the texts that hold its inner words (runs of word characters with a character
    of the phrase on both sides, so whole words of any text that holds the phrase: ``foo`` of ``x =
    self.foo(y)``), from the rarest on: one pass over the texts collects, for the inner words of the
    phrases given, the texts holding each. A phrase with none of those words is looked for in every
    text. ``raw``: the texts before whitespace normalisation (default: the
    texts), where every piece of a phrase between its spaces must appear before the text is read;
    ``text_words``: each text's words (its runs of word characters; default: read from ``raw``).
    Normalisation leaves the words, and the pieces between spaces, as they are: ``texts`` may make
    each text only when it is read (:class:`LazyTexts`)."""

    def __init__(
        self,
        texts: Sequence[str],
        phrases: Iterable[str] = (),
        text_words: Iterable[list[str]] | None = None,
        raw: Sequence[str] | None = None,
    ):
        self.texts = texts
        self.raw = texts if raw is None else raw
        self.postings: dict[str, np.ndarray] = {}
        wanted = sorted({w for p in phrases for w in _inner_words(p)})
        if len(texts) > SCAN_TEXTS and wanted:
            # Each text's wanted words, then (word, text) pairs grouped by word, texts in order.
            held: list[str] = []
            counts = array("q")
            for found in map(
                set(wanted).intersection, map(_WORD.findall, self.raw) if text_words is None else text_words
            ):
                counts.append(len(found))
                held.extend(found)
            ids = {w: i for i, w in enumerate(wanted)}
            word_of = np.fromiter(map(ids.__getitem__, held), dtype=np.int64, count=len(held))
            text_of = np.repeat(np.arange(len(counts)), counts)
            order = np.argsort(word_of, kind="stable")
            bounds = np.searchsorted(word_of[order], np.arange(len(wanted) + 1))
            holders = text_of[order]
            self.postings = {w: holders[bounds[i] : bounds[i + 1]] for i, w in enumerate(wanted)}

    def find(self, phrase: str) -> list[int]:
        """Indices of the texts that contain ``phrase`` (normalised as the texts are), in order."""
        inner = sorted({w for w in _inner_words(phrase) if w in self.postings}, key=lambda w: len(self.postings[w]))
        piece = max(phrase.split(" "), key=len)
        if not inner:
            return [i for i, t in enumerate(self.raw) if piece in t and phrase in self.texts[i]]
        held = self.postings[inner[0]]
        for w in inner[1:]:
            if len(held) <= NARROW:
                break
            # The texts that also hold the next rarest word (binary search in its sorted postings).
            other = self.postings[w]
            at = np.minimum(np.searchsorted(other, held), len(other) - 1)
            held = held[other[at] == held]
        if self.raw is self.texts:
            return [i for i in held.tolist() if phrase in self.texts[i]]
        return [i for i in held.tolist() if piece in self.raw[i] and phrase in self.texts[i]]


def _inner_words(phrase: str) -> list[str]:
    """The words of a phrase with a character of the phrase on both sides (so not a word it starts
    or ends with): whole words of any text that holds the phrase."""
    return [m.group() for m in _WORD.finditer(phrase) if m.start() > 0 and m.end() < len(phrase)]


class EvidenceIndex:
    """Finds the chunks whose text contains a quote, after whitespace normalisation. ``quotes``:
    the quotes that will be looked for (on a large corpus they are then found without reading every
    chunk)."""

    def __init__(self, corpus: Corpus, quotes: Iterable[str] = ()):
        self.corpus = corpus
        self.doc_ids = {c.doc_id for c in corpus.chunks}
        self.quotes = [normalise(q) for q in quotes]
        self._texts: LazyTexts | None = None
        self._raw: list[str] | None = None
        self._search: PhraseIndex | None = None
        self._by_doc: dict[str, list[int]] | None = None
        self._bodies: dict[int, str] = {}

    @property
    def texts(self) -> LazyTexts:
        """Each chunk's title and text, normalised when first read (a test set labelled by chunk ids
        never pays for it; on a large corpus only the chunks that hold a quote's words are read)."""
        if self._texts is None:
            raw = self.raw
            self._texts = LazyTexts(len(raw), lambda i: normalise(raw[i]))
        return self._texts

    @property
    def raw(self) -> list[str]:
        """Each chunk's title and text as they are."""
        if self._raw is None:
            self._raw = [f"{c.title}\n{c.text}" for c in self.corpus.chunks]
        return self._raw

    @property
    def search(self) -> PhraseIndex:
        if self._search is None:
            self._search = PhraseIndex(self.texts, self.quotes, map(words, self.raw), self.raw)
        return self._search

    def find(self, quote: str, doc_id: str | None = None) -> list[str]:
        chunks = self.corpus.chunks
        hits = (chunks[i] for i in self.search.find(normalise(quote)))
        return [c.id for c in hits if doc_id is None or c.doc_id == doc_id]

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

    def spanning(self, quote: str, doc_id: str | None = None) -> dict[str, float]:
        """For a quote no single chunk holds: the adjacent chunks of one document that hold it
        together (a chunk boundary cut it), each with the share of the quote's characters it holds;
        empty when no run of adjacent chunks holds it. Chunks overlap as the chunker made them: the
        run's text is the chunks joined with each overlap counted once."""
        q = normalise(quote)
        probe = min(12, len(q) // 2)
        if probe < 2:
            return {}
        ends = (q[:probe], q[-probe:])
        # One side of the cut holds at least half of the quote: its probe is inside one chunk.
        docs = {
            c.doc_id
            for c, t in zip(self.corpus.chunks, self.texts)
            if c.doc_id and (doc_id is None or c.doc_id == doc_id) and any(e in t for e in ends)
        }
        for d in sorted(docs):
            members = self._doc_chunks(d)
            merged, spans = merge_overlapping([self._body(i) for i in members])
            start = merged.find(q)
            if start < 0:
                continue
            end = start + len(q)
            shares = {}
            for i, (a, b) in zip(members, spans):
                part = min(b, end) - max(a, start)
                if part >= min(3, len(q)):
                    shares[self.corpus.chunks[i].id] = round(max(0.01, part / len(q)), 2)
            if len(shares) > 1:
                return shares
        return {}

    def _doc_chunks(self, doc_id: str) -> list[int]:
        if self._by_doc is None:
            self._by_doc = {}
            for i, c in enumerate(self.corpus.chunks):
                if c.doc_id:
                    self._by_doc.setdefault(c.doc_id, []).append(i)
        return self._by_doc.get(doc_id, [])

    def _body(self, i: int) -> str:
        if i not in self._bodies:
            self._bodies[i] = normalise(self.corpus.chunks[i].text)
        return self._bodies[i]


def merge_overlapping(texts: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """Consecutive chunk texts joined into one, the words a chunk repeats from the one before (its
    overlap) counted once; with each chunk's (start, end) in the joined text."""
    merged, spans = "", []
    for t in texts:
        k = _overlap(merged, t)
        if k == 0 and merged:
            merged += " "
        start = len(merged) - k
        merged += t[k:]
        spans.append((start, start + len(t)))
    return merged, spans


def _overlap(before: str, text: str) -> int:
    """The longest beginning of ``text`` that ``before`` ends with, cut at word boundaries."""
    for k in range(min(len(before), len(text)), 0, -1):
        whole_words = (k == len(text) or text[k] == " ") and (k == len(before) or before[-k - 1] == " ")
        if whole_words and before.endswith(text[:k]):
            return k
    return 0


MARKUP_CHARS = "`*_#>[]|"  # inline Markdown/reST markup: backticks, emphasis, heading marks, link brackets
_MARKUP = re.compile("[" + re.escape(MARKUP_CHARS) + "]+")


def strip_markup(text: str) -> str:
    """Text without inline Markdown/reST markup (backticks, emphasis, heading marks, link brackets)."""
    return normalise(_MARKUP.sub("", text))


def _excerpt(text: str, start: int, length: int) -> str:
    piece = text[max(0, start) : start + length + 20]
    return piece if len(piece) <= 120 else piece[:117] + "..."


def label_provenance(question: Question, corpus: Corpus) -> dict:
    """How a question's relevant chunks were labelled, for comparing runs over different corpora:
    its evidence quotes (they find their chunks in any chunking), and each chunk it names by id that
    no quote accounts for, with a hash of that chunk's passage (an id holds the same label across
    runs only while its passage is unchanged)."""
    quotes = [normalise(q) for q in question.evidence]
    spanned = {cid for split in question.quote_spans.values() for cid in split}
    by_id: dict[str, str] = {}
    for cid, grade in question.qrels.items():
        if grade <= 0 or cid not in corpus.index:
            continue
        chunk = corpus.chunks[corpus.index[cid]]
        passage = normalise(f"{chunk.title}\n{chunk.text}")
        if not any(q in passage for q in quotes) and cid not in spanned:
            by_id[cid] = hashlib.sha1(passage.encode()).hexdigest()[:12]
    return {"evidence": list(question.evidence), "chunk_ids": by_id}


class _Row(BaseModel):
    """A test-set record's fields as the file wrote them, any type: ``_parse`` checks each and names
    what is wrong; the other keys are the question's metadata."""

    model_config = ConfigDict(extra="ignore")

    id: Any = None
    question: Any = None
    answer_in: Any = None
    evidence: Any = None
    doc_id: Any = None
    reference: Any = None
    answerable: Any = None


class _Quote(BaseModel):
    """An evidence item written as a mapping, ``{quote, doc_id}`` (a ``doc_id`` it leaves out is the
    question's)."""

    model_config = ConfigDict(extra="ignore")

    quote: Any = None
    doc_id: Any = None


def load_test_set(path: Path, corpus: Corpus) -> list[Question]:
    """Every question of the file with its labels resolved; raises DataError listing all problems."""
    return questions_from_records(read_records(path, "test set"), corpus, str(path))


def questions_from_records(records: list[Record], corpus: Corpus, source: str) -> list[Question]:
    """Every question of the records (each naming its file and line, or its row) with labels resolved;
    raises DataError listing all problems."""
    rows = [_Row.model_validate(rec.data) for rec in records]
    quotes = [
        _Quote.model_validate(q).quote if isinstance(q, dict) else q for row in rows for q in _as_list(row.evidence)
    ]
    index = EvidenceIndex(corpus, [q for q in quotes if isinstance(q, str)])
    questions, problems = [], []
    first_seen: dict[str, str] = {}
    for rec, row in zip(records, rows, strict=True):
        q, probs = _parse(rec, row, corpus, index)
        problems += probs
        # A row with other problems still has its id: a repeat is told with them, not after they are fixed.
        qid = q.id if q is not None else (str(row.id) if isinstance(row.id, str | int) and str(row.id) else None)
        if qid is None:
            continue
        if qid in first_seen:
            what = (
                f"duplicate question id '{qid}'"
                if "id" in rec.data or q is None
                else f"the same question appears twice: {q.question[:60]!r}"
            )
            problems.append(
                Problem(
                    rec.where,
                    f"{what} (first at {first_seen[qid]})",
                    "give each question its own id, or remove the repeat",
                )
            )
            continue
        first_seen[qid] = rec.where
        if q is not None:
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


def _parse(rec: Record, row: _Row, corpus: Corpus, index: EvidenceIndex) -> tuple[Question | None, list[Problem]]:
    d, where = rec.data, rec.where
    problems: list[Problem] = []
    text = row.question
    if not isinstance(text, str) or not text.strip():
        return None, [Problem(where, "the question is missing or empty", 'add "question": "..."')]
    qid = str(row.id) if row.id not in (None, "") else stable_id(text)
    label = f"{where} (question '{qid}')"

    answerable = row.answerable
    if answerable is not None and not isinstance(answerable, bool):
        problems.append(
            Problem(
                label,
                f"answerable must be true or false, got {answerable!r}",
                "write answerable: false for questions the documents cannot answer",
            )
        )
        answerable = None

    qrels: dict[str, float] = {}
    matches: dict[str, int] = {}
    spans: dict[str, dict[str, float]] = {}
    has_labels = row.answer_in not in (None, [], {}, "") or row.evidence not in (None, [], "")
    if row.answer_in not in (None, [], {}, ""):
        qrels.update(_answer_in(row.answer_in, corpus, label, problems))
    if row.evidence not in (None, [], ""):
        for cid, grade in _evidence(row.evidence, row.doc_id, index, label, problems, matches, spans).items():
            qrels.setdefault(cid, grade)

    if answerable is False and has_labels:
        problems.append(
            Problem(
                label,
                "the question is marked answerable: false but carries labels",
                "remove answer_in/evidence, or drop answerable: false",
            )
        )
    elif answerable is None and not has_labels and not problems:
        others = [k for k in d if k not in KNOWN_FIELDS]
        problems.append(
            Problem(
                label,
                "the question has no labels"
                + (f" (its keys {', '.join(map(repr, others))} are not labels rag-eval reads)" if others else ""),
                "add answer_in (chunk ids) or evidence (quotes), "
                "or answerable: false if the documents cannot answer it",
            )
        )
    reference = row.reference
    if reference is not None and not isinstance(reference, str):
        problems.append(Problem(label, "reference must be a string", "write the reference answer as text"))
        reference = None
    meta = {k: v for k, v in d.items() if k not in KNOWN_FIELDS}
    if problems:
        return None, problems
    quotes = [e if isinstance(e, str) else _Quote.model_validate(e).quote for e in _as_list(row.evidence)]
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
        quote_spans=spans,
    ), []


def _as_list(value: Any) -> list:
    return [] if value in (None, "") else value if isinstance(value, list) else [value]


def _answer_in(value: Any, corpus: Corpus, label: str, problems: list[Problem]) -> dict[str, float]:
    items: dict[str, float]
    if isinstance(value, (str, int)):
        items = {str(value): 1}
    elif isinstance(value, list):
        items = {str(v): 1 for v in value}
    elif isinstance(value, dict):
        items = {}
        for k, g in value.items():
            if isinstance(g, bool) or not isinstance(g, (int, float)) or g < 0:
                problems.append(
                    Problem(
                        label,
                        f"answer_in grade for '{k}' must be a non-negative number, got {g!r}",
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


def _quote_of(item: _Quote, doc_id: Any) -> tuple[Any, Any]:
    """The quote of an evidence mapping and the document it is restricted to: its own ``doc_id`` if it
    writes one (even null), else the question's."""
    return item.quote, item.doc_id if "doc_id" in item.model_fields_set else doc_id


def _evidence(
    value: Any,
    doc_id: Any,
    index: EvidenceIndex,
    label: str,
    problems: list[Problem],
    matches: dict[str, int] | None = None,
    spans: dict[str, dict[str, float]] | None = None,
) -> dict[str, float]:
    """The chunks the evidence quotes label, with their grades: 1 for a chunk holding a whole quote;
    for a quote a chunk boundary cut (no chunk holds it whole), each adjacent chunk it spans, graded
    by the share of the quote it holds (recorded in ``spans``)."""
    items = value if isinstance(value, list) else [value]
    found: dict[str, float] = {}
    for item in items:
        quote, restrict = (
            (item, doc_id)
            if isinstance(item, str)
            else (_quote_of(_Quote.model_validate(item), doc_id) if isinstance(item, dict) else (None, None))
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
                    f"did you mean '{close[0]}'?"
                    if close
                    else "remove doc_id to look the quote up in every document (a test set generated from "
                    "another form of the same texts names that form's documents), or name one of this corpus's: "
                    + ", ".join(sorted(index.doc_ids)[:5])
                    + (", ..." if len(index.doc_ids) > 5 else ""),
                )
            )
            continue
        ids = index.find(quote, None if restrict is None else str(restrict))
        grades = dict.fromkeys(ids, 1.0)
        if not ids and (split := index.spanning(quote, None if restrict is None else str(restrict))):
            grades = split
            if spans is not None:
                spans[quote] = split
        if matches is not None:
            matches[quote] = len(grades)
        if not grades:
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
                fix = "copy the words exactly from the passage (whitespace may differ, case may not)"
            problems.append(Problem(label, f"evidence quote {short!r} matches no chunk", fix))
        for cid, grade in grades.items():
            found[cid] = max(found.get(cid, 0.0), grade)
    return {cid: int(g) if g == 1 else g for cid, g in found.items()}
