"""Reasons that are evidence for the decided verdict, with their quotes checked verbatim.

An own judge decides from the first token's probability and the cut-off (``yesno.py``); the
words the model wrote after its label argue for *its* word, which a calibrated cut-off may
overturn, and a small model often copies them from the prompt's examples. Here the shown reason
is made for the decision: a second request repeats the judge's prompt with the decided label word
forced as the start of the reply and the lead-in of a quote (``Yes: the answer says "``), so the
model can only complete the quote; each quote is checked against the answer, the contexts or the
reference after whitespace normalisation, as test-set evidence is (``data.testset.normalise``),
else with the source's markup (code fences, backticks, stars) left out, as a model quoting it drops
it, and ' for " (a quote asked inside double quotes cannot hold one).
The verdict request is unchanged, so its probability, the calibration and its cut-offs stay valid;
the second request repeats its prompt, which llama-server keeps in its KV cache, and is cached on
disk like every request (same request, same reply on a rerun).

Where no quote is verified and the decision is the model's own word, the model's reason is kept;
where the decision overturns the model's word, the reason says so in plain words. A reason or
quote that repeats the prompt's own text (its instructions or examples) and is not in the inputs
is marked ``copies_prompt`` and never shown; a quote of one plain word ("Fixed", "None") is found
in nearly any text, so it is kept in the record as ``too_short`` and neither shown nor counted as
verified evidence.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from rag_eval.base_records import required
from rag_eval.data.testset import normalise
from rag_eval.retrievers.answer_match import loose

QUOTE_TOKENS = 40  # a quote is a phrase or a sentence: the request stops at its closing quote
MIN_QUOTE_CHARS = 3
EXCERPT_CHARS = 80  # characters of the source kept on each side of a verified quote
COPY_SHARE = 0.6  # a reason is a copy when this share of its word triples is the prompt's own text
WORD = {"yes": "Yes", "no": "No"}
REASONS = ("quote", "model")  # judges.reasons: a forced quote (one more request), or the model's reason only


@dataclass(frozen=True)
class Lead:
    """The words before one quote of a forced reason (``but the reference says``), and the inputs
    the quote is asked from (it is checked against every input, and shown as from where it is)."""

    noun: str  # "the answer", "the context", ...
    verb: str  # "says", "is about"
    sources: tuple[str, ...]  # of: answer, context, reference (the roles of ``explain``'s sources)
    joiner: str = ""  # "as ", "but ": how it follows the quote before it

    @property
    def text(self) -> str:
        return f"{self.joiner}{self.noun} {self.verb}"

    def shown(self, found_in: str | None) -> str:
        """The lead-in as shown, naming the source the quote was found in."""
        place = {"answer": "the answer", "reference": "the reference"}.get(found_in or "", found_in)
        return f"{self.joiner}{place or self.noun} {self.verb}"


_ANSWER = Lead("the answer", "says", ("answer",))
_CORRECTNESS: dict[str, tuple[Lead, ...]] = {
    "yes": (_ANSWER, Lead("the reference", "says", ("reference",), "as ")),
    "no": (_ANSWER, Lead("the reference", "says", ("reference",), "but ")),
}
# Per prompt and decided word: the quotes a reason for that decision is made of.
LEADS: dict[str, dict[str, tuple[Lead, ...]]] = {
    "refusal": {"yes": (_ANSWER,), "no": (_ANSWER,)},
    "correctness": _CORRECTNESS,
    "correctness_short": _CORRECTNESS,
    "supported": {
        "yes": (Lead("the context", "says", ("context",)),),
        # The claim the context lacks, then what the context says instead (if it says anything).
        "no": (_ANSWER, Lead("the context", "says", ("context",), "but ")),
    },
    # The citations judge (``citations_judge.py``): the cited passages, as numbered for it.
    "citation_supported": {
        "yes": (Lead("the cited passage", "says", ("context",)),),
        "no": (Lead("the sentence", "says", ("answer",)), Lead("the cited passage", "says", ("context",), "but ")),
    },
    "useful": {
        "yes": (Lead("the passage", "says", ("context",)),),
        "no": (Lead("the passage", "is about", ("context",)),),
    },
    # A user's yes/no criterion (``judges/criteria.py``): the answer's words either way; a quote found
    # in a context or the reference it sees is still verified, and shown as from there.
    "criterion": {"yes": (_ANSWER,), "no": (_ANSWER,)},
}


@dataclass
class Quote:
    """One quote of a reason: where it was found (``answer``, ``context 2``, ``reference``), whether
    it was, and a stretch of the source around it (``span``: the quote's place in ``excerpt``)."""

    text: str
    found_in: str | None
    verified: bool
    copies_prompt: bool = False
    too_short: bool = False  # found, but one plain word: not evidence of anything
    excerpt: str | None = None
    span: tuple[int, int] | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def fixed_text(template: str) -> str:
    """The prompt's own words: the template with its placeholders taken out."""
    return re.sub(r"\{[a-z_]+\}", "\n", template)


def _grams(words: list[str]) -> list[tuple[str, ...]]:
    return [tuple(words[i : i + 3]) for i in range(len(words) - 2)]


def copies_prompt(reason: str, template: str, inputs: list[str]) -> bool:
    """Whether a reason repeats the prompt's own text (its instructions or examples) rather than
    the inputs: all of it within the prompt, or most of its word triples from the prompt and not
    from the inputs (the answer, contexts, reference and question)."""
    words = loose(reason).split()
    if len(words) < 2:
        return False
    text, fixed = " ".join(words), loose(fixed_text(template))
    seen = [loose(s) for s in inputs]
    if any(f" {text} " in f" {s} " for s in seen):
        return False
    if f" {text} " in f" {fixed} ":
        return True
    grams = _grams(words)
    if len(grams) < 2:
        return False
    from_prompt = set(_grams(fixed.split()))
    from_inputs = {g for s in seen for g in _grams(s.split())}
    return sum(g in from_prompt and g not in from_inputs for g in grams) / len(grams) >= COPY_SHARE


def substantive(quote: str) -> bool:
    """Whether a quote says something: two words or more, or one word that is not a plain short
    one: with a digit or code character (``1889``, ``override=True``, ``__len__``), a name's inner
    capital (``getLogger``, ``TinyTag``), an acronym (``BOM``), or eight letters or more. "Fixed",
    "None", "value" are found in nearly any text."""
    words = quote.split()
    if len(words) != 1:
        return len(words) >= 2
    w = words[0].strip(".,;:!?\"'()[]")
    plain = w.isalpha() and (w.islower() or w.istitle()) and len(w) < 8
    return bool(w) and not plain


# Markdown and reST markup a model drops when it quotes the text it reads. "`tabulate` is smart
# about ..." is quoted "tabulate is smart about ...", and "run:\n\n```shell\npip install tabulate"
# as "run: pip install tabulate". Only markup counts: a fence line (its backticks and language), a
# backtick run not inside a word, and the stars of an emphasis pair; "2*3", "10**6" and
# "f(**kwargs)" keep their stars.
_FENCE = re.compile(r"(?m)^[ \t]*(?:`{3,}|~{3,})[\w+-]*[ \t]*$")
_BACKTICKS = re.compile(r"(?<![A-Za-z0-9])`+|`+(?![A-Za-z0-9])")
_EMPHASIS = re.compile(r"(?<![\w*])(\*{1,3})(?=[^\s*])[^\n]*?(?<=[^\s*])\1(?![\w*])")
# A quote asked inside double quotes cannot hold one, so the model writes 'plain' for "plain":
# quotation marks count as one character.
_QUOTE_MARKS = frozenset("\"'\u2018\u2019\u201c\u201d")


def markup_positions(text: str) -> set[int]:
    """The indices of ``text``'s markup characters (fence lines, code-span backticks, emphasis stars)."""
    dropped: set[int] = set()
    for m in _FENCE.finditer(text):
        dropped.update(range(m.start(), m.end()))
    for m in _BACKTICKS.finditer(text):
        dropped.update(range(m.start(), m.end()))
    for m in _EMPHASIS.finditer(text):
        n = len(m.group(1))
        dropped.update(range(m.start(), m.start() + n))
        dropped.update(range(m.end() - n, m.end()))
    return dropped


def _strip(text: str) -> tuple[str, list[int], set[int]]:
    """:func:`without_markup` with the markup's indices."""
    dropped = markup_positions(text)
    out: list[str] = []
    where: list[int] = []
    for i, raw in enumerate(text):
        if i in dropped:
            continue
        ch = '"' if raw in _QUOTE_MARKS else raw
        if ch.isspace():
            if out and out[-1] != " ":
                out.append(" ")
                where.append(i)
        else:
            out.append(ch)
            where.append(i)
    if out and out[-1] == " ":
        out.pop()
        where.pop()
    return "".join(out), where, dropped


def without_markup(text: str) -> tuple[str, list[int]]:
    """``text`` without its markup, whitespace collapsed to single spaces, every quotation mark as
    ``"``, and for each character kept its index in ``text`` (so that a match maps back to the
    source's own span)."""
    plain, where, _ = _strip(text)
    return plain, where


def _found(attempt: str, name: str, s: str, at: int, end: int, *, ok: bool) -> Quote:
    """A quote found at ``s[at:end]`` (``s`` whitespace-normalised), with the stretch around it;
    ``ok``: whether it says something (see :func:`substantive`)."""
    lo, hi = max(0, at - EXCERPT_CHARS), min(len(s), end + EXCERPT_CHARS)
    head, tail = ("…" if lo > 0 else ""), ("…" if hi < len(s) else "")
    start = at - lo + len(head)
    return Quote(attempt, name, ok, too_short=not ok, excerpt=head + s[lo:hi] + tail, span=(start, start + end - at))


def _markup_free_match(bare: str, source: str, stripped=None) -> tuple[str, int, int] | None:
    """Where ``bare`` (a quote without markup) lies in ``source`` once its markup is left out: the
    whitespace-normalised source and the quote's span there, taking the markup at its ends.
    ``stripped``: ``_strip(source)``, where the caller has it already."""
    plain, where, dropped = stripped or _strip(source)
    at = plain.find(bare)
    if at < 0:
        return None
    start, end = where[at], where[at + len(bare) - 1] + 1
    while start > 0 and start - 1 in dropped and source[start - 1] in "`*":
        start -= 1
    while end < len(source) and end in dropped and source[end] in "`*":
        end += 1
    # Map the raw span onto the whitespace-normalised source that excerpts are cut from.
    s = normalise(source)
    lead = len(source) - len(source.lstrip())
    a = len(normalise(source[lead:start]))
    a += 1 if a and source[start - 1].isspace() else 0
    return s, a, a + len(normalise(source[start:end]))


def check_quote(text: str, candidates: list[tuple[str, str]], template: str) -> Quote:
    """A quote checked against the sources it may come from (``(name, text)`` pairs), verbatim after
    whitespace normalisation, else with markup (fence lines, code-span backticks, emphasis stars)
    left out of both and quotation marks alike; one found only in the prompt's own text is marked
    as a copy."""
    q = normalise(text)
    attempts = [a for a in dict.fromkeys((q, q.rstrip(".,;:!?"))) if len(a) >= MIN_QUOTE_CHARS]
    for attempt in attempts:
        for name, source in candidates:
            s = normalise(source)
            at = s.find(attempt)
            if at >= 0:
                return _found(attempt, name, s, at, at + len(attempt), ok=substantive(attempt))
    stripped = [_strip(source) for _, source in candidates] if attempts else []
    for attempt in attempts:
        bare, _ = without_markup(attempt)
        if len(bare) < MIN_QUOTE_CHARS:
            continue
        for (name, source), st in zip(candidates, stripped, strict=True):
            found = _markup_free_match(bare, source, st)
            if found:
                # Judged on the words without their markup: "`None`" is the plain word None.
                return _found(attempt, name, *found, ok=substantive(bare))
    copied = len(q) >= MIN_QUOTE_CHARS and q.rstrip(".,;:!?") in normalise(fixed_text(template))
    return Quote(q, None, False, copies_prompt=copied)


_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|`([^`]+)`|'([^']{3,})'")


def quoted_spans(reason: str) -> list[str]:
    """The quoted parts of a free-text reason ("...", “...”, `...`, '...')."""
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(reason or "")]


def _candidates(sources: dict[str, list[tuple[str, str]]], roles: tuple[str, ...]) -> list[tuple[str, str]]:
    """The sources of ``roles`` first, then every other one (a small model may quote the reference
    where asked for the answer: the quote is still evidence, shown as from where it is)."""
    first = [pair for role in roles for pair in sources.get(role, [])]
    return first + [pair for pairs in sources.values() for pair in pairs if pair not in first]


@dataclass(frozen=True)
class Said:
    """What decided a yes/no question, for the plain-words note: the model's word, P(positive),
    the positive verdict, the cut-off, whether it is calibrated, and the decided verdict."""

    word: str | None  # "yes", "no" or None (no label word in the reply)
    p: float
    positive: str
    cutoff: float
    calibrated: bool
    verdict: str
    decided: str  # the decided label word, "yes" or "no"
    p_model: float | None = None  # the model's own P(positive), where a blend with word evidence decided

    @property
    def model_said(self) -> str | None:
        """The model's own word as a reader sees it ("Yes", "No"), None where it wrote neither."""
        return WORD.get(self.word or "")

    @property
    def overturned(self) -> bool:
        return self.word is not None and self.word != self.decided

    def plain(self) -> str:
        cut = f"the calibrated cut-off {self.cutoff:.2f}" if self.calibrated else f"the cut-off {self.cutoff:.2f}"
        if self.p_model is not None:
            p = f"P({self.positive}) = {self.p_model:.2f} from the model, {self.p:.2f} with the word evidence"
        else:
            p = f"P({self.positive}) = {self.p:.2f}"
        word = WORD[required(self.word, "the model's label word (only an overturned word is explained)")]
        # How close the call was: a reader sees a verdict against the model's own word, and a P a hair
        # from the cut-off is a different matter from one far across it.
        gap = abs(self.p - self.cutoff)
        side = "under" if self.p < self.cutoff else "above"
        how = "less than 0.01" if gap < 0.005 else f"{gap:.2f}"
        # "0.04 under it" (not "P 0.04 under it", which read as P = 0.04: user trial 4 F15).
        return f'the model wrote "{word}" ({p}); {cut} decided {self.verdict}, {how} {side} it'


def _role(found_in: str | None) -> str | None:
    """The input a quote was found in, without its number ("context 2" -> "context")."""
    return found_in.split()[0] if found_in else None


async def forced_quotes(prompt, llm, values: dict[str, str], decided: str, leads: tuple[Lead, ...], sources):
    """The reason for ``decided`` asked of the model with the label word and each quote's lead-in
    forced as the start of its reply, one short request per quote: (quotes, shown text, requests,
    completion tokens, error)."""
    user = {"role": "user", "content": prompt.render(**values)}
    reply = f"{WORD[decided]}:"
    shown: list[str] = []
    quotes: list[Quote] = []
    calls = tokens = 0
    for lead in leads:
        reply += f' {lead.text} "'
        result = await llm.chat([user, {"role": "assistant", "content": reply}], max_tokens=QUOTE_TOKENS, stop=['"'])
        calls += 1
        if result.error:
            return quotes, shown, calls, tokens, result.error
        tokens += result.completion_tokens
        text = result.text or ""
        # An endpoint that repeats the forced start in its reply, or opens a new reply of its own.
        text = text[len(reply) :] if text.startswith(reply) else text
        text = text.split('"')[0].strip()
        q = check_quote(text, _candidates(sources, lead.sources), prompt.template)
        quotes.append(q)
        # A small model asked for the answer's words then the reference's may quote one input twice
        # (the same passage, or two passages of it): "the answer says ..., but the answer says ..."
        # contrasts nothing, so a second quote of the same input is kept in the record, not shown.
        repeat = any(
            p.text == q.text or (q.verified and p.verified and _role(p.found_in) == _role(q.found_in))
            for p in quotes[:-1]
        )
        # The prompt's own example, one plain word, or words no input holds (a quote the model made
        # up would stand as what the passage says) are no evidence: recorded, never shown.
        if not repeat and not q.copies_prompt and not q.too_short and q.verified:
            shown.append(f'{lead.shown(q.found_in)} "{q.text}"')
        reply += f'{text}",'
    return quotes, shown, calls, tokens, None


async def explain(prompt, llm, values: dict[str, str], decision, said: Said, sources, mode: str = "quote"):
    """(the shown reason, the evidence record) for one decided yes/no question.

    ``decision`` is the verdict request's :class:`~rag_eval.judges.yesno.Decision`; ``sources`` maps
    a role (answer, context, reference) to the ``(name, text)`` pairs a quote may come from."""
    inputs = [str(v) for v in values.values()]
    model_reason = decision.reason or ""
    copied = copies_prompt(model_reason, prompt.template, inputs)
    everything = [pair for pairs in sources.values() for pair in pairs]
    own = [check_quote(s, everything, prompt.template) for s in quoted_spans(model_reason)]
    record = {
        "model_said": said.model_said,
        "model_reason": model_reason,
        "model_reason_copies_prompt": copied,
        "calls": 0,
        "completion_tokens": 0,
    }
    shown_from, quotes, error = None, own, None
    leads = LEADS.get(prompt.name, {}).get(said.decided) or ()
    # A decision that the contexts support a claim stands on a quote of a context: "the passage
    # states ..." quoting the sentence under judgement is circular (user trial 4 F7).
    wanted = {role for lead in leads for role in lead.sources}
    wanted = set() if "answer" in wanted else wanted
    role_of = {name: role for role, pairs in sources.items() for name, _ in pairs}
    if wanted:
        # A quote found in the answer first may be in a context too (an extractive answer copies it):
        # looked for there, it is the evidence it is (review 55 M2).
        in_wanted = [pair for role in sorted(wanted) for pair in sources.get(role, [])]
        own = [
            again
            if q.verified
            and role_of.get(q.found_in or "") not in wanted
            and (again := check_quote(q.text, in_wanted, prompt.template)).verified
            else q
            for q in own
        ]
        quotes = own
    evidence_quotes = [q for q in own if q.verified and (not wanted or role_of.get(q.found_in or "") in wanted)]
    gives_context = "context" in sources and bool(re.search(r"\b(?:context|passage)s?\b", model_reason, re.I))
    if gives_context:
        # "the context gives "<a sentence of the answer>"": a quote found only in the answer, which the
        # model's reason gives as the context's, is not shown as what the context says (trial 5 F8).
        evidence_quotes = [q for q in evidence_quotes if role_of.get(q.found_in or "") != "answer"]
    if not said.overturned and not copied and evidence_quotes:
        shown_from, reason = "model", model_reason
    elif mode == "quote" and leads:
        quotes, shown, calls, tokens, error = await forced_quotes(prompt, llm, values, said.decided, leads, sources)
        record.update(calls=calls, completion_tokens=tokens)
        if any(q.verified for q in quotes):
            shown_from = "forced"
            reason = ", ".join(shown) + (f"; {said.plain()}" if said.overturned else "")
    if shown_from is None:
        # No verified quote: the model's own words where they argue for the decision and are not
        # the prompt's, else the plain account of the decision.
        if said.overturned:
            shown_from, reason = "plain", said.plain()
        elif copied or not model_reason:
            shown_from = "none"
            reason = "no quote: the model's own reason repeats its prompt" if copied else "no reason given"
            if said.model_said is not None:
                # At least what decided it (user trial 4 F15: a decided failure shown with no reason).
                reason += f'; the model wrote "{said.model_said}" (P({said.positive}) = {said.p:.2f})'
        elif (elsewhere := next((q for q in own if q.verified and q not in evidence_quotes), None)) is not None:
            shown_from = "none"
            place = {"answer": "the answer", "reference": "the reference"}.get(elsewhere.found_in or "")
            reason = (
                f"no quote of {'the context' if gives_context or not leads else leads[0].noun}: the model's reason quotes "
                f"{place or elsewhere.found_in} itself"
            )
        else:
            shown_from, reason = "model", model_reason
    return reason, {
        **record,
        "shown": shown_from,
        "quotes": [q.to_dict() for q in quotes],
        "verified": any(q.verified for q in quotes),
        **({"error": error} if error else {}),
    }
