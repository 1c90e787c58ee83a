"""The system's passages as chunks of the audit: ids of the corpus, texts matched to the corpus, and
the rest as passages of their own, so that evidence-quote labels still decide their relevance."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from rag_eval.answers.supplied import context_id
from rag_eval.data.testset import normalise
from rag_eval.retrievers.mapping import TextMatcher, chunk_of
from rag_eval.retrievers.rankings import Rankings
from rag_eval.system.http import SystemReply
from rag_eval.system.system_records import PassageCounts
from rag_eval.types import Chunk, Corpus, Question


@dataclass
class Mapped:
    """The corpus with the system's own passages appended, each reply's passages as chunk ids in
    the order returned, and the text each passage had in the reply (what the answer was judged on)."""

    corpus: Corpus
    ids: dict[str, list[str]]
    texts: dict[str, str]
    counts: PassageCounts = field(default_factory=PassageCounts)
    unknown_ids: list[tuple[str, str]] = field(default_factory=list)  # (question id, returned id)


def map_replies(corpus: Corpus, replies: dict[str, SystemReply]) -> Mapped:
    """Every returned passage as a chunk: by its corpus id, else by its text; a passage the corpus
    does not hold keeps the id the service gave it (``ctx-<hash of its text>`` only when the service
    gives none), so reports, label pages and lint name it as the service does."""
    matcher = TextMatcher(corpus)
    foreign: dict[str, Chunk] = {}
    ids: dict[str, list[str]] = {}
    texts: dict[str, str] = {}
    n_passages = by_id = by_text = own_text = unknown_id = 0
    unknown: list[tuple[str, str]] = []
    for qid, reply in replies.items():
        mine: list[str] = []
        for p in reply.passages:
            n_passages += 1
            idx = chunk_of(corpus, matcher, p.id, p.text)
            if idx is not None:
                cid = corpus.chunks[idx].id
                if p.id is not None and p.id in corpus.index:
                    by_id += 1
                else:
                    by_text += 1
            else:
                cid = _own_id(p.id, p.text, foreign)
                foreign.setdefault(cid, Chunk(cid, p.text or "", metadata={"returned_id": p.id}))
                if p.text:
                    own_text += 1
                else:
                    unknown_id += 1
                    unknown.append((qid, str(p.id)))
            if p.text:
                texts.setdefault(cid, p.text)
            if cid not in mine:
                mine.append(cid)
        ids[qid] = mine
    grown = Corpus(corpus.chunks + list(foreign.values()), source=corpus.source)
    counts = PassageCounts(passages=n_passages, by_id=by_id, by_text=by_text, own_text=own_text, unknown_id=unknown_id)
    return Mapped(grown, ids, texts, counts, unknown)


def _own_id(returned: str | None, text: str | None, seen: dict[str, Chunk]) -> str:
    """The id of a passage the corpus does not hold: the service's own; the same id given to
    another text gets ``~2``, ``~3``... (both stay visible); a hash of the text when it has no id."""
    if returned is None:
        return context_id(text or "")
    cid, n = returned, 1
    while cid in seen and text and seen[cid].text and normalise(seen[cid].text) != normalise(text):
        n += 1
        cid = f"{returned}~{n}"
    return cid


def with_own_passages(questions: list[Question], mapped: Mapped, n_corpus: int) -> list[Question]:
    """The questions with each evidence quote counted once: a passage of the system's own (not a
    corpus chunk) that it returned for a question and that holds the question's evidence quote is
    the relevant item for that quote, in place of the corpus chunks the quote was found in (kept with
    grade 0: labelled, not relevant, unless the system returned them too). Without this a question
    would have two relevant items where the system could return one, halving recall and nDCG."""
    own = {c.id: normalise(c.text) for c in mapped.corpus.chunks[n_corpus:] if c.text}
    if not own:
        return questions
    corpus = mapped.corpus
    out = []
    for q in questions:
        returned = mapped.ids.get(q.id, [])
        qrels = dict(q.qrels)
        for raw in q.evidence:
            quote = normalise(raw)
            holders = [cid for cid in returned if cid in own and quote and quote in own[cid]]
            if not holders:
                continue
            for cid, grade in q.qrels.items():
                if cid in returned or grade <= 0 or cid not in corpus.index:
                    continue
                chunk = corpus.chunks[corpus.index[cid]]
                if quote in normalise(f"{chunk.title}\n{chunk.text}") or cid in q.quote_spans.get(raw, {}):
                    qrels[cid] = 0
            for cid in holders:
                qrels[cid] = max(qrels.get(cid, 0), 1)
        out.append(dataclasses.replace(q, qrels=qrels) if qrels != q.qrels else q)
    return out


def system_rankings(mapped: Mapped, questions: list[Question], depth: int) -> Rankings:
    """The system's passages as rankings, in the order it returned them (its scores are shown, not
    trusted to rank: a distance sorts the other way)."""
    lists = []
    for q in questions:
        cids = mapped.ids.get(q.id, [])
        lists.append([(mapped.corpus.index[c], float(len(cids) - pos)) for pos, c in enumerate(cids)])
    return Rankings.from_lists(lists, depth)


def judged_corpus(mapped: Mapped) -> Corpus:
    """The corpus whose chunks read as the system returned them: an answer is judged on the
    passages the system says it used, in its words."""
    chunks = [
        dataclasses.replace(c, text=mapped.texts[c.id]) if c.id in mapped.texts else c for c in mapped.corpus.chunks
    ]
    return Corpus(chunks, source=mapped.corpus.source)


def returned_depth(mapped: Mapped) -> int:
    """The most passages the system returned for one question: its answers' ``top_k`` (the report's
    "on system's top N"), not the retrieval depth."""
    return max((len(ids) for ids in mapped.ids.values()), default=0) or 1
