"""Splitting documents into chunks: by heading (Markdown and reST), or fixed-size with overlap."""

from __future__ import annotations

import re
from dataclasses import dataclass

_RST_UNDERLINE = re.compile(r"^([=\-*~^\"#+`':.])\1{2,}\s*$")
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Section:
    """A heading and the text under it (up to the next heading of any level)."""

    heading: str
    text: str


def split_by_heading(text: str, *, markdown: bool = True) -> list[Section]:
    """Sections at every reST (or Markdown setext) underlined heading, and with ``markdown`` at every
    ``#`` heading outside a ``` or ~~~ fence (a ``#`` line of a text or reST file is a comment of its
    code, not a heading).

    Text before the first heading becomes a section with an empty heading. Sections with no text
    are kept only when they are the sole section.
    """
    lines = text.splitlines()
    sections: list[Section] = []
    heading = ""
    body: list[str] = []
    fence = ""  # the open fence's marker, "" outside one
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = line.lstrip()[:3]
        if marker in ("```", "~~~") and (not fence or marker == fence):
            fence = "" if fence else marker
        in_fence = bool(fence)
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        md = None if in_fence or not markdown else _MD_HEADING.match(line)
        rst = (
            not in_fence
            and line.strip()
            and not _RST_UNDERLINE.match(line)
            and _RST_UNDERLINE.match(nxt)
            and len(nxt.rstrip()) >= len(line.rstrip()) * 0.6
        )
        if md or rst:
            sections.append(Section(heading, "\n".join(body).strip()))
            heading = md.group(2) if md else line.strip()
            body = []
            i += 1 if md else 2
            continue
        # An overline above a reST title: drop it.
        if _RST_UNDERLINE.match(line) and i + 2 < len(lines) and _RST_UNDERLINE.match(lines[i + 2]):
            i += 1
            continue
        body.append(line)
        i += 1
    sections.append(Section(heading, "\n".join(body).strip()))
    kept = [s for s in sections if s.text]
    return kept or [s for s in sections if s.heading][:1]


def split_fixed(text: str, size: int, overlap: int) -> list[str]:
    """Pieces of at most ``size`` characters overlapping by ``overlap``, split at natural breaks."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter  # noqa: PLC0415

    splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
    return [piece for piece in splitter.split_text(text) if piece.strip()]


def slugify(text: str) -> str:
    """A short lowercase id fragment: ``'The "assert" statement'`` -> ``the-assert-statement``."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:60].rstrip("-") or "section"


def unique_ids(ids: list[str]) -> list[str]:
    """Make ids unique by appending -2, -3, ... to repeats, keeping order."""
    seen: dict[str, int] = {}
    out = []
    for i in ids:
        n = seen.get(i, 0) + 1
        seen[i] = n
        out.append(i if n == 1 else f"{i}-{n}")
    return out
