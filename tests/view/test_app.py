"""The view's pages and label endpoint through Starlette's test client: what each page shows, the
filters, the label written in the format rag-eval report --labels reads, the figures moving, and
the safety rules (paths stay in RUNS_DIR, text is escaped, run folders are only read)."""

import csv
import hashlib
import json
import shutil

import pytest
from starlette.testclient import TestClient

from rag_eval.cli import main
from rag_eval.view import app as view_app
from rag_eval.view.app import ROUTES, ViewState, create_app
from rag_eval.view.queue import uncertain_ranks
from rag_eval.view.run_folders import load_report

from ..conftest import ROOT
from .conftest import SCRIPT_ANSWER


def _snapshot(folder):
    """Every file under the runs folder but the labels files, with its hash."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "labels" not in p.relative_to(folder).parts
    }


@pytest.fixture
def client(runs):
    folder, first, second = runs
    return TestClient(create_app(folder)), folder, first, second


def _label(c, run, qid, prompt="base", **values):
    return c.post(f"/api/runs/{run}/labels", json={"question_id": qid, "prompt": prompt, "values": values})


def test_the_run_list_shows_status_figures_and_links(client):
    c, folder, first, second = client
    page = c.get("/").text
    assert page.count('class="run-link"') == 2 and f'href="/runs/{first}"' in page
    assert "finished" in page and "generation.base.correctness" in page
    assert "retrieval.bm25.hit@1" not in page  # the same for every run of the config: on the run's page
    assert '<div class="outcomes"><span class="fname">base</span> ok ' in page
    assert "0 labelled" in page


def test_a_run_that_finished_with_failures_says_so_in_the_list_and_on_its_page(client):
    c, folder, first, _ = client
    status = json.loads((folder / first / "status.json").read_text())
    failures = {"answers": 2, "judgements": 5, "first_error": "APIConnectionError: Connection error."}
    (folder / first / "status.json").write_text(json.dumps({**status, "failures": failures}))
    listing = c.get("/").text
    row = listing.split(f'href="/runs/{first}"')[1].split("</tr>")[0]
    assert 'class="chip st-finished-with-failures">finished with failures<' in row
    line = "2 answers and 5 judgements failed (every call); first error: APIConnectionError: Connection error."
    assert line in row and 'st-finished"' not in row
    page = c.get(f"/runs/{first}").text
    assert ">finished with failures</span></h1>" in page and f"Finished with failures: {line}." in page


def test_a_link_out_of_the_runs_folder_is_listed_with_why_and_not_opened(client, tmp_path):
    c, folder, first, _ = client
    shutil.copytree(folder / first, tmp_path / "elsewhere")
    (folder / "linked").symlink_to(tmp_path / "elsewhere")
    listing = c.get("/").text
    row = listing.split("linked")[1].split("</tr>")[0]
    assert "not opened" in row and "not a folder directly inside" in row
    assert 'href="/runs/linked"' not in listing and c.get("/runs/linked").status_code == 404
    (folder / "latest").symlink_to(folder / first)  # a link inside: listed and opened
    assert 'href="/runs/latest"' in c.get("/").text and c.get("/runs/latest").status_code == 200


def test_each_route_is_a_named_function_over_one_state(client, tmp_path):
    """A reader finds a page's code by its path: every route's endpoint is a documented function of
    view/app.py, and what the pages share is one ViewState on the app (two apps, two states)."""
    c, folder, *_ = client
    pages = {r.path: r.endpoint for r in ROUTES if hasattr(r, "endpoint")}
    assert pages["/runs/{name}/label/{i:int}"] is view_app.label_page
    assert pages["/api/runs/{name}/labels"] is view_app.post_label
    for path, endpoint in pages.items():
        assert getattr(view_app, endpoint.__name__) is endpoint, path
        assert endpoint.__doc__ or endpoint is view_app.favicon, path
    state = c.app.state.view
    assert isinstance(state, ViewState) and state.runs_dir == folder.resolve() and not state.adapt
    other = create_app(tmp_path, adapt=True).state.view
    assert other is not state and other.runs_dir == tmp_path.resolve() and other.adapt


def test_the_browser_gets_an_icon(client):
    c, *_ = client
    r = c.get("/favicon.ico")
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
    assert r.text.startswith("<svg") and r.text.endswith("</svg>")
    assert '<link rel="icon" href="/favicon.ico"' in c.get("/").text


def test_a_run_page_filters_questions_by_outcome_judge_verdict_and_uncertain(client):
    c, folder, first, _ = client
    everything = c.get(f"/runs/{first}").text
    assert "Questions (24 of 24)" in everything
    unsure = c.get(f"/runs/{first}", params={"uncertain": "1"}).text
    # Correctness is uncertain (P 0.9, in its band) on the questions the scripted judge is unsure of.
    n_unsure = int(unsure.split("Questions (")[1].split(" of")[0])
    assert n_unsure == 10 and unsure.split('id="questions"')[1].count('class="chip unc"') == 10
    refused = c.get(f"/runs/{first}", params={"judge": "refusal", "verdict": "refused"}).text
    assert "Questions (0 of 24)" in refused
    answered = c.get(f"/runs/{first}", params={"judge": "refusal", "verdict": "answered"}).text
    assert "Questions (24 of 24)" in answered
    outcome = c.get(f"/runs/{first}", params={"outcome": "ok"}).text
    n_ok = int(outcome.split("Questions (")[1].split(" of")[0])
    assert 0 < n_ok < 24 and 'class="chip o-uncertain"' not in outcome.split('id="questions"')[1]


def test_every_page_escapes_the_answers_text(client):
    c, folder, first, second = client
    pages = [
        c.get(f"/runs/{first}").text,
        c.get(f"/runs/{first}/report").text,
        c.get("/compare", params={"base": first, "new": second}).text,
    ]
    c.get(f"/runs/{first}/label")  # the queue exists
    for i in range(40):
        r = c.get(f"/runs/{first}/label/{i}")
        if r.status_code != 200:
            break
        if "Who wrote" in r.text:
            pages.append(r.text)
        if "What is a set?</h1>" in r.text:  # q2's evidence quote is marked in its context
            assert "<mark>unordered collection of distinct hashable objects</mark>" in r.text
    assert len(pages) == 4, "the unanswerable question's answer is in the labelling queue"
    for text in pages:
        assert "<script>window.__pwned" not in text and "<img src=x" not in text
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in pages[0]
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in pages[3]
    assert SCRIPT_ANSWER not in "".join(pages)


def test_a_label_is_written_at_once_in_the_labels_file_and_moves_the_figure(client, tmp_path, capsys):
    c, folder, first, _ = client
    before = _snapshot(folder)
    run = folder / first
    page = c.get(f"/runs/{first}").text
    assert "Label answers (0 labelled)" in page
    start = c.get(f"/runs/{first}/label", follow_redirects=False)
    assert start.status_code == 303 and start.headers["location"] == f"/runs/{first}/label/0"
    # The judge called q1's answer correct (uncertain); the person says it is not.
    r = _label(c, first, "q1", correct=False, faithful=True, refused=False)
    assert r.status_code == 200 and r.json()["saved"]
    line = next(x for x in r.json()["figures"]["lines"] if x["figure"] == "correctness")
    assert line["labelled"] == 1 and line["ppi"]["value"] is not None
    rows = list(csv.DictReader((run / "labels" / "labels.csv").open()))
    # The file starts as the active draw (rag-eval label's 30 questions: all 24 here), in its columns.
    assert list(rows[0])[:4] == ["question_id", "prompt", "weight", "inclusion_probability"]
    assert len(rows) == 24 and {r["question_id"] for r in rows} == {f"q{i}" for i in range(1, 25)}
    q1 = next(r for r in rows if r["question_id"] == "q1")
    assert (q1["correct"], q1["faithful"], q1["refused"]) == ("no", "yes", "no") and q1["question"]
    assert sum(bool(r["correct"]) for r in rows) == 1
    # Two more, one of them partly (a skipped column stays blank).
    _label(c, first, "q2", correct=True, faithful=True, refused=False)
    _label(c, first, "q3", correct=None, faithful=False, refused=False)
    page = c.get(f"/runs/{first}").text
    assert "Label answers (3 labelled)" in page
    ppi_cell = page.split('data-figure="correctness"')[1].split('class="num ppi">')[1].split("<")[0]
    assert ppi_cell != "–"
    assert _snapshot(folder) == before  # only the labels file was written
    # rag-eval report --labels reads the file as it is, and gets the same figure.
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    assert main(["report", str(copy), "--labels", str(copy / "labels" / "labels.csv")]) == 0
    assert "labels: 3 answers (correct 2, faithful 3, refused 3)" in capsys.readouterr().out
    import json

    corr = json.loads((copy / "summary.labelled.json").read_text())["generation"]["base"]["correctness"]["ppi"]
    assert f"{corr['value']:.2f} [{corr['ci_low']:.2f}, {corr['ci_high']:.2f}]" == ppi_cell


def test_a_label_for_an_answer_not_in_the_queue_or_malformed_is_refused(client):
    c, folder, first, _ = client
    assert _label(c, first, "q99", correct=True).status_code == 404
    assert _label(c, first, "q1", bogus=True).status_code == 400
    assert _label(c, first, "q1", correct="maybe").status_code == 400
    form = c.post(f"/api/runs/{first}/labels", data={"question_id": "q1", "prompt": "base"})
    assert form.status_code == 415
    other_site = c.post(
        f"/api/runs/{first}/labels",
        json={"question_id": "q1", "prompt": "base", "values": {"correct": True}},
        headers={"origin": "http://evil.example"},
    )
    assert other_site.status_code == 403
    assert not (folder / first / "labels").exists()


@pytest.mark.parametrize(
    "name", ["%2e%2e", "%2E%2E%2F%2E%2E%2Fetc", "..%2F..%2Fetc", "%2Fetc%2Fpasswd", "%2Ftmp", "inputs", "~", "outside"]
)
def test_paths_from_the_browser_never_leave_the_runs_folder(client, name):
    """Encoded so that the client sends them as they are (a browser resolves a plain ``../``)."""
    c, folder, first, second = client
    (folder.parent / "outside").mkdir(exist_ok=True)
    (folder.parent / "outside" / "report.json").write_text("{}")
    for url in (f"/runs/{name}", f"/runs/{name}/report", f"/runs/{name}/label/0", f"/api/runs/{name}/figures"):
        assert c.get(url).status_code == 404, url
    assert _label(c, name, "q1", correct=True).status_code in (404, 405)
    assert not list(folder.parent.rglob("labels.csv"))


@pytest.mark.parametrize("name", ["..", "../outside", "../runs", "/etc", "{outside}", "{first}/inputs", "", "."])
def test_run_names_in_the_query_never_leave_the_runs_folder(client, name):
    c, folder, first, second = client
    (folder.parent / "outside").mkdir(exist_ok=True)
    (folder.parent / "outside" / "report.json").write_text("{}")
    name = name.format(outside=folder.parent / "outside", first=first)
    assert c.get("/compare", params={"base": name, "new": first}).status_code == 404
    assert c.get("/compare", params={"base": first, "new": name}).status_code == 404


def test_two_runs_side_by_side_show_the_moved_questions(client):
    c, folder, first, second = client
    page = c.get("/compare", params={"base": first, "new": second}).text
    assert "generation.base.correctness" in page
    assert "Questions that moved" in page and "worse: " in page
    assert "What is a set?" in page  # q2: the second run's judge called it incorrect
    assert "<h4>base</h4>" in page and "<h4>new</h4>" in page


def test_the_labelling_page_is_blind_until_the_answer_is_labelled(client):
    c, folder, first, _ = client
    page = c.get(f"/runs/{first}/label/0").text
    assert 'id="judges" hidden' in page and "Your label" in page and "<mark>" in page or "✓" in page
    assert 'id="judges" hidden' in page
    qid = page.split('data-qid="')[1].split('"')[0]
    _label(c, first, qid, correct=True, faithful=True, refused=False)
    again = c.get(f"/runs/{first}/label/0").text
    assert 'id="judges" hidden' not in again and "The judges said" in again
    nxt = c.get(f"/runs/{first}/label/1", params={"prev": 0}).text
    assert "Previous answer" in nxt and 'id="judges" hidden' in nxt
    assert 'id="judges" hidden' not in c.get(f"/runs/{first}/label/1", params={"blind": "0"}).text


def test_old_run_folders_open_in_every_page(tmp_path):
    """Run folders written by older rag-eval versions (tests/data/old_runs) list, open and label."""
    folder = tmp_path / "runs"
    shutil.copytree(ROOT / "tests" / "data" / "old_runs", folder, ignore=shutil.ignore_patterns("*.py"))
    c = TestClient(create_app(folder))
    listing = c.get("/").text
    for name in ("compare-labelled", "retrieval", "demo-retrieval", "supplied"):
        assert f'href="/runs/{name}"' in listing
        assert c.get(f"/runs/{name}").status_code == 200, name
    assert c.get("/runs/retrieval/report").status_code == 200
    page = c.get("/runs/compare-labelled/label", follow_redirects=True)
    assert page.status_code == 200 and "Your label" in page.text
    r = _label(c, "compare-labelled", "q1", prompt="a", correct=True, faithful=True, refused=False)
    assert r.status_code == 200
    # Runs of different test sets: diff's own error, shown as the page.
    diff = c.get("/compare", params={"base": "retrieval", "new": "demo-retrieval"})
    assert diff.status_code == 400 and "the runs share no question id" in diff.text


def test_the_queue_is_the_draw_then_the_uncertain_answers_it_left_out(client, capsys):
    c, folder, first, _ = client
    run = folder / first
    assert main(["label", str(run), "--n", "3", "--seed", "0"]) == 0
    drawn = [r["question_id"] for r in csv.DictReader((run / "labels" / "labels.csv").open())]
    pages = []
    for i in range(30):
        r = c.get(f"/runs/{first}/label/{i}")
        if r.status_code != 200:
            break
        pages.append(r.text)
    order = [p.split('data-qid="')[1].split('"')[0] for p in pages]
    unsure = ["q1", "q5", "q6", "q7", "q10", "q11", "q15", "q16", "q20", "q21"]  # correctness uncertain
    assert order[:3] == drawn
    assert sorted(order[3:]) == sorted(set(unsure) - set(drawn))
    assert all("uncertain, after the draw (inclusion probability 1.000)" in p for p in pages[3:])
    before = {
        r["question_id"]: r["inclusion_probability"] for r in csv.DictReader((run / "labels" / "labels.csv").open())
    }
    for q in drawn:
        assert _label(c, first, q, correct=True, faithful=True, refused=False).status_code == 200
    extra = order[3]
    assert _label(c, first, extra, correct=False, faithful=True, refused=False).status_code == 200
    rows = list(csv.DictReader((run / "labels" / "labels.csv").open()))
    assert [r["question_id"] for r in rows] == [*drawn, extra]
    assert rows[-1]["inclusion_probability"] == "1.0" and rows[-1]["correct"] == "no"
    # Every labelled uncertain answer up to the extra's place is now labelled with certainty; the
    # other drawn answers keep the draw's probability.
    ranks = {k[0]: v for k, v in uncertain_ranks(load_report(run)).items()}
    for r in rows[:-1]:
        certain = r["question_id"] in ranks and ranks[r["question_id"]] <= ranks[extra]
        assert r["inclusion_probability"] == ("1.0" if certain else before[r["question_id"]])
    # Down the whole order: the drawn uncertain answers are now labelled with certainty too.
    for q in order[4:]:
        assert _label(c, first, q, correct=True, faithful=True, refused=False).status_code == 200
    rows = {r["question_id"]: r for r in csv.DictReader((run / "labels" / "labels.csv").open())}
    assert {q for q, r in rows.items() if r["inclusion_probability"] != "1.0"} == set(drawn) - set(unsure)
    assert set(drawn) & set(unsure) and set(drawn) - set(unsure)  # both kinds were drawn (seed 0)
    assert all(rows[q]["inclusion_probability"] == before[q] for q in set(drawn) - set(unsure))
    assert main(["report", str(run), "--labels", str(run / "labels" / "labels.csv")]) == 0
    assert "labels: 12 answers (" in capsys.readouterr().out


def test_with_adapt_the_labelling_page_figures_are_the_adapted_cross_fitted_ones(runs, tmp_path, capsys):
    """`rag-eval view --adapt`: after each label, the figures are those of `rag-eval report --labels F
    --adapt` (the judges adapted with the labels so far, the prediction-powered figures cross-fitted),
    and nothing is saved for later audits from the page."""
    import json
    import os
    from pathlib import Path

    folder, first, _ = runs
    # Other tests share the cache folder (and this corpus): compare what this one leaves, not an empty store.
    store = Path(os.environ["RAG_EVAL_CACHE_DIR"]) / "adaptations.json"
    before = json.loads(store.read_text()) if store.exists() else {}
    c = TestClient(create_app(folder, adapt=True))
    for q in ("q1", "q2", "q3", "q4", "q5", "q6"):
        r = _label(c, first, q, correct=q in ("q2", "q4", "q6"), faithful=True, refused=False)
        assert r.status_code == 200
    line = next(x for x in r.json()["figures"]["lines"] if x["figure"] == "correctness")
    assert line["ppi"]["method"].startswith("cross-ppi") and line["labelled"] >= 4
    # The same figure as the command line gives on a copy of the run.
    copy = tmp_path / "copy"
    shutil.copytree(folder / first, copy)
    labels = copy / "labels" / "labels.csv"
    assert main(["report", str(copy), "--labels", str(labels), "--adapt", "--no-save"]) == 0

    corr = json.loads((copy / "summary.adapted.json").read_text())["generation"]["base"]["correctness"]["ppi"]
    assert corr["value"] == pytest.approx(line["ppi"]["value"])
    corpus = json.loads((copy / "report.json").read_text())["corpus"]["fingerprint"]
    saved = json.loads(store.read_text()) if store.exists() else {}
    mine = {k: v for k, v in saved.items() if k.startswith(corpus + "|")}
    assert mine == {k: v for k, v in before.items() if k.startswith(corpus + "|")}


def test_a_run_without_retrieval_opens_its_report_and_one_without_verdicts_has_nothing_to_label(tmp_path, capsys):
    """User trial 2 L11: the view opens the HTML report of a run judged without retrieval (supplied
    answers, judge_answers); a run that holds answers but judged none (`rag-eval retrieval` of a
    system that answers) is refused by the labelling page and by `rag-eval label`, saying why,
    instead of a queue of answers with blank questions and no verdict to check."""
    folder = tmp_path / "runs"
    shutil.copytree(ROOT / "tests" / "data" / "old_runs", folder, ignore=shutil.ignore_patterns("*.py"))
    shutil.copy(folder / "supplied" / "generation.jsonl", folder / "retrieval" / "generation.jsonl")
    c = TestClient(create_app(folder))
    page = c.get("/runs/supplied/report")
    assert page.status_code == 200 and "A collection." in page.text
    assert 'href="/runs/supplied/report"' in c.get("/runs/supplied").text
    refused = c.get("/runs/retrieval/label", follow_redirects=True)
    assert refused.status_code == 400 and "the run judged no answers" in refused.text
    assert "report.json" in refused.text
    capsys.readouterr()
    assert main(["label", str(folder / "retrieval"), "--n", "2"]) == 2
    err = capsys.readouterr().err
    assert "the run judged no answers, so a label would have no verdict to check" in err
    assert not (folder / "retrieval" / "labels").exists()


def test_the_labelling_page_of_a_run_being_written_says_so(tmp_path):
    """Review 54 L5: `rag-eval label` refuses a folder a live process writes; the view's labelling
    page says the same instead of a queue of answers the run may be redoing."""
    from rag_eval.rundir import lock_run

    folder = tmp_path / "runs"
    shutil.copytree(ROOT / "tests" / "data" / "old_runs", folder, ignore=shutil.ignore_patterns("*.py"))
    c = TestClient(create_app(folder))
    lock = lock_run(folder / "compare-labelled")
    try:
        page = c.get("/runs/compare-labelled/label", follow_redirects=True)
        assert page.status_code == 409 and "another rag-eval process is writing this run folder" in page.text
    finally:
        lock.close()
    assert c.get("/runs/compare-labelled/label", follow_redirects=True).status_code == 200


def test_a_labels_file_with_a_misnamed_or_doubled_column_is_not_written_to(client):
    """User trial 5 F6: the view appended a correctly named column beside a misspelt one; renamed as
    the fix said, the file then had the column twice and report --labels kept only the last."""
    c, folder, first, _ = client
    assert _label(c, first, "q1", correct=False).status_code == 200
    path = folder / first / "labels" / "labels.csv"
    text = path.read_text()
    path.write_text(text.replace(",correct,", ",corect,", 1))
    before = path.read_text()
    refused = _label(c, first, "q2", correct=True)
    assert refused.status_code == 409 and "column 'corect' is no label column" in refused.json()["error"]
    assert path.read_text() == before  # nothing appended
    path.write_text(text.replace(",faithful,", ",correct,", 1))  # 'correct' twice
    twice = _label(c, first, "q2", correct=True)
    assert twice.status_code == 409 and "column 'correct' is given 2 times" in twice.json()["error"]
    assert main(["report", str(folder / first), "--labels", str(path)]) == 2
