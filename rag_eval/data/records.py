"""Reading JSON arrays and JSONL files into records that remember their line."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval.errors import DataError, Problem
from rag_eval.text import record_lines


@dataclass(frozen=True)
class Record:
    """One JSON object from a file, with the line it starts on."""

    data: dict[str, Any]
    where: str


@contextmanager
def collection_paused() -> Iterator[None]:
    """The cyclic garbage collector paused over a block (or, as a decorator, a function) that makes
    many objects and no cycles (the records and chunks of a large corpus, a retrieval stage's
    rankings, records and findings): each collection walks every object alive, the corpus's
    included, about a second of a 100,000-chunk stage. Objects are still freed as they go; a cycle
    made meanwhile is collected after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_text(path: Path, what: str) -> str:
    """A file's text, or a DataError that says why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(
            Problem(
                str(path),
                f"the {what} file does not exist",
                "check the path",
            )
        ) from None
    except IsADirectoryError:
        raise DataError(
            Problem(
                str(path),
                f"the {what} path is a folder, not a file",
                "for a folder of documents use corpus: {folder: ...}",
            )
        ) from None
    except UnicodeDecodeError as exc:
        raise DataError(
            Problem(str(path), f"the {what} file is not UTF-8 text (byte {exc.start})", "save it as UTF-8")
        ) from None
    except OSError as exc:
        raise DataError(
            Problem(str(path), f"cannot read the {what} file: {exc.strerror or exc}", "check its permissions")
        ) from None


def read_records(path: Path, what: str) -> list[Record]:
    """Records of a JSON array (``.json``) or of JSON Lines (any other extension)."""
    text = read_text(path, what)
    if not text.strip():
        raise DataError(Problem(str(path), f"the {what} file is empty", f"add {what} records to it"))
    if path.suffix.lower() == ".json" or text.lstrip().startswith("["):
        return _read_array(text, path, what)
    return _read_lines(text, path, what)


def _read_lines(text: str, path: Path, what: str) -> list[Record]:
    records, problems = [], []
    for n, line in enumerate(record_lines(text), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(
                Problem(
                    f"{path}:{n}",
                    f"malformed JSON: {exc.msg} (column {exc.colno})",
                    "each line must be one complete JSON object",
                )
            )
            continue
        if not isinstance(obj, dict):
            problems.append(
                Problem(
                    f"{path}:{n}",
                    f"expected a JSON object, got {type(obj).__name__}",
                    'write it as {"field": value, ...}',
                )
            )
            continue
        records.append(Record(obj, f"{path}:{n}"))
    if problems:
        raise DataError(problems)
    return records


def _read_array(text: str, path: Path, what: str) -> list[Record]:
    decoder = json.JSONDecoder()

    def fail(pos: int, msg: str, fix: str) -> DataError:
        line = text.count("\n", 0, pos) + 1
        return DataError(Problem(f"{path}:{line}", msg, fix))

    pos = _skip_ws(text, 0)
    if not text.startswith("[", pos):
        raise fail(
            pos,
            f"a .json {what} file must hold a JSON array of objects",
            "wrap the records in [ ... ], or save them one per line as .jsonl",
        )
    pos = _skip_ws(text, pos + 1)
    records: list[Record] = []
    while not text.startswith("]", pos):
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise fail(
                exc.pos,
                f"malformed JSON: {exc.msg} (column {exc.colno})",
                "fix the JSON syntax at that line (a missing comma or quote?)",
            ) from None
        line = text.count("\n", 0, pos) + 1
        if not isinstance(obj, dict):
            raise fail(
                pos,
                f"record {len(records) + 1} is a {type(obj).__name__}, not an object",
                'write each record as {"field": value, ...}',
            )
        records.append(Record(obj, f"{path}:{line} (record {len(records) + 1})"))
        pos = _skip_ws(text, end)
        if text.startswith(",", pos):
            pos = _skip_ws(text, pos + 1)
        elif not text.startswith("]", pos):
            raise fail(pos, "malformed JSON: expected ',' or ']' after a record", "add the missing comma")
        if pos >= len(text):
            raise fail(pos, "malformed JSON: the array is not closed", "end the file with ]")
    if text[pos + 1 :].strip():
        raise fail(pos + 1, "malformed JSON: text after the closing ]", "remove it")
    return records


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos
