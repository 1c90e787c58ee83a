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
from rag_eval.labels.human import COLUMNS, LabelsRow, answer_differs
from rag_eval.labels.store import as_cell, from_cell, has_label, label_counts, locked, read_rows, update, write_rows

__all__ = [
    "LABELS_FILE",
    "as_cell",
    "as_shown",
    "from_cell",
    "has_label",
    "label_counts",
    "labelled_values",
    "labels_path",
    "locked",
    "read_rows",
    "replaced_path",
    "set_label",
    "update",
    "write_rows",
]

LABELS_FILE = Path("labels") / "labels.csv"


def labels_path(run_dir: Path) -> Path:
    """Where the view reads and writes a run's labels (``rag-eval label``'s default place)."""
    return run_dir / LABELS_FILE


# The cells of a row that describe the answer; every other cell is a person's (a label or the note).
_ANSWER_CELLS = ("question_id", "prompt", "weight", "inclusion_probability", "question", "reference", "answer")


def replaced_path(run_dir: Path) -> Path:
    """Where the view keeps the rows it replaced: labels of an answer the run no longer gives."""
    return labels_path(run_dir).with_name("labels.replaced.csv")


def _blank(row: dict[str, str]) -> dict[str, str]:
    """The row with its labels and note blank: what it says of the answer it describes, only."""
    return {k: v if k in _ANSWER_CELLS else "" for k, v in row.items()}


def as_shown(rows: list[dict[str, str]], answers: dict[tuple[str, str], str | None]) -> list[dict[str, str]]:
    """The rows as the labelling page counts and shows them: a row labelling another answer than
    the run's (``answers``: the run's by question id and prompt; the file of a run since answered
    anew) holds no label of this answer, so it is shown blank."""
    named = [LabelsRow.of(r) for r in rows]
    return [
        _blank(r) if n.key in answers and answer_differs(n.answer, answers[n.key]) else r for r, n in zip(rows, named)
    ]


def set_label(
    rows: list[dict[str, str]],
    base: dict[str, str],
    values: dict[str, bool | None],
    note: str | None,
    columns: Iterable[str] = HUMAN_LABELS,
    replaced: list[dict[str, str]] | None = None,
) -> list[dict[str, str]]:
    """``rows`` with one answer's labels set: its row updated in place (other columns kept), or
    ``base`` (the answer's row without labels) appended. ``columns``: the run's label columns
    (``labels.columns.label_columns``: a criterion's too). A row that labels another answer than
    ``base``'s (the run answered anew since) is started again from ``base``, its earlier labels and
    note added to ``replaced``, since the person has labelled the answer the page showed."""
    columns = list(columns)
    named = LabelsRow.of(base)
    key = (named.question_id, named.prompt)
    cells = {c: as_cell(v) for c, v in values.items() if c in columns}
    for r in rows:
        n = LabelsRow.of(r)
        if (n.question_id, n.prompt) == key:
            if answer_differs(n.answer, named.answer):
                if replaced is not None:
                    replaced.append(dict(r))
                r.update(_blank(r))
                # The draw's weight and inclusion probability stay: the question was drawn with them
                # (a design-based figure needs the probability the draw had, whatever was answered since).
                r.update({k: v for k, v in base.items() if k in ("question", "reference", "answer")})
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
