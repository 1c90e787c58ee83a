"""The run's labels file (``RUN_DIR/labels/labels.csv``, the CSV ``rag-eval label`` writes and
``rag-eval report RUN_DIR --labels`` reads), updated one answer at a time: read, change one row,
write a temporary file, fsync and ``os.replace`` it, all under a lock (``labels/store.py``: a thread
lock for the tabs of one server, ``flock`` on the labels folder for a second server or ``rag-eval
label`` merging a new draw), so a killed server leaves the last whole file and two tabs never lose
each other's label."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rag_eval.judges.registry import HUMAN_LABELS
from rag_eval.labels.human import COLUMNS, LabelsRow
from rag_eval.labels.store import as_cell, from_cell, has_label, label_counts, locked, read_rows, update, write_rows

__all__ = [
    "LABELS_FILE",
    "as_cell",
    "from_cell",
    "has_label",
    "label_counts",
    "labelled_values",
    "labels_path",
    "locked",
    "read_rows",
    "set_label",
    "update",
    "write_rows",
]

LABELS_FILE = Path("labels") / "labels.csv"


def labels_path(run_dir: Path) -> Path:
    """Where the view reads and writes a run's labels (``rag-eval label``'s default place)."""
    return run_dir / LABELS_FILE


def set_label(
    rows: list[dict[str, str]],
    base: dict[str, str],
    values: dict[str, bool | None],
    note: str | None,
    columns: Iterable[str] = HUMAN_LABELS,
) -> list[dict[str, str]]:
    """``rows`` with one answer's labels set: its row updated in place (other columns kept), or
    ``base`` (the answer's row without labels) appended. ``columns``: the run's label columns
    (``labels.columns.label_columns``: a criterion's too)."""
    columns = list(columns)
    named = LabelsRow.of(base)
    key = (named.question_id, named.prompt)
    cells = {c: as_cell(v) for c, v in values.items() if c in columns}
    for r in rows:
        n = LabelsRow.of(r)
        if (n.question_id, n.prompt) == key:
            r.update(cells)
            if note is not None:
                r.update(note=note)
            return rows
    return [*rows, {**base, **{c: "" for c in columns}, **cells, "note": note or ""}]


def labelled_values(rows: list[dict[str, str]]) -> dict[tuple[str, str], dict[str, bool | None]]:
    """Each row's labels by (question id, prompt): the built-in columns and every column that is not
    one of ``rag-eval label``'s (a criterion's)."""
    return {
        LabelsRow.of(r).key: {
            c: from_cell(r.get(c)) for c in [*HUMAN_LABELS, *(c for c in r if isinstance(c, str) and c not in COLUMNS)]
        }
        for r in rows
    }
