"""Simple JSON paths (``$.sources[*].text``): keys, ``['quoted keys']``, indices and ``[*]``."""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(r"\.([A-Za-z_][\w-]*)|\.\*|\[(\d+|-\d+|\*)\]|\[['\"]([^'\"]+)['\"]\]")
WILD = object()


def parse_path(path: str) -> list[Any]:
    """The steps of a path: a key (str), an index (int) or ``WILD``; ValueError naming what is wrong."""
    if not isinstance(path, str) or not path.startswith("$"):
        raise ValueError(f"JSON path {path!r} must start with $, e.g. $.answer or $.sources[*].id")
    steps, pos = [], 1
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if not m:
            raise ValueError(
                f"JSON path {path!r}: cannot read {path[pos:]!r} (at character {pos + 1}); "
                "use .key, ['key'], [0] or [*], e.g. $.sources[*].text"
            )
        key, index, quoted = m.groups()
        if key is not None or quoted is not None:
            steps.append(key if key is not None else quoted)
        elif index == "*" or m.group(0) == ".*":
            steps.append(WILD)
        else:
            steps.append(int(index))
        pos = m.end()
    return steps


def _children(value: Any, step: Any) -> list[Any]:
    if step is WILD:
        if isinstance(value, dict):
            return list(value.values())
        return list(value) if isinstance(value, (list, tuple)) else []
    if isinstance(step, int):
        if isinstance(value, (list, tuple)) and -len(value) <= step < len(value):
            return [value[step]]
        return []
    if isinstance(value, dict):
        return [value[step]] if step in value else []
    # Objects (a Haystack Document, a LlamaIndex node): their attributes, as a dict's keys.
    if value is not None and not isinstance(value, (str, int, float, bool, list, tuple)) and hasattr(value, step):
        return [getattr(value, step)]
    return []


def extract(data: Any, path: str) -> list[Any]:
    """Every value the path selects, in document order (empty when nothing matches)."""
    values = [data]
    for step in parse_path(path):
        values = [c for v in values for c in _children(v, step)]
    return values


def _walk(values: list[Any], steps: list[Any]) -> list[Any]:
    for step in steps:
        values = [c for v in values for c in _children(v, step)]
    return values


def extract_paired(data: Any, first: str, second: str) -> tuple[list[Any], list[Any]] | None:
    """The values of two paths that select fields of the same list's items (``$.sources[*].id`` and
    ``$.sources[*].text``), item by item: None where an item lacks the field, so that the two lists
    pair by position even when some items have only one of them. None when the paths share no
    ``[*]`` step."""
    a, b = parse_path(first), parse_path(second)
    common = 0
    while common < min(len(a), len(b)) and (a[common] is b[common] if a[common] is WILD else a[common] == b[common]):
        common += 1
    cut = max((i + 1 for i in range(common) if a[i] is WILD), default=0)
    if not cut:
        return None
    items = _walk([data], a[:cut])

    def field(item: Any, rest: list[Any]) -> Any:
        found = _walk([item], rest)
        return found[0] if found else None

    return [field(it, a[cut:]) for it in items], [field(it, b[cut:]) for it in items]


def is_single(path: str) -> bool:
    """The path selects at most one value (no ``[*]``)."""
    return WILD not in parse_path(path)
