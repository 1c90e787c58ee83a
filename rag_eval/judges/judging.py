"""The judging stage: every configured judge on every generated answer, recorded as it completes.

Which judges apply to which answer, and what they aggregate to, is declared in
``judges/registry.py``. A judge that fails gives ``not_judged`` with its error; what does not
apply is ``skipped`` with the reason. A rerun reuses what is already in ``judgements.jsonl``
when every input of it is unchanged.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag_eval.answers.answer_records import Answer
from rag_eval.answers.generation import context_seen
from rag_eval.base_records import FAILED_BEFORE, Model, required
from rag_eval.calibration.adaptation import CRITERION_METHOD, Decider
from rag_eval.calibration.cutoffs import agreement_for, blends_for, cutoffs_for, ragas_agreement_for, saved_band
from rag_eval.config import AuditConfig
from rag_eval.hashing import inputs_hash
from rag_eval.judges.adapted import ADAPTED_BAND, adaptable, saved_adaptation
from rag_eval.judges.citations_judge import band_from
from rag_eval.judges.escalation import escalate_records, first_pass
from rag_eval.judges.judge_records import Calibration, Figures, JudgedFigure, JudgingInfo
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.ragas_judges import RagasJudges
from rag_eval.judges.registry import JUDGES, Families, Inputs, banded, criteria, decider, figures
from rag_eval.judges.scored import ScoredJudges
from rag_eval.judges.uncertain import (
    NUMERIC_NOISE_LOGIT,
    Band,
    bands_for,
    mark,
    mark_close_call,
    mark_reference_restated,
)
from rag_eval.judges.yesno import DECIDED_ALONE, REASONS_WANTED, VERDICTS_ALONE
from rag_eval.progress import decided, plan, say, track_async
from rag_eval.rundir import read_jsonl, write_text
from rag_eval.stats import Estimate, bootstrap_mean, weighted_share
from rag_eval.types import Chunk, Corpus, Question

JUDGE_AHEAD = 3  # answers in judging beyond the model's concurrency
NO_ANSWER = "no answer to judge"  # how a judgement of an answer that failed begins its error


def read_judgements(path: Path) -> dict[tuple[str, str, str], Judgement]:
    """The run folder's judgements keyed by (judge, question id, prompt), the last of each; escalated
    ones come back as the first judge left them (escalation runs again after). A not_judged one is
    kept (``JudgeRun.reusable`` retries it and counts it as redone)."""
    out: dict[tuple[str, str, str], Judgement] = {}
    for j in (Judgement.from_dict(first_pass(r)) for r in read_jsonl(path)):
        key = (j.judge, j.question_id, j.prompt)
        old = out.get(key)
        # A verdict asked again for its reason, whose request failed, leaves the verdict decided.
        if (
            j.status == "not_judged"
            and old is not None
            and old.status != "not_judged"
            and old.input_hash == j.input_hash
        ):
            continue
        out[key] = j
    return out


def context_chars(cfg: AuditConfig) -> int:
    """How many characters of each context the judges are given (the generator's cut)."""
    return cfg.generation.max_context_chars if cfg.generation else 2000


def judged_contexts(corpus: Corpus, ids: list[str], max_chars: int) -> list[str]:
    """The contexts a judge is given, as the generator was given them (``format_contexts``): each
    chunk's title on a line of its own, then its text cut as the generator's (``context_seen``); an
    id the corpus does not hold stands for itself. An answer may rightly take a name from a title
    (API documentation titles a passage with the function it describes)."""
    out = []
    for cid in ids:
        c = corpus.chunks[corpus.index[cid]] if cid in corpus.index else None
        seen = context_seen(c.text if c else cid, max_chars)
        out.append(f"{c.title}\n{seen}" if c is not None and c.title.strip() else seen)
    return out


class JudgeRun:
    """What the judging of one run shares: the judges, finished work to reuse, and answer-independent
    judgements in progress (so each is computed once per question)."""

    def __init__(self, cfg: AuditConfig, llm, scored, ragas, done: dict[tuple[str, str, str], Judgement], emit):
        self.cfg, self.llm, self.scored, self.ragas, self.done, self.emit = cfg, llm, scored, ragas, done, emit
        self.jc = required(cfg.judges, "the config's judges section")
        self.shared: dict[str, asyncio.Task] = {}
        # Finished answer-independent judgements by (judge, question, inputs), whichever prompt they were for.
        self.by_inputs = {(n, qid, j.input_hash): j for (n, qid, _), j in done.items() if j.status != "not_judged"}
        self.reused = 0
        self.redone: dict[str, int] = {}
        self.bands: dict = {}  # cut-off name -> uncertain.Band
        # Each answer's contexts as chunks (ids and titles: what its citations may name), by (question, prompt).
        self.chunks: dict[tuple[str, str], list[Chunk]] = {}

    def judge_hash(self, name: str) -> str | None:
        if JUDGES[name].family == "plain":
            return None
        if JUDGES[name].family == "ragas":
            return self.ragas.hashes.get(name) if self.ragas else None
        return self.scored.judge_hash(name) if self.scored else None

    def make(self, name: str, q: Question, prompt: str, answer: str, contexts: list[str]):
        """The coroutine that judges, for a judge of the registry (its ``judge`` callable)."""
        x = Inputs(q.id, prompt, q.question, answer, contexts, q.reference, self.chunks.get((q.id, prompt), []))
        return lambda: JUDGES[name].judge(Families(self.scored, self.ragas), x)

    def reusable(self, name: str, qid: str, prompt: str, key: str) -> Judgement | None:
        old = self.done.get((name, qid, prompt))
        if old is not None and old.input_hash == key and old.status != "not_judged":
            return old
        if old is not None:
            if old.status == "not_judged" and (old.error or "").startswith(NO_ANSWER):
                return None  # its answer failed, not the judge: the generation line counts it
            if old.status == "not_judged":  # its calls failed (or were cut short by a stop): asked again
                why = FAILED_BEFORE
            elif old.judge_prompt_hash != self.judge_hash(name):
                why = "judge prompt"
            else:
                why = "answer, contexts or model"
            self.redone[why] = self.redone.get(why, 0) + 1
        return None

    async def run(
        self,
        name: str,
        q: Question,
        prompt: str,
        answer: str,
        contexts: list[str],
        *,
        explain: bool = False,
        reasons: bool = False,
    ) -> Judgement:
        """The judgement: reused when every input is unchanged, shared across prompts when it does
        not depend on the answer, else made now; emitted once for this (question, prompt).
        ``explain``: made again with its reasons (the verdict requests come from the response cache).
        ``reasons``: asked with its reasons at once (the answer will be shown), not deferred."""
        spec = JUDGES[name]
        values = {"question": q.question, "answer": answer, "contexts": contexts, "reference": q.reference}
        inputs = {k: values[k] for k in spec.needs}
        cut = None
        if self.scored and spec.family == "scored":
            cuts = self.scored.decision_cutoffs(name)
            cut = cuts if len(cuts) > 1 else cuts[name]  # one cut-off: the key of earlier releases
            bands = {v: [b.low, b.high] for v in cuts if (b := self.bands.get(v))}
            if bands:  # a band changes the status: part of the key (and only then, for earlier runs)
                cut = {"cutoffs": cuts, "bands": bands}
            # Reasons made another way are redone (the verdict requests come from the response cache);
            # a blend changes the probability: part of the key (and only then, for earlier runs).
            blends = {v: b.to_dict() for v in cuts if (b := self.scored.blends.get(v))}
            # The citations judge's second blend and its band (it is not among the banded judges) decide too.
            blends.update({k: b.to_dict() for k, b in self.scored.blends.items() if k.startswith(f"{name}/")})
            band = self.scored.citation_band if name == "citations" else None
            cut = {
                "cut": cut,
                "reasons": self.scored.reasons,
                **({"blends": blends} if blends else {}),
                **({"citation_band": list(band)} if band is not None else {}),
                # Close calls and an answer restating its reference are left uncertain (the verdicts of
                # earlier runs are decided again: their requests come from the response cache).
                **(
                    {"noise": NUMERIC_NOISE_LOGIT, "restated": 1}
                    if (name in banded() or name == "citations") and self.jc.uncertain != "off"
                    else {}
                ),
            }
        key = inputs_hash(name, self.judge_hash(name), self.llm.identity, self.llm.model, cut, inputs)
        if not explain and (old := self.reusable(name, q.id, prompt, key)) is not None:
            self.reused += 1
            decided(reused=True)
            return old
        make = self.make(name, q, prompt, answer, contexts)
        deferred = spec.family == "scored" and spec.criterion is None and not REASONS_WANTED.get() and not reasons
        if spec.criterion is not None or reasons:
            make = with_reasons(make)  # a user's criterion keeps its reason: its request asks for it anyway
        # A verdict whose reason a reader is shown (asked again, or with its reason from the start
        # because its answer is shown) is decided by the request made alone, as every other verdict
        # of this judge is: which answers are shown then changes no verdict. A criterion always asks
        # with its reason, so it is decided by that request everywhere.
        alone = DECIDED_ALONE.set((explain or reasons) and spec.family == "scored" and spec.criterion is None)
        try:
            if explain:
                result = (await make()).model_copy(update={"input_hash": key})
            elif spec.answer_independent:
                twin = self.by_inputs.get((name, q.id, key))
                if twin is None:
                    if key not in self.shared:
                        self.shared[key] = asyncio.ensure_future(make())
                    twin = await self.shared[key]
                result = twin.model_copy(update={"prompt": prompt, "input_hash": key})
            else:
                result = (await make()).model_copy(update={"input_hash": key})
        finally:
            DECIDED_ALONE.reset(alone)
        if self.bands:
            result = mark(result, self.bands, self.jc.faithfulness_threshold)
        if spec.family == "scored" and name in banded() and self.jc.uncertain != "off":
            blend = self.scored.blends.get(result.typed_details.variant or name) if self.scored else None
            result = mark_close_call(result, blend.model if blend is not None else 1.0)
            result = mark_reference_restated(result, q.reference, q.question, answer)
        if deferred:  # a copy: an answer-independent twin's details are shared with other prompts
            result = result.model_copy(update={"details": {**result.details, "reasons_deferred": True}})
        self.emit(result, counted=not explain)  # a verdict asked again is no new decision
        return result

    def skip(self, name: str, qid: str, prompt: str, why: str) -> Judgement:
        j = Judgement(name, qid, prompt, "skipped", reason=why)
        self.emit(j)
        return j


def with_reasons(make):
    """``make`` with the reasons asked (``yesno.REASONS_WANTED``) whatever the stage asks now."""

    async def made():
        token = REASONS_WANTED.set(True)
        try:
            return await make()
        finally:
            REASONS_WANTED.reset(token)

    return made


def in_turn_judge(name: str) -> bool:
    """Whether the judge asks in the answer's turn of own judges: its reasons may be asked later,
    only for the answers a reader is shown, and it judges this answer (an answer-independent one
    is shared by every prompt's answer, so what it asks must not depend on one answer's verdicts)."""
    spec = JUDGES[name]
    return spec.family == "scored" and spec.criterion is None and not spec.answer_independent


def shows(j: Judgement, q: Question, jc) -> bool:
    """Whether this verdict alone puts its answer among those a reader is shown (the report lists
    it with its reasons): an uncertain decision, or one that makes the outcome a failure (a needless
    or a missing refusal, an incorrect or miscited answer, the deciding faithfulness judge's share
    under the threshold). Where it says no, the answer may still be shown for another reason; its
    reasons are then asked after every verdict is in (``explain_shown``)."""
    if j.status == "uncertain":
        return True
    if j.status != "judged":
        return False
    spec = JUDGES[j.judge]
    if spec.role == "refusal":
        return (j.verdict == spec.positive) == q.answerable
    if spec.role in ("correctness", "citations") and spec.labels and j.verdict is not None:
        return j.verdict != spec.labels[0]
    return (
        spec.role == "faithfulness"
        and jc.deciding("faithfulness") == j.judge
        and j.score is not None
        and j.score < jc.faithfulness_threshold
    )


async def judge_answer(jr: JudgeRun, q: Question, gen: Answer, contexts: list[str]) -> list[Judgement]:
    """Every configured judge's verdict on one answer; refusal first, since a refusal makes no
    claim for the faithfulness judges to check.

    Where reasons are deferred, the own judges ask one after another, those without the contexts
    first: once a verdict shows that a reader will be shown this answer (``shows``), it is asked
    again with its reasons at once (soon after its verdict request; whether the server's prompt
    cache still holds the prompt then is not measured request by request) and the judges after it
    ask with theirs, so a shown answer's reasons are not asked in a second pass. Which requests are
    sent depends only on this answer's verdicts, so a rerun sends the same ones (cached)."""
    metrics = jr.jc.metrics
    qid, prompt = q.id, gen.prompt
    answer = gen.answer
    if gen.failed or not answer:
        why = f"{NO_ANSWER}: {gen.error or 'the answer is empty'}"
        failed = [Judgement(m, qid, prompt, "not_judged", error=why) for m in metrics]
        for j in failed:
            jr.emit(j)
        return failed

    out: list[Judgement] = []
    refused = None
    lazy = not REASONS_WANTED.get()
    shown = False

    async def in_turn(name: str) -> Judgement:
        nonlocal shown
        j = await jr.run(name, q, prompt, answer, contexts, reasons=shown and in_turn_judge(name))
        if lazy and not shown and shows(j, q, jr.jc):
            shown = True
            if j.typed_details.reasons_deferred and in_turn_judge(name):
                explained = await jr.run(name, q, prompt, answer, contexts, explain=True, reasons=True)
                # A failed second request leaves the verdict as it was (explain_shown tries again).
                j = explained if explained.status in ("judged", "uncertain") else j
        return j

    first = decider("refusal", metrics)
    if first is not None:
        r = await in_turn(first)
        out.append(r)
        refused = r.verdict == JUDGES[first].positive if r.status == "judged" else None
    tasks, own = [], []
    for name in (n for n in JUDGES if n in metrics and n != first):
        not_applied = JUDGES[name].applies(q.answerable, bool(q.reference), refused)
        if not_applied:
            out.append(jr.skip(name, qid, prompt, not_applied))
        elif lazy and in_turn_judge(name):
            own.append(name)
        else:
            tasks.append(jr.run(name, q, prompt, answer, contexts))
    own.sort(key=lambda n: "contexts" in JUDGES[n].needs)  # stable: registry order within each group

    async def own_in_turn() -> list[Judgement]:
        return [await in_turn(name) for name in own]

    others, mine = await asyncio.gather(asyncio.gather(*tasks), own_in_turn())
    order = {n: i for i, n in enumerate(JUDGES)}
    return sorted([*out, *others, *mine], key=lambda j: order.get(j.judge, len(order)))


async def judge_all(
    cfg: AuditConfig,
    corpus: Corpus,
    questions: list[Question],
    generations: list[Answer],
    llm,
    out: Path,
    second=None,
    shown: Callable[[list[Judgement]], set[str]] | None = None,
) -> tuple[list[Judgement], JudgingInfo]:
    """Judgements for every generation record, appended to ``out`` as each answer's are complete;
    returns them and what was reused. ``out`` ends holding exactly the returned judgements.
    ``second`` (an LLM): the judge that the uncertain decisions are escalated to.

    ``shown`` (the question ids whose answers a reader is shown, from every verdict): the own
    judges first ask each verdict alone (its label word: ``yesno.VERDICT_TOKENS``), then, for the
    answers of those questions only, ask again with the reasons and quotes the report shows; the
    other verdicts keep no reason (``details.reasons_deferred``). Without it, every verdict is
    asked with its reason at once."""
    jc = required(cfg.judges, "the config's judges section")
    families = {JUDGES[m].family for m in jc.metrics}
    scored = None
    if "scored" in families:
        scored = ScoredJudges.load(llm, cfg.resolve_path(jc.prompts_dir) if jc.prompts_dir else None)
        scored.cutoffs, scored.calibrated = cutoffs_for(llm.identity, scored, jc.cutoffs)
        scored.blends = blends_for(llm.identity, scored)
        scored.reasons = jc.reasons
        cited = cfg.generation.citations if cfg.generation else None
        scored.citation_pattern = cited.pattern if cited else None
        scored.citation_band = band_from(jc.uncertain, saved=saved_band(llm.identity, "citations", scored))
    ragas = (
        RagasJudges(llm, json_schema=jc.llm.json_schema, requests=jc.ragas_requests) if "ragas" in families else None
    )
    done = read_judgements(out)
    by_id = {q.id: q for q in questions}
    max_chars = context_chars(cfg)
    records: list[Judgement] = []
    # Answers are judged a few at a time, so that a killed run loses little (each verdict is
    # written as it comes), yet more than the model serves at once: the client's prefix-aware
    # scheduler then has requests of one judge template from several answers to send back to
    # back, and the template's fixed part stays in the server's KV cache.
    gate = asyncio.Semaphore(llm.cfg.concurrency + JUDGE_AHEAD)
    with out.open("a", encoding="utf-8") as fh:

        def emit(j: Judgement, counted: bool = True) -> None:
            fh.write(json.dumps(j.to_dict(), ensure_ascii=False) + "\n")
            fh.flush()
            if counted:
                decided()

        jr = JudgeRun(cfg, llm, scored, ragas, done, emit)
        jr.bands, band_notes = bands_for(llm.identity, scored, jc.uncertain, judges=jc.metrics)
        criterion_bands(jr.bands, band_notes, jc.uncertain, jc.metrics)
        not_used: dict[str, str] = {}
        adapted = (
            use_saved_adaptations(scored, jr.bands, corpus.fingerprint()[:16], llm.identity, jc, not_used)
            if scored
            else {}
        )

        async def one(g: Answer) -> list:
            async with gate:
                contexts = judged_contexts(corpus, g.contexts, max_chars)
                jr.chunks[(g.question_id, g.prompt)] = [
                    corpus.chunks[corpus.index[c]] for c in g.contexts if c in corpus.index
                ]
                return await judge_answer(jr, by_id[g.question_id], g, contexts)

        kept = VERDICTS_ALONE.set({})
        try:
            lazy = REASONS_WANTED.set(shown is None)
            try:
                jobs = [one(g) for g in generations if g.question_id in by_id]
                async for batch in track_async(jobs, "judging answers"):
                    records += batch
            finally:
                REASONS_WANTED.reset(lazy)
            if shown is not None:
                records = await explain_shown(jr, records, shown(records), generations, by_id, corpus, max_chars)
        finally:
            VERDICTS_ALONE.reset(kept)
    # Answers' verdicts complete in any order (cached ones at once): the records keep the
    # generations' order (each answer's verdicts in the registry's order), so the figures'
    # bootstrap draws and the report's lists are the same on a rerun.
    order = {(g.question_id, g.prompt): i for i, g in enumerate(generations)}
    records.sort(key=lambda j: order.get((j.question_id, j.prompt), len(order)))
    escalation = None
    if second is not None:
        gens = {(g.question_id, g.prompt): g.dump() for g in generations}
        escalated, escalation = await escalate_records(
            cfg,
            [j.to_dict() for j in records],
            second,
            lambda q, p: (by_id.get(q), gens.get((q, p))),
            lambda ids: judged_contexts(corpus, ids, max_chars),
        )
        records = [Judgement.from_dict(r) for r in escalated]
    write_text(out, "".join(json.dumps(j.to_dict(), ensure_ascii=False) + "\n" for j in records))
    agreement = agreement_for(llm.identity, scored) if scored else {}
    calibration = {
        name: Calibration(
            cutoff=scored.cutoff(name),
            cutoffs=scored.decision_cutoffs(name),
            calibrated=all(scored.calibrated.get(v, False) for v in scored.decision_cutoffs(name)),
            agreement=agreement.get(name),
            bands={v: jr.bands[v].to_dict() for v in scored.decision_cutoffs(name) if v in jr.bands},
            band_note=band_notes.get(name),
            adaptation_not_used=not_used.get(name),
            blend=_blend_text(scored, name),
            blends={v: scored.blends[v].to_dict() for v in scored.decision_cutoffs(name) if v in scored.blends},
            identity=llm.identity,
            prompt_hashes={v: scored.prompt_hash(v) for v in scored.decision_cutoffs(name)},
            adapted={v: adapted[v] for v in scored.decision_cutoffs(name) if v in adapted},
        )
        for name in jc.metrics
        if scored and JUDGES[name].family == "scored"
    }
    info = JudgingInfo(
        reused=jr.reused,
        redone=jr.redone,
        calibration=calibration,
        escalation=escalation,
        ragas_requests=ragas.settings if ragas else None,
        ragas_agreement=ragas_agreement_for(
            llm.identity, [m for m in jc.metrics if JUDGES[m].family == "ragas"], jc.ragas_requests
        )
        if ragas
        else {},
    )
    return records, info


async def explain_shown(
    jr: JudgeRun,
    records: list[Judgement],
    wanted: set[str],
    generations: list[Answer],
    by_id: dict[str, Question],
    corpus: Corpus,
    max_chars: int,
) -> list[Judgement]:
    """``records`` with the own judges' verdicts on the answers to the ``wanted`` questions asked
    again with their reasons, where they were asked without; one answer's judges in a row, so its
    prompts follow the verdict requests' in the server's cache."""
    gens = {(g.question_id, g.prompt): g for g in generations}
    todo = [(i, j) for i, j in enumerate(records) if j.question_id in wanted and j.typed_details.reasons_deferred]
    if not todo:
        return records
    out = list(records)

    async def one(i: int, j: Judgement) -> tuple[int, Judgement]:
        g, q = gens[(j.question_id, j.prompt)], by_id[j.question_id]
        contexts = judged_contexts(corpus, g.contexts, max_chars)
        return i, await jr.run(j.judge, q, j.prompt, g.answer or "", contexts, explain=True)

    # Its own plan: the judging's (calls and decisions of every verdict) would show this stage's
    # calls against the whole judging's and "0 of N decisions" once every decision is made.
    with plan():
        async for i, j in track_async([one(i, j) for i, j in todo], "quoting the reasons shown"):
            # A failed reasons request ends the record not_judged, as a failed call always does: the
            # default gate fails and a rerun asks again, rather than showing a verdict without its reason.
            out[i] = j
    return out


def criterion_bands(bands: dict[str, Band], notes: dict[str, str], setting, metrics: list[str]) -> None:
    """Each criterion that ``judges.uncertain`` and the saved calibrations give no band keeps its own
    (``judges.criteria.<name>.uncertain``, wide: nothing has calibrated it); none where
    ``judges.uncertain`` is off. A saved adaptation to the corpus replaces it after."""
    if setting == "off":
        return
    for name, c in criteria().items():
        if name in metrics and name not in bands:
            bands[name] = Band(c.band[0], c.band[1], f"judges.criteria.{name}.uncertain, not calibrated by labels")
            notes.pop(name, None)


class AdaptationNote(Model):
    """An adaptation to the corpus as the store saved it (``Decider.to_dict`` with the labels file it
    came from and when: ``judges/adapted.py``) and as a run's calibration names it
    (``Calibration.adapted``, by prompt variant): how many labels, how, from which file, when."""

    labels: int | None = None
    how: str | None = None
    source: str | None = ""
    saved: str | None = None
    answers: list[str] | None = None  # the labelled answers it was fitted on (``adapted.answer_id``)


def use_saved_adaptations(
    scored: ScoredJudges, bands: dict[str, Band], corpus: str, identity: str, jc, not_used: dict[str, str]
) -> dict:
    """Where an adaptation to this corpus was saved for this judge model and prompt (``rag-eval report
    --labels F --adapt``), its blend, cut-off and band decide instead of the shipped ones; the
    config's ``judges.cutoffs`` and ``judges.uncertain`` still win. A criterion's adaptation fitted by
    another method than this version's (``CRITERION_METHOD``) is not used: the console and ``not_used``
    (by judge, for the report) say so. Returns what was used, by variant."""
    used = {}
    told: list[str] = []
    for name in jc.metrics:
        if not adaptable(name):
            continue
        for v in scored.decision_cutoffs(name):
            entry = saved_adaptation(corpus, identity, v, scored.prompt_hash(v))
            if entry is None or v in jc.cutoffs or name in jc.cutoffs:
                continue
            d, note = Decider.from_dict(entry), AdaptationNote.load(entry)
            spec = JUDGES[name]
            if spec.criterion is not None and d.method != CRITERION_METHOD:
                fitted = (
                    f"method {d.method}"
                    if d.method is not None
                    else "a method not recorded (saved before rag-eval kept it)"
                )
                stale = (
                    f"the adaptation of `{v}` saved for this corpus ({note.source}, {note.saved}) was fitted by "
                    f"{fitted} and is not used: this version fits criteria by method {CRITERION_METHOD}; "
                    "run `rag-eval report RUN --labels FILE --adapt` again"
                )
                not_used[name] = stale
                say(f"{name}: {stale}")
                continue
            if spec.criterion is not None:
                # The config's aim now, not the one it was adapted at: the band moves on the same fit.
                d = d.at_aim(spec.criterion.aim)
            scored.cutoffs[v] = d.cutoff
            if d.blend is not None:
                scored.blends[v] = d.blend
            if d.band is not None and jc.uncertain == "auto":
                bands[v] = Band(d.band[0], d.band[1], f"{ADAPTED_BAND} with {d.labels} labels ({note.source})")
            told.append(f"`{v}` with {d.labels} labels ({note.source})")
            used[v] = {
                "labels": d.labels,
                "how": d.how,
                "source": note.source,
                "saved": note.saved,
                **({"answers": note.answers} if note.answers is not None else {}),
            }
    if told:
        # A later audit of the same documents decides otherwise than the shipped judge: say so here,
        # not only in the report (user trial L8).
        say(f"judges adapted to this corpus decide this run: {', '.join(told)}")
    return used


def _blend_text(scored: ScoredJudges, name: str) -> str | None:
    """How the saved blends of a judge's prompts combine the model's P with word evidence."""
    shown = {v: scored.blends[v].describe() for v in scored.decision_cutoffs(name) if v in scored.blends}
    if not shown:
        return None
    if len(set(shown.values())) == 1:
        return next(iter(shown.values()))
    return "; ".join(f"{v}: {d}" for v, d in shown.items())


@dataclass(frozen=True)
class FirstJudge:
    """A run's verdicts as the first judge alone left them (each escalated record restored from
    ``details.escalation.first_record``), and the judged figures they aggregate to."""

    records: list[Judgement]
    figures: Figures


@dataclass(frozen=True)
class JudgedFigures:
    """What the judging stage's verdicts aggregate to (``aggregate``): the judged figures, and where
    an escalation ran, the verdicts and figures without it (the report's escalation section)."""

    figures: Figures
    without_escalation: FirstJudge | None = None


@dataclass(frozen=True)
class Judged:
    """What the judging stage returns: the verdicts, what it reused and decided with, and their figures."""

    records: list[Judgement]
    info: JudgingInfo
    figures: JudgedFigures


def judged_figures(
    cfg: AuditConfig,
    questions: list[Question],
    judgements: list[Judgement],
    weights: dict[str, float] | None = None,
    *,
    escalated: bool = False,
) -> JudgedFigures:
    """The judged figures of ``judgements`` (``aggregate``), and with ``escalated`` (an escalation ran)
    the first judge's verdicts and their figures beside them; ``weights``: see ``aggregate``."""
    if not escalated:
        return JudgedFigures(aggregate(cfg, questions, judgements, weights))
    first = [Judgement.from_dict(first_pass(j.to_dict())) for j in judgements]
    return JudgedFigures(
        aggregate(cfg, questions, judgements, weights),
        FirstJudge(first, aggregate(cfg, questions, first, weights)),
    )


def run_judging(
    cfg: AuditConfig,
    corpus: Corpus,
    questions: list[Question],
    generations: list[Answer | dict],
    session,
    run_dir: Path,
    shown: Callable[[list[Judgement]], set[str]] | None = None,
    weights: dict[str, float] | None = None,
) -> Judged:
    """Judgements of every answer, what a resumed run reused, and the figures they aggregate to
    (``weights``: each question's sampling weight); ``shown``: see ``judge_all``."""
    answers = [Answer.load(g) for g in generations]
    jc = required(cfg.judges, "the config's judges section")

    async def main() -> tuple[list[Judgement], JudgingInfo]:
        llm = session.llm(jc.llm, cfg.where("judges.llm"))
        esc = jc.escalate
        second = session.llm(esc.second, cfg.where("judges.escalate.llm")) if esc is not None else None
        try:
            return await judge_all(cfg, corpus, questions, answers, llm, run_dir / "judgements.jsonl", second, shown)
        finally:
            await session.aclose()

    records, info = asyncio.run(main())
    return Judged(
        records, info, judged_figures(cfg, questions, records, weights, escalated=info.escalation is not None)
    )


def aggregate(
    cfg: AuditConfig, questions: list[Question], judgements: list[Judgement], weights: dict[str, float] | None = None
) -> Figures:
    """``{prompt: {figure: JudgedFigure}}`` for every figure of every judge in the registry;
    not-judged never enter a mean.

    Score figures are means with bootstrap intervals; verdict figures are shares with Wilson
    intervals (``correctness``: judged correct, answerable questions; ``refusal_accuracy``:
    refused, unanswerable questions; ``needless_refusal``: refused, answerable questions).
    ``weights`` (question id to sampling weight) make every figure estimate the whole test set
    when the questions were a stratified sample.
    """
    st = cfg.stats
    weights = weights or {}
    answerable = {q.id: q.answerable for q in questions}
    out: Figures = {}

    def in_subset(qid: str, subset: str) -> bool:
        return subset == "all" or answerable.get(qid) is (subset == "answerable")

    for prompt in sorted({j.prompt for j in judgements}):
        mine = [j for j in judgements if j.prompt == prompt]
        figs: dict[str, JudgedFigure] = {}
        for spec, fig in figures(required(cfg.judges, "the config's judges section").metrics):
            rows = [j for j in mine if j.judge == spec.name and in_subset(j.question_id, fig.subset)]
            rows = [j for j in rows if j.status != "skipped"]
            if not rows:
                continue
            judged = [j for j in rows if j.status == "judged"]
            if fig.detail:  # a number of the details: the records that have one (precision: those citing)
                judged = [j for j in judged if fig.value(j) is not None]
                if not judged:
                    continue
            w = np.array([weights.get(j.question_id, 1.0) for j in judged], dtype=float)
            if fig.binary:
                hits = np.array([j.verdict == fig.verdict for j in judged], dtype=float)
                est = weighted_share(hits, w, confidence=st.confidence)
            else:
                scores = np.array([fig.value(j) for j in judged], dtype=float)
                est = bootstrap_mean(
                    scores, n_resamples=st.bootstrap_resamples, confidence=st.confidence, seed=st.seed, weights=w
                )
            figs[fig.name] = _with_excluded(est, rows)
        out[prompt] = figs
    return out


def _with_excluded(est: Estimate, rows: list[Judgement]) -> JudgedFigure:
    return JudgedFigure(
        **est.to_dict(),
        n_not_judged=sum(j.status == "not_judged" for j in rows),
        n_uncertain=sum(j.status == "uncertain" for j in rows),
    )
