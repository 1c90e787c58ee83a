"""The report's sections are one list: a section registered in it (its data built from the finished
report and the run folder, its Markdown and HTML) shows in report.md and report.html and keeps its
data in report.json, with nothing else touched; the shipped sections keep their order."""

import json
import shutil

from rag_eval.cli import main
from rag_eval.report.report_records import Report
from rag_eval.report.sections import SECTIONS, Section, section_data

from ..conftest import ROOT

OLD = ROOT / "tests" / "data" / "old_runs"


def _files(report: Report, run_dir) -> dict:
    return {"files": sorted(p.name for p in run_dir.iterdir()), "retrievers": sorted(report.retrieval.retrievers)}


RUN_FILES = Section(
    "run_files",
    build=_files,
    markdown=lambda r: ["## Run files", "", *(f"- {f}" for f in section_data(r, "run_files")["files"]), ""],
    html=lambda r: ["<h2>Run files</h2>", f"<p>{len(section_data(r, 'run_files')['files'])} files</p>"],
)


def test_a_registered_section_is_built_shown_and_kept(tmp_path):
    run = tmp_path / "retrieval"
    shutil.copytree(OLD / "retrieval", run)
    with SECTIONS.registered(RUN_FILES):
        assert main(["report", str(run)]) == 0
    md = (run / "report.md").read_text(encoding="utf-8")
    old_md = (OLD / "retrieval" / "report.md").read_text(encoding="utf-8")
    # After every shipped section, the rest of the page as it was.
    assert md == old_md + "\n## Run files\n\n- report.json\n- report.md\n- summary.json\n"
    page = (run / "report.html").read_text(encoding="utf-8")
    assert page.endswith("\n<h2>Run files</h2>\n<p>3 files</p>\n</body></html>")
    kept = json.loads((run / "report.json").read_text(encoding="utf-8"))
    assert kept["run_files"] == {"files": ["report.json", "report.md", "summary.json"], "retrievers": ["bm25"]}

    # Not registered: the data stays in report.json (a person's run is never cut), the pages as shipped.
    assert main(["report", str(run)]) == 0
    assert (run / "report.md").read_text(encoding="utf-8") == old_md
    assert json.loads((run / "report.json").read_text(encoding="utf-8"))["run_files"] == kept["run_files"]


def test_the_shipped_sections_in_their_order():
    assert list(SECTIONS) == [
        "models",
        "resume",
        "lint",
        "system",
        "traces",
        "retrieval",
        "generation",
        "comparison",
        "attribution",
        "judges",
        "criteria",
        "citations",
        "adaptation",
        "labels",
        "triage",
    ]
    html = [s.name for s in sorted(SECTIONS.values(), key=lambda s: s.html_rank) if s.html_rank < 100]
    assert html == [
        "models",
        "system",
        "lint",
        "comparison",
        "attribution",
        "retrieval",
        "judges",
        "criteria",
        "citations",
        "triage",
    ]
