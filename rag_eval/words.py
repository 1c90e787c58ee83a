"""Words as the lexical checks read them: content words with a light stem, code names, negations,
a yes/no opening; and whether a reference only restates its question. Shared by the judges' word
evidence (``calibration.lexical``), test-set lint and test generation."""

from __future__ import annotations

import re

_STOPWORDS = """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each either else
    etc even every few for from further get gets got had has have having he her here hers him his how
    however i if in into is it its itself just like may me might more most much must my no nor not
    now of off often on once one only or other our ours out over own per rather same she should so
    some such than that the their theirs them then there these they this those through thus to too
    under until up upon us use used uses using very via was way we were what when where whether which
    while who whom whose why will with within without would yes yet you your yours
    don doesn didn isn aren wasn weren won wouldn shouldn couldn hasn haven hadn"""
# The second line: what "don't", "isn't" ... leave of a word once the tokenizer splits at the apostrophe.
STOPWORDS = frozenset(_STOPWORDS.split())
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)*")
_BACKTICK = re.compile(r"`([^`\n]+)`")
# A name a reader would type: dotted (attrs.define), snake_case, camelCase/PascalCase with an
# inner capital, or a call (validate()).
_NAME = re.compile(
    r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|_*[A-Za-z0-9]+_\w*|__\w+__|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*)(?![\w])"
    r"|\b([A-Za-z_]\w*)\("
)
POLAR = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def stem(word: str) -> str:
    """A light stem: lower case without surrounding underscores or a plural, past or -ing ending
    (enough to match "validators" with "validator" and "called" with "call"; not a linguistic stemmer)."""
    w = word.lower().strip("_") or word.lower()
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry content, in order, once each (surface form kept): no
    stopwords, at least three letters, numbers always."""
    seen: dict[str, str] = {}
    for m in _TOKEN.finditer(text or ""):
        w = m.group(0).strip("_") or m.group(0)
        if w[0].isdigit() or (len(w) >= 3 and w.lower() not in STOPWORDS):
            seen.setdefault(stem(w), m.group(0))
    return list(seen.values())


def names(text: str) -> list[str]:
    """The code names of ``text`` (backticked spans, dotted, snake_case, camelCase, calls), by
    their last dotted part, once each."""
    found: dict[str, str] = {}
    for m in _BACKTICK.finditer(text or ""):
        span = m.group(1).strip().rstrip("()")
        if span:
            last = span.split(".")[-1]
            if len(last) >= 3:
                found.setdefault(last.lower(), span)
    for m in _NAME.finditer(text or ""):
        name = m.group(1) or m.group(2)
        last = name.split(".")[-1]
        if len(last) >= 3 and last.lower() not in STOPWORDS:
            found.setdefault(last.lower(), name)
    return list(found.values())


def stems(text: str) -> set[str]:
    return {stem(w) for w in content_words(text)}


NEGATIONS = frozenset({"not", "no", "never", "none", "nothing", "cannot", "without", "neither", "nor"})


def negations(text: str) -> int:
    words = re.findall(r"[a-z]+(?:'t)?", (text or "").lower())
    return sum(w in NEGATIONS or w.endswith("n't") for w in words)


def added_to_question(reference: str, question: str) -> list[str] | None:
    """The content words ``reference`` adds to its question, where it mostly restates it (repeats
    three or more of the question's content words, with no yes/no or negation taking a side and no
    new number or code name); None for a reference that answers in other terms. ``[]``: a pure
    restatement; one word ("The last item of a sequence is the last element in the sequence." for
    "What is the last item in a sequence?" adds "element") may be a synonym or the whole answer
    ("the locale encoding"), which only a reader can tell."""
    if POLAR.match(reference or "") or negations(reference):
        return None
    known = stems(question)
    words = content_words(reference)
    new = [w for w in words if stem(w) not in known]
    new_names = {n.lower() for n in names(reference)} - {n.lower() for n in names(question)}
    if new_names or any(w[0].isdigit() for w in new) or len(words) - len(new) < 3:
        return None
    return new
