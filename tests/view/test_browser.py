"""The view in a real browser (Playwright driving Debian's Chromium; never ``playwright install``):
open the run list, open a run, label three answers with the keyboard, reload, the labels are there
and the figure moved; a server killed between two labels keeps the first on disk. Screenshots of
the list, a run page, the side-by-side page and the labelling view go to tmp_path, and to
docs/guides/img/ when RAG_EVAL_VIEW_SCREENSHOTS is set (so a test run leaves the tree alone)."""

import concurrent.futures
import contextlib
import csv
import json
import os
import re
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
import uvicorn

from rag_eval.answers.generation import context_seen
from rag_eval.config import load_config
from rag_eval.judges.judging import judged_contexts
from rag_eval.judges.registry import set_criteria
from rag_eval.orchestration.runner import run_audit
from rag_eval.types import Chunk, Corpus
from rag_eval.view.app import create_app

from .. import scripted_server
from ..conftest import ROOT, SMALL_CORPUS
from ..judges import test_criteria as criteria_case
from ..scripted_server import ScriptedServer, judge_name
from .conftest import CUT_AT, LONG, LONG_QUESTION, free_port
from .test_serve import start_server

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (.ci/run installs it: apt-get install chromium)"
)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1360, "height": 900}, device_scale_factor=1)
    p = context.new_page()
    p.set_default_timeout(15_000)
    yield p
    context.close()


@contextlib.contextmanager
def serving(folder):
    """The app over ``folder``, served by uvicorn in a thread: its base url."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(folder), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(100):
        if server.started:
            break
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def served(runs):
    """The app over a copy of the runs: (base url, runs folder, first, second)."""
    folder, first, second = runs
    with serving(folder) as base:
        yield base, folder, first, second


def _shots(tmp_path) -> list[Path]:
    out = [tmp_path]
    if os.environ.get("RAG_EVAL_VIEW_SCREENSHOTS"):
        out.append(ROOT / "docs" / "guides" / "img")
    return out


def _shot(page, tmp_path, name):
    for folder in _shots(tmp_path):
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / f"view-{name}.png"), full_page=name == "runs")
    assert (tmp_path / f"view-{name}.png").stat().st_size > 10_000


def _label_current(page, keys: dict[str, str]):
    """Answer every question of the open answer with the keyboard; returns (question id, index)."""
    art = page.locator("#answer")
    qid, index = art.get_attribute("data-qid"), int(art.get_attribute("data-index"))
    for col in page.locator(".ask").evaluate_all("els => els.map(e => e.dataset.col)"):
        page.keyboard.press(keys.get(col, "s"))
    page.wait_for_url(f"**/label/{index + 1}?prev={index}")
    return qid, index


def _ppi_cell(page) -> str:
    return page.locator('#figures tr[data-figure="correctness"] td.ppi').inner_text().strip()


def test_label_three_answers_with_the_keyboard_and_find_them_after_a_reload(served, page, tmp_path):
    base, folder, first, second = served
    page.goto(base + "/")
    assert page.locator("a.run-link").count() == 2
    _shot(page, tmp_path, "runs")
    # Exact: two runs made within one second are named X and X-2, and X is a substring of X-2.
    page.locator("a.run-link").filter(has_text=re.compile(rf"^\s*{re.escape(first)}\s*$")).click()
    page.wait_for_url(f"**/runs/{first}")
    assert _ppi_cell(page) == "–"
    judged = page.locator('#figures tr[data-figure="correctness"] td.num').first.inner_text()
    assert page.evaluate("window.__pwned === undefined")  # the <script> answer stayed text
    page.locator("#label-link").click()
    page.wait_for_url("**/label/0")
    assert page.locator("#judges").is_hidden()  # blind until labelled
    labelled = []
    for keys in ({"correct": "n", "faithful": "y", "refused": "n"}, {"correct": "y", "faithful": "y", "refused": "n"}):
        labelled.append(_label_current(page, keys))
    assert page.locator("#previous").is_visible() and page.locator("#judges").is_hidden()
    labelled.append(_label_current(page, {"correct": "n", "faithful": "n", "refused": "n"}))
    # The labelling view of q2 (its evidence quote marked in the context), after the first label.
    order = [r["question_id"] for r in csv.DictReader((folder / first / "labels" / "labels.csv").open())]
    page.goto(f"{base}/runs/{first}/label/{order.index('q2')}?prev=0")
    assert (
        page.locator("details.context mark").first.inner_text() == "unordered collection of distinct hashable objects"
    )
    _shot(page, tmp_path, "label")
    # Reload: the labels are on the page of each answer (and its verdicts shown), and in the file.
    page.reload()
    for qid, i in labelled:
        page.goto(f"{base}/runs/{first}/label/{i}")
        assert page.locator("#answer").get_attribute("data-qid") == qid
        assert page.locator('.ask[data-col="refused"] button.chosen').inner_text().endswith("no")
        assert page.locator("#judges").is_visible()
    rows = {r["question_id"]: r for r in csv.DictReader((folder / first / "labels" / "labels.csv").open())}
    assert [rows[q]["refused"] for q, _ in labelled] == ["no", "no", "no"]
    assert rows[labelled[0][0]]["correct"] in ("no", "")  # blank where the answer had no correctness question
    # The run page shows the figure with the labels, without a command.
    page.goto(f"{base}/runs/{first}")
    assert "3 labelled" in page.locator("#label-link").inner_text()
    moved = _ppi_cell(page)
    assert moved != "–" and moved != judged
    _shot(page, tmp_path, "run")
    page.goto(f"{base}/compare?base={first}&new={second}")
    assert page.locator("section.moved").count() >= 1
    _shot(page, tmp_path, "compare")


@pytest.mark.slow
def test_twenty_answers_take_seconds_of_machine_time(served, page):
    base, folder, first, _ = served
    page.goto(f"{base}/runs/{first}/label/0")
    start = time.perf_counter()
    for _ in range(20):
        _label_current(page, {"correct": "y", "faithful": "y", "refused": "n"})
    seconds = time.perf_counter() - start
    print(f"20 answers labelled in {seconds:.1f} s of machine time")
    assert seconds < 60
    rows = list(csv.DictReader((folder / first / "labels" / "labels.csv").open()))
    assert sum(r["refused"] == "no" for r in rows) == 20


def test_a_server_killed_between_two_labels_keeps_the_first(runs, page):
    folder, first, _ = runs
    port = free_port()
    proc = start_server(folder, port)
    try:
        page.goto(f"http://127.0.0.1:{port}/runs/{first}/label/0")
        q0, _ = _label_current(page, {"correct": "n", "faithful": "y", "refused": "n"})
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    path = folder / first / "labels" / "labels.csv"
    assert {r["question_id"]: r["refused"] for r in csv.DictReader(path.open())}[q0] == "no"
    proc = start_server(folder, port)
    try:
        page.reload()
        q1, _ = _label_current(page, {"correct": "y", "faithful": "y", "refused": "y"})
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    rows = {r["question_id"]: r["refused"] for r in csv.DictReader(path.open())}
    assert (rows[q0], rows[q1]) == ("no", "yes")


def _labels(folder, run) -> dict[str, dict[str, str]]:
    path = folder / run / "labels" / "labels.csv"
    return {r["question_id"]: r for r in csv.DictReader(path.open())} if path.exists() else {}


def test_a_quick_extra_key_never_starts_the_finished_answer_over(served, page):
    """``y y y n`` typed with no delay on an answer with three questions: the three are saved, the
    fourth key lands while the save and the next page are pending and is ignored."""
    base, folder, first, _ = served
    page.goto(f"{base}/runs/{first}/label/0")
    assert page.locator(".ask").count() == 3
    qid = page.locator("#answer").get_attribute("data-qid")
    page.keyboard.type("yyyn", delay=0)
    page.wait_for_url("**/label/1?prev=0")
    page.wait_for_load_state("load")
    time.sleep(0.5)  # a stray save would have reached the server by now
    rows = _labels(folder, first)
    assert {c: rows[qid][c] for c in ("correct", "faithful", "refused")} == {
        "correct": "yes",
        "faithful": "yes",
        "refused": "yes",
    }
    nxt = page.locator("#answer").get_attribute("data-qid")
    assert not any(rows[nxt][c] for c in ("correct", "faithful", "refused"))
    assert page.locator(".ask.current").count() == 1  # the next answer waits for its first key
    # Gone back to it, the finished answer starts over at a key: the person chose to change it.
    page.goto(f"{base}/runs/{first}/label/0")
    page.keyboard.type("nyn", delay=0)
    page.wait_for_url("**/label/1?prev=0")
    row = _labels(folder, first)[qid]
    assert (row["correct"], row["faithful"], row["refused"]) == ("no", "yes", "no")


def test_a_failed_save_is_kept_on_the_page_and_saved_when_the_server_answers_again(runs, page):
    """The server killed: a key says "not saved" and keeps the label marked unsaved; the server back,
    the label is saved without another key, and the next keys save as before."""
    folder, first, _ = runs
    port = free_port()
    proc = start_server(folder, port)
    try:
        page.goto(f"http://127.0.0.1:{port}/runs/{first}/label/0")
        q0, _ = _label_current(page, {"correct": "n", "faithful": "y", "refused": "n"})
        q1 = page.locator("#answer").get_attribute("data-qid")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    page.keyboard.press("y")
    sync_api.expect(page.locator("#saved")).to_contain_text("not saved: ")
    assert "unsaved label kept on this page" in page.locator("#saved").inner_text()
    assert page.locator(".ask.unsaved").count() == 1 and not _labels(folder, first)[q1]["correct"]
    page.keyboard.press("n")  # a later key while the server is down: kept too
    sync_api.expect(page.locator(".ask.unsaved")).to_have_count(2)
    proc = start_server(folder, port)
    try:
        sync_api.expect(page.locator("#saved")).to_have_text("saved in labels/labels.csv", timeout=20_000)
        assert page.locator(".ask.unsaved").count() == 0
        row = _labels(folder, first)[q1]
        assert (row["correct"], row["faithful"]) == ("yes", "no")
        page.keyboard.press("y")
        page.wait_for_url("**/label/2?prev=1")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    rows = _labels(folder, first)
    assert [rows[q][c] for q in (q0, q1) for c in ("correct", "faithful", "refused")] == [
        "no",
        "yes",
        "no",
        "yes",
        "no",
        "yes",
    ]


def test_the_contexts_are_shown_as_the_generator_and_the_judges_were_given_them(cut_run, page, tmp_path):
    """``max_context_chars: 100``: the page shows the judges' input byte for byte, marks the cut
    and folds the rest away as not seen by the model (where this question's evidence lies)."""
    src, run, bodies = cut_run
    folder = tmp_path / "runs"
    shutil.copytree(src, folder)
    corpus = Corpus([Chunk(c["id"], c["text"], c["title"]) for c in [*SMALL_CORPUS, LONG]], "test")
    (seen,) = judged_contexts(corpus, [LONG["id"]], CUT_AT)
    text_seen = context_seen(LONG["text"], CUT_AT)
    assert seen == f"{LONG['title']}\n{text_seen}"  # trial-2 H1: the judges see the title, as the generator
    requests = [(judge_name(b), b["messages"][-1]["content"]) for b in bodies]
    judged = [text for name, text in requests if name == "supported" and seen in text]
    generated = [text for name, text in requests if name is None and LONG_QUESTION["question"] in text]
    assert judged and all(LONG["text"][: CUT_AT + 10] not in j for j in judged)  # what the judge got
    assert any(seen.rstrip() + " [...]" in g for g in generated)  # what the generator got
    with serving(folder) as base:
        for i in range(2):
            page.goto(f"{base}/runs/{run}/label/{i}")
            if page.locator("#answer").get_attribute("data-qid") == "r1":
                break
        ctx = page.locator(f'details.context[data-id="{LONG["id"]}"]')
        assert ctx.locator("pre.seen").evaluate("e => e.textContent") == text_seen
        assert LONG["title"] in ctx.locator("summary").first.inner_text()  # review 53 M5: as the judges read it
        assert ctx.locator("p.cut").is_visible() and "✂ cut here" in ctx.locator("p.cut").inner_text()
        summary = ctx.locator("details.unseen > summary")
        assert summary.inner_text() == f"the other {len(LONG['text']) - CUT_AT} characters: not seen by the model"
        assert ctx.locator("pre.unseen").is_hidden()  # folded
        assert ctx.locator("pre.unseen").evaluate("e => e.textContent") == LONG["text"][CUT_AT:]
        assert (
            f"the model saw the first {CUT_AT} of {len(LONG['text'])} characters"
            in ctx.locator("summary").first.inner_text()
        )
        # The evidence is in the part the model did not see: marked there, and said.
        assert ctx.locator("pre.seen mark").count() == 0
        assert ctx.locator("pre.unseen mark").evaluate("e => e.textContent") == LONG_QUESTION["evidence"]
        assert "evidence not seen by the model" in ctx.locator("summary").first.inner_text()
        summary.click()
        assert ctx.locator("pre.unseen").is_visible()
        _shot(page, tmp_path, "label-cut")


@pytest.fixture
def criteria_run(small_project, monkeypatch):
    """A run of the small project whose config declares three criteria (``tests/judges/test_criteria.py``:
    names_type, no_advice with pass: no, a rubric scope), judged by the scripted server; the criteria
    then unregistered, as in a view started on its own: (runs folder, run name)."""
    for marker in criteria_case.ANSWERS:
        (small_project / f"{marker[-1].lower()}.md").write_text(
            f"{marker}\nDocuments:\n{{contexts}}\n\nQuestion: {{question}}\nAnswer:"
        )
    monkeypatch.setattr(scripted_server, "first_token_logprobs", criteria_case.level_logprobs)
    with ScriptedServer(reply=criteria_case.reply, probability=criteria_case.probability) as s:
        cfg = load_config(criteria_case._config(small_project, s.base_url))
        # In a thread of its own: the browser's event loop may be running in this one.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            run_dir = pool.submit(run_audit, cfg).result()
    set_criteria({})
    yield run_dir.parent, run_dir.name
    set_criteria({})


def test_criteria_in_the_view_filter_flag_and_label_with_the_keyboard(criteria_run, page):
    """A run with criteria: the run page filters the answers a criterion failed or left uncertain,
    flags a failed criterion beside the outcome (the failed_criterion colours), and the labelling page
    asks each criterion's question, answered with the keyboard like the others, into its column."""
    folder, name = criteria_run
    with serving(folder) as base:
        page.goto(f"{base}/runs/{name}")
        page.select_option('select[name="criterion"]', "names_type:failed")
        page.locator("#filters button[type=submit]").click()
        page.wait_for_url("**criterion=names_type%3Afailed**")
        shown = page.locator("#questions tbody tr td:first-child b").all_inner_texts()
        assert shown == ["q3"]  # P(pass) 0.02; q2's 0.6 is uncertain, q1 passes, q4 is a refusal
        flag = page.locator("#questions .chip.o-failed_criterion").filter(has_text="names_type")
        assert flag.count() == 1 and flag.inner_text() == "⚑ names_type"
        assert flag.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(253, 232, 236)"
        outcome = page.locator("#questions tbody tr td:nth-child(3) .chip").first
        assert outcome.inner_text() == "failed_criterion"  # no_advice counts as a failure
        assert outcome.evaluate("e => getComputedStyle(e).color") == "rgb(176, 0, 32)"
        page.select_option('select[name="criterion"]', "names_type:uncertain")
        page.locator("#filters button[type=submit]").click()
        page.wait_for_url("**criterion=names_type%3Auncertain**")
        assert page.locator("#questions tbody tr td:first-child b").all_inner_texts() == ["q2"]

        page.goto(f"{base}/runs/{name}/label")
        page.wait_for_url("**/label/*")
        asks = {}
        for i in range(page.locator(".ask").count()):
            ask = page.locator(".ask").nth(i)
            asks[ask.get_attribute("data-col")] = ask.locator(".asktext").inner_text()
        qid = page.locator("#answer").get_attribute("data-qid")
        answered = qid != "q4"  # the refusal: names_type and scope apply to answered answers only
        assert asks["no_advice"] == criteria_case.NO_ADVICE
        if answered:
            assert asks["names_type"] == criteria_case.NAMES_TYPE
            assert asks["scope"].startswith(f"{criteria_case.SCOPE} Does it reach level 3")
        keys = {"names_type": "n", "no_advice": "y", "scope": "y"}
        _label_current(page, keys)
        time.sleep(0.3)
    row = _labels(folder, name)[qid]
    assert row["no_advice"] == "yes"
    if answered:
        assert (row["names_type"], row["scope"]) == ("no", "yes")
    # User trial 2 L3: the run list counts the criteria's labels too, as the report does.
    from rag_eval.view.run_folders import labelled_count

    labelled, per_column = labelled_count(folder / name)
    assert labelled == 1 and per_column["no_advice"] == 1 and per_column["names_type"] == int(answered)
    # ... and the run page's "judged figures with your labels" table (and /api/runs/NAME/figures)
    # has a line per criterion figure, with the label given.
    from rag_eval.report.report_records import Report
    from rag_eval.view.figures import label_figures

    set_criteria({})  # as `rag-eval view` starts: no config has registered the run's criteria
    figs = label_figures(folder / name, Report.load(json.loads((folder / name / "report.json").read_text())))
    lines = {f.figure: f for f in figs.lines}
    assert {"names_type", "no_advice"} <= set(lines) and lines["no_advice"].labelled == 1
