"""The view in a real browser (Playwright driving Debian's Chromium; never ``playwright install``):
open the run list, open a run, label three answers with the keyboard, reload, the labels are there
and the figure moved; a server killed between two labels keeps the first on disk. Screenshots of
the list, a run page, the side-by-side page and the labelling view go to tmp_path, and to
docs/guides/img/ when RAG_EVAL_VIEW_SCREENSHOTS is set (so a test run leaves the tree alone)."""

import csv
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest
import uvicorn

from rag_eval.view.app import create_app

from ..conftest import ROOT
from .conftest import free_port
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


@pytest.fixture
def served(runs):
    """The app over a copy of the runs, served by uvicorn in a thread: (base url, runs folder, first, second)."""
    folder, first, second = runs
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(folder), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(100):
        if server.started:
            break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", folder, first, second
    server.should_exit = True
    thread.join(10)


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
