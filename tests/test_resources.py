"""Files shipped inside the package: the demo's questions and the judge-check cases are found from
any folder, as the default prompts are."""

from pathlib import Path

from rag_eval.cli import main
from rag_eval.judges.judge_check import DEFAULT_CASES, read_case_files
from rag_eval.resources import resolve_shipped, shipped_data

from .conftest import ROOT


def test_the_shipped_data_is_the_source_trees(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("python-docs/questions.jsonl", "judge-check/cases.jsonl"):
        assert shipped_data(name).read_bytes() == (ROOT / "data" / name).read_bytes()
    assert resolve_shipped(Path("data/python-docs/questions.jsonl")) == shipped_data("python-docs/questions.jsonl")
    assert resolve_shipped(Path("../data/judge-check/cases.jsonl")) == shipped_data("judge-check/cases.jsonl")
    # A user's own missing file stays missing (its error names it), and an existing one is kept.
    assert resolve_shipped(Path("data/mine.jsonl")) == Path("data/mine.jsonl")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "questions.jsonl").write_text("{}\n")
    assert resolve_shipped(Path("data/questions.jsonl")) == Path("data/questions.jsonl")


def test_judge_check_finds_its_default_cases_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cases = read_case_files([DEFAULT_CASES])
    expected = sum(1 for line in (ROOT / "data/judge-check/cases.jsonl").read_text().splitlines() if line.strip())
    assert len(cases) == expected and {c["judge"] for c in cases} >= {"refusal", "correctness"}


def test_a_config_naming_the_demo_questions_validates_from_any_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo.yaml").write_text(
        "name: anywhere\ncorpus: {source: python-docs}\ntest_set: {path: data/python-docs/questions.jsonl}\n"
        "retrieval: {k: [1], retrievers: {bm25: {type: bm25}}}\n"
    )
    assert main(["-q", "validate", "demo.yaml"]) == 0, capsys.readouterr()
    assert "67 questions" in capsys.readouterr().out
