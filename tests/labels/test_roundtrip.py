"""The labelling round trip, end to end, as a person goes through it: answers labelled in `rag-eval
view` (its HTTP API, served by its own process), `rag-eval label RUN --n 10` run again (another
process, while the view still serves the run), two of the new answers labelled in the view, then
`rag-eval report RUN --labels F`, `--labels F --adapt --no-save` and a plain `rag-eval report RUN`.
Every label given is in labels.csv with its value; every line that counts labels counts them per
column right (a blank row nowhere); the run's own report.json, summary.json, report.md and
report.html are byte for byte what the audit wrote."""

import csv
import hashlib
import json
import re
import shutil
import signal
import subprocess
import sys

import httpx
import pytest

from rag_eval.cli import main
from rag_eval.judges.registry import HUMAN_LABELS

from ..conftest import ROOT, SMALL_CORPUS, SMALL_QUESTIONS, write_jsonl
from ..view.conftest import EXTRA, free_port, make_run
from ..view.test_serve import start_server

RECORD = ("report.json", "summary.json", "report.md", "report.html")
YESNO = {True: "yes", False: "no", None: ""}


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """A finished audit of 44 questions by the scripted model (the view tests' run, twice the extra questions)."""
    folder = tmp_path_factory.mktemp("roundtrip")
    write_jsonl(folder / "corpus.jsonl", SMALL_CORPUS)
    # More questions than the view's draw (30), so a later `rag-eval label` draw adds answers.
    more = [{**q, "id": f"m{q['id']}", "question": q["question"].replace("asked", "put")} for q in EXTRA]
    write_jsonl(folder / "questions.jsonl", SMALL_QUESTIONS + EXTRA + more)
    shutil.copy(ROOT / "prompts" / "answer.md", folder / "answer.md")
    return make_run(folder)


def _cli(*args):
    """A rag-eval command in a process of its own: (exit status, stdout)."""
    done = subprocess.run([sys.executable, "-m", "rag_eval.cli", *args], capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout


def _hashes(run, names):
    return {n: hashlib.sha256((run / n).read_bytes()).hexdigest() for n in names}


def _rows(run):
    with (run / "labels" / "labels.csv").open(encoding="utf-8", newline="") as fh:
        return {(r["question_id"], r["prompt"]): r for r in csv.DictReader(fh)}


def _queue(base, name):
    """The view's labelling queue, in order: (question id, prompt) of every page."""
    first = httpx.get(f"{base}/runs/{name}/label/0").text
    total = int(re.search(r'data-total="(\d+)"', first).group(1))
    out = []
    for i in range(total):
        page = httpx.get(f"{base}/runs/{name}/label/{i}").text
        out.append(
            (re.search(r'data-qid="([^"]*)"', page).group(1), re.search(r'data-prompt="([^"]*)"', page).group(1))
        )
    return out


def _post(base, name, key, values):
    r = httpx.post(
        f"{base}/api/runs/{name}/labels",
        json={"question_id": key[0], "prompt": key[1], "values": values},
        headers={"origin": base},
    )
    assert r.status_code == 200, r.text
    return r.json()


def _given(i):
    """The labels given to the i-th answer: every column, some, or none (a person who skipped all)."""
    if i == 5:
        return {c: None for c in HUMAN_LABELS}
    values = {"correct": i % 3 != 0, "refused": i % 5 == 0}
    if i % 4:
        values["faithful"] = i % 2 == 0
    return values


def _counts(given):
    labelled = [v for v in given.values() if any(x is not None for x in v.values())]
    per_column = {c: sum(v.get(c) is not None for v in labelled) for c in HUMAN_LABELS}
    return len(labelled), per_column


def test_labels_survive_the_round_trip_and_the_runs_record_stays_as_the_audit_wrote_it(audited, tmp_path, capsys):
    run = tmp_path / audited.name
    shutil.copytree(audited, run)
    record = _hashes(run, RECORD)
    port = free_port()
    view = start_server(tmp_path, port)
    base = f"http://127.0.0.1:{port}"
    given: dict[tuple[str, str], dict] = {}
    try:
        queue = _queue(base, run.name)
        assert len(queue) >= 22
        for i, key in enumerate(queue[:22]):
            given[key] = _given(i)
            _post(base, run.name, key, given[key])
        answers, per_column = _counts(given)
        assert (answers, per_column["correct"], per_column["faithful"]) == (21, 21, 15)

        # `rag-eval label` again, in its own process, while the view still serves the run.
        before = _rows(run)
        code, out = _cli("label", str(run), "--n", "10", "--seed", "1")
        assert code == 0, out
        kept = re.search(r"kept (\d+) labelled answers and (\d+) still to label .* added (\d+) new answers", out)
        assert kept is not None, out
        assert int(kept.group(1)) == answers and int(kept.group(1)) + int(kept.group(2)) == len(before)
        after = _rows(run)
        added = [k for k in after if k not in before]
        assert len(added) == int(kept.group(3)) > 0 and set(before) <= set(after)
        for key, values in given.items():
            assert {c: after[key][c] for c in values} == {c: YESNO[v] for c, v in values.items()}, key
        assert (run / "labels" / "labels.csv.bak").read_bytes() != b""

        # Two of the draw's new answers labelled in the view, beside the others.
        for key in added[:2]:
            given[key] = {"correct": True, "faithful": False, "refused": False}
            _post(base, run.name, key, given[key])
    finally:
        view.send_signal(signal.SIGTERM)
        view.wait(10)
    answers, per_column = _counts(given)
    rows = _rows(run)
    for key, values in given.items():
        assert {c: rows[key][c] for c in values} == {c: YESNO[v] for c, v in values.items()}, key
    labels = run / "labels" / "labels.csv"
    labels_bytes = labels.read_bytes()
    line = f"labels: {answers} answers (" + ", ".join(f"{c} {n}" for c, n in per_column.items()) + ")"
    counted = f"{answers} answers labelled: " + ", ".join(f"{c} {n}" for c, n in per_column.items())

    capsys.readouterr()
    assert main(["report", str(run), "--labels", str(labels)]) == 0
    assert line in capsys.readouterr().out
    assert f"## With human labels ({counted}; " in (run / "report.labelled.md").read_text()
    summary = json.loads((run / "summary.labelled.json").read_text())
    report = json.loads((run / "report.labelled.json").read_text())
    assert report["labels"]["answers_labelled"] == answers and report["labels"]["per_column"] == per_column
    _each_figure_counts_its_columns_labels(summary, report, given)

    code, out = _cli("report", str(run), "--labels", str(labels), "--adapt", "--no-save")
    assert code == 0 and line in out, out
    adapted = json.loads((run / "report.adapted.json").read_text())
    assert adapted["labels"]["answers_labelled"] == answers and adapted["labels"]["per_column"] == per_column
    assert _hashes(run, RECORD) == record  # nothing of the audit's record rewritten so far

    code, out = _cli("report", str(run))
    assert code == 0, out
    assert _hashes(run, RECORD) == record
    assert labels.read_bytes() == labels_bytes  # the reports only read the labels


def _each_figure_counts_its_columns_labels(summary, report, given):
    """summary.labelled.json: each judged figure's prediction-powered estimate rests on the answers
    it covers that hold yes or no under its label column, and no other."""
    covers = {}  # figure -> the answers (question id, prompt) it was judged on
    for r in report["judges"]["records"]:
        if r.get("status") in ("judged", "uncertain"):
            covers.setdefault(r["judge"], set()).add((r["question_id"], r["prompt"]))
    checked = 0
    for figure, est in summary["generation"]["base"].items():
        ppi = est.get("ppi") if isinstance(est, dict) else None
        if not ppi or figure not in covers:
            continue
        column = {"correctness": "correct", "faithfulness_yesno": "faithful"}.get(figure)
        if column is None:
            continue
        want = sum(v.get(column) is not None for k, v in given.items() if k in covers[figure])
        assert ppi["n_labels"] == want, (figure, ppi["n_labels"], want)
        checked += 1
    assert checked == 2
