"""The citations judge: each cited sentence of an answer checked against the passages it cites.

The answer is read with :func:`~rag_eval.judges.citations.read_citations` (the sentences as the
faithfulness judge splits them, each with the contexts it cites). Per sentence with a factual
claim (a sentence that only says the documents do not answer, a question or a lead-in makes none
and is not counted):

- **citation recall**: one yes/no question, scored by probability as ``faithfulness_yesno``'s
  (``prompts/judges/citation_supported.md``), shown only the cited passages, numbered as the
  answer numbered them: is the sentence supported by the union of its citations? A claim without a
  citation, or whose citations name no given context, is not supported by its citations.
- **citation precision** (ALCE's rule, Gao et al. 2023): a citation is irrelevant when it alone does
  not support the sentence *and* the sentence's other citations still support it without it. Only a
  supported sentence with more than one citation asks more (each citation alone, then the rest
  where one alone does not support it); a single citation is relevant exactly when the sentence's
  recall decision is yes; the citations of an unsupported sentence are none of them relevant; a
  citation that names no given context is never relevant.
- **where the support is**: a claim whose citations do not support it (or that has none) is asked
  once more against every given passage, which tells ``miscited`` (another passage supports it) and
  ``uncited`` (no citation, a passage supports it) from ``unsupported`` (no given passage does: the
  faithfulness failure).

Each sentence gets one kind, in this precedence: ``unsupported``, else ``miscited``, else
``uncited``, else ``supported``; the answer's verdict is its worst sentence's kind (``cited`` when
every claim is supported by its citations). A decision whose probability lies in the band around
the cut-off is uncertain: the sentence is counted apart (in neither figure), and an answer that
would be ``cited`` with an uncertain sentence is ``uncertain``; an answer already failing stays
failed, one wrong sentence being enough. The answer's score is its citation recall; its details
hold the precision, each sentence and each citation's decision, and reasons whose quotes are
checked against the cited passages as every judge's are (``evidence.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval.base_records import Model
from rag_eval.calibration.cutoffs import EVERY_PASSAGE
from rag_eval.calibration.lexical import CitedSupport, cited_support
from rag_eval.judges.citations import CitedAnswer, CitedSentence, read_citations
from rag_eval.judges.evidence import Said
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.registry import Inputs
from rag_eval.judges.uncertain import within_noise
from rag_eval.judges.yesno import Decision
from rag_eval.types import Chunk

JUDGE = "citations"
PROMPT = "citation_supported"  # the prompt's key among the loaded judge prompts
# Until labels calibrate it, a decision whose P(yes) lies in [low, high) is uncertain
# (``judges.uncertain: {citations: [low, high]}`` sets another; ``off`` none).
DEFAULT_BAND = (0.3, 0.7)
KINDS = ("supported", "miscited", "uncited", "unsupported")  # a claim's kinds, from good to worst
# The answer's verdict: its worst claim's kind, "supported" read as "cited".
VERDICTS = ("cited", "miscited", "uncited", "unsupported")
_WORST = {"supported": 0, "uncited": 1, "miscited": 2, "unsupported": 3}

# Sentences that make no factual claim: they say the material does not answer, ask, or lead in. The
# material must be what the negation bears on ("the documents do not say ..."): "the context manager
# does not close the file" and "text with no markup" are claims (user trial 5 F3).
_DOCS = r"(?:documents?|documentation|context|contexts|passages?|sources?|docs|information|text|excerpts?)"
_REPORT = (
    r"(?:say|says|mention|mentions|contain|contains|provide|provides|specify|specifies|cover|covers|address|"
    r"addresses|include|includes|answer|answers|explain|explains|state|states|discuss|discusses|describe|"
    r"describes|give|gives|list|lists|tell|tells|show|shows|offer|offers)"
)
_NO_ANSWER = re.compile(
    rf"\b{_DOCS}\s+(?:(?:provided|given|above|here|retrieved)\s+)?(?:do(?:es)?\s*n[o']t|did\s*n[o']t|never)\s+"
    rf"(?:\w+\s+)?{_REPORT}\b"
    rf"|\bno\s+(?:information|mention|details?|data)\b[^.]*\b{_DOCS}\b"
    rf"|\bnot\s+(?:mentioned|specified|covered|stated|provided|described|given|found|included|listed|explained)\s+"
    rf"in\s+(?:the\s+)?(?:(?:provided|given|retrieved)\s+)?{_DOCS}\b"
    r"|\bI (?:do not|don't|cannot|can't) (?:know|answer|tell|find)\b|\bcannot (?:be )?(?:answer|determine)",
    re.I,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z_'-]*|\d+")


def makes_claim(text: str) -> bool:
    """Whether a sentence states something a passage could support: not a question, not a lead-in
    ("For example:"), not a sentence that only says the material does not answer, and of three
    words or more."""
    t = text.strip()
    if t.startswith(("```", "~~~")):
        return False  # a code example with no sentence before it illustrates, it claims nothing (trial 5 F11)
    if len(_WORD.findall(t)) < 3 or t.endswith("?") or t.endswith(":"):
        return False
    return not _NO_ANSWER.search(t)


@dataclass(frozen=True)
class Asked:
    """One yes/no decision of the judge: P(yes) (None where the reply gave none), the decision (None
    where it is uncertain or failed), the shown reason and its evidence record."""

    p: float | None
    yes: bool | None
    reason: str
    evidence: dict
    error: str | None = None
    p_model: float | None = None  # the model's own P(yes), where a blend with word evidence decided


class CitationCheck(Model):
    """One citation of a sentence: as written, the contexts it names (positions from 0), and whether
    it is needed (ALCE's rule), with the P(yes) of it alone and of the rest without it where asked."""

    marker: str
    ref: str
    contexts: list[int] = []
    relevant: bool | None = None
    p_alone: float | None = None
    p_without: float | None = None


class SentenceCheck(Model):
    """One sentence of an answer as the citations judge decided it (``kind``: supported, miscited,
    uncited, unsupported, uncertain or no_claim)."""

    sentence: str
    display: str
    claim: bool
    cited: list[int] = []
    citations: list[CitationCheck] = []
    kind: str = ""
    p_supported: float | None = None  # by the union of its cited passages
    p_model: float | None = None  # the model's own P of that, where a blend with word evidence decided
    supported: bool | None = None
    p_elsewhere: float | None = None  # by every given passage, where its citations do not support it
    supported_elsewhere: bool | None = None
    reason: str = ""
    evidence: dict = {}
    error: str | None = None

    @property
    def relevant(self) -> list[bool]:
        """Each citation's relevance, for a decided claim."""
        return [bool(c.relevant) for c in self.citations if c.relevant is not None]


def numbered(passages: dict[int, str]) -> str:
    """Passages as the answer numbered them (positions from 0 shown from 1)."""
    return "\n\n".join(f"[{i + 1}] {text}" for i, text in sorted(passages.items()))


class CitationsJudge:
    """The judge on one answer, bound to the scored judges (prompt, cut-off, model, reasons)."""

    def __init__(self, scored, x: Inputs, band: tuple[float, float] | None):
        self.scored, self.x, self.band = scored, x, band
        self.cut = scored.cutoff(JUDGE)
        self.calibrated = scored.calibrated.get(JUDGE, False)
        self.calls = 0
        self._asked: dict[tuple[str, frozenset[int]], Asked] = {}

    def unsure(self, p: float, scale: float = 1.0) -> bool:
        """In the band, or (whatever the band, unless ``judges.uncertain: off``) within the server's
        numeric noise of the cut-off."""
        if self.band is None:
            return False
        return within_noise(p, self.cut, scale) or self.band[0] <= p < self.band[1]

    async def ask(self, sentence: str, positions: frozenset[int], *, explain: bool) -> Asked:
        """Is ``sentence`` supported by the passages at ``positions``? Asked once per set of passages;
        ``explain``: a reason whose quote is checked against those passages (``evidence.py``)."""
        key = (sentence, positions)
        if key in self._asked:
            return self._asked[key]
        passages = {i: self.x.contexts[i] for i in positions if i < len(self.x.contexts)}
        values = {"context": numbered(passages), "question": self.x.question, "statement": sentence}
        d: Decision = await self.scored.prompts[PROMPT].ask_with(self.scored.llm, values)
        self.calls += 1
        p_model = d.p("yes")
        if d.error or p_model is None:
            got = Asked(None, None, "", {}, d.error or "no yes/no in the reply")
        else:
            # A saved blend decides on the model's P and the sentence's words in the cited passages
            # against the other given passages (``lexical.cited_support``); the question against
            # every passage has a blend of its own where one was fitted (the readers' "any passage").
            every = positions >= frozenset(range(len(self.x.contexts)))
            blend = (every and self.scored.blends.get(f"{JUDGE}/{EVERY_PASSAGE}")) or self.scored.blends.get(JUDGE)
            words = cited_support(sentence, list(self.x.contexts), sorted(positions)) if blend else None
            p = blend.p(p_model, words.features()) if blend and words else p_model
            yes = p >= self.cut
            decided = None if self.unsure(p, blend.model if blend and words else 1.0) else yes
            reason, evidence = d.reason, dict[str, Any](model_said=d.text_label)
            if explain:
                said = Said(
                    d.text_label,
                    p,
                    "supported",
                    self.cut,
                    self.calibrated,
                    "supported" if yes else "not supported",
                    "yes" if yes else "no",
                    p_model if words else None,
                )
                sources = {
                    "answer": [("the sentence", sentence)],
                    "context": [(f"passage [{i + 1}]", t) for i, t in sorted(passages.items())],
                }
                reason, evidence = await self.scored._explain(PROMPT, d, said, values, sources)
            if blend and words:
                evidence = {**evidence, "words": words_record(words, p_model, blend.describe())}
                note = word_note(words, supported=yes) if explain else ""
                reason = f"{reason}; {note}" if reason and note else reason or note
            got = Asked(p, decided, reason, evidence, p_model=p_model if words else None)
        self._asked[key] = got
        return got

    async def sentence(self, s: CitedSentence) -> SentenceCheck:
        """One sentence's record: whether it makes a claim, its citations and each decision, its kind."""
        cited = frozenset(s.cited)
        row = SentenceCheck(
            sentence=s.text,
            display=s.display,
            claim=makes_claim(s.text),
            cited=sorted(cited),
            citations=[CitationCheck(marker=c.marker, ref=c.ref, contexts=c.contexts) for c in s.citations],
        )
        if not row.claim:
            row.kind = "no_claim"
            return row
        everything = frozenset(range(len(self.x.contexts)))
        recall: Asked | None = None
        if cited:
            recall = await self.ask(s.text, cited, explain=True)
            row.p_supported, row.p_model, row.supported, row.reason, row.evidence = (
                recall.p,
                recall.p_model,
                recall.yes,
                recall.reason,
                recall.evidence,
            )
            if recall.error:
                row.error = recall.error
                return row
        else:
            row.supported, row.reason = False, "no citation names a given passage" if s.citations else "no citation"
        if recall is not None and recall.yes is None:
            row.kind = "uncertain"
            return row
        if recall is not None and recall.yes:
            row.kind = "supported"
        else:
            elsewhere = recall if cited == everything and recall is not None else None
            if elsewhere is None:
                elsewhere = await self.ask(s.text, everything, explain=recall is None)
            row.p_elsewhere, row.supported_elsewhere = elsewhere.p, elsewhere.yes
            if elsewhere.error:
                row.error = elsewhere.error
                return row
            if recall is None:
                row.reason, row.evidence = f"{row.reason}; given passages: {elsewhere.reason}", elsewhere.evidence
            if elsewhere.yes is None:
                row.kind = "uncertain"
                return row
            row.kind = "unsupported" if not elsewhere.yes else ("miscited" if cited else "uncited")
        await self.precision(s.text, row, cited, supported=bool(recall is not None and recall.yes))
        return row

    async def precision(self, sentence: str, row: SentenceCheck, cited: frozenset[int], *, supported: bool) -> None:
        """Each citation's relevance by ALCE's rule (one naming no given context is never relevant)."""
        for c in row.citations:
            mine = frozenset(c.contexts)
            if not mine or not supported:
                c.relevant = False
            elif len(cited) == 1 or mine == cited:
                c.relevant = True
            else:
                alone = await self.ask(sentence, mine, explain=False)
                c.p_alone, c.relevant = alone.p, True
                if alone.yes is not True:
                    rest = await self.ask(sentence, cited - mine, explain=False)
                    c.p_without = rest.p
                    # Irrelevant only where it alone does not support and the rest still does.
                    c.relevant = not (alone.yes is False and rest.yes is True)

    async def judge(self, read: CitedAnswer) -> Judgement:
        rows = [await self.sentence(s) for s in read.sentences]
        record = self.scored._record
        x = self.x
        failed = [r for r in rows if r.error]
        if failed:
            return self.scored._failed(
                JUDGE, x.question_id, x.prompt, f"{len(failed)} sentences not judged: {failed[0].error}"
            )
        claims = [r for r in rows if r.claim]
        if not claims:
            return record(JUDGE, x.question_id, x.prompt, status="skipped", reason="no sentence makes a claim")
        decided = [r for r in claims if r.kind != "uncertain"]
        uncertain = [r for r in claims if r.kind == "uncertain"]
        hits = [r for r in decided if r.kind == "supported"]
        relevant = [v for r in decided for v in r.relevant]
        worst = max((r.kind for r in decided), key=lambda k: _WORST[k], default="supported")
        verdict = "cited" if worst == "supported" else worst
        details = {
            "sentences": [r.model_dump(mode="json") for r in rows],
            "claims": len(claims),
            "uncertain_sentences": len(uncertain),
            "citation_recall": len(hits) / len(decided) if decided else None,
            "citation_precision": sum(relevant) / len(relevant) if relevant else None,
            "citations": len(relevant),
            "unresolved": read.unresolved,
            "calls": self.calls,
            "band": list(self.band) if self.band else None,
            "calibrated": self.calibrated,
        }
        ps = [r.p_supported for r in claims if r.p_supported is not None]
        common = {
            "reason": _reason(claims, decided, hits),
            "probability": round(min(ps), 6) if ps else None,
            "cutoff": self.cut,
            "method": "logprobs",
            "details": details,
        }
        if not decided or (verdict == "cited" and uncertain):
            return record(JUDGE, x.question_id, x.prompt, status="uncertain", **common)
        return record(
            JUDGE, x.question_id, x.prompt, status="judged", score=len(hits) / len(decided), verdict=verdict, **common
        )


def _reason(claims: list[SentenceCheck], decided: list[SentenceCheck], hits: list[SentenceCheck]) -> str:
    text = f"{len(hits)} of {len(decided)} claims are supported by the passages they cite"
    if len(decided) < len(claims):
        text += f" ({len(claims) - len(decided)} uncertain)"
    bad = [r for r in decided if r.kind != "supported"]
    if bad:
        text += "; " + "; ".join(f"{r.kind}: {r.display} ({r.reason})" for r in bad)
    return text


def chunks_of(x: Inputs) -> list[Chunk]:
    """The contexts as chunks for reading citations: the run's (ids and titles) where given, else
    numbered only."""
    if len(x.chunks) == len(x.contexts) and x.chunks:
        return [Chunk(c.id, text, c.title) for c, text in zip(x.chunks, x.contexts)]
    return [Chunk(f"context-{i + 1}", text) for i, text in enumerate(x.contexts)]


async def judge_citations(scored, x: Inputs) -> Judgement:
    """The ``citations`` judge on one answer (``scored``: the bound ``ScoredJudges``)."""
    read = read_citations(x.answer or "", chunks_of(x), scored.citation_pattern)
    return await CitationsJudge(scored, x, scored.citation_band).judge(read)


def words_record(words: CitedSupport, p_model: float, blend: str) -> dict:
    """The word evidence a blend decided with, as a decision's ``evidence.words`` keeps it: the
    sentence's words the cited passages lack, and the other passage that holds more of them."""
    return {
        "p_model": round(p_model, 6),
        "features": words.features(),
        "missing": list(words.missing),
        "better_passage": None if words.better_passage is None else words.better_passage + 1,
        "blend": blend,
    }


def word_note(words: CitedSupport, *, supported: bool) -> str:
    """The words a blended decision rests on, for the decided side only, each checkable in the
    passages: the sentence's words its cited passages lack (and the other passage that holds more
    of them), or that every one of its content words is there."""
    if supported:
        return "every content word of the sentence is in the passages" if words.n_words and not words.missing else ""
    lacking = ", ".join(f'"{w}"' for w in words.missing[:5]) + (" ..." if len(words.missing) > 5 else "")
    parts = [f"the passages lack {lacking}"] if lacking else []
    if words.better_passage is not None:
        parts.append(f"passage [{words.better_passage + 1}] holds more of the sentence's words")
    return "; ".join(parts)


def band_from(
    setting, default: Sequence[float] = DEFAULT_BAND, saved: Sequence[float] | None = None
) -> tuple[float, float] | None:
    """The band for the citation decisions under ``judges.uncertain``: off -> none; a mapping that
    names ``citations`` -> that; else the band saved with the calibration (``saved``), else the default."""
    if setting == "off":
        return None
    if isinstance(setting, dict) and JUDGE in setting:
        low, high = setting[JUDGE]
        return float(low), float(high)
    if saved is not None:
        return float(saved[0]), float(saved[1])
    return float(default[0]), float(default[1])
