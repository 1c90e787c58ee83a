"""The documentation site: `mkdocs build --strict` passes (no broken link, no missing page, no
figure missing from its result file), the generated references cover every config key and every
CLI subcommand, the README stays a short guide, and the pages render in a real browser."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
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
    for key in keys:
        model, name = key.split(".")
        assert f"rag_eval.config.{model}" in text, model
    # A key's default and description come from the model: LLMConfig's ctx_size, for one.
    row = re.search(r"ctx_size\s+int\s+(\S+)\s+([^\n]+)", text)
    assert row and row.group(1) == "8192" and "context tokens" in row.group(2)
    # A description's <placeholder> is shown as written, not taken for an HTML tag.
    assert "chunk ids are <relative path>#<section> (heading)" in " ".join(text.split())


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


def test_the_report_screenshot_is_in_the_docs():
    png = ROOT / "docs" / "assets" / "report.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
