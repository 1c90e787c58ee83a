"""`rag-eval label`'s labels.html shows each context as the generator and the judges were given it:
with ``max_context_chars: 100`` the text a page shows as seen is, byte for byte, the text the judge's
request held; the cut is marked and the rest folded as not seen by the model (read in Chromium, as a
person opens the page)."""

import concurrent.futures
import shutil
from pathlib import Path

import pytest

from rag_eval.cli import main
from rag_eval.orchestration.label_draw import draw_labels

from ..conftest import ROOT, SMALL_CORPUS, SMALL_QUESTIONS, write_jsonl
from ..scripted_server import judge_name
from ..view.conftest import CUT_AT, LONG, LONG_QUESTION, make_run

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


@pytest.fixture(scope="module")
def cut_run(tmp_path_factory):
    """A run with ``max_context_chars: 100`` over a corpus with one long section: (run folder, the
    requests the scripted server got)."""
    folder = tmp_path_factory.mktemp("label-cut")
    write_jsonl(folder / "corpus.jsonl", [*SMALL_CORPUS, LONG])
    write_jsonl(folder / "questions.jsonl", [SMALL_QUESTIONS[1], LONG_QUESTION])
    shutil.copy(ROOT / "prompts" / "answer.md", folder / "answer.md")
    bodies: list = []
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        run = pool.submit(make_run, folder, max_context_chars=CUT_AT, bodies=bodies).result()
    return Path(run), bodies


@pytest.fixture(scope="module")
def page():
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it: apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        tab = browser.new_page()
        tab.set_default_timeout(15_000)
        yield tab
        browser.close()


def test_labels_html_shows_each_context_as_the_judges_were_given_it(cut_run, page, tmp_path, capsys):
    src, bodies = cut_run
    run = tmp_path / src.name
    shutil.copytree(src, run)
    judged = [
        b["messages"][-1]["content"]
        for b in bodies
        if judge_name(b) == "supported" and LONG_QUESTION["question"] not in b["messages"][-1]["content"]
    ]
    seen = LONG["text"][:CUT_AT]
    given = [text for text in judged if seen in text]
    assert given and all(LONG["text"][: CUT_AT + 1] not in text for text in given)  # the judge read 100 characters

    assert main(["label", str(run), "--n", "2"]) == 0
    out = capsys.readouterr().out
    assert f"(the first {CUT_AT} characters; the rest folded, marked not seen by the model)" in out
    page.goto((run / "labels" / "labels.html").as_uri())
    ctx = page.locator(f'details[data-id="{LONG["id"]}"]').first
    assert ctx.locator("pre.seen").evaluate("e => e.textContent") == seen
    assert any(ctx.locator("pre.seen").evaluate("e => e.textContent") in text for text in given)
    assert (
        f"the model saw the first {CUT_AT} of {len(LONG['text'])} characters"
        in ctx.locator("summary").first.inner_text()
    )
    cut = ctx.locator("p.cut").evaluate("e => e.textContent")
    assert cut == (
        f"✂ cut here (generation.max_context_chars: {CUT_AT}): the generator and the judges were given the text "
        "above and nothing below"
    )
    folded = ctx.locator("details.unseen")
    assert folded.locator("summary").evaluate("e => e.textContent") == (
        f"the other {len(LONG['text']) - CUT_AT} characters: not seen by the model"
    )
    assert folded.evaluate("e => e.open") is False
    assert folded.locator("pre.unseen").evaluate("e => e.textContent") == LONG["text"][CUT_AT:]
    # A context shorter than the cut is shown whole, with no cut marked.
    short = page.locator("details[data-id]:not(.was-cut)").first
    cid = short.get_attribute("data-id")
    whole = next(c["text"] for c in SMALL_CORPUS if c["id"] == cid)
    assert short.locator("pre.seen").evaluate("e => e.textContent") == whole
    assert short.locator("p.cut").count() == 0


def test_draw_labels_is_the_command_without_its_printing(cut_run, tmp_path):
    src, _ = cut_run
    run = tmp_path / src.name
    shutil.copytree(src, run)
    got = draw_labels(run, n=2, seed=0)
    assert (got.csv, got.html) == (run / "labels" / "labels.csv", run / "labels" / "labels.html")
    assert got.rows == 2 and got.questions == 2 and got.max_chars == CUT_AT
    assert (got.merged.added, got.merged.same_draw, got.draw.n) == (2, False, 2)
    again = draw_labels(run, n=2, seed=0)
    assert again.rows == 2 and again.merged.replaced == 2  # an unlabelled file: the draw written again
