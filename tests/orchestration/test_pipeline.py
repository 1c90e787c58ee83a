"""One pipeline over any answer source: a source declared here runs the whole audit; a run that
fails, is interrupted or is resumed says so in status.json, on the terminal and in the report."""

import csv
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

import rag_eval
from rag_eval.answers.answer_records import Answer
from rag_eval.cli import main
from rag_eval.config import load_config
from rag_eval.errors import ConfigError
from rag_eval.orchestration.pipeline import Answered, AnswerSource, Audit
from rag_eval.orchestration.runner import run_audit
from rag_eval.orchestration.sources import GENERATING, SOURCES, GeneratedAnswers, retrieval_report
from rag_eval.report.assemble import generation_section, retrieved_in_top_k
from rag_eval.system.replies import failure_lines

from ..conftest import SMALL_CORPUS, write_jsonl
from ..plugins import install, plugins_read_again
from ..scripted_server import ScriptedServer, judge_name, structured_reply
from ..system.rag_service import RagService
from ..system.test_http import TOKEN, project
from ..system.test_trace_audit import QUESTIONS, judges
from ..system.test_traces import PHOENIX
from .test_runner import _config as _audit_config


def _config(project, base_url, extra=""):
    """The small project's audit with the scripted model, judged by rag-eval's own yes/no judges
    (``extra``: more settings of the model, e.g. ``, max_retries: 0``)."""
    cfg = _audit_config(project, base_url, extra)
    cfg.write_text(cfg.read_text() + "  metrics: [refusal, correctness, faithfulness_yesno]\n")
    return cfg


class ReferenceAnswers(AnswerSource):
    """A fifth source, declared in this test: every question answered with its reference answer
    (or "I do not know.") on bm25's top 2 chunks."""

    kind = "reference"

    def answer(self, audit: Audit) -> Answered:
        res, report = retrieval_report(audit.cfg, audit.inputs, audit.run_dir)
        ranked = res.retrievers["bm25"].rankings
        records = [
            Answer(
                question_id=q.id,
                prompt="reference",
                retriever="bm25",
                contexts=ranked.ids(audit.inputs.corpus, i)[:2],
                answer=q.reference or "I do not know.",
                model="reference",
            )
            for i, q in enumerate(res.questions)
        ]
        audit.folder.write_records("generation.jsonl", records)
        report.generation = generation_section(audit.cfg, records, len(records), [])
        return Answered(
            report,
            report.generation.records,
            audit.cfg,
            audit.inputs.corpus,
            res.questions,
            retrieved_in_top_k(audit.cfg, res),
        )


def test_a_fifth_answer_source_is_one_registered_class(small_project):
    with SOURCES.registered(ReferenceAnswers), ScriptedServer(reply=structured_reply) as s:
        run_dir = run_audit(load_config(_config(small_project, s.base_url)), source="reference")
    run = rag_eval.read_run(run_dir)
    assert run.status is not None and run.status.status == "finished"
    questions = {q.question_id for q in run.retrieval}
    assert {(a.prompt, a.model) for a in run.answers} == {("reference", "reference")}
    assert {a.question_id for a in run.answers} == questions
    assert {j.prompt for j in run.judgements} == {"reference"}
    rows = run.rows["reference"]
    assert set(rows) == questions and all(r.outcome for r in rows.values())
    assert run.summary.attribution["reference"]["ok"].n == len(questions)
    assert (run_dir / "report.html").exists() and "reference" in (run_dir / "report.md").read_text()


def test_an_installed_plugins_source_is_found_by_its_kind(small_project, monkeypatch):
    install(
        small_project / "site",
        monkeypatch,
        """
        [rag_eval.sources]
        reference = rag_eval_reference:ReferenceAnswers
        """,
        {"rag_eval_reference": "from tests.orchestration.test_pipeline import ReferenceAnswers\n"},
    )
    cfg = load_config(_config(small_project, "http://127.0.0.1:9/v1"))
    with plugins_read_again(SOURCES):
        assert SOURCES["reference"] is ReferenceAnswers
        with pytest.raises(ConfigError) as err:
            run_audit(cfg, source="referenc")
    assert str(err.value) == (
        "source: unknown answer source 'referenc'; did you mean 'reference'? "
        "known: prompts, system, supplied, traces, reference\n    fix: name a registered source, or register yours"
    )
    assert "reference" not in SOURCES


def test_a_run_that_fails_records_why_and_diff_and_history_name_it(small_project, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAG_SVC_KEY", TOKEN)
    monkeypatch.chdir(tmp_path)
    finished = rag_eval.retrieval(str(small_project / "audit.yaml"), out=tmp_path / "runs").run_dir
    # Nothing listens there: every question fails and the run stops (exit 2) after opening its folder.
    config = project(tmp_path, "http://127.0.0.1:9/ask", "http://127.0.0.1:9/v1")
    assert main(["-q", "run", config]) == 2
    capsys.readouterr()
    failed = next(p for p in (tmp_path / "runs").iterdir() if p.name.startswith("svc-"))
    status = json.loads((failed / "status.json").read_text())
    assert status["status"] == "failed" and "answered none of the 7 questions" in status["reason"]
    assert rag_eval.read_run(finished).status.status == "finished"

    assert main(["diff", str(finished), str(failed)]) == 2
    err = capsys.readouterr().err
    assert "the new run failed:" in err and "answered none of the 7 questions" in err
    assert "did not finish" not in err

    assert main(["history", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert f"{failed.name}: failed:" in out and "answered none of the 7 questions" in out


def test_ctrl_c_leaves_the_run_interrupted_and_says_how_to_resume(small_project, monkeypatch, capsys):
    def interrupted(self, audit):
        retrieval_report(audit.cfg, audit.inputs, audit.run_dir, in_progress=GENERATING)
        raise KeyboardInterrupt

    with ScriptedServer(reply=structured_reply) as s:
        cfg = _config(small_project, s.base_url)
        monkeypatch.setattr(GeneratedAnswers, "answer", interrupted)
        assert main(["-q", "run", str(cfg)]) == 130
        run_dir = next((small_project / "runs").iterdir())
        err = capsys.readouterr().err
        assert f"finished records are in {run_dir}" in err
        assert f"resume it with: rag-eval run {cfg} --resume {run_dir}" in err
        assert json.loads((run_dir / "status.json").read_text())["status"] == "interrupted"
        # The report written before generation no longer says the run is working (user trial M8).
        md, page = (run_dir / "report.md").read_text(), (run_dir / "report.html").read_text()
        assert "In progress" not in md and "In progress" not in page
        stopped = "Stopped before the end:** the run interrupted ("
        assert stopped in md and f"Resume it with: rag-eval run {cfg} --resume {run_dir}" in md
        assert "<b>Stopped before the end:</b> the run interrupted (" in page and "## Retrieval" in md
        monkeypatch.undo()
        assert main(["-q", "run", str(cfg), "--resume", str(run_dir)]) == 0
    assert f"resumed {run_dir} (interrupted)" in capsys.readouterr().out
    assert json.loads((run_dir / "status.json").read_text())["status"] == "finished"
    assert "Stopped before the end" not in (run_dir / "report.md").read_text()


def test_resume_says_what_it_did_and_the_report_what_was_reused(small_project, capsys):
    with ScriptedServer(reply=structured_reply) as s:
        cfg = str(_config(small_project, s.base_url))
        assert main(["-q", "run", cfg]) == 0
        first = next((small_project / "runs").iterdir())
        capsys.readouterr()
        # The newest run finished: --resume alone starts a new one, and says so.
        assert main(["-q", "run", cfg, "--resume"]) == 0
        out = capsys.readouterr().out
        assert f"--resume: the newest run of config 'small', {first}, finished at" in out
        assert "nothing to resume, so a new run was started in" in out
        assert len(list((small_project / "runs").iterdir())) == 2
        # A run folder named: resumed, its finished answers and verdicts reused, and the report says so.
        assert main(["-q", "run", cfg, "--resume", str(first)]) == 0
    assert f"resumed {first} (finished): finished records are reused" in capsys.readouterr().out
    report = (first / "report.md").read_text()
    n = len(rag_eval.read_run(first).answers)
    assert "## Resumed run" in report and f"- generation: {n} reused" in report
    assert "- judgements: " in report and rag_eval.read_run(first).report.resume["judgements"].reused > 0


def test_a_service_audit_prints_each_failure_and_the_system_failed_gate_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAG_SVC_KEY", TOKEN)
    monkeypatch.chdir(tmp_path)
    with (
        RagService(SMALL_CORPUS, fail_on="context manager", token=TOKEN) as svc,
        ScriptedServer(reply=structured_reply) as judge,
    ):
        config = project(tmp_path, svc.url, judge.base_url)
        raw = yaml.safe_load(Path(config).read_text())
        Path(config).write_text(yaml.safe_dump({**raw, "gates": {"system.failed": "<= 0"}}, sort_keys=False))
        assert main(["-q", "run", config]) == 1
    out = capsys.readouterr().out
    assert "1 of 7 questions failed (not judged; gate: system.failed):" in out
    assert "  q3: the system failed after 2 attempt(s): HTTP 500" in out
    assert "gate FAIL: system.failed = 1 (needs <= 0)" in out


def test_failure_lines_name_the_timeout_and_count_the_rest():
    cfg = SimpleNamespace(system=SimpleNamespace(timeout_s=5.0))
    failed = [(f"q{i}", "the system failed after 2 attempt(s): ReadTimeout: ") for i in range(7)]
    lines = failure_lines(cfg, failed)
    assert len(lines) == 6 and lines[-1] == "  ... and 2 more (report.md, system.jsonl)"
    assert lines[0] == (
        "  q0: the system failed after 2 attempt(s): ReadTimeout (no reply within system.timeout_s = 5 s; raise it "
        "if the system is slow)"
    )
    assert failure_lines(cfg, [("q1", "HTTP 500: boom")]) == ["  q1: HTTP 500: boom"]


@pytest.mark.parametrize("labelled", [True, False])
def test_trace_runs_get_the_html_page_and_labels_with_questions(tmp_path, labelled):
    with ScriptedServer(reply=structured_reply) as s:
        cfg = {"name": "prod", "judges": judges(s.base_url), "report": {"out": str(tmp_path / "runs")}}
        if labelled:
            write_jsonl(tmp_path / "corpus.jsonl", SMALL_CORPUS)
            write_jsonl(tmp_path / "questions.jsonl", QUESTIONS)
            cfg |= {
                "corpus": {"path": "corpus.jsonl"},
                "test_set": {"path": "questions.jsonl"},
                "retrieval": {"k": [1, 3], "retrievers": {"bm25": {"type": "bm25"}}},
            }
        (tmp_path / "traces.yaml").write_text(yaml.safe_dump(cfg))
        result = rag_eval.judge_traces(PHOENIX, config=tmp_path / "traces.yaml", labels=2)
    assert "<h1>rag-eval report: prod</h1>" in (result.run_dir / "report.html").read_text()
    rows = list(csvrows(result.run_dir / "labels" / "labels.csv"))
    assert len(rows) == 2 and all(r["question"] for r in rows)
    if labelled:
        refs = {q["id"]: q.get("reference", "") for q in QUESTIONS}
        assert {r["question_id"]: r["reference"] for r in rows} == {
            r["question_id"]: refs[r["question_id"]] for r in rows
        }
        assert any(r["reference"] for r in rows)


def csvrows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        yield from csv.DictReader(fh)


def test_a_dead_model_endpoint_fails_the_run_and_says_how_many_and_why(small_project, capsys):
    """Nothing listens on the model's port: every answer fails. The run finishes (its retrieval is
    measured) but says so on screen and in status.json, and the default gate fails it (46 item 8)."""
    cfg = _config(small_project, "http://127.0.0.1:9/v1", ", max_retries: 0")
    assert main(["-q", "run", str(cfg)]) == 1
    out = capsys.readouterr().out
    error = "APIConnectionError: Connection error."
    assert f"failures: 4 of 4 answers failed, 0 judgements failed: 4 answers not judged; first error: {error}" in out
    assert "gate FAIL: failures.not_judged_share = 1 (needs <= 0; the default gate)" in out
    assert (
        "    4 of 4 answers not judged: their calls failed (4 answers: the model's or the system's, 0 judgements)"
        in out
    )
    assert f"    first error: {error}" in out
    run_dir = next((small_project / "runs").iterdir())
    status = json.loads((run_dir / "status.json").read_text())
    assert status["status"] == "finished"
    assert status["failures"] == {"answers": 4, "judgements": 0, "first_error": error}
    assert rag_eval.read_run(run_dir).status.finished_with_failures
    failures = json.loads((run_dir / "summary.json").read_text())["failures"]
    assert failures["not_judged"] == 4 and failures["not_judged_share"] == 1.0 and failures["answers_total"] == 4


def _partly_failing(n, body):
    """The answer to q1 fails (HTTP 500), and the correctness judge's call on q2's answer."""
    text = json.dumps(body["messages"])
    name = judge_name(body)
    if name is None and "Which sequence type" in text:
        return "500"
    if name == "correctness" and "What is a set?" in text:
        return "500"
    return "ok"


def test_partly_failed_calls_are_counted_and_the_gate_share_is_configurable(small_project, capsys):
    """One answer and one judgement fail: both counted on screen and in status.json; the default
    gate fails the run (half the answers not judged: the failed one, and q2, whose correctness call
    failed, as the outcome table counts them: user trial M3), a configured share lets it pass."""
    with ScriptedServer(_partly_failing, reply=structured_reply) as s:
        cfg = _config(small_project, s.base_url, ", max_retries: 0")
        assert main(["-q", "run", str(cfg)]) == 1
        out = capsys.readouterr().out
        line = "failures: 1 of 4 answers failed, 1 judgement failed: 2 answers not judged; first error: "
        assert line + "APIStatusError (HTTP 500)" in out or line + "InternalServerError (HTTP 500)" in out, out
        assert "gate FAIL: failures.not_judged_share = 0.5 (needs <= 0; the default gate)" in out
        assert "outcomes: ok 1, answered_unanswerable 1, not_judged 2" in out
        first = next((small_project / "runs").iterdir())
        failures = json.loads((first / "status.json").read_text())["failures"]
        assert (failures["answers"], failures["judgements"]) == (1, 1) and "HTTP 500" in failures["first_error"]
        judgements = [json.loads(line) for line in (first / "judgements.jsonl").read_text().splitlines()]
        q2 = {j["judge"]: j["status"] for j in judgements if j["question_id"] == "q2"}
        assert q2["correctness"] == "not_judged" and q2["refusal"] == "judged"

        cfg.write_text(cfg.read_text() + "gates: {failures.not_judged_share: '<= 0.5'}\n")
        assert main(["-q", "run", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert line in out and "gate pass: failures.not_judged_share = 0.5 (needs <= 0.5)" in out


def test_a_run_that_fails_before_writing_leaves_no_folder_and_a_later_failure_names_its_folder(small_project, capsys):
    """A run folder is removed when the run failed before any record; one with records stays, and
    the error names it (46 item 9)."""
    cfg = _config(small_project, "http://127.0.0.1:9/v1")
    text = cfg.read_text()
    cfg.write_text(text.replace("test_set: {path: questions.jsonl}", "test_set: {path: no-such-questions.jsonl}"))
    assert main(["-q", "run", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "no-such-questions.jsonl" in err and "its folder keeps" not in err
    assert not (small_project / "runs").exists() or not list((small_project / "runs").iterdir())

    # A prompt file that is missing is found after retrieval wrote its records: the folder stays.
    cfg.write_text(text.replace(f"{{base: {small_project / 'answer.md'}}}", "{base: no-such-prompt.md}"))
    assert main(["-q", "run", str(cfg)]) == 2
    err = capsys.readouterr().err
    [kept] = list((small_project / "runs").iterdir())
    assert (kept / "retrieval.jsonl").exists() and json.loads((kept / "status.json").read_text())["status"] == "failed"
    assert f"its folder keeps what was written: {kept} (status.json: failed" in err
    assert f"--resume {kept}" in err


def test_the_retrieval_report_is_written_and_announced_before_the_first_answer(small_project, capsys):
    """While the model makes the first answer, report.md and report.html already hold the retrieval
    section with its misses, and the terminal has said where (49 item 5); the final report
    replaces them."""
    seen: list[str] = []

    def script(n, body):
        if judge_name(body) is None and not seen:
            [run_dir] = list((small_project / "runs").iterdir())
            seen.append((run_dir / "report.md").read_text())
            seen.append((run_dir / "report.html").read_text())
        return "ok"

    # q5 asks what q1 asks, but labels the sets chunk: bm25 misses it, and the early report lists it.
    miss = {"id": "q5", "question": "Which sequence type can be changed in place?", "answer_in": "py/sets"}
    with (small_project / "questions.jsonl").open("a") as fh:
        fh.write(json.dumps(miss) + "\n")
    with ScriptedServer(script, reply=structured_reply) as s:
        cfg = _config(small_project, s.base_url)
        cfg.write_text(cfg.read_text().replace("  k: [1, 3]\n", "  k: [1]\n").replace("top_k: 2", "top_k: 1"))
        assert main(["run", str(cfg)]) == 0
    err = capsys.readouterr().err
    [run_dir] = list((small_project / "runs").iterdir())
    early_md, early_html = seen
    assert "### Misses (no relevant chunk in the top 1)" in early_md and "| q5 |" in early_md
    assert "## Generation" not in early_md and "q5" in early_html
    announced = f"retrieval report: {run_dir / 'report.md'} and report.html"
    assert announced in err and err.index(announced) < err.index("generation: 5 questions")
    final = (run_dir / "report.md").read_text()
    assert "### Misses" in final and "## Generation" in final


def test_kill_int_stops_a_run_started_with_sigint_ignored(small_project, tmp_path):
    """User trial L3: a shell without job control starts `rag-eval run ... &` with SIGINT ignored;
    `kill -INT` then stops it as Ctrl-C does (exit 130, status interrupted, how to resume), not
    silently finishing the run."""
    import signal
    import subprocess
    import sys
    import time

    from ..conftest import ROOT

    with ScriptedServer(reply=structured_reply, latency_s=0.5) as s:
        cfg = _config(small_project, s.base_url)
        proc = subprocess.Popen(
            [sys.executable, "-m", "rag_eval.cli", "run", str(cfg)],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
        deadline = time.time() + 60
        while s.calls < 2 and time.time() < deadline:  # mid-run: the answers are being asked
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    run_dir = next((small_project / "runs").iterdir())
    assert json.loads((run_dir / "status.json").read_text())["status"] == "interrupted"
    assert f"--resume {run_dir}" in err


def test_a_stopped_runs_note_names_only_a_command_that_continues_it(tmp_path):
    """findings-52 L10: `rag-eval run` names its resume command; a run no `rag-eval run` continues
    (retrieval alone, compare, traces, the API's rows) says to run its own command again; a report
    that cannot be rewritten leaves the error that stopped the run to be told."""
    from types import SimpleNamespace

    from rag_eval.orchestration.pipeline import _mark_stopped, _stopped_note

    folder = SimpleNamespace(path=tmp_path / "run-1")
    note = _stopped_note(folder, "rag-eval run a.yaml --resume {run_dir}", "interrupted")
    assert note.endswith(f"Resume it with: rag-eval run a.yaml --resume {tmp_path / 'run-1'}")
    other = _stopped_note(folder, None, "interrupted")
    assert "rag-eval run" not in other and "Run the same command again" in other
    (tmp_path / "run-1").mkdir()
    (tmp_path / "run-1" / "report.md").write_bytes(b"> **In progress:** \xff\xfe\n")  # not UTF-8
    _mark_stopped(folder, None, "failed: x")  # no UnicodeDecodeError in place of the run's own error
