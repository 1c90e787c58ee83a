"""A labels CSV on disk (``RUN_DIR/labels/labels.csv``, written by ``rag-eval label`` and by
``rag-eval view`` one answer at a time): its rows read as text, the whole file written atomically
(a temporary file, fsynced and renamed over it), all under a lock (a thread lock within one process,
``flock`` on the labels folder across processes), so a killed writer leaves the last whole file and
two writers never lose each other's labels."""

from __future__ import annotations

import csv
import fcntl
import io
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rag_eval.judges.registry import HUMAN_LABELS
from rag_eval.labels.human import COLUMNS, NO, YES

_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


def as_cell(value: bool | None) -> str:
    """A label as the CSV holds it: yes, no, or blank (not labelled)."""
    return "" if value is None else ("yes" if value else "no")


def from_cell(raw: str | None) -> bool | None:
    """The CSV's yes/no (any spelling ``rag-eval report`` accepts) as a label; anything else blank."""
    v = (raw or "").strip().lower()
    if v in YES:
        return True
    if v in NO:
        return False
    return None


def has_label(row: dict[str, str], columns: Iterable[str] | None = None) -> bool:
    """Whether a row holds yes or no under any label column (a blank row is an answer drawn, not
    labelled). ``columns``: the run's label columns; by default the built-in ones and every column
    that is not one of ``rag-eval label``'s (a criterion's), so a row labelled for a criterion alone
    is never taken for a blank one."""
    names = (
        columns
        if columns is not None
        else [*HUMAN_LABELS, *(c for c in row if isinstance(c, str) and c not in COLUMNS)]
    )
    return any(from_cell(row.get(c)) is not None for c in names)


def label_counts(rows: list[dict[str, str]], columns: Iterable[str] | None = None) -> tuple[int, dict[str, int]]:
    """(answers with a yes or no under any column, the answers with yes or no under each column):
    a row counts for a column only where that column holds yes or no. ``columns``: the run's label
    columns (``columns.label_columns``; default the built-in ones)."""
    names = list(columns) if columns is not None else list(HUMAN_LABELS)
    per_column = {c: sum(from_cell(r.get(c)) is not None for r in rows) for c in names}
    return sum(has_label(r, names) for r in rows), per_column


def read_rows(path: Path) -> list[dict[str, str]]:
    """The labels file's rows (every column as text); none when the file does not exist yet."""
    if not path.exists():
        return []
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def render(rows: list[dict[str, str]]) -> str:
    """The CSV text of ``rows``: rag-eval label's columns first, any other column a person added after.
    A built-in label column no row holds (``faithful`` of a run without a faithfulness judge, whose
    rows were drawn without it) is left out; one a row holds stays, labels in it or not."""
    out = io.StringIO()
    extra = [c for r in rows for c in r if c not in COLUMNS and c is not None]
    held = {c for r in rows for c in r}
    fixed = [c for c in COLUMNS if c not in HUMAN_LABELS or c in held or not rows]
    w = csv.DictWriter(out, fieldnames=fixed + list(dict.fromkeys(extra)), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: r.get(c) or "" for c in w.fieldnames})
    return out.getvalue()


def write_atomically(path: Path, text: str) -> None:
    """``text`` as the whole file, atomically and durably: a temporary file beside it, fsynced,
    renamed over it, and the folder fsynced, so the rename survives a crash."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    """The whole labels file, atomically and durably (``write_atomically``)."""
    write_atomically(path, render(rows))


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Exclusive use of one labels file: within this process and across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    key = path.resolve()
    with _locks_guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            fcntl.flock(dir_fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(dir_fd, fcntl.LOCK_UN)
            os.close(dir_fd)


def update(path: Path, change: Callable[[list[dict[str, str]]], list[dict[str, str]]]) -> list[dict[str, str]]:
    """Read the file, apply ``change`` to its rows and write the result, under the lock; returns
    the rows written."""
    with locked(path):
        rows = change(read_rows(path))
        write_rows(path, rows)
        return rows
