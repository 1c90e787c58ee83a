"""The view counts labels per column, as the report and the CLI do: the run list, the run page, the
labelling page and the figures the page reads after each label all say "N answers labelled:
correct a, faithful b, refused c", a blank row counting nowhere and a row counting for a column only
where that column holds yes or no."""

import json

from starlette.testclient import TestClient

from rag_eval.cli import main
from rag_eval.judges.registry import HUMAN_LABELS
from rag_eval.view.app import create_app
from rag_eval.view.labels_file import labels_path, read_rows


def _label(c, run, qid, **values):
    r = c.post(f"/api/runs/{run}/labels", json={"question_id": qid, "prompt": "base", "values": values})
    assert r.status_code == 200, r.text
    return r.json()


def test_the_view_counts_labels_per_column_as_the_report_does(runs, capsys):
    folder, first, _ = runs
    c = TestClient(create_app(folder))
    _label(c, first, "q1", correct=True, faithful=True, refused=False)
    _label(c, first, "q2", correct=False, refused=False)
    last = _label(c, first, "q3", refused=True)
    rows = read_rows(labels_path(folder / first))
    blank = [r for r in rows if not any(r[c] for c in ("correct", "faithful", "refused"))]
    assert len(rows) > 3 and len(blank) == len(rows) - 3  # the draw's rows, unlabelled, count nowhere
    per_column = {**dict.fromkeys(HUMAN_LABELS, 0), "correct": 2, "faithful": 1, "refused": 3}
    line = "3 answers labelled: " + ", ".join(f"{c} {n}" for c, n in per_column.items())
    assert line.startswith("3 answers labelled: correct 2, faithful 1, refused 3")
    assert last["figures"]["counted"] == line and last["figures"]["per_column"] == per_column
    assert json.loads(c.get(f"/api/runs/{first}/figures").text)["counted"] == line
    listing = c.get("/").text
    row = listing.split(f'href="/runs/{first}"')[1].split("</tr>")[0]
    assert f'class="counted">{line}</a>' in row
    assert f'<span class="counted">{line}</span>' in c.get(f"/runs/{first}").text
    assert f'<p class="meta" id="counted">{line}</p>' in c.get(f"/runs/{first}/label/0").text
    # The report with these labels says the same.
    assert main(["report", str(folder / first), "--labels", str(labels_path(folder / first))]) == 0
    assert f"## With human labels ({line}; " in (folder / first / "report.labelled.md").read_text()
    assert "labels: 3 answers (correct 2, faithful 1, refused 3" in capsys.readouterr().out
