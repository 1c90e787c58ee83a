"""rag-eval's own judges, each a yes/no question scored by probability (see ``yesno.py``).

- ``refusal``: does the answer give the information asked for? (verdict answered / refused; the
  record's probability is P(refused))
- ``correctness``: does the answer give the reference's fact without contradicting it?
  (verdict correct / incorrect; "partial" answers count as not correct, as in attribution). A
  short reference (a name, number or phrase of at most ``SHORT_REFERENCE_WORDS`` words) is asked
  about by name ("does it give Bath as the answer?", ``correctness_short.md``), a longer one as a
  statement (``correctness.md``): each prompt measures better on its own kind of reference, and
  each has its own cut-off.
- ``faithfulness_yesno``: the answer split into statements, each asked "supported by the
  contexts?"; the score is the share supported.
- ``context_recall_yesno``: the reference split into statements, each asked the same of the
  contexts; the score is the share found.
- ``context_precision_yesno``: each context asked "does it lead to the reference answer?"; the
  score is the average precision over the ranked contexts (as Ragas computes it).

A decision is P(yes) >= the judge's cut-off: calibrated per model and prompt by
``rag-eval judge-check --save``, else 0.5 (and the record says which).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from rag_eval.base_records import Model, Num, required
from rag_eval.calibration.criterion_evidence import criterion_features
from rag_eval.calibration.lexical import Blend, Coverage, Declining, Support, coverage, declining, support
from rag_eval.hashing import text_hash
from rag_eval.judges.citations_judge import judge_citations
from rag_eval.judges.criteria import criterion_prompt
from rag_eval.judges.evidence import Said, explain
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.registry import JUDGES, Inputs, prompt_files, variants
from rag_eval.judges.statements import (  # split_statements: also from here (cascade, pipeline)
    split_statements,
    without_markers,
)
from rag_eval.judges.yesno import REASONS_WANTED, Decision, YesNoPrompt, load_prompt
from rag_eval.llm.client import LLM
from rag_eval.resources import shipped_prompt

# The word evidence one blend reads (``lexical.py``).
Evidence = Coverage | Support | Declining

DEFAULT_CUTOFF = 0.5
SHORT_REFERENCE_WORDS = 6


def correctness_variant(reference: str) -> str:
    """The correctness prompt for this reference: by name for a short one, as a statement else."""
    return "correctness_short" if len(reference.split()) <= SHORT_REFERENCE_WORDS else "correctness"


@dataclass
class ScoredJudges:
    """The yes/no prompts and the cut-offs in force, bound to one judge model."""

    llm: LLM
    prompts: dict[str, YesNoPrompt]
    cutoffs: dict[str, float] = field(default_factory=dict)
    calibrated: dict[str, bool] = field(default_factory=dict)
    # How the shown reasons are made (``evidence.py``): "quote" asks for a verified quote with the
    # decided word forced (one or two short requests more per decision); "model" keeps the verdict
    # request's own words (the plain-words note where the cut-off overturns them).
    reasons: str = "model"
    # Per cut-off name: the saved blend of the model's probability with word evidence
    # (``lexical.py``); a judge without one decides on the model's probability alone.
    blends: dict[str, Blend] = field(default_factory=dict)
    # The citations judge (``citations_judge.py``): the config's citation form
    # (``generation.citations.pattern``) and the band of its decisions (None: none uncertain; the
    # judging stage sets it from ``judges.uncertain``).
    citation_pattern: str | None = None
    citation_band: tuple[float, float] | None = None

    @classmethod
    def load(cls, llm, prompts_dir: Path | None, cutoffs: dict[str, float] | None = None) -> ScoredJudges:
        folder = prompts_dir or shipped_prompt("judges")
        files = {p.key: p for p in prompt_files().values()}
        prompts = {
            key: criterion_prompt(folder, p) if p.criterion else load_prompt(folder / p.file, key, p.placeholders)
            for key, p in files.items()
        }
        cutoffs = cutoffs or {}
        return cls(llm, prompts, dict(cutoffs), {k: True for k in cutoffs})

    def prompt_for(self, name: str) -> YesNoPrompt:
        """The prompt behind one cut-off name (a judge or a variant)."""
        return self.prompts[prompt_files()[name].key]

    def prompt_hash(self, judge: str) -> str:
        """The hash of the prompt behind one cut-off name (a judge or a variant)."""
        return self.prompt_for(judge).hash

    def judge_hash(self, judge: str) -> str:
        """The hash of every prompt a judge may ask (what a rerun compares)."""
        names = variants(judge)
        if len(names) == 1:
            return self.prompt_hash(names[0])
        return text_hash("|".join(self.prompt_hash(v) for v in names))

    def cutoff(self, judge: str) -> float:
        return self.cutoffs.get(judge, DEFAULT_CUTOFF)

    def decision_cutoffs(self, judge: str) -> dict[str, float]:
        """The cut-off of each variant of a judge (the judge's own for a judge with one prompt)."""
        return {v: self.cutoff(v) for v in variants(judge)}

    def blended(self, name: str, p_model: float, evidence: Evidence | None) -> float:
        """P(positive) as decided: the saved blend of ``name`` over the model's P and the word
        evidence, else the model's P."""
        blend = self.blends.get(name)
        if blend is None or evidence is None:
            return p_model
        return blend.p(p_model, evidence.features())

    def supported_p(self, name: str, p_yes: float, claim: str, contexts: list[str]) -> tuple[float, Support | None]:
        """P(supported) of one claim as ``name`` decides it, and the word evidence where it has a blend."""
        if name not in self.blends:
            return p_yes, None
        ev = support(claim, contexts)
        return self.blended(name, p_yes, ev), ev

    def _record(self, judge: str, qid: str, prompt: str, **kw) -> Judgement:
        return Judgement(judge, qid, prompt, judge_prompt_hash=self.judge_hash(judge), model=self.llm.model, **kw)

    def _failed(self, judge: str, qid: str, prompt: str, error: str, details: dict | None = None) -> Judgement:
        return self._record(judge, qid, prompt, status="not_judged", error=error, details=details or {})

    async def _verdict(
        self,
        judge: str,
        qid: str,
        prompt: str,
        labels: tuple[str, str],
        positive: str,
        variant: str | None = None,
        sources: dict | None = None,
        criterion_words: dict[str, float] | None = None,
        **values: str,
    ) -> Judgement:
        """One yes/no decision; ``labels`` = (the verdict for yes, the verdict for no). The record's
        probability is P(``positive``), and the verdict is ``positive`` when it reaches the cut-off
        (of ``variant``, the prompt asked, when the judge has several). ``criterion_words``: a
        criterion's word features, kept in the evidence (no blend decides with them until labels
        adapt the criterion)."""
        variant = variant or judge
        d = await self.prompt_for(variant).ask_with(self.llm, values)
        p_yes = d.p("yes")
        if d.error or p_yes is None:
            return self._failed(judge, qid, prompt, d.error or "no yes/no in the reply", {"raw": d.raw})
        p_model = p_yes if positive == labels[0] else 1.0 - p_yes
        words, own = None, None
        if criterion_words is not None:
            # A criterion's blend exists only where its labels fitted one (an adaptation saved for
            # this corpus), over the word features it keeps.
            blend = self.blends.get(variant)
            own = blend if blend is not None and set(blend.weights) <= set(criterion_words) else None
            p = own.p(p_model, criterion_words) if own is not None else p_model
        else:
            words = _word_evidence(variant, values, sources or {}) if variant in self.blends else None
            p = self.blended(variant, p_model, words)
        cut = self.cutoff(variant)
        negative = labels[1] if positive == labels[0] else labels[0]
        verdict = positive if p >= cut else negative
        calibrated = self.calibrated.get(variant, False)
        note = word_note(words, negative=verdict == negative)
        said = Said(
            d.text_label,
            p,
            positive,
            cut,
            calibrated,
            verdict,
            "yes" if verdict == labels[0] else "no",
            p_model=p_model if words is not None or own is not None else None,
        )
        reason, evidence = await self._explain_with_words(
            prompt_files()[variant].key, d, said, values, sources, words, variant, note
        )
        if criterion_words is not None:
            blended = {"blend": own.describe()} if own is not None else {}
            evidence = {**evidence, "words": {"p_model": round(p_model, 6), "features": criterion_words, **blended}}
        return self._record(
            judge,
            qid,
            prompt,
            status="judged",
            score=1.0 if verdict == positive else 0.0,
            verdict=verdict,
            reason=reason,
            probability=round(p, 6),
            cutoff=cut,
            method=d.method,
            details={
                "raw": d.raw,
                "calibrated": calibrated,
                "variant": variant,
                "model_said": said.model_said,
                "evidence": evidence,
                **(d.extra or {}),
            },
        )

    async def verdict(self, judge: str, x: Inputs, variant: str | None = None) -> Judgement:
        """A verdict judge of the registry on one answer: its prompt (``variant``'s, else its first)
        with each placeholder filled from ``x`` (``context`` and ``contexts``: the contexts joined),
        a yes meaning the verdict its ``yes`` names."""
        spec = JUDGES[judge]
        variant = variant or spec.variants[0]
        placeholders = self.prompt_for(variant).placeholders
        values = {p: _value(x, p) for p in placeholders}
        # Where a quote of the reason may come from: the inputs this judge's prompt shows.
        shows_reference = "reference" in placeholders and x.reference
        shows_contexts = {"context", "contexts"} & set(placeholders)
        sources: dict[str, list[tuple[str, str]]] = {
            "answer": [("answer", x.answer or "")],
            **({"reference": [("reference", x.reference or "")]} if shows_reference else {}),
            **({"context": [(f"context {i + 1}", c) for i, c in enumerate(x.contexts)]} if shows_contexts else {}),
        }
        # A criterion keeps what the answer's words show, for labels to weigh (``criterion_evidence``).
        words = (
            criterion_features(spec.criterion.sees, x.answer or "", x.question or "", x.contexts, x.reference or "")
            if spec.criterion is not None
            else None
        )
        return await self._verdict(
            judge,
            x.question_id,
            x.prompt,
            spec.yes_no,
            required(spec.positive, f"the verdicts of the judge {judge!r}"),
            variant,
            sources=sources,
            criterion_words=words,
            **values,
        )

    async def _explain(self, key: str, d: Decision, said: Said, values: dict[str, str], sources) -> tuple[str, dict]:
        """The shown reason for a decided question and its evidence record (``evidence.explain``);
        none asked where the judging stage asks reasons later, for the answers a reader is shown."""
        if not REASONS_WANTED.get():
            return "", {
                "model_said": said.model_said,
                "shown": "not asked",
                "calls": 0,
                "completion_tokens": 0,
            }
        return await explain(self.prompts[key], self.llm, values, d, said, sources, self.reasons)

    async def _explain_with_words(
        self, key: str, d: Decision, said: Said, values: dict[str, str], sources, words, blend_name: str, note: str
    ) -> tuple[str, dict]:
        """``_explain``'s reason with the word note after it, and the word evidence in the record
        where a blend decided (``said.p_model`` is then the model's own P)."""
        reason, evidence = await self._explain(key, d, said, values, sources)
        if note:
            reason = f"{reason}; {note}" if reason else note
        if words is not None:
            p_model = required(said.p_model, f"the model's own P behind {blend_name}'s blend")
            evidence = {**evidence, "words": _words_record(words, p_model, self.blends[blend_name], note)}
        return reason, evidence

    async def citations(self, x: Inputs) -> Judgement:
        """Each cited sentence of the answer against the passages it cites (``citations_judge.py``)."""
        return await judge_citations(self, x)

    async def refusal(self, qid: str, prompt: str, question: str, answer: str) -> Judgement:
        # The prompt asks "does the answer give the information?": a small model reads "does it
        # decline?" backwards (AUC 0.14 against 0.98 on the hand-labelled refusal cases).
        return await self._verdict(
            "refusal",
            qid,
            prompt,
            ("answered", "refused"),
            "refused",
            sources={"answer": [("answer", answer)]},
            question=question,
            answer=answer,
        )

    async def correctness(self, qid: str, prompt: str, question: str, reference: str, answer: str) -> Judgement:
        return await self._verdict(
            "correctness",
            qid,
            prompt,
            ("correct", "incorrect"),
            "correct",
            variant=correctness_variant(reference),
            sources={"answer": [("answer", answer)], "reference": [("reference", reference)]},
            question=question,
            reference=reference,
            answer=answer,
        )

    async def _statements(
        self,
        judge: str,
        qid: str,
        prompt: str,
        question: str,
        statements: list[str],
        contexts: list[str],
        what: str,
        text: str,
    ) -> Judgement:
        """Each statement asked "supported by the contexts?"; the score is the share supported.
        ``text`` is what the statements come from (the answer or the reference)."""
        if not statements:
            return self._failed(judge, qid, prompt, f"no statements in the {what}")
        context = "\n\n".join(contexts)
        cut, calibrated = self.cutoff(judge), self.calibrated.get(judge, False)
        sources = {"answer": [(what, text)], "context": [(f"context {i + 1}", c) for i, c in enumerate(contexts)]}
        # One at a time, in order: each request then shares the long context prefix with the last
        # one, which the server keeps in its KV cache (a statement's reason request its whole prompt).
        decisions: list[Decision] = []
        explained: list[tuple[float, str, dict, str | None]] = []
        for s in statements:
            values = {"context": context, "question": question, "statement": s}
            d = await self.prompts["supported"].ask_with(self.llm, values)
            decisions.append(d)
            p_yes = d.p("yes")
            if d.error or p_yes is None:
                continue
            p, words = self.supported_p(judge, p_yes, s, contexts)
            ok = p >= cut
            said = Said(
                d.text_label,
                p,
                "supported",
                cut,
                calibrated,
                "supported" if ok else "not supported",
                "yes" if ok else "no",
                p_model=p_yes if words is not None else None,
            )
            note = word_note(words, negative=not ok)
            reason, evidence = await self._explain_with_words("supported", d, said, values, sources, words, judge, note)
            explained.append((p, reason, evidence, said.model_said))
        bad = [d.error or "no yes/no" for d in decisions if d.error or d.p("yes") is None]
        if bad:
            return self._failed(judge, qid, prompt, f"{len(bad)} of {len(decisions)} statements not judged: {bad[0]}")
        ps = [p for p, _, _, _ in explained]
        supported = [p >= cut for p in ps]
        rows = [
            {
                "statement": s,
                "p_supported": round(p, 6),
                "supported": ok,
                "reason": reason,
                "model_said": model_said,
                "evidence": evidence,
            }
            for s, ok, (p, reason, evidence, model_said) in zip(statements, supported, explained)
        ]
        missing = [
            f"{s}" + (f" ({reason})" if reason else "")
            for s, ok, (_, reason, _, _) in zip(statements, supported, explained)
            if not ok
        ]
        verb = "supported by" if what == "answer" else "found in"
        reason = f"{sum(supported)} of {len(rows)} {what} statements are {verb} the contexts" + (
            f"; not: {'; '.join(missing)}" if missing else ""
        )
        return self._record(
            judge,
            qid,
            prompt,
            status="judged",
            score=sum(supported) / len(rows),
            reason=reason,
            probability=round(min(ps), 6),
            cutoff=cut,
            method="logprobs" if all(d.method == "logprobs" for d in decisions) else "text",
            details={
                "statements": rows,
                "calibrated": calibrated,
                "model_said": [model_said for _, _, _, model_said in explained],
            },
        )

    async def faithfulness(self, qid: str, prompt: str, question: str, answer: str, contexts: list[str]) -> Judgement:
        return await self._statements(
            "faithfulness_yesno",
            qid,
            prompt,
            question,
            # A lead-in ("..., follow these steps:") states nothing: judged, it read as unsupported (user
            # trial 4 F13: a faithful answer called unfaithful on "need", "follow", "steps").
            [c for s in split_statements(answer, claims_only=True) if (c := without_markers(s))],
            contexts,
            "answer",
            answer,
        )

    async def context_recall(
        self, qid: str, prompt: str, question: str, reference: str, contexts: list[str]
    ) -> Judgement:
        return await self._statements(
            "context_recall_yesno", qid, prompt, question, split_statements(reference), contexts, "reference", reference
        )

    async def context_precision(
        self, qid: str, prompt: str, question: str, reference: str, contexts: list[str]
    ) -> Judgement:
        judge = "context_precision_yesno"
        decisions = await asyncio.gather(
            *(self.prompts["useful"].ask(self.llm, question=question, reference=reference, context=c) for c in contexts)
        )
        bad = [d.error or "no yes/no" for d in decisions if d.error or d.p("yes") is None]
        if bad or not decisions:
            return self._failed(judge, qid, prompt, bad[0] if bad else "no contexts")
        cut, calibrated = self.cutoff(judge), self.calibrated.get(judge, False)
        ps = [p for d in decisions if (p := d.p("yes")) is not None]  # every one: none is in ``bad``
        useful = [p >= cut for p in ps]

        async def explain_one(i: int) -> tuple[str, dict, str | None]:
            d, u = decisions[i], useful[i]
            verdict = "useful" if u else "not useful"
            said = Said(d.text_label, ps[i], "useful", cut, calibrated, verdict, "yes" if u else "no")
            values = {"question": question, "reference": reference, "context": contexts[i]}
            sources = {"context": [(f"context {i + 1}", contexts[i])]}
            reason, evidence = await self._explain("useful", d, said, values, sources)
            return reason, evidence, said.model_said

        explained = await asyncio.gather(*(explain_one(i) for i in range(len(contexts))))
        reason = "; ".join(
            f"context {i + 1}: {'useful' if u else 'not useful'} ({r})"
            for i, (u, (r, _, _)) in enumerate(zip(useful, explained))
        )
        return self._record(
            judge,
            qid,
            prompt,
            status="judged",
            score=average_precision(useful),
            reason=reason,
            cutoff=cut,
            method="logprobs" if all(d.method == "logprobs" for d in decisions) else "text",
            details={
                "p_useful": [round(p, 6) for p in ps],
                "calibrated": calibrated,
                "model_said": [model_said for _, _, model_said in explained],
                "contexts": [e for _, e, _ in explained],
            },
        )


def _word_evidence(variant: str, values: dict[str, str], sources: dict) -> Evidence | None:
    """The word evidence a blend reads for one yes/no question: for the refusal judge, how the answer
    declines or takes a side; with a reference, the reference's words in the answer; else the
    answer's words in the contexts."""
    answer = values.get("answer") or values.get("statement")
    if answer is None:
        return None
    if variant == "refusal":
        return declining(values.get("question", ""), answer)
    if values.get("reference"):
        return coverage(values["reference"], answer)
    contexts = [text for _, text in sources.get("context", [])]
    return support(answer, contexts) if contexts else None


MAX_NOTE_WORDS = 6


def _quoted(words: tuple[str, ...]) -> str:
    shown = ", ".join(f'"{w}"' for w in words[:MAX_NOTE_WORDS])
    more = f" and {len(words) - MAX_NOTE_WORDS} more" if len(words) > MAX_NOTE_WORDS else ""
    return shown + more


def word_note(words: Evidence | None, *, negative: bool) -> str:
    """The words a decision rests on, in plain words (each one checkable in its source): for a
    negative decision the reference's names or words the answer lacks, or the claim's words no
    context contains; for a supported claim whose every content word some context has, that; for
    the refusal judge, either way, what the answer says that takes a side or
    only speaks of the documents. Only evidence for the decided side is named."""
    if isinstance(words, Declining):
        return _declining_note(words, answered=negative)
    if isinstance(words, Support) and not negative and words.n_words and not words.missing and words.name_share == 1.0:
        return "every content word of the claim is in the contexts"
    if words is None or not negative:
        return ""
    shown = _quoted(words.missing)
    if isinstance(words, Coverage):
        parts = []
        if words.conflict:
            pr, pa = words.polarity
            parts.append(f'the reference says "{(pr or "").capitalize()}", the answer "{(pa or "").capitalize()}"')
        if shown:
            parts.append(f"the answer lacks the reference's {shown}")
        return "; ".join(parts)
    return f"no context contains {shown}" if shown else ""


def _declining_note(words: Declining, *, answered: bool) -> str:
    parts = []
    if answered:
        if words.polar:
            parts.append(f'the answer opens with "{words.polar.capitalize()}"')
        if words.new_words:
            parts.append(f"it states {_quoted(words.new_words)} beyond the question")
    else:
        if words.source_words and not words.polar:
            parts.append(f"the answer speaks of the material given ({_quoted(words.source_words)})")
        if not words.new_words:
            parts.append("it says nothing the question did not")
    return "; ".join(parts)


class WordEvidence(Model):
    """The word evidence a blend decided with (``_words_record``, a decision's ``evidence.words``):
    the model's own P and the features; the words listed and the note are kept as written."""

    p_model: Num
    features: dict[str, Num]


class EvidenceWords(Model):
    """What a decision's ``evidence`` record says of its word evidence (none where no blend decided)."""

    words: WordEvidence | None = None


def word_evidence(evidence: dict | None) -> WordEvidence | None:
    """The word evidence of a decision's ``evidence`` record, read back from a judgement."""
    return EvidenceWords.model_validate(evidence or {}).words


def _words_record(words: Evidence, p_model: float, blend: Blend, note: str) -> dict:
    # The words each feature counts, where a reader can check them: what the answer (or the claim's
    # contexts) lacks, or for refusal what the answer says about its sources and beyond the question.
    if isinstance(words, Declining):
        listed = {"polar": words.polar, "source_words": list(words.source_words), "new_words": list(words.new_words)}
    else:
        listed = {"missing": list(words.missing)}
    return {
        "p_model": round(p_model, 6),
        "features": words.features(),
        **listed,
        "blend": blend.describe(),
        "note": note,
    }


def _value(x: Inputs, placeholder: str) -> str:
    if placeholder in ("context", "contexts"):
        return "\n\n".join(x.contexts)
    return getattr(x, placeholder, None) or ""


def average_precision(useful: list[bool]) -> float:
    """Mean of precision@i over the ranks i of the useful contexts (0 when none is useful)."""
    hits, total = 0, 0.0
    for i, u in enumerate(useful, start=1):
        if u:
            hits += 1
            total += hits / i
    return total / hits if hits else 0.0
