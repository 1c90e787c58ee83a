"""The generation stage: answers from each prompt on one retriever's top-k contexts.

The contexts come from the retrieval stage and are identical for every prompt, so a comparison
of prompts measures prompts and nothing else. Records are appended to ``generation.jsonl`` as
each answer completes; a rerun skips the (question, prompt) pairs already there.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from rag_eval.answers.answer_records import OWN_CONTEXTS, Answer
from rag_eval.answers.settings import GenerationConfig
from rag_eval.base_records import FAILED_BEFORE, StageReuse, required
from rag_eval.config import AuditConfig
from rag_eval.data.records import read_records
from rag_eval.data.testset import normalise
from rag_eval.errors import ConfigError, DataError, Problem, did_you_mean
from rag_eval.hashing import inputs_hash
from rag_eval.progress import track_async
from rag_eval.resources import shipped_prompt
from rag_eval.retrievers.custom import import_object
from rag_eval.retrievers.mapping import TextMatcher
from rag_eval.retrievers.stage import RetrievalResults
from rag_eval.rundir import read_jsonl, write_text
from rag_eval.types import Chunk, Corpus, Question

PLACEHOLDERS = ("{question}", "{contexts}")
# In place of {contexts}: the contexts numbered [1], [2] ... in their order, for a prompt that asks
# for citations by number (prompts/answer_cite.md; rag_eval/judges/citations.py reads them back).
NUMBERED = "{numbered_contexts}"


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt file with ``{question}`` and ``{contexts}`` (or ``{numbered_contexts}``) placeholders."""

    name: str
    path: str
    text: str

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:12]

    def render(self, question: str, contexts: str, numbered: str = "") -> str:
        # Plain replacement: braces elsewhere in the prompt stay as they are.
        text = self.text.replace(NUMBERED, numbered)
        return text.replace("{contexts}", contexts).replace("{question}", question)


def load_prompts(cfg: AuditConfig) -> dict[str, PromptTemplate]:
    """Every prompt of ``generation.prompts``; ConfigError for a missing file or placeholder."""
    out, problems = {}, []
    for name, value in required(cfg.generation, "the config's generation section").prompts.items():
        path = cfg.resolve_path(value)
        if not path.exists() and Path(value).parts[:1] == ("prompts",):
            # prompts/answer.md and the other shipped prompts work from any folder.
            shipped = shipped_prompt(str(Path(*Path(value).parts[1:])))
            path = shipped if shipped.exists() else path
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            problems.append(
                Problem(
                    cfg.where(f"generation.prompts.{name}"),
                    f"cannot read prompt file {path}: {exc.strerror or exc}",
                    "give the path of a prompt file, e.g. prompts/answer.md",
                )
            )
            continue
        missing = [p for p in PLACEHOLDERS if p not in text and not (p == "{contexts}" and NUMBERED in text)]
        if missing:
            problems.append(
                Problem(
                    str(path),
                    f"the prompt has no {' or '.join(missing)} placeholder",
                    "write {question} where the question goes and {contexts} where the documents go "
                    "({numbered_contexts}: numbered [1], [2] ... for citations)",
                )
            )
            continue
        out[name] = PromptTemplate(name, str(path), text)
    if problems:
        raise ConfigError(problems)
    return out


def context_seen(text: str, max_chars: int) -> str:
    """The part of a context's text the generator and the judges are given: its first
    ``max_chars`` characters (the labelling page shows this part, and folds the rest)."""
    return text if len(text) <= max_chars else text[:max_chars]


def format_contexts(chunks: list[Chunk], max_chars: int) -> str:
    """Each context as ``[chunk id] title`` then its text, cut to ``max_chars`` (``context_seen``;
    a cut is marked `` [...]``)."""
    parts = []
    for c in chunks:
        seen = context_seen(c.text, max_chars)
        text = seen if len(seen) == len(c.text) else seen.rstrip() + " [...]"
        parts.append(f"[{c.id}] {c.title}\n{text}")
    return "\n\n".join(parts)


def number_contexts(chunks: list[Chunk], max_chars: int) -> str:
    """Each context as ``[n] title`` (n from 1, in the order given) then its text, cut as
    :func:`format_contexts` cuts it."""
    return format_contexts([replace(c, id=str(n)) for n, c in enumerate(chunks, 1)], max_chars)


def contexts_for(res: RetrievalResults, corpus: Corpus, g: GenerationConfig, q: int) -> list[Chunk]:
    return [corpus.chunks[i] for i in res.retrievers[g.retriever].rankings.top[q][: g.top_k] if i >= 0]


def select_questions(cfg: AuditConfig, res: RetrievalResults) -> list[int]:
    """Indices of the questions to generate for: all, or a stratified seeded sample.

    Strata: unanswerable, answerable retrieved (relevant chunk in the top k given to the
    generator), answerable missed. Each non-empty stratum gets at least one question, the rest
    is shared in proportion (largest remainder); :func:`sample_weights` undoes the imbalance.
    """
    g = required(cfg.generation, "the config's generation section")
    n = len(res.questions)
    if not g.sample or g.sample >= n:
        return list(range(n))
    groups = {k: v for k, v in _strata(cfg, res).items() if v}
    take = dict.fromkeys(groups, 1 if g.sample >= len(groups) else 0)
    left = g.sample - sum(take.values())
    shares = {k: left * len(v) / n for k, v in groups.items()}
    for k in groups:
        take[k] += int(shares[k])
    for k in sorted(groups, key=lambda k: shares[k] - int(shares[k]), reverse=True)[: g.sample - sum(take.values())]:
        take[k] += 1
    rng = np.random.default_rng(cfg.stats.seed)
    chosen = [int(i) for k, v in groups.items() for i in rng.choice(v, min(take[k], len(v)), replace=False)]
    return sorted(chosen)


def sample_weights(cfg: AuditConfig, res: RetrievalResults, selected: list[int]) -> dict[str, dict]:
    """``{question id: {stratum, weight}}`` for a stratified sample (weight = questions in the
    stratum / questions sampled from it), so that figures estimate the whole test set; empty when
    every question is used."""
    if len(selected) == len(res.questions):
        return {}
    strata, picked = _strata(cfg, res), set(selected)
    out = {}
    for key, members in strata.items():
        chosen = [i for i in members if i in picked]
        for i in chosen:
            out[res.questions[i].id] = {"stratum": key, "weight": len(members) / len(chosen)}
    return out


def _strata(cfg: AuditConfig, res: RetrievalResults) -> dict[str, list[int]]:
    """Unanswerable, answerable retrieved (relevant chunk in the generator's top k), answerable missed."""
    g = required(cfg.generation, "the config's generation section")
    strata: dict[str, list[int]] = {"unanswerable": [], "retrieved": [], "missed": []}
    first = res.retrievers[g.retriever].first_rank
    for i, q in enumerate(res.questions):
        rank = first[i]
        key = "unanswerable" if not q.answerable else "retrieved" if rank and rank <= g.top_k else "missed"
        strata[key].append(i)
    return strata


def read_done(path: Path) -> dict[tuple[str, str], tuple[Answer, dict]]:
    """The records of a generation.jsonl, keyed by (question id, prompt), the last of each, read as
    an Answer beside its line as written (a reused one is written back as it was); a failure is kept
    to be redone and counted as such."""
    done = {}
    for line in read_jsonl(path):
        answer = Answer.load(line)
        done[(answer.question_id, answer.prompt)] = (answer, line)
    return done


def why_changed(old: Answer, prompt: PromptTemplate, context_ids: list[str]) -> str:
    """What differs between a finished answer and the one the current config asks for."""
    if old.prompt_hash != prompt.hash:
        return "prompt file"
    if "contexts" not in old.model_fields_set or old.contexts != context_ids:
        return "contexts"
    return "model or generation settings"


async def generate(
    cfg: AuditConfig,
    corpus: Corpus,
    res: RetrievalResults,
    llm,
    prompts: dict[str, PromptTemplate],
    selected: list[int],
    out: Path,
    weights: dict[str, dict] | None = None,
) -> tuple[list[dict], dict]:
    """Answers for every selected question and prompt, appended to ``out`` as they complete.

    A finished answer is reused only when its whole request is unchanged (prompt file, contexts,
    model, settings); ``out`` ends holding exactly the returned records. Also returns what was
    reused and why the rest was redone.
    """
    g = required(cfg.generation, "the config's generation section")
    done = read_done(out)
    weights = weights or {}
    # (position in the selection's question order and the config's prompt order, record): answers
    # complete in any order (a cached one at once), the records keep this one, so a rerun's report
    # is the same.
    placed: list[tuple[int, dict]] = []
    jobs: list[tuple[int, Question, str, list[Chunk], str, str]] = []
    redone: dict[str, int] = {}
    for q in selected:
        question = res.questions[q]
        chunks = contexts_for(res, corpus, g, q)
        for name, prompt in prompts.items():
            content = prompt.render(
                question.question,
                format_contexts(chunks, g.max_context_chars),
                number_contexts(chunks, g.max_context_chars),
            )
            key = inputs_hash(content, llm.identity, llm.model, llm.cfg.temperature, llm.cfg.max_tokens, llm.cfg.seed)
            old, line = done.get((question.id, name), (None, {}))
            if old is not None and old.input_hash == key and old.error is None:
                placed.append((len(placed) + len(jobs), {**line, **weights.get(question.id, {})}))
                continue
            if old is not None:
                why = FAILED_BEFORE if old.error is not None else why_changed(old, prompt, [c.id for c in chunks])
                redone[why] = redone.get(why, 0) + 1
            jobs.append((len(placed) + len(jobs), question, name, chunks, content, key))

    async def one(pos: int, question, name: str, chunks: list[Chunk], content: str, key: str) -> tuple[int, dict]:
        result = await llm.chat([{"role": "user", "content": content}])
        return pos, {
            "question_id": question.id,
            "prompt": name,
            "prompt_hash": prompts[name].hash,
            "retriever": g.retriever,
            "contexts": [c.id for c in chunks],
            "answer": result.text,
            "model": result.model,
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "latency_s": round(result.latency_s, 3),
            "cached": result.cached,
            "finish_reason": result.finish_reason,
            "error": result.error,
            "input_hash": key,
            **weights.get(question.id, {}),
        }

    reused = len(placed)
    with out.open("a", encoding="utf-8") as fh:
        async for pos, record in track_async([one(*job) for job in jobs], "generating answers"):
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            fh.flush()
            placed.append((pos, record))
    records = [record for _, record in sorted(placed, key=lambda pr: pr[0])]
    write_text(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return records, {"reused": reused, "redone": redone}


class _SuppliedAnswer(BaseModel):
    """A line of the user's answers file as written: ``supplied_answers`` checks it. Ragas' column
    names are read too (``response``, ``retrieved_contexts``), as ``judge_answers`` reads them."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    question_id: Any = None
    answer: Any = Field(None, validation_alias=AliasChoices("answer", "response"))
    prompt: Any = "system"
    contexts: Any = Field(None, validation_alias=AliasChoices("contexts", "retrieved_contexts"))


# The keys an answers file's line may have (Ragas' names too): another key close to one of them is
# a slip that would drop what it holds (user trial 5 F1: "context" left the answer on the retriever's passages).
ANSWER_KEYS = ("question_id", "answer", "prompt", "contexts", "response", "retrieved_contexts")


def is_answers_file(value: str) -> bool:
    """Whether ``generation.answers`` names a file (else a callable's import path)."""
    return value.endswith((".jsonl", ".json")) or "/" in value


def read_answers_file(
    path: Path, question_ids: list[str], corpus: Corpus | None = None
) -> dict[tuple[str, str], _SuppliedAnswer]:
    """The answers of a ``generation.answers`` file by (question id, prompt); DataError listing every
    record without question_id and answer, and every question_id the test set does not hold (with
    the closest one: a typo would otherwise drop the question from every figure). With ``corpus``,
    each line's ``contexts`` are read as chunk ids, a text matched to the chunk it is (or that holds
    it) standing for its id; a text the corpus does not hold stays the passage it is (the user's
    system chunks its own way); an id-like string the corpus does not have is a problem."""
    known = set(question_ids)
    by_id: dict[tuple[str, str], _SuppliedAnswer] = {}
    problems = []
    matcher: TextMatcher | None = None
    first: dict[tuple[str, str], str] = {}
    for rec in read_records(path, "answers"):
        line = _SuppliedAnswer.model_validate(rec.data)
        for k in rec.data:
            close = difflib.get_close_matches(str(k), ANSWER_KEYS, n=1, cutoff=0.75) if k not in ANSWER_KEYS else []
            if close:
                problems.append(
                    Problem(
                        f"{rec.where} ({k})",
                        f"unknown key '{k}': what it holds would be dropped",
                        f"did you mean '{close[0]}'? (keys: question_id, answer, prompt, contexts)",
                    )
                )
        qid, answer = line.question_id, line.answer
        if qid is None or not isinstance(answer, str):
            problems.append(
                Problem(
                    rec.where,
                    "an answer record needs question_id and answer (a string)",
                    '{"question_id": "q1", "answer": "..."}',
                )
            )
            continue
        if str(qid) not in known:
            problems.append(
                Problem(
                    rec.where,
                    f"question_id '{qid}' is no question of the test set; {did_you_mean(str(qid), sorted(known))}",
                    "use the id of the test set's question this answers (ids are case-sensitive), or remove the line",
                )
            )
            continue
        if corpus is not None and line.contexts is not None:
            matcher = matcher or TextMatcher(corpus)
            line.contexts = _context_ids(line.contexts, corpus, matcher, rec.where, problems)
        key = (str(qid), str(line.prompt))
        if key in first:
            # Two versions of a system appended to one file without prompts: the first was dropped.
            problems.append(
                Problem(
                    rec.where,
                    f"a second answer to question '{qid}' for prompt '{line.prompt}' (first at {first[key]})",
                    "keep one, or give each version of the system its own prompt name",
                )
            )
            continue
        first[key] = rec.where
        by_id[key] = line
    if problems:
        raise DataError(problems)
    return by_id


def _context_ids(
    given: Any, corpus: Corpus, matcher: TextMatcher, where: str, problems: list[Problem]
) -> list[str] | None:
    """An answers file line's contexts as chunk ids where the corpus has them (by id, or by text);
    a text it does not hold kept as it is; a problem for an id-like string it does not have, or for
    contexts that are no list of strings."""
    if not isinstance(given, list) or not all(isinstance(c, str) for c in given):
        problems.append(
            Problem(
                f"{where} (contexts)",
                "contexts must be a list of strings: the chunk ids the answer was given (or their texts)",
                '"contexts": ["guide.md#install", "guide.md#config"]',
            )
        )
        return None
    ids = []
    for c in given:
        # By id, or by the whole chunk's text: an excerpt of a chunk stays the passage it is, judged
        # as given (widened to its chunk, an answer was judged on text its system never gave:
        # user trial 5 F7).
        idx = corpus.index.get(c)
        if idx is None:
            idx = matcher.exact.get(normalise(c))
        if idx is not None:
            ids.append(corpus.chunks[idx].id)
        elif _id_like(c):
            close = difflib.get_close_matches(c, list(corpus.index), n=1, cutoff=0.6)
            problems.append(
                Problem(
                    f"{where} (contexts)",
                    f"context '{c}' is no chunk id of the corpus (nor a passage's text), so whether the answer "
                    "had the relevant passage cannot be told",
                    (f"did you mean '{close[0]}'? " if close else "")
                    + "give the ids of the chunks the answer was given, as the corpus names them, or the "
                    "passages' texts",
                )
            )
        else:
            ids.append(c)  # the user's own passage: judged as given; its relevance read from evidence quotes
    return ids


def _id_like(text: str) -> bool:
    """A chunk id rather than a passage: one token of up to 200 characters."""
    return len(text) <= 200 and not any(ch.isspace() for ch in text.strip())


def supplied_answers(
    cfg: AuditConfig,
    corpus: Corpus,
    res: RetrievalResults,
    selected: list[int],
    out: Path,
    weights: dict[str, dict] | None = None,
) -> list[dict]:
    """The user's own answers (a JSONL of question_id, answer[, prompt, contexts] or a callable)."""
    g = required(cfg.generation, "the config's generation section")
    value = g.answers or ""
    ids = {res.questions[i].id: i for i in selected}
    records = []
    if is_answers_file(value):
        by_id = read_answers_file(cfg.resolve_path(value), [q.id for q in res.questions], corpus)
        # Each prompt the file names (by its lines' prompt field; "system" where none is given).
        prompts = sorted({prompt for _, prompt in by_id}) or ["system"]
        for qid, prompt in [(q, p) for q in ids for p in prompts if (q, p) not in by_id]:
            # A selected question the file does not answer (for a prompt it answers others for)
            # fails, named, so no figure is silently computed on fewer questions than asked.
            records.append(
                {
                    "question_id": qid,
                    "prompt": prompt,
                    "prompt_hash": None,
                    "retriever": g.retriever,
                    "contexts": [c.id for c in contexts_for(res, corpus, g, ids[qid])],
                    "answer": None,
                    "model": "supplied",
                    "error": f"no answer to this question in {value} (generation.answers): add a line "
                    f'{{"question_id": "{qid}", '
                    + (f'"prompt": "{prompt}", ' if prompt != "system" else "")
                    + '"answer": "..."}',
                    **(weights or {}).get(qid, {}),
                }
            )
        for (qid, prompt), d in by_id.items():
            if qid not in ids:
                continue  # a question of the test set that the sample left out
            q = ids[qid]
            # [] is the system's own answer from no passage: not the configured retriever's top k.
            contexts = d.contexts if d.contexts is not None else [c.id for c in contexts_for(res, corpus, g, q)]
            records.append(
                {
                    "question_id": qid,
                    "prompt": prompt,
                    "prompt_hash": None,
                    "retriever": OWN_CONTEXTS if d.contexts is not None else g.retriever,
                    "contexts": contexts,
                    "answer": d.answer,
                    "model": "supplied",
                    "error": None,
                    **(weights or {}).get(qid, {}),
                }
            )
    else:
        fn = import_object(value, cfg.where("generation.answers"))
        for qid, q in ids.items():
            chunks = contexts_for(res, corpus, g, q)
            try:
                answer = str(fn(res.questions[q].question, [c.text for c in chunks]))
            except Exception as exc:  # the user's code
                raise DataError(
                    Problem(
                        cfg.where("generation.answers"),
                        f"the function raised on question '{qid}': {type(exc).__name__}: {exc}",
                        "fix the function",
                    )
                ) from exc
            records.append(
                {
                    "question_id": qid,
                    "prompt": "system",
                    "prompt_hash": None,
                    "retriever": g.retriever,
                    "contexts": [c.id for c in chunks],
                    "answer": answer,
                    "model": "supplied",
                    "error": None,
                    **(weights or {}).get(qid, {}),
                }
            )
    with out.open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return records


def run_generation(
    cfg: AuditConfig, corpus: Corpus, res: RetrievalResults, session, run_dir: Path
) -> tuple[list[Answer], StageReuse]:
    """Generation for a run folder, in one event loop (an AsyncOpenAI client cannot cross loops);
    the answers, and what a resumed run reused."""
    selected = select_questions(cfg, res)
    weights = sample_weights(cfg, res, selected)
    out = run_dir / "generation.jsonl"
    g = required(cfg.generation, "the config's generation section")
    if g.answers:
        return [Answer.load(r) for r in supplied_answers(cfg, corpus, res, selected, out, weights)], StageReuse()
    prompts = load_prompts(cfg)

    async def main() -> tuple[list[dict], dict]:
        llm = session.llm(g.llm, cfg.where("generation.llm"))
        try:
            return await generate(cfg, corpus, res, llm, prompts, selected, out, weights)
        finally:
            await session.aclose()

    records, reuse = asyncio.run(main())
    return [Answer.load(r) for r in records], StageReuse.load(reuse)
