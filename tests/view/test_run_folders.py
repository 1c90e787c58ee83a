"""Run folders as the view finds them: only a folder directly inside RUNS_DIR, by name."""

import pytest

from rag_eval.view.run_folders import NotARun, list_runs, run_folder


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
    assert dict(entries[0].headlines)["retrieval.bm25.hit@1"].startswith(("0.", "1."))
