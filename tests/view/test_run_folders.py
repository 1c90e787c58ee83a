"""Run folders as the view finds them: only a folder directly inside RUNS_DIR, by name."""

import json
import shutil

import pytest

from rag_eval.rundir import RunFailures
from rag_eval.view.run_folders import NotARun, failures_line, list_runs, run_folder, run_status

from ..conftest import ROOT


@pytest.mark.parametrize("name", ["..", ".", "", "../x", "a/b", "/etc", "/tmp", "a\\\\b", "x\\x00", "missing"])
def test_a_name_that_is_not_a_run_inside_the_folder_is_refused(tmp_path, name):
    runs = tmp_path / "runs"
    (runs / "a" / "b").mkdir(parents=True)
    (tmp_path / "x").mkdir()
    with pytest.raises(NotARun):
        run_folder(runs, name)


def test_a_link_that_leads_out_of_the_folder_is_refused(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (runs / "sneaky").symlink_to(tmp_path / "elsewhere")
    (runs / "real").mkdir()
    with pytest.raises(NotARun):
        run_folder(runs, "sneaky")
    assert run_folder(runs, "real") == (runs / "real").resolve()


def test_the_list_has_finished_and_unfinished_runs_newest_first(built_runs):
    folder, first, second = built_runs
    entries = list_runs(folder)
    assert [e.name for e in entries] == [second, first]
    assert all(e.status == "finished" and e.has_report and e.has_answers for e in entries)
    assert dict(entries[0].headlines)["generation.base.correctness"].startswith(("0.", "1."))


def test_a_link_is_listed_as_it_opens(built_runs, tmp_path):
    """One rule for links in the list and in the pages: a link to a run folder inside RUNS_DIR is
    listed and opens; a link that leads out is listed with the reason it is not opened, and its
    figures are not read through it."""
    src, first, _ = built_runs
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copytree(src / first, tmp_path / "elsewhere" / first)
    shutil.copytree(src / first, runs / first)
    (runs / "outside").symlink_to(tmp_path / "elsewhere" / first)
    (runs / "latest").symlink_to(runs / first)
    entries = {e.name: e for e in list_runs(runs)}
    assert set(entries) == {first, "outside", "latest"}
    out = entries["outside"]
    assert out.status == "not opened" and not out.has_report and not out.headlines and not out.outcomes
    assert f"a link to {tmp_path / 'elsewhere' / first}, not a folder directly inside {runs}" in out.note
    with pytest.raises(NotARun):
        run_folder(runs, "outside")
    assert entries["latest"].has_report and entries["latest"].status == "finished"
    assert run_folder(runs, "latest") == (runs / first).resolve()


def test_the_list_shows_outcomes_and_judged_figures_not_the_retrieval_ones(built_runs):
    """Runs of one config share their retrieval figures: the list shows what differs."""
    folder, first, second = built_runs
    entries = {e.name: e for e in list_runs(folder)}
    summary = json.loads((folder / first / "summary.json").read_text())
    counts = {o: s["count"] for o, s in summary["attribution"]["base"].items() if s["count"]}
    ((prompt, line),) = entries[first].outcomes
    parsed = [(o, int(n)) for o, n in (part.rsplit(" ", 1) for part in line.split(" · "))]
    assert prompt == "base" and dict(parsed) == counts and len(counts) > 1
    assert [n for _, n in parsed] == sorted(counts.values(), reverse=True)  # most frequent first
    names = [k for k, _ in entries[first].headlines]
    assert "generation.base.correctness" in names and all(k.startswith("generation.base.") for k in names)
    # The second run's judge changed its mind on two answers: its line differs, as its figures do.
    assert entries[first].outcomes != entries[second].outcomes


def test_a_run_without_answers_lists_its_retrieval_figures(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(ROOT / "tests" / "data" / "old_runs" / "retrieval", runs / "retrieval")
    (entry,) = list_runs(runs)
    assert entry.headlines and all(k.startswith("retrieval.") for k, _ in entry.headlines) and not entry.outcomes


def test_a_run_that_finished_with_failures_is_listed_so(built_runs, tmp_path):
    src, first, _ = built_runs
    runs = tmp_path / "runs"
    shutil.copytree(src / first, runs / first)
    status = json.loads((runs / first / "status.json").read_text())
    failures = {"answers": 3, "judgements": 0, "first_error": "APIConnectionError: Connection error."}
    (runs / first / "status.json").write_text(json.dumps({**status, "failures": failures}))
    (entry,) = list_runs(runs)
    assert entry.status == "finished with failures" and entry.failures == RunFailures(**failures)
    assert failures_line(entry.failures) == (
        "3 answers failed (every call); first error: APIConnectionError: Connection error."
    )
    assert run_status(runs / first) == "finished with failures"
