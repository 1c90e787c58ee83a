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
from rag_eval.types import Chunk, Corpus, Question


@dataclass
class Mapped:
    """The corpus with the system's own passages appended, each reply's passages as chunk ids in
    the order returned, and the text each passage had in the reply (what the answer was judged on)."""

    corpus: Corpus
    ids: dict[str, list[str]]
    texts: dict[str, str]
    counts: dict[str, int] = field(default_factory=dict)
    unknown_ids: list[tuple[str, str]] = field(default_factory=list)  # (question id, returned id)


def map_replies(corpus: Corpus, replies: dict[str, SystemReply]) -> Mapped:
    """Every returned passage as a chunk: by its corpus id, else by its text; a text the corpus
    does not hold becomes a chunk ``ctx-<hash>`` of its own, an id with neither ``unknown:<id>``."""
    matcher = TextMatcher(corpus)
    foreign: dict[str, Chunk] = {}
    ids: dict[str, list[str]] = {}
    texts: dict[str, str] = {}
    counts = dict.fromkeys(("passages", "by_id", "by_text", "own_text", "unknown_id"), 0)
    unknown: list[tuple[str, str]] = []
    for qid, reply in replies.items():
        mine: list[str] = []
        for p in reply.passages:
            counts["passages"] += 1
            idx = chunk_of(corpus, matcher, p.id, p.text)
            if idx is not None:
                cid = corpus.chunks[idx].id
                counts["by_id" if p.id is not None and p.id in corpus.index else "by_text"] += 1
            elif p.text:
                cid = context_id(p.text)
                foreign.setdefault(cid, Chunk(cid, p.text, metadata={"returned_id": p.id}))
                counts["own_text"] += 1
            else:
                cid = f"unknown:{p.id}"
                foreign.setdefault(cid, Chunk(cid, "", metadata={"returned_id": p.id}))
                counts["unknown_id"] += 1
                unknown.append((qid, str(p.id)))
            if p.text:
                texts.setdefault(cid, p.text)
            if cid not in mine:
                mine.append(cid)
        ids[qid] = mine
    grown = Corpus(corpus.chunks + list(foreign.values()), source=corpus.source)
    return Mapped(grown, ids, texts, counts, unknown)


def with_own_passages(questions: list[Question], mapped: Mapped, n_corpus: int) -> list[Question]:
    """The questions with evidence quotes found in the system's own passages (beyond the corpus)
    counted relevant, as a quote found in a corpus chunk makes that chunk relevant."""
    own = mapped.corpus.chunks[n_corpus:]
    if not own:
        return questions
    own_texts = [(c.id, normalise(c.text)) for c in own if c.text]
    out = []
    for q in questions:
        quotes = [normalise(e) for e in q.evidence]
        found = {cid: 1 for cid, t in own_texts if any(e and e in t for e in quotes) and cid not in q.qrels}
        out.append(dataclasses.replace(q, qrels={**q.qrels, **found}) if found else q)
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
