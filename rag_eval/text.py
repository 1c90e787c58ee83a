"""Small text measures shared by the test-set lint and the miss diagnosis."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[a-z0-9_]+")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "i",
        "you",
        "he",
        "she",
        "we",
        "they",
        "me",
        "my",
        "your",
        "our",
        "their",
        "them",
        "his",
        "her",
        "not",
        "no",
        "yes",
        "so",
        "than",
        "then",
        "too",
        "very",
        "just",
        "also",
        "only",
        "into",
        "out",
        "up",
        "down",
        "about",
        "over",
        "under",
        "again",
        "once",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "own",
        "same",
        "s",
        "t",
        "don",
        "use",
        "using",
        "used",
        "get",
        "make",
        "way",
    ]
)

# A question hinges on an exact token when it names a symbol: a dunder or snake_case name, a
# dotted or called name, camelCase, PascalCase with an inner capital (ValueError), a code mixing
# letters and digits, a backticked string, or an operator made of symbols only.
_EXACT = re.compile(
    r"`[^`]+`"
    r"|\b_{1,2}[A-Za-z0-9]+\w*"
    r"|\b[a-z0-9]+_[a-z0-9_]+\b"
    r"|\b[A-Za-z_]\w*\.[A-Za-z_]\w*"
    r"|\b[A-Za-z_]\w*\(\)"
    r"|\b[a-z]+[A-Z]\w*"
    r"|\b[A-Z][a-z]+[A-Z][A-Za-z]*\b"
    r"|\b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*\d[A-Za-z0-9-]*\b"
    r"|(?<![\w\s])[-+*/%@&|^~<>=!:]{2,}(?![\w])|(?<=\s)[-+*/%@&|^~<>=!:]{2,}(?=\s|$)"
)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (the default BM25 tokenizer)."""
    return _TOKEN.findall(text.lower())


def content_tokens(text: str) -> list[str]:
    """Tokens without stop words."""
    return [t for t in tokens(text) if t not in STOPWORDS]


def ngrams(toks: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)}


def exact_tokens(question: str) -> list[str]:
    """The symbols, codes and identifiers a question names (``__slots__``, ``str.zfill``, ``E501``)."""
    return [m.group(0).strip("`") for m in _EXACT.finditer(question)]


def coverage(part: set[str] | list[str], whole: set[str]) -> float:
    """Share of ``part``'s distinct items found in ``whole``; 0.0 for an empty part."""
    part = set(part)
    return len(part & whole) / len(part) if part else 0.0


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    """Word n-grams of a text, for near-duplicate detection."""
    toks = tokens(text)
    return ngrams(toks, n) if len(toks) >= n else {tuple(toks)}


def record_lines(text: str) -> list[str]:
    """The lines of a JSONL text, split at line feeds only (a CR before one dropped): ``splitlines``
    also splits at U+2028, U+2029, U+0085 and other breaks that JSON keeps raw inside a string, so
    an answer holding one would tear its record in two. A text ending in a line feed has no empty
    last line, as with ``splitlines``."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]
