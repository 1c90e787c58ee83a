"""Test sets generated from the corpus, kept only where every label is verified.

Chunks are drawn seeded and spread over documents (documents in turn, a random eligible chunk of
each, so long chunks and large documents are not favoured). For each, the configured model writes
a question of a given kind, a short reference answer and an evidence quote. A question is kept
only if: the quote occurs in its chunk after whitespace normalisation (else one retry with the
failure named, then dropped) and is specific (enough words, few matching chunks); the question
does not copy the passage's wording; it is not a near-duplicate of a kept one; the reference is
supported by the quote (the probability-scored ``supported`` judge); symbol questions name a
symbol of the passage; paraphrase questions share few words with it. Unanswerable questions are
kept only when the judge finds that none of the retriever's top chunks answers them.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import math
import re
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from rag_eval.base_records import Model, Num, required
from rag_eval.cache_dirs import cache_root
from rag_eval.calibration.cutoffs import blends_for, cutoffs_for
from rag_eval.config import AuditConfig
from rag_eval.data.corpus import load_corpus
from rag_eval.data.inputs import Inputs
from rag_eval.data.settings import TestSetConfig
from rag_eval.data.testset import EvidenceIndex, load_test_set, normalise, stable_id
from rag_eval.engine import make_engine
from rag_eval.errors import ConfigError, DataError, Problem
from rag_eval.hashing import text_hash
from rag_eval.judges.scored import ScoredJudges
from rag_eval.judges.yesno import load_prompt
from rag_eval.llm.session import LLMSession
from rag_eval.progress import say, track_async
from rag_eval.resources import shipped_prompt
from rag_eval.retrievers.factory import run_retrievers
from rag_eval.retrievers.health import run_lint
from rag_eval.rundir import write_json, write_text
from rag_eval.text import content_tokens, coverage, exact_tokens, jaccard, ngrams, tokens
from rag_eval.types import Chunk, Corpus, Question
from rag_eval.words import added_to_question

KINDS = ("fact", "symbol", "paraphrase", "multi", "unanswerable")
K = TypeVar("K", bound=str)
SCHEMA = {
    "type": "object",
    "properties": {"question": {"type": "string"}, "answer": {"type": "string"}, "quote": {"type": "string"}},
    "required": ["question", "answer", "quote"],
}
QUESTION_SCHEMA = {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}
RETRY_NOTE = (
    "\n\nYour previous reply was rejected: {why}. Write a new reply that fixes this; the quote must be "
    "copied from the passage exactly."
)
UNANSWERABLE_RETRY = (
    "\n\nYour previous question was rejected: the documentation answers it (section {chunk}). Ask instead "
    "about something documentation never says: who added it and in which year, speed or memory in numbers, "
    "other languages or products, or opinions."
)
PARAPHRASE_MAX_OVERLAP = 0.5  # content words of a paraphrase question found in its passage


@dataclass
class Job:
    """One attempt: a chunk and the kind of question to write about it."""

    index: int
    kind: str
    chunk: Chunk


class GenerationReport(Model):
    """``rag-eval generate``'s report (``OUT`` with the suffix ``.report.json``): questions asked, drafted, kept and
    dropped (and why), the kinds kept, the model and its usage, the lint findings on the result."""

    out: str = ""
    asked: int = 0
    drawn: int = 0
    kept: int = 0
    dropped: dict[str, int] = {}
    kinds: dict[str, int] = {}
    wanted_kinds: dict[str, int] = {}
    quotes: dict[str, int] = {}
    evidence_verified_first_try: int = 0
    retried: int = 0
    model: str = ""
    seconds: Num = 0
    seconds_per_kept: Num | None = None
    seed: int = 0
    usage: list[dict[str, Any]] = []
    lint: list[dict[str, Any]] = []
    lint_error: str | None = None


@dataclass
class Draft:
    """A question the model drafted; an answerable one also has its answer and its quote of the passage."""

    question: str
    answer: str = ""
    quote: str = ""
    snapped: float | None = None  # the similarity of a quote replaced by the passage's own words


@dataclass
class Outcome:
    job: Job
    record: dict | None = None
    dropped: str | None = None
    tries: int = 1
    checks: list[str] = field(default_factory=list)
    quote: str | None = None  # the last draft's quote: verbatim, snapped (to the passage) or missing
    evidence: str | None = None  # the kept record's evidence quote, as the passage words it

    def same_evidence(self) -> tuple[str, str] | None:
        """The passage and evidence quote a kept answerable record rests on (two questions on the same
        quote of the same passage are one question asked twice, whatever their wording)."""
        if self.evidence is None:
            return None
        return self.job.chunk.id, " ".join(normalise(self.evidence).split())

    @property
    def question(self) -> str:
        """The question of the record kept."""
        return str(required(self.record, f"the record of draft {self.job.index}")["question"])


def _group_key(c: Chunk) -> str:
    return c.doc_id or c.id.split("/")[0]


def draw_chunks(corpus: Corpus, n: int, seed: int, min_chars: int) -> list[Chunk]:
    """``n`` chunks, seeded: documents in a shuffled order, one random eligible chunk of each in
    turn, round after round (a chunk is not drawn twice while others remain)."""
    rng = np.random.default_rng(seed)
    docs: dict[str, list[Chunk]] = {}
    for c in corpus.chunks:
        if len(c.text) >= min_chars:
            docs.setdefault(_group_key(c), []).append(c)
    if not docs:
        return []
    order = [docs[k] for k in rng.permutation(sorted(docs))]
    pools = [list(rng.permutation(len(d))) for d in order]
    out: list[Chunk] = []
    while len(out) < n:
        for d, pool in zip(order, pools):
            if not pool:
                pool.extend(rng.permutation(len(d)))
            out.append(d[pool.pop()])
            if len(out) == n:
                break
    return out


def allocate(mix: Mapping[K, float], n: int) -> list[K]:
    """``n`` kinds in the mix's proportions (largest remainder), interleaved."""
    total = sum(mix.values())
    quota = {k: n * v / total for k, v in mix.items() if v > 0}
    take = {k: math.floor(q) for k, q in quota.items()}
    for k in sorted(quota, key=lambda k: quota[k] - take[k], reverse=True)[: n - sum(take.values())]:
        take[k] += 1
    # Interleave so that a short run still has every kind.
    slots = sorted(((i + 0.5) / take[k], k) for k in take for i in range(take[k]))
    return [k for _, k in slots]


_LOOSE_DROP = set("\"'`‘’“”*_")


def _loose(text: str) -> tuple[str, list[int]]:
    """Lower-cased text without quote marks and emphasis markup, whitespace collapsed; with the
    position in ``text`` of every kept character."""
    chars, pos = [], []
    prev_space = True
    for i, ch in enumerate(text):
        if ch in _LOOSE_DROP:
            continue
        if ch.isspace():
            if prev_space:
                continue
            ch, prev_space = " ", True
        else:
            prev_space = False
        chars.append(ch.lower())
        pos.append(i)
    return "".join(chars), pos


def snap_quote(quote: str, passage: str, min_similarity: float = 0.9) -> tuple[str, float] | None:
    """The passage's own words for a quote the model copied loosely (quote marks, markup,
    punctuation, a word or two changed): the span of ``passage`` aligned with it, and the share of
    the quote's characters matched; None when under ``min_similarity``."""
    q, _ = _loose(quote.strip().rstrip(".:;,"))
    p, pos = _loose(passage)
    if not q or not p:
        return None
    at = p.find(q)
    if at >= 0:
        start, end, sim = at, at + len(q), 1.0
    else:
        m = difflib.SequenceMatcher(None, q, p, autojunk=False)
        blocks = [b for b in m.get_matching_blocks() if b.size >= 4]
        if not blocks:
            return None
        # The densest region: blocks in passage order, kept while they stay within the quote's length.
        start, end = blocks[0].b, blocks[-1].b + blocks[-1].size
        matched = sum(b.size for b in blocks)
        sim = matched / len(q)
        if sim < min_similarity or not (0.8 * len(q) <= end - start <= 1.25 * len(q)):
            return None
    # Back to the passage's characters, widened to whole words.
    a, b = pos[start], pos[end - 1] + 1
    while a > 0 and (passage[a - 1].isalnum() or passage[a - 1] in _LOOSE_DROP):
        a -= 1
    while b < len(passage) and (passage[b].isalnum() or passage[b] in _LOOSE_DROP):
        b += 1
    return normalise(passage[a:b]), round(sim, 3)


def _parse(text: str | None, keys: tuple[str, ...]) -> dict | None:
    if not text:
        return None
    m = re.search(r"\{.*\}", text, re.S)
    if not m:
        return None
    try:
        data = json.loads(m.group(0))
    except ValueError:
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) and data[k].strip() for k in keys):
        return None
    return {k: data[k].strip() for k in keys}


class Generator:
    """The generation and verification of one test set, bound to a model."""

    def __init__(self, cfg: AuditConfig, corpus: Corpus, llm, scored, prompts: dict[str, str], cutoff: float):
        self.cfg, self.tg, self.corpus, self.llm, self.scored = cfg, cfg.testgen, corpus, llm, scored
        self.prompts, self.cutoff = prompts, cutoff
        self.index = EvidenceIndex(corpus)

    def passage(self, c: Chunk) -> str:
        return c.text[: self.tg.max_passage_chars]

    async def ask(self, kind: str, chunk: Chunk, note: str = "") -> Draft | None:
        text = self.prompts[kind].replace("{title}", chunk.title or chunk.id).replace("{passage}", self.passage(chunk))
        keys = ("question",) if kind == "unanswerable" else ("question", "answer", "quote")
        fmt = None
        if self.tg.llm.json_schema:
            schema = QUESTION_SCHEMA if kind == "unanswerable" else SCHEMA
            fmt = {"type": "json_schema", "json_schema": {"name": f"testgen_{kind}", "schema": schema}}
        result = await self.llm.chat([{"role": "user", "content": text + note}], response_format=fmt)
        if result.error:
            raise RuntimeError(result.error)
        data = _parse(result.text, keys)
        return None if data is None else Draft(**data)

    def check_quote(self, kind: str, chunk: Chunk, got: Draft) -> str | None:
        """None when the quote and question pass the text checks, else why not. A quote copied
        loosely is replaced by the passage's own words (``got.snapped`` records the similarity)."""
        passage = normalise(f"{chunk.title}\n{chunk.text}")
        if normalise(got.quote) not in passage:
            snapped = snap_quote(got.quote, chunk.text)
            if snapped is None or snapped[0] not in passage:
                return "quote_not_found"
            got.quote, got.snapped = snapped
        quote = got.quote
        if len(quote.split()) < self.tg.min_quote_words and kind != "symbol":
            return "quote_too_short"
        if len(self.index.find(quote)) > self.cfg.lint.max_quote_matches:
            return "quote_not_specific"
        return None

    def check_question(self, kind: str, chunk: Chunk, question: str) -> str | None:
        if SEES_THE_PASSAGE.search(question):
            # "the given code snippet", "in the passage": asked by someone looking at the passage,
            # which a user of the system never is.
            return "refers_to_the_passage"
        lc = self.cfg.lint
        qgrams = ngrams(tokens(question), lc.copy_ngram)
        if qgrams and len(qgrams & ngrams(tokens(chunk.passage), lc.copy_ngram)) / len(qgrams) >= lc.copy_threshold:
            return "copied_wording"
        if kind == "symbol":
            # Identifiers and codes, and any word the question quotes ('nonlocal', `__slots__`).
            symbols = exact_tokens(question) + re.findall(r"[`'\"]([^`'\"\s]{2,40})[`'\"]", question)
            if not any(s in chunk.passage for s in symbols):
                return "no_symbol"
        if kind == "paraphrase" and coverage(content_tokens(question), set(content_tokens(chunk.passage))) > (
            PARAPHRASE_MAX_OVERLAP
        ):
            return "not_paraphrased"
        return None

    async def answerable_job(self, job: Job) -> Outcome:
        out = Outcome(job)
        note = ""
        why: str | None = None
        for attempt in range(2):
            out.tries = attempt + 1
            got = await self.ask(job.kind, job.chunk, note)
            if got is None:
                why = "unparseable_reply"
            else:
                why = self.check_quote(job.kind, job.chunk, got)
                out.quote = (
                    "missing" if why == "quote_not_found" else "snapped" if got.snapped is not None else "verbatim"
                )
                if why is None:
                    why = self.check_question(job.kind, job.chunk, got.question)
                if why is None and added_to_question(got.answer, got.question) == []:
                    # A reference of the question's own words and nothing more: every answer that
                    # restates the question matches it. One added word may be the whole answer
                    # ("the asyncio backend"), which lint leaves to a reader (review 55 M8).
                    why = "reference_restates_question"
            if why is None:
                break
            note = RETRY_NOTE.format(why=why.replace("_", " "))
        if why is not None or got is None:
            out.dropped = why
            return out
        snapped = [f"quote_snapped_to_passage ({got.snapped:.2f})"] if got.snapped is not None else []
        out.checks = ["quote_in_chunk", *snapped, "quote_specific", "not_copied"] + {
            "symbol": ["names_symbol"],
            "paraphrase": ["paraphrased"],
        }.get(job.kind, [])
        d = await self.scored.prompts["supported"].ask(
            self.llm, context=got.quote, question=got.question, statement=got.answer
        )
        p = d.p("yes")
        if p is not None:
            p, _ = self.scored.supported_p("faithfulness_yesno", p, got.answer, [got.quote])
        if p is None or p < self.cutoff:
            out.dropped = "reference_not_supported"
            return out
        out.checks.append(f"reference_supported (P={p:.2f})")
        out.evidence = got.quote
        out.record = {
            "id": stable_id(got.question),
            "question": got.question,
            "reference": got.answer,
            "evidence": got.quote,
            **({"doc_id": job.chunk.doc_id} if job.chunk.doc_id else {}),
        }
        return out

    async def unanswerable_job(self, job: Job) -> Outcome:
        out = Outcome(job)
        got = await self.ask("unanswerable", job.chunk)
        if got is None:
            out.dropped = "unparseable_reply"
            return out
        out.record = {"id": stable_id(got.question), "question": got.question, "answerable": False}
        return out

    async def confirm_unanswerable(self, outcome: Outcome, top: list[Chunk]) -> Outcome:
        """Dropped when the judge finds any of the retriever's top chunks answering the question."""
        q = outcome.question
        for c in top:
            d = await self.scored.prompts["answers"].ask(self.llm, context=self.passage(c), question=q)
            p = d.p("yes")
            if p is None or p >= 0.5:
                outcome.dropped, outcome.record = f"answered_by_corpus ({c.id})", None
                return outcome
        outcome.checks = [f"no top-{len(top)} chunk answers it"]
        return outcome


def load_prompts(cfg: AuditConfig) -> dict[str, str]:
    folder = cfg.resolve_path(cfg.testgen.prompts_dir) if cfg.testgen.prompts_dir else shipped_prompt("testgen")
    out = {}
    for kind in KINDS:
        path = Path(folder) / f"{kind}.md"
        try:
            out[kind] = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                Problem(
                    str(path),
                    f"cannot read the {kind} question prompt: {exc.strerror or exc}",
                    "set testgen.prompts_dir to a folder holding every prompt (copy the shipped prompts/testgen/)",
                )
            ) from None
        if "{passage}" not in out[kind]:
            raise ConfigError(Problem(str(path), "the prompt has no {passage} placeholder", "add {passage}"))
    return out


# A question that points at what its writer was looking at ("the given code snippet", "in the passage").
SEES_THE_PASSAGE = re.compile(
    r"\b(?:the|this|these|that)\s+(?:given|provided|above|following|shown|preceding)\s+"
    r"(?:code|snippet|passage|text|document|documentation|example|excerpt|section|paragraph)s?\b"
    r"|\b(?:according\s+to|based\s+on)\s+(?:the|this)\s+(?:passage|text|snippet|excerpt|context|paragraph)\b"
    r"|\b(?:in|from)\s+(?:the|this)\s+(?:passage|excerpt|snippet)\b"
    r"|\b(?:code|snippet|example|passage|excerpt)\s+(?:above|below)\b",
    re.I,
)


def _near_duplicate(question: str, kept: list[set[str]], threshold: float) -> bool:
    words = set(content_tokens(question))
    return any(words and jaccard(words, k) >= threshold for k in kept)


def generate_test_set(cfg: AuditConfig, corpus: Corpus, session, out: Path) -> dict:
    """Generate, verify and write ``cfg.testgen.n`` questions to ``out`` (JSONL); returns the
    generation report (drawn, kept, dropped and why, kinds, model, time)."""
    tg = cfg.testgen
    prompts = load_prompts(cfg)
    kinds = allocate(tg.mix, tg.n)
    retriever = tg.retriever or next(iter(cfg.retrieval.retrievers))
    if retriever not in cfg.retrieval.retrievers:
        raise ConfigError(
            Problem(
                cfg.where("testgen.retriever"),
                f"'{retriever}' is not a configured retriever",
                "name one of retrieval.retrievers",
            )
        )
    started = time.perf_counter()

    async def main() -> tuple[list[Outcome], str]:
        llm = session.llm(tg.llm, cfg.where("testgen.llm"))
        try:
            scored = ScoredJudges.load(llm, None)
            folder = cfg.resolve_path(tg.prompts_dir) if tg.prompts_dir else shipped_prompt("testgen")
            scored.prompts["answers"] = load_prompt(Path(folder) / "answers.md", "answers", ("context", "question"))
            cutoffs, _ = cutoffs_for(llm.identity, scored, {})
            scored.blends = blends_for(llm.identity, scored)
            gen = Generator(cfg, corpus, llm, scored, prompts, cutoffs.get("faithfulness_yesno", 0.5))
            outcomes: list[Outcome] = []
            gate = asyncio.Semaphore(tg.llm.concurrency)
            kept_by_kind: Counter = Counter()
            want: Counter[str] = Counter(kinds)
            next_index, seed_round, pointer = 0, 0, 0
            # A seeded stream of chunks, documents in turn; each (chunk, kind) is tried once.
            stream = draw_chunks(corpus, max(6 * tg.n, len(corpus)), tg.seed, tg.min_chunk_chars)
            tried: set[tuple[str, str]] = set()
            # Rounds: draw jobs for the kinds still short, until every kind is filled or a round
            # keeps nothing new (at most 4 rounds).
            while seed_round < 4:
                short = [k for k in KINDS for _ in range(want[k] - kept_by_kind[k])]
                if not short:
                    break
                # Drop rates of a small model are high: draw extra jobs after the first round's rate.
                factor = 1.0 if seed_round == 0 else 1.5
                jobs: list[Job] = []
                for kind in (short[i % len(short)] for i in range(math.ceil(len(short) * factor))):
                    # The next chunk of the seeded stream not yet tried for this kind.
                    while pointer < len(stream) and (stream[pointer].id, kind) in tried:
                        pointer += 1
                    if pointer == len(stream):
                        break
                    tried.add((stream[pointer].id, kind))
                    jobs.append(Job(next_index, kind, stream[pointer]))
                    next_index += 1
                    pointer += 1
                if not jobs:
                    break

                async def run(job: Job) -> Outcome:
                    async with gate:
                        try:
                            if job.kind == "unanswerable":
                                return await gen.unanswerable_job(job)
                            return await gen.answerable_job(job)
                        except RuntimeError as exc:
                            return Outcome(job, dropped=f"model_error: {exc}")

                batch = []
                async for o in track_async([run(j) for j in jobs], f"generating questions (round {seed_round + 1})"):
                    batch.append(o)
                batch.sort(key=lambda o: o.job.index)
                # The unanswerable check needs retrieval over the drafted questions.
                drafts = [o for o in batch if o.record and o.job.kind == "unanswerable"]
                if drafts:
                    await _check_unanswerables(gen, drafts, retriever)
                    # A question the corpus answers gets one retry, told so.
                    again = [o for o in drafts if o.dropped and o.dropped.startswith("answered_by_corpus")]
                    for o in again:
                        found = required(o.dropped, "why the draft was dropped").split("(", 1)[1].rstrip(")")
                        got = await gen.ask("unanswerable", o.job.chunk, UNANSWERABLE_RETRY.format(chunk=found))
                        o.tries = 2
                        if got is not None:
                            o.record, o.dropped = (
                                {"id": stable_id(got.question), "question": got.question, "answerable": False},
                                None,
                            )
                    retried = [o for o in again if o.record is not None]
                    if retried:
                        await _check_unanswerables(gen, retried, retriever)
                kept_words: list[set[str]] = [set(content_tokens(o.question)) for o in outcomes if o.record is not None]
                kept_evidence = {e for o in outcomes if o.record is not None and (e := o.same_evidence())}
                for o in batch:
                    if o.record is None:
                        outcomes.append(o)
                        continue
                    evidence = o.same_evidence()
                    if kept_by_kind[o.job.kind] >= want[o.job.kind]:
                        o.dropped, o.record = "surplus", None
                    elif _near_duplicate(o.question, kept_words, cfg.lint.near_duplicate):
                        o.dropped, o.record = "near_duplicate", None
                    elif evidence is not None and evidence in kept_evidence:
                        o.dropped, o.record = "same_evidence", None
                    else:
                        kept_by_kind[o.job.kind] += 1
                        kept_words.append(set(content_tokens(o.question)))
                        if evidence is not None:
                            kept_evidence.add(evidence)
                    outcomes.append(o)
                seed_round += 1
            return outcomes, llm.model
        finally:
            await session.aclose()

    outcomes, model = asyncio.run(main())
    records = []
    for o in outcomes:
        if o.record is None:
            continue
        kind = o.job.kind
        records.append(
            {
                **o.record,
                "kind": kind,
                "provenance": {
                    "chunk_id": o.job.chunk.id,
                    "generator_model": model,
                    "prompt_hash": text_hash(prompts[kind]),
                    "checks": o.checks,
                    "tries": o.tries,
                },
            }
        )
    write_text(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    drawn = [o for o in outcomes if o.dropped != "surplus"]
    dropped = Counter(re.sub(r" \(.*", "", o.dropped) for o in drawn if o.dropped)
    seconds = time.perf_counter() - started
    report = {
        "out": str(out),
        "asked": tg.n,
        "drawn": len(drawn),
        "kept": len(records),
        "dropped": dict(dropped.most_common()),
        "kinds": dict(Counter(o.job.kind for o in outcomes if o.record is not None)),
        "wanted_kinds": dict(Counter(kinds)),
        "quotes": dict(Counter(o.quote for o in drawn if o.quote)),
        "evidence_verified_first_try": sum(
            1 for o in drawn if o.record and o.tries == 1 and o.job.kind != "unanswerable"
        ),
        "retried": sum(1 for o in drawn if o.tries > 1),
        "model": model,
        "seconds": round(seconds, 1),
        "seconds_per_kept": round(seconds / len(records), 1) if records else None,
        "seed": tg.seed,
    }
    say(f"kept {len(records)} of {len(drawn)} drafted questions in {seconds:.0f} s")
    return report


async def _check_unanswerables(gen: Generator, drafts: list[Outcome], retriever: str) -> None:
    tops = _top_chunks(gen.cfg, gen.corpus, [o.question for o in drafts], retriever, gen.tg.check_top)
    async for _ in track_async(
        [gen.confirm_unanswerable(o, t) for o, t in zip(drafts, tops)], "checking unanswerables"
    ):
        pass


def _top_chunks(cfg: AuditConfig, corpus: Corpus, questions: list[str], retriever: str, k: int) -> list[list[Chunk]]:
    qs = [Question(f"draft-{i}", q, {}, False) for i, q in enumerate(questions)]
    rankings = run_retrievers(cfg, corpus, qs, cache_root(cfg.cache_folder))[retriever]
    return [[corpus.chunks[i] for i in row[:k] if i >= 0] for row in rankings.top]


def run_generate(cfg: AuditConfig, out: Path, *, use_cache: bool = True, corpus=None) -> dict:
    """``rag-eval generate``: the test set at ``out``, its generation report beside it
    (``OUT`` with the suffix ``.report.json``, with the lint findings on the result)."""
    corpus = load_corpus(cfg, corpus)
    out.parent.mkdir(parents=True, exist_ok=True)

    session = LLMSession(
        cache_root(cfg.cache_folder), use_cache=use_cache, log_dir=out.parent, engine=make_engine(cfg.engine)
    )
    try:
        report = GenerationReport.load(generate_test_set(cfg, corpus, session, out))
        report.usage = session.usage()
    finally:
        session.close()
    if report.kept:
        linted = cfg.model_copy(update={"test_set": TestSetConfig(path=str(out.resolve()))})
        try:
            inputs = Inputs(corpus, load_test_set(out, corpus), out)
            report.lint = [f.to_dict() for f in run_lint(linted, inputs)]
        except DataError as exc:  # e.g. only unanswerable questions kept
            report.lint_error = exc.render()
    write_json(out.with_suffix(".report.json"), report.dump())
    return report.dump()
