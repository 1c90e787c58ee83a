"""MkDocs hook: every validation figure is read from its result file while the site is built.

A page writes ``{{ fig FILE KEY [FORMAT] }}``: FILE is a JSON result under the repository root
(``benchmarks/judges/result.json``), KEY a path into it (``rows[judge=refusal,source=all].accuracy``:
dots between keys, ``[3]`` an index, ``[k=v,...]`` the one list item whose fields match, ``k^=v`` a
field that starts with v, ``['a.b']`` a key that holds a dot), FORMAT how the value is written:

- a Python format spec (``.2f``, ``.0%``, ``,``, ``d``); by default a float as written in the file
  when it has at most three decimals, else ``.2f``; anything else as is;
- ``yesno``: ``yes`` or ``no`` for a true or false value; ``len``: how many items a list holds;
- ``ci``: ``0.96 [0.90, 0.98]`` from ``{value, ci_low, ci_high}``; ``ci%``: ``86% [69%, 94%]``;
- ``frac``: ``24/28`` from ``{value, n}`` or from a count pair ``[24, 28]``; ``ms-as-s``: milliseconds
  written as seconds (``122.7``);
- a count pair ``[k, n]`` (k of n cases): a format spec writes the share k / n (``.2f``: ``0.86``,
  ``.0%``: ``86%``); ``wilson``: the share with its 95% Wilson interval, ``0.86 [0.69, 0.94]``
  (``rag_eval.stats.wilson_interval``, as the studies report it).

A file, key or list item that is not there stops the build with the page and the placeholder, so
the text cannot state a figure its result file does not hold.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

from rag_eval.stats import wilson_interval

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDER = re.compile(r"\{\{\s*fig\s+(\S+)\s+(\S+)(?:\s+(\S+))?\s*\}\}")
_STEP = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")
_QUOTED = re.compile(r"""^(['"])(.*)\1$""")


class FigureError(Exception):
    """A placeholder whose file, key or format does not resolve."""


@cache
def _load(path: str) -> Any:
    file = ROOT / path
    if not file.is_file():
        raise FigureError(f"result file {path} does not exist")
    return json.loads(file.read_text(encoding="utf-8"))


def _match(item: Any, conditions: str) -> bool:
    if not isinstance(item, dict):
        return False
    for cond in conditions.split(","):
        key, _, want = cond.partition("=")
        if key.endswith("^"):  # key^=start: the field starts with it
            if not str(item.get(key[:-1].strip())).startswith(want.strip()):
                return False
        elif str(item.get(key.strip())) != want.strip():
            return False
    return True


def lookup(data: Any, key: str) -> Any:
    """The value at ``key`` (see the module's docstring) in ``data``."""
    value = data
    for name, bracket in _STEP.findall(key):
        if quoted := _QUOTED.match(bracket):
            name = quoted.group(2)
        if name:
            if not isinstance(value, dict) or name not in value:
                raise FigureError(f"no key {name!r} (in {key})")
            value = value[name]
        elif bracket.lstrip("-").isdigit():
            if not isinstance(value, list) or not -len(value) <= int(bracket) < len(value):
                raise FigureError(f"no item [{bracket}] (in {key})")
            value = value[int(bracket)]
        else:
            found = [item for item in (value if isinstance(value, list) else []) if _match(item, bracket)]
            if len(found) != 1:
                raise FigureError(f"{len(found)} items match [{bracket}] (in {key}); one is needed")
            value = found[0]
    return value


def _count_pair(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and value[1] > 0
    )


def render(value: Any, fmt: str | None) -> str:
    """One figure as the page writes it."""
    if fmt == "len":
        if not isinstance(value, list | dict):
            raise FigureError(f"format len needs a list or a mapping, got {value!r}")
        return str(len(value))
    if _count_pair(value) and fmt:
        k, n = value
        if fmt == "frac":
            return f"{k}/{n}"
        if fmt == "wilson":
            est = wilson_interval(k, n)
            return f"{est.value:.2f} [{est.ci_low:.2f}, {est.ci_high:.2f}]"
        return format(k / n, fmt)
    if fmt == "wilson":
        raise FigureError(f"format wilson needs a count pair [k, n], got {value!r}")
    if fmt in ("ci", "ci%"):
        if not isinstance(value, dict) or not {"value", "ci_low", "ci_high"} <= value.keys():
            raise FigureError(f"format {fmt} needs value, ci_low and ci_high, got {value!r}")
        spec = ".2f" if fmt == "ci" else ".0%"
        return f"{value['value']:{spec}} [{value['ci_low']:{spec}}, {value['ci_high']:{spec}}]"
    if fmt == "yesno":
        return "yes" if value else "no"
    if fmt == "ms-as-s":
        return f"{value / 1000:.1f}"
    if fmt == "frac":
        return f"{round(value['value'] * value['n'])}/{value['n']}"
    if isinstance(value, dict | list):
        raise FigureError(f"a figure must be a number or a string, got {type(value).__name__}")
    if fmt:
        return format(value, fmt)
    if isinstance(value, float):
        written = repr(value)
        return written if "e" not in written and len(written.split(".")[1]) <= 3 else format(value, ".2f")
    return str(value)


def fill(markdown: str, where: str = "page") -> str:
    """The page with every placeholder replaced by its figure."""

    def one(m: re.Match) -> str:
        try:
            return render(lookup(_load(m.group(1)), m.group(2)), m.group(3))
        except (FigureError, KeyError, TypeError, ValueError) as exc:
            raise FigureError(f"{where}: {m.group(0)}: {exc}") from None

    return PLACEHOLDER.sub(one, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the page's figures from their result files."""
    try:
        return fill(markdown, page.file.src_uri)
    except FigureError as exc:
        raise PluginError(str(exc)) from None
