"""The report's files in the run folder: a report written before the run ends (the retrieval report
while the answers are made, the answers' report while they are judged) says at its top that the run
is still going; the final report does not."""

from rag_eval.cli import main
from rag_eval.orchestration.sources import GENERATING, JUDGING

from ..orchestration.test_runner import _config
from ..scripted_server import ScriptedServer, judge_name, structured_reply


def test_a_report_written_while_the_run_goes_on_says_so_at_its_top_and_the_final_does_not(small_project):
    seen: dict[str, tuple[str, str]] = {}

    def script(n, body):
        [run_dir] = list((small_project / "runs").iterdir())
        stage = "generating" if judge_name(body) is None else "judging"
        if stage not in seen:  # the report in the run folder when the stage's first call arrives
            seen[stage] = ((run_dir / "report.md").read_text(), (run_dir / "report.html").read_text())
        return "ok"

    with ScriptedServer(script, reply=structured_reply) as s:
        assert main(["run", str(_config(small_project, s.base_url))]) == 0
    [run_dir] = list((small_project / "runs").iterdir())
    for stage, note in (("generating", GENERATING), ("judging", JUDGING)):
        md, page = seen[stage]
        title, blank, mark = md.splitlines()[:3]
        assert (title, blank, mark) == ("# rag-eval report: small", "", f"> **In progress:** {note}")
        mark = f'<p class="warn in-progress" role="status"><b>In progress:</b> {note}</p>'
        assert page[page.index("</h1>") :].startswith(f"</h1>\n{mark}") and page.count("In progress") == 1
    assert "## Generation" not in seen["generating"][0] and "## Generation" in seen["judging"][0]
    final_md, final_html = (run_dir / "report.md").read_text(), (run_dir / "report.html").read_text()
    assert "In progress" not in final_md and "in-progress" not in final_html and "In progress" not in final_html
    assert "## Generation" in final_md
