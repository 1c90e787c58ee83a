"""The labels file updated one answer at a time: atomic, locked, in rag-eval label's columns; and
`rag-eval label` on a file the view wrote: every label kept, the new draw merged."""

import csv
import threading

import pytest
from starlette.testclient import TestClient

from rag_eval.cli import main
from rag_eval.judges.registry import HUMAN_LABELS
from rag_eval.labels import store
from rag_eval.labels.human import COLUMNS, Sampler, read_labels
from rag_eval.view import labels_file, queue, run_folders
from rag_eval.view.app import create_app
from rag_eval.view.queue import build_queue
from rag_eval.view.run_folders import load_report


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

    monkeypatch.setattr(store.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        labels_file.update(path, lambda rows: labels_file.set_label(rows, _base("q2"), {"correct": True}, None))
    assert path.read_text() == before
    assert [p.name for p in path.parent.iterdir()] == ["labels.csv"]


def _key(row):
    return (row["question_id"], row["prompt"])


def _given(row):
    """What a person gave on a row: its labels and note."""
    return {c: row[c] for c in (*HUMAN_LABELS, "note")}


def test_rag_eval_label_after_the_view_keeps_every_label_and_merges_the_new_draw(runs, monkeypatch, capsys):
    """Issue 46 item 1: label answers in the view (its draw, here of 10 of the 24 questions, and two
    uncertain answers after it), then `rag-eval label RUN --n 8`, again, and with another seed: every
    label and note stays on its answer, the new draw's answers are appended once, and every row's
    inclusion probability is that of the union of the draws, 1 - (1 - p)(1 - q)."""
    folder, first, _ = runs
    run = folder / first
    monkeypatch.setattr(queue, "DRAW_N", 10)
    c = TestClient(create_app(folder))
    order = [it for it in build_queue(run, load_report(run), []) if it.part == "drawn"][:5]
    order += [it for it in build_queue(run, load_report(run), []) if it.part == "uncertain"][:2]
    for i, it in enumerate(order):
        body = {"correct": i % 2 == 0, "faithful": True if i < 6 else None, "refused": False}
        r = c.post(
            f"/api/runs/{first}/labels?figures=0",
            json={"question_id": it.question_id, "prompt": it.prompt, "values": body, "note": f"note {i}, kept"},
        )
        assert r.status_code == 200
    path = labels_file.labels_path(run)
    before = labels_file.read_rows(path)
    assert len(before) == 12 and sum(labels_file.has_label(r) for r in before) == 7
    assert {r["inclusion_probability"] for r in before[-2:]} == {"1.0"}  # the uncertain ones

    text = path.read_text()
    # The view's own draw (rag-eval label's default kind and seed, 10 questions) is already there.
    assert main(["label", str(run), "--n", "10"]) == 0
    assert path.read_text() == text
    assert f"{path} already holds this draw (10 questions, seed 0)" in capsys.readouterr().out
    assert main(["label", str(run), "--n", "8"]) == 0
    out = capsys.readouterr().out
    after = labels_file.read_rows(path)
    added = after[len(before) :]
    assert f"kept 7 labelled answers and 5 still to label in {path}" in out
    assert f"added {len(added)} new answers" in out and (run / "labels" / "labels.csv.bak").read_text()
    assert [_key(r) for r in after[: len(before)]] == [_key(r) for r in before]
    assert [_given(r) for r in after[: len(before)]] == [_given(r) for r in before]
    assert added and all(not labels_file.has_label(r) for r in added)
    assert labels_file.label_counts(after) == (7, {"correct": 7, "faithful": 6, "refused": 7})
    assert len({_key(r) for r in after}) == len(after)  # no answer twice
    # The union of the view's draw (p, 10 questions) and the new one (q, 8), drawn independently.
    p, q = (Sampler(run).probabilities(n, active=True) for n in (10, 8))
    for b, a in zip(before, after):
        assert float(a["inclusion_probability"]) == pytest.approx(
            1 - (1 - float(b["inclusion_probability"])) * (1 - q[b["question_id"]]), abs=2e-6
        )
    for a in added:
        x = a["question_id"]
        assert float(a["inclusion_probability"]) == pytest.approx(1 - (1 - p[x]) * (1 - q[x]), abs=2e-6)
    assert {"1.0"} == {a["inclusion_probability"] for a in after[len(before) - 2 : len(before)]}
    page = (run / "labels" / "labels.html").read_text()
    assert page.count("<section") == len(after) and page.count(" checked>") == 7 * 3 - 1
    assert "note 3, kept" in page

    # The same command again: the file already holds that draw; nothing changes.
    text = path.read_text()
    assert main(["label", str(run), "--n", "8"]) == 0
    assert "already holds this draw" in capsys.readouterr().out and path.read_text() == text
    # Another seed: a third draw, independent of both; the labels still on their answers.
    assert main(["label", str(run), "--n", "8", "--seed", "1"]) == 0
    third = labels_file.read_rows(path)
    assert [_given(r) for r in third[: len(before)]] == [_given(r) for r in before]
    assert len({_key(r) for r in third}) == len(third) >= len(after)
    for a, t in zip(after, third):
        assert float(t["inclusion_probability"]) == pytest.approx(
            1 - (1 - float(a["inclusion_probability"])) * (1 - q[a["question_id"]]), abs=3e-6
        )
    # rag-eval report --labels counts the labelled answers only, per column.
    capsys.readouterr()
    assert main(["report", str(run), "--labels", str(path)]) == 0
    assert "labels: 7 answers (correct 7, faithful 6, refused 7)" in capsys.readouterr().out
    # The view reads the merged file: its queue is the file's rows, the first unlabelled one next.
    start = c.get(f"/runs/{first}/label", follow_redirects=False)
    assert start.headers["location"] == f"/runs/{first}/label/5"
    assert "· 7 labelled ·" in c.get(f"/runs/{first}/label/5").text


def test_a_labels_file_whose_draw_is_unknown_is_left_as_it_is(runs, capsys):
    """A hand-made labels file without inclusion probabilities: `rag-eval label` cannot add a draw
    with the figures kept unbiased, so it says so, names the file, and changes nothing."""
    folder, first, _ = runs
    path = labels_file.labels_path(folder / first)
    path.parent.mkdir()
    path.write_text("question_id,prompt,correct\nq1,base,yes\nq2,base,\n")
    assert main(["label", str(folder / first), "--n", "10"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: it holds 1 labelled answers" in err and "line 2 has no inclusion probability" in err
    assert "--out DIR" in err
    assert path.read_text() == "question_id,prompt,correct\nq1,base,yes\nq2,base,\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["labels.csv"]


def test_a_row_labelling_an_answer_the_run_no_longer_gives_is_shown_blank_and_started_again(runs, capsys):
    """findings-51 M4: the run's labels file holds a row labelled on an earlier answer to the same
    question (the run answered anew since, or a file copied in). The view counts it unlabelled,
    shows it without the old picks and starts the queue there; labelling it writes this answer's
    text and labels into the row, and the earlier labels and note are kept in labels.replaced.csv;
    the file then reads as this run's labels."""
    folder, first, _ = runs
    run = folder / first
    c = TestClient(create_app(folder))
    order = [it for it in build_queue(run, load_report(run), []) if it.part == "drawn"][:2]
    for it in order:
        body = {"correct": True, "faithful": True, "refused": False}
        json_body = {"question_id": it.question_id, "prompt": it.prompt, "values": body, "note": "my note"}
        assert c.post(f"/api/runs/{first}/labels?figures=0", json=json_body).status_code == 200
    path = labels_file.labels_path(run)
    rows = labels_file.read_rows(path)
    stale = next(r for r in rows if _key(r) == order[0].key)
    run_answer = stale["answer"]
    weight = stale["weight"]
    stale.update(answer="An earlier answer, since replaced.", correct="no", weight="9.0")
    labels_file.write_rows(path, rows)
    # findings-52 L12: the run list counts it unlabelled too.
    assert run_folders.labelled_count(run)[0] == 1
    capsys.readouterr()
    assert main(["report", str(run), "--labels", str(path)]) == 2
    assert "is not this run's answer" in capsys.readouterr().err

    start = c.get(f"/runs/{first}/label", follow_redirects=False)
    assert start.headers["location"] == f"/runs/{first}/label/0"
    page = c.get(f"/runs/{first}/label/0").text
    assert "· 1 labelled ·" in page and " checked" not in page and "my note" not in page
    body = {"correct": True, "faithful": None, "refused": False}
    json_body = {"question_id": order[0].question_id, "prompt": order[0].prompt, "values": body, "note": None}
    assert c.post(f"/api/runs/{first}/labels?figures=0", json=json_body).status_code == 200
    row = next(r for r in labels_file.read_rows(path) if _key(r) == order[0].key)
    # The question was drawn with the row's weight: it stays (findings-52 L12 thought otherwise).
    assert (row["answer"], row["weight"]) == (run_answer, "9.0") and weight != "9.0"
    assert (row["correct"], row["faithful"], row["refused"], row["note"]) == ("yes", "", "no", "")
    [kept] = labels_file.read_rows(labels_file.replaced_path(run))
    assert (kept["answer"], kept["correct"], kept["faithful"], kept["note"]) == (
        "An earlier answer, since replaced.",
        "no",
        "yes",
        "my note",
    )
    assert main(["report", str(run), "--labels", str(path)]) == 0
    assert "labels: 2 answers (correct 2, faithful 1, refused 2)" in capsys.readouterr().out
