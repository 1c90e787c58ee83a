"""The Python API the way the README shows it: configs as dicts, inputs as DataFrames and
Datasets, results as DataFrames, the same clear errors as the CLI, and the pytest helper."""

import importlib
import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import datasets
import pandas as pd
import pytest

import rag_eval
from rag_eval.cli import main
from rag_eval.report.report_records import Report, Summary

from .conftest import ROOT, SMALL_CORPUS, SMALL_QUESTIONS
from .scripted_server import ScriptedServer, judge_name, structured_reply

# Three questions whose fields have one type each, as a datasets.Dataset needs (from_list would
# take the columns of the first row only).
QUESTIONS = [*SMALL_QUESTIONS[:2], {**SMALL_QUESTIONS[2], "answer_in": "py/with"}]
CONFIG = {
    "name": "api",
    "retrieval": {"k": [1, 3], "depth": 5, "retrievers": {"bm25": {"type": "bm25"}, "dense": {"type": "dense"}}},
    "gates": {"retrieval.dense.hit@1": ">= 0.99"},
}


def test_audit_from_dataframes_equals_the_run_from_files(small_project, tmp_path):
    """Corpus as a DataFrame and test set as a datasets.Dataset give exactly the ranks of the same
    rows read from files by the CLI; the inputs are kept in the run folder."""
    cfg = {**CONFIG, "report": {"out": str(tmp_path / "api-runs")}}
    result = rag_eval.retrieval(
        cfg, corpus=pd.DataFrame(SMALL_CORPUS), test_set=datasets.Dataset.from_pandas(pd.DataFrame(QUESTIONS))
    )
    (small_project / "audit.yaml").write_text(
        (small_project / "audit.yaml")
        .read_text()
        .replace("    bm25: {type: bm25}\n", "    bm25: {type: bm25}\n    dense: {type: dense}\n")
    )
    (small_project / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    assert main(["-q", "retrieval", str(small_project / "audit.yaml")]) == 0
    from_files = rag_eval.read_run(next((small_project / "runs").iterdir()))

    df = result.retrieval_df()
    assert len(df) == 6 and set(df["retriever"]) == {"bm25", "dense"}
    ranks = df.set_index(["question_id", "retriever"])["first_relevant_rank"]
    assert (
        ranks.to_dict()
        == from_files.retrieval_df().set_index(["question_id", "retriever"])["first_relevant_rank"].to_dict()
    )
    assert ranks.to_dict() == {
        ("q1", "bm25"): 1,
        ("q2", "bm25"): 1,
        ("q3", "bm25"): 1,
        ("q1", "dense"): 2,
        ("q2", "dense"): 1,
        ("q3", "dense"): 1,
    }
    assert df.loc[(df.question_id == "q1") & (df.retriever == "dense"), "hit@1"].item() == 0.0
    assert result.figure("retrieval.dense.hit@1")["value"] == pytest.approx(2 / 3)
    [gate] = result.gates()
    assert not gate.passed and gate.value == pytest.approx(2 / 3)
    kept = [json.loads(line) for line in (result.run_dir / "inputs" / "test_set.jsonl").read_text().splitlines()]
    assert [q["id"] for q in kept] == ["q1", "q2", "q3"] and kept[1]["answer_in"] == {"py/sets": 1}
    assert "bm25" in str(result) and str(result.run_dir) in str(result)


def test_api_errors_name_the_row_and_the_key(tmp_path):
    bad_questions = [{"id": "a", "question": "What is a set?", "answer_in": "py/sets"}, {"id": "b", "question": ""}]
    with pytest.raises(rag_eval.DataError) as err:
        rag_eval.lint(CONFIG, corpus=SMALL_CORPUS, test_set=bad_questions)
    assert "test set row 1: the question is missing or empty" in err.value.render()
    with pytest.raises(rag_eval.ConfigError) as err:
        rag_eval.retrieval(
            {**CONFIG, "retrieval": {"k": "five", "retrievers": {"x": {"type": "bm25"}}}},
            corpus=SMALL_CORPUS,
            test_set=SMALL_QUESTIONS,
        )
    assert "config (dict) (retrieval.k): expected a list" in err.value.render()
    with pytest.raises(rag_eval.ConfigError) as err:
        rag_eval.retrieval({**CONFIG, "corpus": {"source": "given"}}, test_set=SMALL_QUESTIONS)
    assert "needs the corpus passed from Python" in err.value.render()
    with pytest.raises(rag_eval.DataError) as err:
        rag_eval.read_run(tmp_path)
    assert "not a finished rag-eval run folder" in err.value.render()
    # The function names survive the import of the submodules of the same name.
    importlib.import_module("rag_eval.retrievers.bm25")
    assert callable(rag_eval.retrieval) and callable(rag_eval.lint) and callable(rag_eval.compare)


def test_judge_answers_with_ragas_column_names(tmp_path):
    """Supplied answers (Ragas' names) get judgements and attribution; with no retrieval labels a
    retrieval miss is the context-recall judge finding the reference absent from the contexts."""

    def reply(body):
        text = body["messages"][-1]["content"]
        if judge_name(body) == "supported" and "elliptical" in text:
            return "No: the context does not say this."
        return structured_reply(body)

    data = datasets.Dataset.from_dict(
        {
            "user_input": ["What is a set?", "What shape is the orbit?", "Who wrote the tutorial?"],
            "retrieved_contexts": [
                ["A set object is an unordered collection of distinct hashable objects."],
                ["Bananas are yellow."],
                ["Lists are mutable sequences."],
            ],
            "response": ["An unordered collection of distinct objects.", "Round.", "Guido."],
            "reference": ["An unordered collection of distinct hashable objects.", "The orbit is elliptical.", None],
            "answerable": [True, True, False],
        }
    )
    with ScriptedServer(reply=reply) as s:
        llm = {"provider": "openai", "model": "scripted", "base_url": s.base_url, "max_retries": 1}
        result = rag_eval.judge_answers(
            data,
            judges={"llm": llm, "metrics": ["refusal", "correctness", "context_recall_yesno"]},
            out=tmp_path,
        )
    att = result.attribution_df().set_index("question")
    assert att.loc["What is a set?", "outcome"] == "ok"
    assert att.loc["What shape is the orbit?", "outcome"] == "retrieval_miss"
    assert "context_recall_yesno 0.00 < 0.5" in att.loc["What shape is the orbit?", "why"]
    assert att.loc["Who wrote the tutorial?", "outcome"] == "answered_unanswerable"
    j = result.judgements_df()
    assert set(j["judge"]) == {"refusal", "correctness", "context_recall_yesno"}
    assert result.figure("generation.system.correctness")["value"] == 1.0
    assert result.figure("attribution.system.retrieval_miss")["count"] == 1
    with pytest.raises(rag_eval.DataError) as err:
        rag_eval.judge_answers([{"question": "q?", "answer": "a", "contexts": "not a list"}, {"question": "x"}])
    assert "answers row 1: no answer" in err.value.render()


def _with_dense(small_project):
    cfg = small_project / "audit.yaml"
    cfg.write_text(
        cfg.read_text().replace("    bm25: {type: bm25}\n", "    bm25: {type: bm25}\n    dense: {type: dense}\n")
    )
    return cfg


def test_cli_writes_junit_xml_and_a_markdown_summary(small_project, tmp_path, monkeypatch):
    step = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    cfg = _with_dense(small_project)
    cfg.write_text(cfg.read_text() + 'gates: {"retrieval.dense.hit@1": ">= 0.99", "retrieval.bm25.hit@3": ">= 0.5"}\n')
    junit, md = tmp_path / "gates.xml", tmp_path / "summary.md"
    assert main(["-q", "retrieval", str(cfg), "--junit-xml", str(junit), "--summary-md", str(md)]) == 1
    root = ET.parse(junit).getroot()
    assert root.get("tests") == "2" and root.get("failures") == "1"
    [failure] = root.iter("failure")
    assert "retrieval.dense.hit@1 = 0.6667" in failure.get("message")
    assert "q1: hit@1 0.00, first relevant chunk at rank 2" in failure.text  # the question behind the figure
    text = md.read_text()
    assert "**Gates: 1 of 2 passed**" in text and "| `retrieval.dense.hit@1` | 0.667 [" in text
    assert step.read_text() == text


@pytest.mark.slow  # pytest and the embedding model in a subprocess (32 s on the shared 2 cores)
def test_pytest_helper_fails_a_test_with_the_figure_and_the_questions(small_project):
    """A test file written the way the README shows, run by pytest in a subprocess."""
    _with_dense(small_project)
    (small_project / "test_quality.py").write_text(
        textwrap.dedent(
            f"""
            from rag_eval.testing import assert_gates, audit_fixture

            audit_result = audit_fixture({str(small_project / "audit.yaml")!r}, stage="retrieval")

            def test_passes(audit_result):
                assert_gates(audit_result, {{"retrieval.bm25.hit@3": ">= 0.5"}})

            def test_fails(audit_result):
                assert_gates(audit_result, {{"retrieval.dense.hit@1": ">= 0.9"}})

            def test_plugin_fixture(rag_eval_result):
                assert rag_eval_result.figure("retrieval.bm25.hit@3")["n"] == 3
            """
        )
    )
    env = {**os.environ, "RAG_EVAL_CACHE_DIR": str(small_project / "cache")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_quality.py",
            "--rag-eval-config",
            "audit.yaml",
            "--rag-eval-stage",
            "retrieval",
        ],
        cwd=small_project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 2 passed" in out
    assert "GateFailure: 1 of 1 rag-eval gates failed" in out
    assert "retrieval.dense.hit@1 = 0.6667 [95% CI" in out and "needs >= 0.9" in out
    assert "q1: hit@1 0.00, first relevant chunk at rank 2" in out


def test_readme_shows_the_api():
    readme = (ROOT / "docs" / "guides" / "python.md").read_text()
    for name in ("rag_eval.audit(", "retrieval_df()", "assert_gates(", "judge_answers(", "--junit-xml"):
        assert name in readme


def test_the_readme_example_runs(tmp_path, monkeypatch):
    """The API block of docs/guides/python.md, run as written (in tmp_path, where it writes runs/)."""
    readme = (ROOT / "docs" / "guides" / "python.md").read_text()
    block = readme.split("<!-- api-example -->\n```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(block, "docs/guides/python.md", "exec"), namespace)
    df = namespace["df"]
    ranks = df.set_index(["question_id", "retriever"])["first_relevant_rank"]
    assert ranks[("q1", "dense")] == 1 and ranks[("q2", "bm25")] == 1
    assert namespace["same"].summary == namespace["result"].summary


def test_audit_and_read_run_return_the_same_typed_run(tmp_path):
    """One record for a run: what retrieval() returns and what read_run() reads back later are the
    same class with the same typed summary, report, records, figures and gates."""
    result = rag_eval.retrieval(
        {**CONFIG, "report": {"out": str(tmp_path)}}, corpus=SMALL_CORPUS, test_set=SMALL_QUESTIONS
    )
    again = rag_eval.read_run(result.run_dir)
    assert type(result) is type(again) is rag_eval.Result
    assert isinstance(again.summary, Summary) and isinstance(again.report, Report)
    assert again.summary == result.summary and again.report == result.report
    assert again.summary.retrieval["dense"]["hit@1"].value == pytest.approx(2 / 3)
    assert again.figure("retrieval.dense.hit@1") == result.figure("retrieval.dense.hit@1")
    assert (
        [(g.figure, g.passed) for g in again.gates()]
        == [(g.figure, g.passed) for g in result.gates()]
        == [("retrieval.dense.hit@1", False)]
    )
    assert set(again.by_retriever["bm25"]) == {"q1", "q2", "q3", "q4"}
    assert again.status is not None and again.status.finished and again.finished
    # load_run is an alias of read_run.
    assert rag_eval.load_run(result.run_dir).summary == again.summary


def test_what_validate_report_and_history_do_is_a_python_call(small_project, tmp_path):
    """The work of rag-eval validate, report and history, called from Python as the CLI calls it."""
    checked = rag_eval.validate(small_project / "audit.yaml")
    assert (len(checked.inputs.corpus), len(checked.inputs.questions)) == (5, 4)
    assert (checked.trial_text, checked.trial_problem) == (None, None)
    with pytest.raises(rag_eval.ConfigError) as err:
        rag_eval.validate(small_project / "audit.yaml", try_question="Which container keeps no duplicates?")
    assert "--try asks the system, but the config has no system: section" in err.value.render()
    result = rag_eval.retrieval(small_project / "audit.yaml")
    (result.run_dir / "report.md").unlink()
    done = rag_eval.render_report(result.run_dir)
    assert done.kind is None and result.run_dir / "report.md" in done.written
    assert (result.run_dir / "report.md").exists()
    with pytest.raises(rag_eval.DataError) as err:
        rag_eval.render_report(result.run_dir, adapt="both")
    assert "adapting the judges needs the run's labels" in err.value.render()
    hist = rag_eval.history(small_project / "runs", json_out=tmp_path / "history.json")
    assert hist.written == [small_project / "runs" / "history.html", tmp_path / "history.json"]
    assert len(hist.data.systems["small"]) == 1 and "small" in str(hist)
    assert json.loads((tmp_path / "history.json").read_text())["systems"]["small"][0]["name"] == "small"


def test_audit_returns_every_stage_as_a_dataframe(tmp_path):
    with ScriptedServer(reply=structured_reply) as s:
        llm = {"provider": "openai", "model": "scripted", "base_url": s.base_url, "max_retries": 1}
        cfg = {
            "name": "api-audit",
            "retrieval": {"k": [1, 3], "retrievers": {"bm25": {"type": "bm25"}}},
            "generation": {
                "retriever": "bm25",
                "top_k": 2,
                "prompts": {"base": str(ROOT / "prompts" / "answer.md")},
                "llm": llm,
            },
            "judges": {"llm": llm, "metrics": ["correctness", "refusal"]},
            "report": {"out": str(tmp_path)},
        }
        result = rag_eval.audit(cfg, corpus=SMALL_CORPUS, test_set=SMALL_QUESTIONS)
    gen, judged, att = result.generation_df(), result.judgements_df(), result.attribution_df()
    assert sorted(gen["question_id"]) == ["q1", "q2", "q3", "q4"] and set(gen["prompt"]) == {"base"}
    # correctness on the 2 answerable questions with a reference, refusal on all 4.
    assert judged.groupby("judge").size().to_dict() == {"correctness": 4, "refusal": 4}
    assert (judged.loc[judged.judge == "correctness", "status"] == "judged").sum() == 2
    outcomes = att.set_index("question_id")["outcome"].to_dict()
    assert outcomes == {"q1": "ok", "q2": "ok", "q3": "ok", "q4": "answered_unanswerable"}
    assert result.figure("attribution.base.ok")["count"] == 3


def test_rows_inline_in_a_dict_config_are_taken_as_the_keyword_arguments(tmp_path):
    """What a notebook user tries first: the corpus and the test set as rows inside the config dict
    run exactly as the same rows passed as corpus= / test_set=; as_config alone names the arguments."""
    bm25 = {**CONFIG, "retrieval": {"k": [1, 3], "depth": 5, "retrievers": {"bm25": {"type": "bm25"}}}, "gates": {}}
    inline = {**bm25, "corpus": SMALL_CORPUS, "test_set": QUESTIONS, "report": {"out": str(tmp_path / "inline")}}
    keyword = {**bm25, "report": {"out": str(tmp_path / "keyword")}}
    a = rag_eval.retrieval(inline)
    b = rag_eval.retrieval(keyword, corpus=SMALL_CORPUS, test_set=QUESTIONS)
    # One inline (a DataFrame), the other as an argument.
    c = rag_eval.retrieval({**keyword, "corpus": pd.DataFrame(SMALL_CORPUS)}, test_set=QUESTIONS)
    cols = ["question_id", "retriever", "first_relevant_rank", "miss"]
    for other in (b, c):
        pd.testing.assert_frame_equal(a.retrieval_df()[cols], other.retrieval_df()[cols])
        assert a.summary.retrieval == other.summary.retrieval
    ranks = a.retrieval_df().set_index("question_id")["first_relevant_rank"].to_dict()
    assert ranks == {"q1": 1, "q2": 1, "q3": 1}
    # The run folder's config says where the rows came from; it does not hold them.
    saved = (a.run_dir / "config.yaml").read_text()
    assert "source: given" in saved and "Lists are mutable" not in saved
    assert [q["id"] for q in map(json.loads, (a.run_dir / "inputs" / "test_set.jsonl").read_text().splitlines())] == [
        "q1",
        "q2",
        "q3",
    ]

    found = rag_eval.lint({**bm25, "corpus": SMALL_CORPUS, "test_set": SMALL_QUESTIONS})
    assert found and [(f.code, f.questions) for f in found] == [
        (f.code, f.questions) for f in rag_eval.lint(bm25, corpus=SMALL_CORPUS, test_set=SMALL_QUESTIONS)
    ]

    with pytest.raises(rag_eval.ConfigError) as err:
        rag_eval.retrieval(inline, corpus=SMALL_CORPUS)
    assert "config (dict) (corpus): corpus rows are given twice" in err.value.render()
    with pytest.raises(rag_eval.ConfigError) as err:
        rag_eval.as_config(inline)
    assert "config (dict) (corpus, test_set): rows inline" in err.value.render()
    assert "rag_eval.audit(config, corpus=rows, test_set=rows)" in err.value.render()


def test_a_labels_file_given_relative_to_the_run_is_pointed_at(tmp_path, monkeypatch):
    """User trial 2 H4: `report RUN --labels labels.csv` from another folder names the run's own file."""
    import pytest

    from rag_eval.api import _labels_exist
    from rag_eval.errors import DataError

    monkeypatch.chdir(tmp_path)
    run = tmp_path / "runs" / "r1"
    (run / "labels").mkdir(parents=True)
    with pytest.raises(DataError) as err:
        _labels_exist(Path("labels.csv"), run)
    assert "check the path" in err.value.render()
    (run / "labels" / "labels.csv").write_text("question_id,prompt\n")
    with pytest.raises(DataError) as err:
        _labels_exist(Path("labels.csv"), run)
    assert f"did you mean {run / 'labels' / 'labels.csv'}?" in err.value.render()
