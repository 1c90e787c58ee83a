"""The documentation site: `mkdocs build --strict` passes (no broken link, no missing page, no
figure missing from its result file), the generated references cover every config key and every
CLI subcommand, the README stays a short guide, and the pages render in a real browser."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
from html import unescape
from pathlib import Path

import pytest
import yaml

import rag_eval.api

from .conftest import ROOT


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(f"rag_eval_docs_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


reference = _module(ROOT / "docs" / "hooks" / "reference.py")
figures = _module(ROOT / "docs" / "hooks" / "figures.py")
screenshot = _module(ROOT / "docs" / "tools" / "screenshot.py")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def _text(html_file: Path) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", html_file.read_text(encoding="utf-8")))


def test_the_site_builds_in_strict_mode_with_every_page_of_the_nav(site):
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]

    def files(item) -> list[str]:
        if isinstance(item, str):
            return [item]
        if isinstance(item, list):
            return [f for x in item for f in files(x)]
        return [f for v in item.values() for f in files(v)]

    for page in files(nav):
        assert (site / page.replace(".md", ".html")).is_file(), page
    for section in ("getting-started", "concepts/stages", "guides/audit", "reference/config", "validation/judges"):
        assert (site / f"{section}.html").is_file()


def test_the_cli_reference_has_every_subcommand_and_option(site):
    html = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    commands = reference.cli_commands()
    assert {"run", "retrieval", "validate", "diff", "judge-check", "traces"} <= set(commands)
    for name in commands:
        assert f'id="{name}"' in html, f"rag-eval {name} has no section"
    text = _text(site / "reference" / "cli.html")
    for option in ("--stop-when-settled", "--junit-xml", "--baseline", "--escalate-model"):
        assert option in text


def test_the_config_reference_has_every_key_of_every_model(site):
    text = _text(site / "reference" / "config.html")
    keys = reference.config_keys()
    assert {"AuditConfig.gates", "LLMConfig.base_url", "Bm25Config.tokenizer", "JudgesConfig.uncertain"} <= keys
    models = {s.model.__name__: s.model for s in reference.config_sections().values()}
    for key in keys:
        model, name = key.split(".")
        # Each model named where it lives: the stage's settings module (rag_eval.llm.settings.LLMConfig).
        assert f"{models[model].__module__}.{model}" in text, model
    assert "rag_eval.llm.settings.LLMConfig" in text and "rag_eval.config.AuditConfig" in text
    # A key's default and description come from the model: LLMConfig's ctx_size, for one.
    row = re.search(r"ctx_size\s+int\s+(\S+)\s+([^\n]+)", text)
    assert row and row.group(1) == "8192" and "context tokens" in row.group(2)
    # A description's <placeholder> is shown as written, not taken for an HTML tag.
    assert "chunk ids are <relative path>#<section> (heading)" in " ".join(text.split())


def test_the_config_reference_shows_every_braced_example_as_code(site):
    # Markdown's attribute lists took a {...} that ends a cell for the cell's attributes: the gates
    # row rendered as <td _retrieval.hybrid.hit_5_: ...> and judges.uncertain lost {judge: [low, high]}.
    html = (site / "reference" / "config.html").read_text(encoding="utf-8")
    assert re.findall(r"<td\s[^>]*>", html) == []
    assert '<code>{"retrieval.hybrid.hit@5": "&gt;= 0.' in html
    assert "<code>{judge: [low, high]}</code>" in html
    text = " ".join(unescape(re.sub(r"<[^>]+>", " ", re.sub(r"</?code>", "", html))).split())
    braced = [
        " ".join(reference.describe(name, info).replace("``", "").replace("`", "").split())
        for section in reference.config_sections().values()
        for name, info in section.model.model_fields.items()
        if "{" in reference.describe(name, info)
    ]
    assert len(braced) >= 5
    for description in braced:
        assert description in text


def test_every_config_key_has_a_description():
    # A description is written once, in the model (``Field(description=...)``, or the docstring of
    # the section a key holds); the reference shows it.
    keys = reference.config_keys()
    assert len(keys) >= 190
    assert reference.config_keys(described=False) == set(), "give these keys a description in rag_eval/config.py"
    assert reference.config_keys(described=True) == keys


def test_the_api_reference_is_read_from_the_docstrings(site):
    text = _text(site / "reference" / "api.html")
    for name in ("audit", "retrieval", "diff", "judge_answers", "load_run", "assert_gates", "ConfigError"):
        assert name in text
    first_line = rag_eval.api.load_run.__doc__.strip().splitlines()[0]
    assert first_line.split()[0] in text


def test_validation_figures_are_read_from_their_result_files(site):
    for page in (ROOT / "docs" / "validation").glob("*.md"):
        built = (site / "validation" / page.name.replace(".md", ".html")).read_text(encoding="utf-8")
        assert "{{ fig" not in built, page.name
    # The figure on the page is the result file's: the held-out diagnosis part, in percent.
    built = _text(site / "validation" / "diagnosis.html")
    held_out = figures.lookup(figures._load("benchmarks/diagnosis/result.json"), "[-1].primary")
    assert figures.render(held_out, "ci%") in built
    # ... and the real-answers studies' tables: the reporting part's faithfulness, model alone, as
    # real-judges-result.json holds it (21/28; the hand-written text once said 22/28).
    judges = _text(site / "validation" / "judges.html")
    assert re.search(r"28 answered\s+0\.75 \[0\.57, 0\.87\]", judges)
    assert "0.79 [0.60, 0.91]" not in judges


def test_a_figure_missing_from_its_result_file_stops_the_build():
    with pytest.raises(figures.FigureError, match="no key 'nope'"):
        figures.fill("{{ fig benchmarks/judges/result.json cutoffs.nope }}")
    with pytest.raises(figures.FigureError, match="does not exist"):
        figures.fill("{{ fig benchmarks/none.json a }}")
    assert figures.fill("{{ fig benchmarks/judges/result.json rows[judge=refusal,source=all].accuracy.n }}") == "116"


def test_a_count_pair_is_written_as_a_share_a_fraction_or_a_wilson_interval():
    # The real-answers studies store k of n as [k, n]; the page writes the share, k/n, or the share
    # with its 95% Wilson interval, as the studies report it.
    row = "rows[part=reporting,decider=model,cutoffs=fitted,judge=faithfulness_yesno].accuracy_at_cutoff"
    assert figures.lookup(figures._load("benchmarks/real_answers/results/real-judges-result.json"), row) == [21, 28]

    def fill(fmt: str) -> str:
        return figures.fill(f"{{{{ fig benchmarks/real_answers/results/real-judges-result.json {row} {fmt} }}}}")

    assert fill("frac") == "21/28"
    assert fill(".2f") == "0.75"
    assert fill(".0%") == "75%"
    assert fill("wilson") == "0.75 [0.57, 0.87]"
    assert figures.render([0, 5], "wilson") == "0.00 [0.00, 0.43]"
    with pytest.raises(figures.FigureError, match="count pair"):
        figures.render(0.5, "wilson")
    with pytest.raises(figures.FigureError, match="a figure must be a number"):
        figures.render([21, 28], None)  # a pair needs a format: the page says how to write it


def test_len_writes_how_many_items_a_list_holds():
    assert figures.render(["c14", "sl-043", "sl-044"], "len") == "3"
    assert figures.render([21, 28], "len") == "2"  # a count pair is a list too
    with pytest.raises(figures.FigureError, match="format len needs a list"):
        figures.render(0.5, "len")


def test_a_key_with_a_dot_is_addressed_in_quotes():
    data = {"figures": {"faithfulness": {"agreement_at_0.5": [5, 10], "agreement": [6, 10]}}}
    assert figures.lookup(data, "figures.faithfulness['agreement_at_0.5']") == [5, 10]
    assert figures.lookup(data, 'figures.faithfulness["agreement_at_0.5"]') == [5, 10]
    with pytest.raises(figures.FigureError, match="no key 'agreement_at_0'"):
        figures.lookup(data, "figures.faithfulness.agreement_at_0.5")


def test_the_figures_the_readme_states_are_those_of_their_result_files():
    # The README is read on GitHub, not built by the site's hook, so its few figures are checked here.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    held_out = figures.lookup(figures._load("benchmarks/diagnosis/result.json"), "[-1].primary")
    assert f"names for {held_out['value']:.0%} of the misses of a\n  held-out corpus" in readme
    ms = figures.lookup(figures._load("benchmarks/scale/result.json"), "rows[chunks=1000000].bm25_ms_per_query")
    assert f"{round(ms)} ms a question" in readme


def test_the_readme_is_a_short_guide_whose_links_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    for command in ("make demo", "make test", "rag-eval diff", "rag-eval compare", "report.html"):
        assert command in readme
    for target in re.findall(r"\]\(([^)#\s]+)", readme):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


def test_the_makefile_builds_the_docs():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^docs: .*\n\t.*mkdocs build --strict", makefile, flags=re.M)


@pytest.mark.skipif(screenshot.chromium() is None, reason="no Chromium here (apt-get install -y chromium)")
@pytest.mark.parametrize("page", ["index.html", "guides/audit.html", "reference/config.html"])
def test_the_pages_render_in_chromium_with_their_navigation(site, page, tmp_path):
    rendered = screenshot.dom(site / page)
    assert 'class="md-nav md-nav--primary' in rendered and "md-sidebar--primary" in rendered
    for title in ("Getting started", "Guides", "Reference", "Validation"):
        assert title in rendered
    png = screenshot.shoot(site / page, tmp_path / "page.png")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a rendered page, not a blank one
    if shot_dir := _keep():
        shutil.copy(png, shot_dir / page.replace("/", "-").replace(".html", ".png"))


def _keep() -> Path | None:
    """Where to keep the screenshots for a person to look at (RAG_EVAL_DOCS_SHOTS), if anywhere."""
    folder = os.environ.get("RAG_EVAL_DOCS_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        return Path(folder)
    return None


def test_the_report_screenshots_are_in_the_docs():
    for name in ("report.png", "demo-report.png"):
        png = ROOT / "docs" / "assets" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_home_page_shows_the_demos_report_with_a_caption(site):
    html = (site / "index.html").read_text(encoding="utf-8")
    figure = re.search(r"<figure>(.*?)</figure>", html, flags=re.S)
    assert figure, "the home page's picture is in a <figure> with its caption"
    assert 'src="assets/demo-report.png"' in figure.group(1)
    caption = " ".join(unescape(re.sub(r"<[^>]+>", "", figure.group(1).split("<figcaption>")[1])).split())
    assert "rag-eval retrieval configs/demo.yaml" in caption
    assert "tests/data/old_runs/demo-retrieval/" in caption
    assert screenshot.DEMO_RUN.name == "demo-retrieval"


@pytest.mark.parametrize("run", ["demo", "report"])
def test_the_screenshot_reports_show_no_path_of_the_machine_they_ran_on(run, tmp_path):
    # The committed runs recorded /tmp/tmpk1780ieb/... and /work/wt-records/...: the shot shows the
    # file inside this repository, else its name.
    folder, _ = screenshot.RUNS[run]
    html = screenshot.render_report(folder, tmp_path).read_text(encoding="utf-8")
    assert not re.search(r"/(tmp|work|home)/", html)
    assert str(tmp_path) not in html
    shown = {"demo": "test set data/python-docs/questions.jsonl: 67 questions", "report": "corpus corpus.jsonl"}
    assert shown[run] in " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_a_path_is_shown_inside_the_repository_or_by_its_name():
    assert (
        screenshot.shown_path("/work/elsewhere/data/python-docs/questions.jsonl") == "data/python-docs/questions.jsonl"
    )
    assert screenshot.shown_path("/tmp/tmpk1780ieb/questions.jsonl") == "questions.jsonl"


def test_no_table_cell_holds_a_code_span_too_long_to_fit(site):
    # extra.css keeps a table's first column on one line; there a 193-character code span (judge-check
    # in getting started) stretched the table to 4,000 px. Elsewhere a code span wraps at its spaces.
    too_long = []
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        for row in re.findall(r"<tr>(.*?)</tr>", html, flags=re.S):
            for i, cell in enumerate(re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)):
                for code in re.findall(r"<code>(.*?)</code>", cell, flags=re.S):
                    words = unescape(re.sub(r"<[^>]+>", "", code)).split() if i else [unescape(code)]
                    too_long += [f"{page.relative_to(site)}: {w}" for w in words if len(w) > 80]
    assert too_long == []


def test_a_code_span_in_a_table_shows_no_escaping_backslash(site):
    # In a Markdown table a pipe inside a code span is written \|, and the backslash is shown.
    shown = [
        f"{page.relative_to(site)}: {code}"
        for page in site.rglob("*.html")
        for code in re.findall(r"<code>([^<]*\\\|[^<]*)</code>", page.read_text(encoding="utf-8"))
    ]
    assert shown == []


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"], headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    p = context.new_page()
    p.set_default_timeout(15_000)
    yield p
    context.close()


def test_the_getting_started_table_fits_the_page(site, page):
    page.goto((site / "getting-started.html").as_uri())
    widths = page.evaluate(
        "() => [...document.querySelectorAll('.md-typeset__scrollwrap')].map(w => [w.scrollWidth, w.clientWidth])"
    )
    assert widths and all(scroll <= client for scroll, client in widths), widths


def test_search_opened_from_a_file_says_it_needs_the_site_served(site, page):
    # Material hides its search box on file:// (no search worker there); the header says why.
    page.goto((site / "index.html").as_uri())
    assert not page.locator(".md-search").is_visible()
    note = page.locator(".md-search-file")
    assert note.is_visible()
    assert "Search needs the site served" in note.inner_text()
    assert "python -m http.server -d site" in note.inner_text()
    assert "browser does not run the search from file://" in " ".join(_text(site / "index.html").split())


def test_search_on_the_served_site_finds_pages_and_says_nothing(site, page):
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page.goto(f"http://127.0.0.1:{server.server_port}/index.html")
        page.keyboard.press("s")
        # Typed key by key, as a person does: Material searches on each key.
        page.locator("input[data-md-component=search-query]").press_sequentially("retrieval", delay=30)
        page.locator(".md-search-result__item").first.wait_for(timeout=30_000)
        assert page.locator(".md-search-result__item").count() > 0
        assert page.locator(".md-search-file").count() == 0
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """The built site served without a log line per request."""

    def log_message(self, format, *args):  # noqa: A002 - the name http.server gives it
        pass
