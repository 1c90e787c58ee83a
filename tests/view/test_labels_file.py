"""The labels file updated one answer at a time: atomic, locked, in rag-eval label's columns."""

import csv
import threading

import pytest

from rag_eval.labels.human import COLUMNS, read_labels
from rag_eval.view import labels_file


def _base(qid):
    return {
        "question_id": qid,
        "prompt": "base",
        "weight": "1.0",
        "inclusion_probability": "0.5",
        "question": f"{qid}?",
    }


def test_two_tabs_labelling_at_once_lose_nothing(tmp_path):
    path = tmp_path / "labels" / "labels.csv"
    ids = [f"q{i}" for i in range(40)]

    def tab(mine):
        for q in mine:
            labels_file.update(path, lambda rows, q=q: labels_file.set_label(rows, _base(q), {"correct": True}, None))

    threads = [threading.Thread(target=tab, args=(ids[k::2],)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = list(csv.DictReader(path.open()))
    assert sorted(r["question_id"] for r in rows) == sorted(ids)
    assert all(r["correct"] == "yes" for r in rows)
    assert list(rows[0]) == COLUMNS
    assert not [p for p in path.parent.iterdir() if p.name != "labels.csv"]  # no temporary file left


def test_a_label_updates_its_row_and_keeps_the_others(tmp_path):
    path = tmp_path / "labels" / "labels.csv"
    labels_file.update(path, lambda rows: labels_file.set_label(rows, _base("q1"), {"correct": False}, "odd"))
    labels_file.update(path, lambda rows: labels_file.set_label(rows, _base("q2"), {"refused": True}, None))
    labels_file.update(path, lambda rows: labels_file.set_label(rows, _base("q1"), {"faithful": True}, None))
    rows = labels_file.read_rows(path)
    assert [(r["question_id"], r["correct"], r["faithful"], r["refused"], r["note"]) for r in rows] == [
        ("q1", "no", "yes", "", "odd"),
        ("q2", "", "", "yes", ""),
    ]
    labels = read_labels(path, {("q1", "base"), ("q2", "base")})
    assert labels[0].values == {"correct": False, "faithful": True, "refused": None}
    assert labels[0].inclusion_probability == 0.5


def test_a_failed_write_leaves_the_last_whole_file(tmp_path, monkeypatch):
    path = tmp_path / "labels" / "labels.csv"
    labels_file.update(path, lambda rows: labels_file.set_label(rows, _base("q1"), {"correct": True}, None))
    before = path.read_text()

    def boom(*a):
        raise OSError("disk full")

    monkeypatch.setattr(labels_file.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        labels_file.update(path, lambda rows: labels_file.set_label(rows, _base("q2"), {"correct": True}, None))
    assert path.read_text() == before
    assert [p.name for p in path.parent.iterdir()] == ["labels.csv"]
