"""The run's labels file (``RUN_DIR/labels/labels.csv``, the CSV ``rag-eval label`` writes and
``rag-eval report RUN_DIR --labels`` reads), updated one answer at a time: read, change one row,
write a temporary file, fsync and ``os.replace`` it, all under a lock (a thread lock for the tabs
of one server, ``flock`` on the labels folder for a second server), so a killed server leaves the
last whole file and two tabs never lose each other's label."""

from __future__ import annotations

import csv
import fcntl
import io
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rag_eval.judges.registry import HUMAN_LABELS
from rag_eval.labels.human import COLUMNS

LABELS_FILE = Path("labels") / "labels.csv"

_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


def labels_path(run_dir: Path) -> Path:
    """Where the view reads and writes a run's labels (``rag-eval label``'s default place)."""
    return run_dir / LABELS_FILE


def as_cell(value: bool | None) -> str:
    """A label as the CSV holds it: yes, no, or blank (not labelled)."""
    return "" if value is None else ("yes" if value else "no")


def from_cell(raw: str | None) -> bool | None:
    """The CSV's yes/no (any spelling ``rag-eval report`` accepts) as a label; anything else blank."""
    v = (raw or "").strip().lower()
    if v in ("yes", "y", "true", "1"):
        return True
    if v in ("no", "n", "false", "0"):
        return False
    return None


def read_rows(path: Path) -> list[dict[str, str]]:
    """The labels file's rows (every column as text); none when the file does not exist yet."""
    if not path.exists():
        return []
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def _render(rows: list[dict[str, str]]) -> str:
    out = io.StringIO()
    extra = [c for r in rows for c in r if c not in COLUMNS and c is not None]
    w = csv.DictWriter(out, fieldnames=COLUMNS + list(dict.fromkeys(extra)), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: r.get(c) or "" for c in w.fieldnames})
    return out.getvalue()


def write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    """The whole file, atomically and durably: a temporary file beside it, fsynced, renamed over it,
    and the folder fsynced, so the rename survives a crash."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".labels-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(_render(rows))
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


def set_label(
    rows: list[dict[str, str]], base: dict[str, str], values: dict[str, bool | None], note: str | None
) -> list[dict[str, str]]:
    """``rows`` with one answer's labels set: its row updated in place (other columns kept), or
    ``base`` (the answer's row without labels) appended."""
    key = (base["question_id"], base["prompt"])
    cells = {c: as_cell(v) for c, v in values.items() if c in HUMAN_LABELS}
    for r in rows:
        if (r.get("question_id"), r.get("prompt")) == key:
            r.update(cells)
            if note is not None:
                r["note"] = note
            return rows
    return [*rows, {**base, **{c: "" for c in HUMAN_LABELS}, **cells, "note": note or ""}]


def labelled_values(rows: list[dict[str, str]]) -> dict[tuple[str, str], dict[str, bool | None]]:
    """Each row's labels by (question id, prompt)."""
    return {
        (r.get("question_id", ""), r.get("prompt", "")): {c: from_cell(r.get(c)) for c in HUMAN_LABELS} for r in rows
    }
