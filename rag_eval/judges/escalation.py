"""Escalation: the decisions the first judge is uncertain of, asked again of a second judge.

Only the uncertain decisions travel: a verdict judge's one question, or a statement judge's
statements that lay in the band (the others keep the first judge's decision). The second judge
is any OpenAI-compatible endpoint behind the same client layer (cache, retries, usage). It
decides with its own calibrated cut-off where ``judge-check --save`` saved one for it (and its
own band, if any, can leave a decision uncertain still), else by the word it wrote (recorded as
``text verdict``). At most ``max_calls`` decisions are sent, in the order of (question, prompt,
judge), so a rerun sends the same ones.

An escalated record keeps the first judge's record (``details.escalation.first_record``): a rerun
restores it before escalating again (answered from the response cache), and the report's figures
without escalation come from it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from rag_eval.answers.answer_records import Answer
from rag_eval.base_records import Model, required
from rag_eval.calibration.cutoffs import blends_for, cutoffs_for
from rag_eval.judges.adapted import statement_rows
from rag_eval.judges.details import StatementsDetails
from rag_eval.judges.judge_records import EscalationRecord
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.registry import JUDGES
from rag_eval.judges.scored import ScoredJudges
from rag_eval.judges.uncertain import Band, bands_for, within_noise
from rag_eval.llm.usage import since


@dataclass(frozen=True)
class Opinion:
    """The second judge on one decision."""

    probability: float | None  # P(positive), where the endpoint gave logprobs
    positive: bool | None  # None: no decision (error, or uncertain in its own band)
    how: str  # "calibrated cut-off 0.620", "text verdict", ...
    reason: str
    method: str
    error: str | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


async def second_opinion(
    second: ScoredJudges,
    bands: dict[str, Band],
    variant: str,
    yes_is_positive: bool,
    values: dict[str, str],
    *,
    noise: bool = True,
) -> Opinion:
    """One decision by the second judge: its calibrated cut-off where saved, else its text verdict.
    ``noise``: a P within the server's numeric noise of the cut-off stays undecided, as the first
    judge's close calls do (off under ``judges.uncertain: off``)."""
    d = await second.prompt_for(variant).ask_with(second.llm, values)
    p_yes = d.p("yes")
    if d.error or p_yes is None:
        return Opinion(None, None, "not decided", d.reason, d.method, d.error or "no yes/no in the reply")
    p = p_yes if yes_is_positive else 1.0 - p_yes
    prob = round(p, 6) if d.probs is not None else None
    if second.calibrated.get(variant, False):
        cut = second.cutoff(variant)
        band = bands.get(variant)
        if band is not None and band.holds(p):
            return Opinion(prob, None, f"uncertain in its own band [{band.low}, {band.high})", d.reason, d.method)
        if noise and d.probs is not None and within_noise(p, cut):
            return Opinion(
                prob, None, f"P {p:.3f} within the server's numeric noise of its cut-off {cut:.3f}", d.reason, d.method
            )
        return Opinion(prob, p >= cut, f"calibrated cut-off {cut:.3f}", d.reason, d.method)
    if d.text_label is not None:
        return Opinion(prob, (d.text_label == "yes") == yes_is_positive, "text verdict", d.reason, d.method)
    return Opinion(prob, p >= 0.5, "P >= 0.5 (no verdict word in the text)", d.reason, d.method)


class _EscalatedDetails(Model):
    escalation: EscalationRecord | None = None


class _Escalated(Model):
    """A judgement record as ``first_pass`` reads it: its details' escalation, if any."""

    details: _EscalatedDetails | None = None


def first_pass(record: dict) -> dict:
    """The first judge's record of an escalated one (the record itself otherwise)."""
    details = _Escalated.model_validate(record).details
    esc = details.escalation if details else None
    return (esc.first_record if esc else None) or record


def escalation_of(j: Judgement) -> EscalationRecord:
    """What the escalation did to ``j`` (nothing set where it was not escalated)."""
    return EscalationRecord.model_validate(j.typed_details.escalation or {})


# Why an uncertain citations verdict is not sent to the second judge.
NOT_ESCALATED = (
    "the citations judge is not escalated (it asks per sentence and cited passage); to decide its "
    "uncertain sentences on a stronger model, run it there (judges.llm)"
)


@dataclass(frozen=True)
class AnswerTexts:
    """The texts an escalated judgement's prompts are filled from."""

    question: str
    answer: str
    reference: str
    context: str  # the contexts joined

    def placeholders(self) -> dict[str, str]:
        """Each prompt placeholder's value (``contexts`` as ``context``: the contexts joined)."""
        return {
            "question": self.question,
            "answer": self.answer,
            "reference": self.reference,
            "context": self.context,
            "contexts": self.context,
        }


@dataclass
class Escalation:
    """What the escalation pass did."""

    model: str
    identity: str
    max_calls: int | None
    uncertain: int = 0  # uncertain records before escalation
    escalated: int = 0  # records sent (wholly or by their uncertain statements)
    decided: int = 0  # of those, decided now
    over_budget: int = 0  # uncertain records not sent: max_calls reached
    calls: int = 0  # decisions sent
    calibrated: dict[str, bool] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _needed(j: Judgement) -> int:
    details = j.typed_details
    return len(details.uncertain_statements or []) if isinstance(details, StatementsDetails) else 1


async def escalate(
    records: list[Judgement],
    inputs: Callable[[Judgement], AnswerTexts | None],
    second: ScoredJudges,
    second_bands: dict[str, Band],
    *,
    max_calls: int | None,
    threshold: float,
    noise: bool = True,
) -> tuple[list[Judgement], Escalation]:
    """Every record, the uncertain ones asked again of ``second`` (within ``max_calls``
    decisions); ``inputs(record)`` gives the texts the prompts need (question, answer, reference,
    context). Uncertain refusal verdicts go first: an answer the second judge calls a refusal makes
    no claim, so its faithfulness records become ``skipped`` (and are not sent)."""
    info = Escalation(second.llm.model, second.llm.identity, max_calls)
    info.uncertain = sum(j.status == "uncertain" for j in records)

    async def send(indices: list[int]) -> None:
        chosen = []
        for i in sorted(indices, key=lambda i: (records[i].question_id, records[i].prompt, records[i].judge)):
            spec = JUDGES.get(records[i].judge)
            if spec is not None and spec.role == "citations":
                # Its questions are per sentence and per set of cited passages, not one prompt's
                # placeholders: it stays uncertain, and the record says why.
                records[i] = _note(records[i], {"not_sent": NOT_ESCALATED})
                continue
            need = _needed(records[i])
            if max_calls is not None and info.calls + need > max_calls:
                info.over_budget += 1
                records[i] = _note(records[i], {"not_sent": f"judges.escalate.max_calls ({max_calls}) reached"})
                continue
            info.calls += need
            chosen.append(i)
        results = await asyncio.gather(
            *(_one(records[i], inputs(records[i]), second, second_bands, threshold, noise) for i in chosen)
        )
        for i, new in zip(chosen, results):
            records[i] = new
            info.escalated += 1
            info.decided += new.status == "judged"

    def refusal(j: Judgement) -> bool:
        return j.judge in JUDGES and JUDGES[j.judge].role == "refusal"

    await send([i for i, j in enumerate(records) if j.status == "uncertain" and refusal(j)])
    refused = {
        (j.question_id, j.prompt)
        for j in records
        if refusal(j) and j.verdict == JUDGES[j.judge].positive and escalation_of(j).decided_by
    }
    for i, j in enumerate(records):
        spec = JUDGES.get(j.judge)
        if (j.question_id, j.prompt) in refused and spec is not None and spec.skip_refusals and j.status != "skipped":
            info.uncertain -= j.status == "uncertain"
            skipped = Judgement(j.judge, j.question_id, j.prompt, "skipped", reason="the answer is a refusal")
            records[i] = _note(skipped, {"skipped": "the second judge called the answer a refusal"}, first=j)
    await send([i for i, j in enumerate(records) if j.status == "uncertain" and not refusal(j)])
    info.calibrated = dict(second.calibrated)
    return records, info


def _note(j: Judgement, escalation: dict, first: Judgement | None = None) -> Judgement:
    """``j`` with what the escalation did, and the first judge's record (``first``, else ``j``)."""
    record = first_pass((first or j).to_dict())
    return j.model_copy(update={"details": {**j.details, "escalation": {**escalation, "first_record": record}}})


async def _one(
    j: Judgement,
    values: AnswerTexts | None,
    second: ScoredJudges,
    bands: dict[str, Band],
    threshold: float,
    noise: bool = True,
) -> Judgement:
    who = {"model": second.llm.model, "identity": second.llm.identity}
    if values is None:
        return _note(j, {**who, "error": "the answer's inputs are not in this run"})
    if isinstance(j.typed_details, StatementsDetails):
        return await _statements(j, j.typed_details, values, second, bands, threshold, who, noise)
    variant = j.typed_details.variant or j.judge
    spec = JUDGES[j.judge]
    (yes, no), positive = spec.yes_no, spec.positive
    texts = values.placeholders()
    ask = {k: texts[k] for k in second.prompt_for(variant).placeholders}
    op = await second_opinion(second, bands, variant, yes == positive, ask, noise=noise)
    esc = {
        **who,
        "first_probability": j.probability,
        "second_probability": op.probability,
        "second": op.to_dict(),
    }
    if op.positive is None:
        return _note(j, {**esc, "decided_by": None})
    negative = no if positive == yes else yes
    verdict = positive if op.positive else negative
    decided = j.model_copy(
        update={
            "status": "judged",
            "verdict": verdict,
            "score": 1.0 if op.positive else 0.0,
            "reason": op.reason,
            "method": op.method,
            # The first judge's word and quoted reason stay in its record (first_record), not beside
            # the second judge's verdict.
            # Nor what said why it was undecided: the second judge decided it.
            "details": {
                k: v
                for k, v in j.details.items()
                if k not in ("evidence", "model_said", "leaning", "leaning_score", "left_uncertain")
            },
        }
    )
    return _note(decided, {**esc, "decided_by": "second"}, first=j)


async def _statements(
    j: Judgement,
    typed: StatementsDetails,
    values: AnswerTexts,
    second: ScoredJudges,
    bands: dict[str, Band],
    threshold: float,
    who: dict,
    noise: bool = True,
) -> Judgement:
    """The uncertain statements asked again; the answer decided when the rest can no longer move
    its share across ``threshold``."""
    rows = statement_rows(j) or []
    statements = typed.statements
    unsure = typed.uncertain_statements or []
    ops = await asyncio.gather(
        *(
            second_opinion(
                second,
                bands,
                j.judge,
                True,
                {"context": values.context, "question": values.question, "statement": statements[k].statement},
                noise=noise,
            )
            for k in unsure
        )
    )
    band = typed.band or [0.0, 0.0]
    # Each statement: supported (True/False) where decided, None where still uncertain.
    decided: list[bool | None] = [
        None if band[0] <= required(s.p_supported, "a statement's P(supported)") < band[1] else s.supported
        for s in statements
    ]
    second_of = dict(zip(unsure, ops))
    rows = [{**r, "second": second_of[k].to_dict()} if k in second_of else dict(r) for k, r in enumerate(rows)]
    for k, op in second_of.items():
        decided[k] = op.positive
    lo = sum(d is True for d in decided) / len(rows)
    hi = sum(d is not False for d in decided) / len(rows)
    still = (lo >= threshold) != (hi >= threshold)
    esc = {
        **who,
        "first_probability": j.probability,
        "second_probability": [op.probability for op in ops],
        "statements_sent": len(unsure),
        "decided_by": None if still else "second",
    }
    details = {**j.details, "statements": rows, "score_range": [lo, hi]}
    if still:
        return _note(j.model_copy(update={"details": details}), esc, first=j)
    supported = [
        d if d is not None else required(s.supported, "a statement's decision") for d, s in zip(decided, statements)
    ]
    missing = [s.statement for s, ok in zip(statements, supported) if not ok]
    reason = (
        f"{sum(supported)} of {len(rows)} answer statements are supported by the contexts"
        + (f"; not: {'; '.join(missing)}" if missing else "")
        + f" ({len(unsure)} decided by {second.llm.model})"
    )
    done = j.model_copy(
        update={"status": "judged", "score": sum(supported) / len(rows), "reason": reason, "details": details}
    )
    return _note(done, esc, first=j)


async def escalate_records(cfg, records: list[dict], llm, answer_of, contexts_of) -> tuple[list[dict], dict]:
    """The judging stage's records with the uncertain ones escalated to ``llm`` (the second
    judge of ``cfg.judges.escalate``); ``answer_of(question_id, prompt)`` gives (the Question, its
    generation record); ``contexts_of(ids)`` the context texts. Returns the records and what the
    escalation did (with the second judge's usage and cost)."""
    jc = cfg.judges
    second = ScoredJudges.load(llm, cfg.resolve_path(jc.prompts_dir) if jc.prompts_dir else None)
    # The config's cut-offs and bands are the first judge's; the second has only its own saved ones.
    second.cutoffs, second.calibrated = cutoffs_for(llm.identity, second, {})
    second.blends = blends_for(llm.identity, second)
    bands, _ = bands_for(llm.identity, second, "off" if jc.uncertain == "off" else "auto", judges=jc.metrics)

    def inputs(j: Judgement) -> AnswerTexts | None:
        q, gen = answer_of(j.question_id, j.prompt)
        answer = Answer.load(gen) if gen is not None else None
        if q is None or answer is None or not answer.answer:
            return None
        return AnswerTexts(q.question, answer.answer, q.reference or "", "\n\n".join(contexts_of(answer.contexts)))

    judgements = [Judgement.from_dict(r) for r in records]
    # The second judge's own calls: its client may be the first judge's (one endpoint, one model).
    before = llm.usage.model_copy()
    done, info = await escalate(
        judgements,
        inputs,
        second,
        bands,
        max_calls=jc.escalate.max_calls,
        threshold=jc.faithfulness_threshold,
        noise=jc.uncertain != "off",
    )
    return [j.to_dict() for j in done], {**info.to_dict(), "usage": since(llm.usage, before).to_dict()}
