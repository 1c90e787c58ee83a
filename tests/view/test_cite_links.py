"""The labelling page's citations link to their passages (issue 50): rag_eval/view/static/cite.js
in a real browser (Playwright driving Debian's Chromium), on the page the view serves for an answer
that cites."""

from pathlib import Path

import pytest

from rag_eval.view.app import STATIC

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")

PAGE = """<!doctype html><html><body>
<pre class="answer" id="answer-text">Lists change in place [2]. Sets hold no duplicates [1, 3]. A &lt;b&gt; tag [9] and a[0].</pre>
<details id="ctx-1" class="context" data-id="py/sets"><summary>1. py/sets</summary><pre>Sets...</pre></details>
<details id="ctx-2" class="context" data-id="py/lists"><summary>2. py/lists</summary><pre>Lists...</pre></details>
<details id="ctx-3" class="context" data-id="py/dicts"><summary>3. py/dicts</summary><pre>Dicts...</pre></details>
<script>SCRIPT</script></body></html>"""


def test_a_citation_opens_the_passage_it_names():
    script = (STATIC / "cite.js").read_text()
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox"], headless=True)
        page = b.new_page()
        page.set_content(PAGE.replace("SCRIPT", script))
        links = page.locator("#answer-text a.cite")
        # [2], and [1, 3]'s two numbers; [9] names no context and a[0] is no citation: text.
        assert links.all_text_contents() == ["2", "1", "3"]
        assert page.locator("#answer-text").text_content() == (
            "Lists change in place [2]. Sets hold no duplicates [1, 3]. A <b> tag [9] and a[0]."
        )
        assert not page.locator("#ctx-2").evaluate("d => d.open")
        links.first.click()
        assert page.locator("#ctx-2").evaluate("d => d.open")
        assert not page.locator("#ctx-1").evaluate("d => d.open")
        links.nth(2).click()
        assert page.locator("#ctx-3").evaluate("d => d.open")
        assert links.first.get_attribute("title") == "context 2: py/lists"
        b.close()
