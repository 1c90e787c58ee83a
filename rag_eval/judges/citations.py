"""Citations read from an answer: its sentences, each with the contexts it cites.

An answer cites the contexts it was given in one of the common forms: numbers as the prompt
numbered the contexts (``[1]``, ``[1, 3]``, ``[1][2]``, ``[1-3]``, superscript ``¹`` or
``<sup>1</sup>``, footnotes ``[^1]`` with or without a footnote list), names (``[doc2]``,
``[chunk id]``, ``[title]``, ``(Document 2)``), and sources (``(Source: id or title)``, a
``Source: ...`` line, a ``Sources:`` list), or in a form of its own given as a regular expression
with a named group ``ref``. :func:`read_citations` splits the answer into sentences as the
statement judges do (``split_statements``), gives each sentence the citations written in it or
right after it, and resolves each citation to the given contexts by number, chunk id or title; a
citation that names none of them is kept and counted.

Brackets that are not citations stay text: code spans and fenced blocks, Markdown links
``[text](url)`` and ``[text][ref]``, indexing glued to a name (``a[1]``, ``row_2[3]``,
``f(x)[0]``) and brackets that hold no number and no given context's id or title (``list[int]``,
``[x]``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from rag_eval.base_records import Model
from rag_eval.judges.statements import ALL_SENTENCES, split_statements
from rag_eval.types import Chunk

Form = Literal["number", "name", "superscript", "footnote", "source", "pattern"]

# Every sentence is kept: a citation in the ninth sentence counts as much as one in the first.
# A range wider than this ([1-200]) is not read as a citation.
MAX_RANGE = 20
# Private-use characters stand for the markers while the text is split into sentences.
_HOLD = 0xE000
_MAX_MARKERS = 0x1900
_HOLD_RE = re.compile("[\ue000-\uf8ff]")

_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_SUP = "[⁰¹²³⁴-⁹]"
_NUM = r"\d{1,3}(?:\s*[-–—]\s*\d{1,3})?"
_NUMS = re.compile(rf"\s*{_NUM}(?:\s*[,;]\s*{_NUM})*\s*")
_DOC_WORD = r"(?:doc(?:ument)?|source|src|context|passage|chunk|ref(?:erence)?)s?"
_DOC_N = re.compile(rf"^{_DOC_WORD}\s*[#_-]?\s*(\d{{1,3}})$", re.I)
_RANGE = re.compile(r"^(\d{1,3})\s*[-–—]\s*(\d{1,3})$")
_SEPARATORS = re.compile(r"\s*(?:[,;&]|\band\b)\s*", re.I)
_FILE_ID = re.compile(r"^[\w./-]+\.(?:md|mdx|rst|txt|html?|pdf|adoc|ipynb)(?:#\S*)?$|^[\w./-]+#[\w.-]+$", re.I)
_LEADING_NUMBER = re.compile(r"^\[?(\d{1,3})[\].):]?\s+(.+)$")
_WITH_ALIAS = re.compile(r"(.+?)\s*[(\[](.+)[)\]]")

_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)
_INLINE_CODE = re.compile(r"(`+)[^`\n]*?\1")
_FENCE = re.compile(r"^\s*(```|~~~)")
_DEFINITION = re.compile(r"^[ \t]*\[(\^[^\]\s]+|\d{1,3})\]:[ \t]*(.*)$")
_SOURCE_WORD = r"[ \t>#]*[*_]*\s*(?:sources?|references?|citations?|cited sources?)\s*[*_]*\s*"
_SOURCES_LINE = re.compile(rf"^{_SOURCE_WORD}:\s*[*_]*[ \t]*(.*)$", re.I)
_SOURCES_HEADING = re.compile(rf"^{_SOURCE_WORD}:?\s*[*_]*\s*$", re.I)
_LIST_ENTRY = re.compile(
    r"^[ \t]*(?:[-*•+][ \t]+)?(?:\[(\d{1,3})\]:?|(\d{1,3})[.)])[ \t]+(\S.*)$|^[ \t]*[-*•+][ \t]+(.+)$"
)
_REFERENCE_LINE = re.compile(r"^[ \t]*\[\d{1,3}\]:?[ \t]+\S+(?:[ \t]+\S+){0,14}[ \t]*$")
# "... the guide says. Source: Install guide" on one line: the source part is a source line.
_TRAILING_SOURCE = re.compile(r"(?<=[.!?])[ \t]+(?=[*_]*(?:sources?|references?)[*_]*[ \t]*:)", re.I)

_BRACKETS = re.compile(r"\[([^\[\]\n]{1,200})\]")
_FOOTNOTE = re.compile(r"\[\^([^\]\s]+)\]")
_SUPERSCRIPT = re.compile(rf"{_SUP}+(?:\s*[,˒⁻–-]\s*{_SUP}+)*")
_SUP_TAG = re.compile(r"<sup>\s*\[?\s*(\d{1,3}(?:\s*[-–—,;]\s*\d{1,3})*)\s*\]?\s*</sup>", re.I)
_PAREN_SOURCE = re.compile(
    rf"\(\s*(?:(?:sources?|references?|refs?|citations?|cited|see)\s*:\s*([^()\n]+?)|({_DOC_WORD}\s*#?\s*{_NUM}"
    rf"(?:\s*(?:[,;&]|\band\b)\s*(?:{_DOC_WORD}\s*#?\s*)?{_NUM})*))\s*\)",
    re.I,
)
# A superscript after a digit, a one-letter name or a unit is a power (10³, x², km²).
_SUP_WORD = re.compile(r"(?:^|[^\w])(?:[A-Za-z]|[kcmdnµμ]m|ft|in|yd|mi|m?s|kg)$")
# "(see [1])": the parentheses go with the marker from the text a judge reads.
_HELD_PARENS = re.compile(r"\s*\((?:\s*(?:see|cf\.?)\s*)?([\ue000-\uf8ff]+)\s*\)", re.I)


class Citation(Model):
    """One reference of a citation marker, resolved to the contexts the answer was given."""

    marker: str  # the marker as written ("[1, 3]" for both of its references)
    ref: str  # the one reference: "3", "doc2", "Install guide"
    form: Form
    contexts: list[int] = []  # positions (from 0) in the given contexts; empty: it names none of them

    @property
    def resolved(self) -> bool:
        """Whether it names a context the answer was given."""
        return bool(self.contexts)


class CitedSentence(Model):
    """One sentence of an answer: the text a judge reads (markers removed), the text as written,
    and its citations."""

    text: str
    display: str
    citations: list[Citation] = []

    @property
    def cited(self) -> list[int]:
        """The positions of the contexts its citations name, each once."""
        return sorted({i for c in self.citations for i in c.contexts})


class CitedAnswer(Model):
    """An answer's sentences with their citations; ``unattached``: citations no sentence carries
    (a ``Source:`` line in an answer without sentences)."""

    sentences: list[CitedSentence] = []
    unattached: list[Citation] = []

    @property
    def citations(self) -> list[Citation]:
        """Every citation of the answer, in the order written."""
        return [c for s in self.sentences for c in s.citations] + self.unattached

    @property
    def cites(self) -> bool:
        """Whether the answer cites anything."""
        return bool(self.citations)

    @property
    def unresolved(self) -> int:
        """Citations that name no context the answer was given."""
        return sum(not c.resolved for c in self.citations)


@dataclass(frozen=True)
class _Given:
    """The contexts an answer was given, looked up by number, id and title, and the answer's own
    numbered list of sources (``defs``: ``"1"`` or ``"^a"`` to what the entry names)."""

    n: int
    ids: dict[str, list[int]]
    lower_ids: dict[str, list[int]]
    titles: dict[str, list[int]]
    has_hash_ids: bool
    defs: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, contexts: Sequence[Chunk]) -> _Given:
        ids: dict[str, list[int]] = {}
        lower: dict[str, list[int]] = {}
        titles: dict[str, list[int]] = {}
        for i, c in enumerate(contexts):
            ids.setdefault(c.id, []).append(i)
            lower.setdefault(c.id.lower(), []).append(i)
            if _norm(c.title):
                titles.setdefault(_norm(c.title), []).append(i)
        return cls(len(contexts), ids, lower, titles, any("#" in c.id for c in contexts))

    def number(self, n: int) -> list[int]:
        """The context the prompt numbered ``n`` (from 1)."""
        return [n - 1] if 1 <= n <= self.n else []

    def numbered(self, n: int) -> list[int]:
        """What the answer's ``[n]`` names: its own list's entry ``n`` where it has one (the entry's
        title or id, else still the prompt's context ``n``), else the prompt's context ``n``."""
        entry = self.defs.get(str(n))
        if entry is None:
            return self.number(n)
        return _item(entry, self, loose=True, listed=False) or self.number(n)


@dataclass
class _Marker:
    """A citation marker found in the text: where, as written, and its citations."""

    start: int
    end: int
    text: str
    citations: list[Citation]
    lead: str = ""  # the spaces it followed, given back in the display form
    moved: bool = False  # written after the sentence's full stop, held before it while splitting


@dataclass
class _Segment:
    """Answer lines up to a source line or list, and the citations that source names."""

    lines: list[str] = field(default_factory=list)
    sources: list[Citation] = field(default_factory=list)


def _norm(text: str) -> str:
    """A title or reference as compared: lower case, no Markdown emphasis or quotes, single spaces."""
    text = re.sub(r"[*_`\"“”‘’]", "", text or "").strip().strip(".:;,'").strip()
    return " ".join(text.lower().split())


def _name(item: str, given: _Given) -> list[int] | None:
    """The contexts a name gives (a doc number, chunk id or title); None when it is none of these."""
    m = _DOC_N.match(item)
    if m:
        return given.number(int(m.group(1)))
    if item in given.ids:
        return given.ids[item]
    if item.lower() in given.lower_ids:
        return given.lower_ids[item.lower()]
    return given.titles.get(_norm(item))


def _item(item: str, given: _Given, *, loose: bool, listed: bool = True) -> list[int] | None:
    """The contexts one reference names. ``loose`` (the reference sits in a source form, so it is
    a citation whatever it holds): never None, and a title the reference mentions counts. Else
    None for text that is no reference (a bracket in prose). ``listed``: a number goes through
    the answer's own list of sources."""
    item = item.strip().strip("*_`\"'“”").strip()
    if re.fullmatch(r"\d{1,3}", item):
        return given.numbered(int(item)) if listed else given.number(int(item))
    inner = re.fullmatch(r"\[([^\[\]]+)\]", item)
    if inner and loose:
        return _item(inner.group(1), given, loose=True, listed=listed)
    named = _name(item, given)
    if named is not None:
        return named
    m = _LEADING_NUMBER.match(item) if loose else None
    if m:  # "[2] Install guide" in a list of sources: the title if it names a context, else the number
        return _item(m.group(2), given, loose=False) or given.number(int(m.group(1)))
    m = _WITH_ALIAS.fullmatch(item)
    if m:  # "Install guide (guide.md#install)"
        for part in (m.group(2), m.group(1)):
            named = _name(part.strip(), given)
            if named:
                return named
    if _FILE_ID.match(item) or (given.has_hash_ids and re.fullmatch(r"\S+#\S+", item)):
        return []  # an id's shape, naming no given context
    if not loose:
        return None
    lowered = _norm(item)
    found = {t for t in given.titles if len(t) >= 4 and re.search(rf"(?<!\w){re.escape(t)}(?!\w)", lowered)}
    return given.titles[found.pop()] if len(found) == 1 else []


def _refs(content: str, given: _Given, *, loose: bool, marker: str, form: Form) -> list[Citation] | None:
    """The citations of a marker's content ("1, 3", "1-3", "doc2", a title, a list of them); None
    where the content is no reference (only when not ``loose``)."""

    def one(item: str) -> list[Citation] | None:
        item = item.strip()
        m = _RANGE.match(item)
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            if not a < b <= a + MAX_RANGE:
                return [Citation(marker=marker, ref=item, form=form, contexts=[])] if loose else None
            return [Citation(marker=marker, ref=str(n), form=form, contexts=given.numbered(n)) for n in range(a, b + 1)]
        found = _item(item, given, loose=loose)
        return None if found is None else [Citation(marker=marker, ref=item, form=form, contexts=found)]

    if loose:
        content = re.sub(r"\]\s*\[", "], [", content)
    exact = _item(content, given, loose=False) if not _RANGE.match(content.strip()) else None
    whole = one(content)
    if exact or (whole is not None and not loose):
        return whole
    pieces = [p for p in _SEPARATORS.split(content) if p.strip()]
    read = [one(p) for p in pieces] if len(pieces) > 1 else []
    found = [c for r in read if r is not None for c in r]
    if read and all(r is not None for r in read) and (not loose or all(c.resolved for c in found)):
        return found
    if whole is not None and any(c.resolved for c in whole):
        return whole
    if loose and any(c.resolved for c in found):
        return found
    return whole


def _code_spans(text: str) -> list[tuple[int, int]]:
    fenced = [m.span() for m in _FENCED.finditer(text)]
    inline = [m.span() for m in _INLINE_CODE.finditer(text) if not _overlaps(fenced, *m.span())]
    return fenced + inline


def _overlaps(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(a < end and start < b for a, b in spans)


def _indexing(text: str, start: int, end: int) -> bool:
    """Whether a bracket glued to the text before it is indexing (``a[1]``, ``row_2[3]``,
    ``obj.items[0]``, ``f(x)[1]``) rather than a citation written without a space (``fast[1]``,
    ``in 2023[1]``, ``(see the guide)[1]``)."""
    before = text[max(0, start - 200) : start]  # a name or a call's parentheses, not the whole answer
    if before.endswith(")"):
        depth, k = 0, len(before) - 1
        while k >= 0:
            depth += {")": 1, "(": -1}.get(before[k], 0)
            if depth == 0:
                break
            k -= 1
        return k > 0 and bool(re.match(r"[\w\])]", before[k - 1]))  # a call's result: f(x)[1]
    word = re.search(r"[\w.]*\w$", before)
    if word is None:
        return False
    name = word.group(0)
    if re.fullmatch(r"\d[\d.,]*", name):
        return False  # a number is not indexed
    after = text[end:]
    return len(name) <= 2 or not name.isalpha() or bool(re.match(r"\s*(?:[=+*/%<>]|\.\w|\()", after))


def _markers(text: str, given: _Given, pattern: re.Pattern[str] | None, used: set[str]) -> list[_Marker]:
    """Every citation marker of one segment of the answer, in order; ``used`` collects the labels
    of the answer's own list of sources that a marker names."""
    code = _code_spans(text)
    taken: list[_Marker] = []

    def add(a: int, b: int, cites: list[Citation] | None) -> bool:
        if cites is None or _overlaps(code, a, b) or any(m.start < b and a < m.end for m in taken):
            return False
        taken.append(_Marker(a, b, text[a:b], cites))
        return True

    if pattern is not None:
        for m in pattern.finditer(text):
            ref = m.group("ref")
            if ref is not None and m.end() > m.start():
                add(*m.span(), _refs(ref, given, loose=True, marker=m.group(0), form="pattern"))
    for m in _PAREN_SOURCE.finditer(text):
        loose = m.group(1) is not None
        add(*m.span(), _refs(m.group(1) or m.group(2), given, loose=loose, marker=m.group(0), form="source"))
    for m in _FOOTNOTE.finditer(text):
        label = m.group(1)
        if text[m.end() : m.end() + 1] in ("(", ":"):
            continue
        entry = given.defs.get("^" + label)
        if entry is not None:
            found = [
                c.model_copy(update={"ref": label})
                for c in _refs(entry, given, loose=True, marker=m.group(0), form="footnote") or []
            ]
        else:
            number = given.numbered(int(label)) if re.fullmatch(r"[0-9]{1,3}", label) else []
            found = [Citation(marker=m.group(0), ref=label, form="footnote", contexts=number)]
        if add(*m.span(), found or [Citation(marker=m.group(0), ref=label, form="footnote", contexts=[])]):
            used.add("^" + label)
    for m in _SUP_TAG.finditer(text):
        tagged = _refs(m.group(1), given, loose=False, marker=m.group(0), form="superscript")
        if add(*m.span(), tagged):
            used.update(c.ref for c in tagged or [])
    chain_end = -1
    for m in _BRACKETS.finditer(text):
        a, b = m.span()
        content = m.group(1)
        # "[1]:" is a definition only where it starts its line; "... the following code [1]:" cites
        # (review 55 M6: the lead-in of a code block lost its citation).
        definition = text[b : b + 1] == ":" and not text[:a].rsplit("\n", 1)[-1].strip()
        if content.startswith("^") or text[b : b + 1] == "(" or definition or text[a - 1 : a] == "!":
            continue  # a footnote, a Markdown link or image, a definition
        if a != chain_end and (text[a - 1 : a] == "]" or _indexing(text, a, b)):
            continue  # [text][ref], a[1]
        numeric = bool(_NUMS.fullmatch(content))
        bracketed = _refs(content, given, loose=False, marker=m.group(0), form="number" if numeric else "name")
        if add(a, b, bracketed):
            chain_end = b
            used.update(c.ref for c in bracketed or [] if numeric)
    for m in _SUPERSCRIPT.finditer(text):
        before = text[max(0, m.start() - 12) : m.start()]
        if re.search(r"\d$", before) or _SUP_WORD.search(before):
            continue  # 10³, x², km²
        raised = _superscript(m.group(0), given)
        if add(*m.span(), raised):
            used.update(c.ref for c in raised)
    return sorted(taken, key=lambda mk: mk.start)[:_MAX_MARKERS]


def _superscript(written: str, given: _Given) -> list[Citation]:
    """Citations of a superscript run; ``¹²`` with fewer than 12 contexts is read as 1 and 2."""
    out: list[Citation] = []
    for part in re.split(r"\s*[,˒]\s*", written.translate(_SUPERSCRIPTS)):
        m = _RANGE.match(part)
        if m and int(m.group(1)) < int(m.group(2)) <= int(m.group(1)) + MAX_RANGE:
            numbers = list(range(int(m.group(1)), int(m.group(2)) + 1))
        elif re.fullmatch(r"[0-9]+", part):
            n = int(part)
            split = len(part) > 1 and n > given.n and all(1 <= int(d) <= given.n for d in part)
            numbers = [int(d) for d in part] if split else [n]
        else:
            out.append(Citation(marker=written, ref=part, form="superscript", contexts=[]))
            continue
        out += [Citation(marker=written, ref=str(n), form="superscript", contexts=given.numbered(n)) for n in numbers]
    return out


def _hold(text: str, markers: list[_Marker]) -> str:
    """The text with each marker replaced by one private-use character glued to the word before it;
    a marker written after a sentence's full stop is held before the stop, so that the split into
    sentences gives it to the sentence it follows."""
    out: list[str] = []  # characters, so that each marker costs the length of its own text
    pos = 0
    for k, mk in enumerate(markers):
        out.extend(text[pos : mk.start])
        pos = mk.end
        end = len(out)
        while end and out[end - 1] in " \t":
            end -= 1
        mk.lead = "".join(out[end:])
        del out[end:]
        stop = end
        while stop and out[stop - 1] in ".!?":
            stop -= 1
        if stop < end and stop > 0 and not out[stop - 1].isspace():
            out.insert(stop, chr(_HOLD + k))
            mk.moved = True
        else:
            out.append(chr(_HOLD + k))
    return "".join(out) + text[pos:]


def _display(sentence: str, markers: list[_Marker]) -> str:
    """A held sentence as written: each marker back in its place, one written after the full
    stop after it again."""

    def back(m: re.Match[str]) -> str:
        held = [markers[ord(ch) - _HOLD] for ch in m.group(1)]
        here = "".join(mk.lead + mk.text for mk in held if not mk.moved)
        after = "".join(mk.lead + mk.text for mk in held if mk.moved)
        return here + m.group(2) + after

    return re.sub(r"([\ue000-\uf8ff]+)([.!?]*)", back, sentence)


def _sentences(text: str, markers: list[_Marker]) -> list[CitedSentence]:
    """The sentences of one segment, each with the citations of the markers it holds. A fenced code
    block is no run of sentences: it goes whole, fences kept, with the sentence before it (its
    lead-in, "you can use the following code:"), or stands alone where nothing comes before it."""
    out: list[CitedSentence] = []
    pos = 0
    text = _hold(text, markers)  # markers held first: their places are the whole segment's
    for m in _FENCED.finditer(text):
        closing = m.group(0).rstrip("\n").rsplit("\n", 1)[-1].strip()
        if m.group(0).count("\n") < 1 or closing != m.group(1):
            continue  # a fence never closed: its lines stay sentences, not one lead-in's claim (review 55 L2)
        _prose(text[pos : m.start()], markers, out)
        block = m.group(0).strip("\n")
        if out:
            last = out[-1]
            last.text, last.display = f"{last.text}\n{block}", f"{last.display}\n{block}"
        else:
            out.append(CitedSentence(text=block, display=block, citations=[]))
        pos = m.end()
    _prose(text[pos:], markers, out)
    return out


def _prose(text: str, markers: list[_Marker], out: list[CitedSentence]) -> None:
    """The sentences of ``text`` (its markers held, no code block in it) added to ``out``."""
    if not text.strip():
        return
    for held in split_statements(text, limit=ALL_SENTENCES):
        cites = [c for ch in _HOLD_RE.findall(held) for c in markers[ord(ch) - _HOLD].citations]
        plain = _HOLD_RE.sub("", _HELD_PARENS.sub(r"\1", held)).strip()
        shown = _display(held, markers).strip()
        if not plain.strip(" .,;:!?") and out:
            # Only markers on this line: they cite the sentence before them.
            out[-1].citations = out[-1].citations + cites
            out[-1].display = f"{out[-1].display} {shown}"
            continue
        out.append(CitedSentence(text=plain, display=shown, citations=cites))


def _reference_tail(lines: list[str]) -> int:
    """Where the answer's closing list of numbered references (``[1] Install guide`` lines after
    its text) starts; ``len(lines)`` when it has none."""
    k = len(lines)
    while k > 0 and not lines[k - 1].strip():
        k -= 1
    start = k
    while start > 0 and (_REFERENCE_LINE.match(lines[start - 1]) or not lines[start - 1].strip()):
        start -= 1
    while start < k and not lines[start].strip():
        start += 1
    text_before = any(line.strip() for line in lines[:start])
    return start if start < k and text_before else len(lines)


def _segments(answer: str, given: _Given) -> list[_Segment]:
    """The answer's lines cut after each source line or list; fills ``given.defs`` with the
    answer's own numbered sources (``[1]: title``, ``[^a]: title``, a numbered ``Sources:`` list)."""
    lines = [part for line in answer.splitlines() for part in _TRAILING_SOURCE.split(line, maxsplit=1)]
    tail = _reference_tail(lines)
    segments = [_Segment()]
    fenced = listing = False  # inside a fenced block; inside a list of sources
    for k, line in enumerate(lines):
        seg = segments[-1]
        if _FENCE.match(line) or fenced:
            fenced ^= bool(_FENCE.match(line))
            seg.lines.append(line)
            continue
        m = _DEFINITION.match(line)
        if m:
            given.defs[m.group(1)] = m.group(2)
            listing = True
            continue
        if listing or k >= tail:
            entry = _LIST_ENTRY.match(line)
            if entry and (entry.group(1) or entry.group(2)):
                given.defs[entry.group(1) or entry.group(2)] = entry.group(3)
                continue
            if entry:
                seg.sources += _refs(entry.group(4), given, loose=True, marker=line.strip(), form="source") or []
                continue
            if not line.strip():
                continue
            listing = False
            segments.append(_Segment())
            seg = segments[-1]
        if _SOURCES_HEADING.match(line):
            listing = True
            continue
        m = _SOURCES_LINE.match(line)
        if m and m.group(1).strip():
            seg.sources += _refs(m.group(1), given, loose=True, marker=line.strip(), form="source") or []
            segments.append(_Segment())
            continue
        seg.lines.append(line)
    return segments


def _attach(read: list[tuple[list[CitedSentence], list[Citation]]]) -> CitedAnswer:
    """Each segment's sources given to its sentences that cite nothing themselves; sources before
    any sentence go to the next segment's, sources left at the end to the last segment's."""
    pending: list[Citation] = []
    last: list[CitedSentence] = []
    for said, sources in read:
        pending = pending + sources
        if said and pending:
            for s in said:
                if not s.citations:
                    s.citations = list(pending)
            pending = []
        last = said or last
    if pending and last:
        for s in last:
            if not s.citations:
                s.citations = list(pending)
        pending = []
    return CitedAnswer(sentences=[s for said, _ in read for s in said], unattached=pending)


def read_citations(answer: str, contexts: Sequence[Chunk], pattern: str | re.Pattern[str] | None = None) -> CitedAnswer:
    """The answer's sentences, each with its citations resolved to ``contexts`` (the chunks the
    answer was given, in the order the prompt numbered them from 1).

    ``pattern``: an answer's own citation form, a regular expression whose named group ``ref``
    holds a context's number, chunk id or title; read before the common forms.
    A source line or list (``Source: ...``, ``Sources:`` then entries) applies to the sentences
    before it that cite nothing themselves; a numbered list of sources (``[1]: title``) says what
    the answer's own numbers name, and its entries that no marker names apply as a source line.
    """
    compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
    if compiled is not None and "ref" not in compiled.groupindex:
        raise ValueError(
            f"the citation pattern {compiled.pattern!r} has no named group ref; write (?P<ref>...) around "
            "the cited number, id or title"
        )
    given = _Given.of(contexts)
    segments = _segments(_HOLD_RE.sub("", answer or ""), given)
    used: set[str] = set()
    read = []
    for seg in segments:
        text = "\n".join(seg.lines)
        read.append((_sentences(text, _markers(text, given, compiled, used)), seg.sources))
    # The answer's own list: the entries no marker named cite as a source line does.
    listed = [
        c
        for label, entry in given.defs.items()
        if label not in used
        for c in _refs(entry, given, loose=True, marker=f"[{label}]: {entry}", form="source") or []
    ]
    if listed:
        said, sources = read[-1]
        read[-1] = (said, listed + sources)
    return _attach(read)
