"""The run folder: opened new or resumed (and saying which), its status with a failure's reason,
records written as JSON lines, and a folder without results named with why."""

import json

import pytest

from rag_eval.base_records import StageReuse
from rag_eval.config import load_config
from rag_eval.errors import ConfigError, DataError
from rag_eval.rundir import RunFolder, read_report_json, read_status


def test_open_new_then_resume_what_did_not_finish(small_project):
    cfg = load_config(small_project / "audit.yaml")
    out = str(small_project / "runs")
    first = RunFolder.open(cfg, out)
    assert not first.resumed and first.opened == f"new run folder {first.path}"
    assert (first.path / "config.yaml").exists() and read_status(first.path) is None
    first.set_status("started")
    with pytest.raises(ConfigError, match="another rag-eval process is writing this run folder"):
        RunFolder.open(cfg, out, resume=True)  # its writer has not let it go
    first.release()
    again = RunFolder.open(cfg, out, resume=True)
    assert again.path == first.path and again.resumed
    assert again.opened == f"resumed {first.path} (started): finished records are reused"
    first.set_status("finished")
    again.release()
    fresh = RunFolder.open(cfg, out, resume=True)
    assert fresh.path != first.path and not fresh.resumed
    assert fresh.opened.startswith(f"--resume: the newest run of config 'small', {first.path}, finished at ")
    with pytest.raises(ConfigError, match="the run folder to resume does not exist"):
        RunFolder.open(cfg, out, resume=small_project / "nowhere")


def test_a_failed_status_keeps_its_reason_and_reading_the_folder_names_it(small_project):
    cfg = load_config(small_project / "audit.yaml")
    folder = RunFolder.create(cfg, str(small_project / "runs"))
    folder.set_status("failed", "questions.jsonl:3: no question")
    status = json.loads((folder.path / "status.json").read_text())
    assert status["status"] == "failed" and status["reason"] == "questions.jsonl:3: no question"
    assert status["opened"] == f"new run folder {folder.path}"
    with pytest.raises(DataError, match="the base run failed: questions.jsonl:3: no question"):
        read_report_json(folder.path, "the base")
    folder.set_status("interrupted", "stopped by Ctrl-C")
    assert read_status(folder.path).unfinished_why() == "was interrupted (stopped by Ctrl-C)"


def test_records_and_what_a_resumed_stage_reused(small_project):
    cfg = load_config(small_project / "audit.yaml")
    folder = RunFolder.create(cfg, str(small_project / "runs"))
    folder.write_records("x.jsonl", [StageReuse(reused=2), {"a": 1}])
    assert folder.read_records("x.jsonl") == [{"reused": 2}, {"a": 1}]
    assert folder.reused("generation", 0, {}) is None and folder.reuse == {}  # a new run records nothing
    folder.resumed = True
    line = folder.reused("generation", 3, {"prompt": 2}, "answers")
    assert line == "reused 3 finished answers; redoing 2 because the prompt changed"
    assert folder.reuse["generation"] == StageReuse(reused=3, redone={"prompt": 2})


def test_a_resume_refused_after_the_lock_was_taken_lets_it_go(small_project):
    """Review 54 M2: resuming another config's folder is refused after the writer lock was taken; the
    lock goes with the refusal, even while the error is kept (a notebook keeps the last one)."""
    from rag_eval.rundir import writer_of

    cfg = load_config(small_project / "audit.yaml")
    first = RunFolder.open(cfg, str(small_project / "runs"))
    first.release()
    other = cfg.model_copy(update={"name": "other"})
    with pytest.raises(ConfigError, match="belongs to config 'small'") as kept:
        RunFolder.open(other, str(small_project / "runs"), resume=first.path)
    assert kept.value is not None and writer_of(first.path) is None
    RunFolder.open(cfg, str(small_project / "runs"), resume=first.path).release()


def test_a_writer_lock_taken_while_a_reader_checks_it_waits_for_the_reader(tmp_path):
    """``writer_of`` holds a shared lock for an instant; a writer starting then is not refused in the
    name of the dead process whose pid the lock file still names (review 54 L4)."""
    import fcntl
    import threading

    from rag_eval.rundir import WRITER, lock_run, writer_of

    (tmp_path / WRITER).write_text("pid 1 on gone since yesterday\n")
    reader = (tmp_path / WRITER).open("r", encoding="utf-8")
    fcntl.flock(reader, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a reader checking, as writer_of does
    threading.Timer(0.05, reader.close).start()
    held = lock_run(tmp_path)
    assert (tmp_path / WRITER).read_text().startswith("pid ") and "gone" not in (tmp_path / WRITER).read_text()
    assert writer_of(tmp_path) is not None
    held.close()
    assert writer_of(tmp_path) is None
    blocker = (tmp_path / WRITER).open("r", encoding="utf-8")
    fcntl.flock(blocker, fcntl.LOCK_SH | fcntl.LOCK_NB)  # held throughout: refused after the tries
    with pytest.raises(ConfigError, match="another rag-eval process is writing"):
        lock_run(tmp_path)
    blocker.close()


def test_report_and_label_refuse_a_run_that_did_not_finish(small_project, capsys):
    """User trial 5 F5: `report RUN` re-rendered an interrupted run as a finished audit without its
    verdicts (the in-progress banner gone), and `label` said 'the run judged no answers'."""
    import rag_eval
    from rag_eval.cli import main

    run_dir = rag_eval.retrieval(str(small_project / "audit.yaml")).run_dir
    (run_dir / "status.json").write_text('{"status": "interrupted", "at": "2026-12-05T14:15:00+00:00"}')
    before = (run_dir / "report.md").read_text()
    for args, what in ((["report", str(run_dir)], "its report rendered again"), (["label", str(run_dir)], "a draw")):
        capsys.readouterr()
        assert main(args) == 2
        err = capsys.readouterr().err
        assert f"{run_dir / 'status.json'}: the run was interrupted, so {what}" in err, err
        assert "resume it first (rag-eval run CONFIG --resume RUN_DIR)" in err
    assert (run_dir / "report.md").read_text() == before and not (run_dir / "labels").exists()
