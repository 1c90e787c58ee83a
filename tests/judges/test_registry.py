"""A judge is one registry entry and one prompt file: one declared here (with a prompt written by
the test) runs in judge-check, in an audit and in compare, and decides attribution by its role,
with no other file touched."""

import json
import os
import re
import subprocess
import sys

import pytest

from rag_eval.cli import main
from rag_eval.config import load_config
from rag_eval.errors import ConfigError
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.registry import (
    JUDGES,
    CaseKind,
    Check,
    Figure,
    JudgeSpec,
    PromptFile,
    deciders,
    registered,
)
from rag_eval.orchestration.runner import run_audit, run_compare

from ..conftest import ROOT
from ..plugins import install, plugins_read_again
from ..scripted_server import ScriptedServer, structured_reply

ASKS = "Does the answer repeat the reference answer word for word?"
PROMPT = (
    "Reference answer: {reference}\nQuestion: {question}\nAnswer: {answer}\n\n"
    + ASKS
    + (" Reply Yes or No, then a colon and one short sentence saying why.\n")
)
VERBATIM_CASES = CaseKind("verbatim", ("verbatim", "reworded"), ("question", "reference", "answer"))

# What each generation prompt answers to each question of the small project (by question text).
ANSWERS = {
    "PROMPT-A": {"What is a set?": "A set is a thing."},
    "PROMPT-B": {"What is a set?": "An unordered collection of distinct hashable objects."},
}


def verbatim_judge(prompt_file) -> JudgeSpec:
    """The whole declaration of the new judge: it decides correctness (ahead of the shipped one)."""
    return JudgeSpec(
        "verbatim",
        ("question", "reference", "answer"),
        (Figure("verbatim", "answerable", "verbatim"),),
        labels=("verbatim", "reworded"),
        answerable_only=True,
        role="correctness",
        precedence=1,
        description="does the answer repeat the reference word for word? (yes/no, scored by probability)",
        judge=lambda f, x: f.scored.verdict("verbatim", x),
        prompts={"verbatim": PromptFile(str(prompt_file), ("question", "reference", "answer"))},
        check=Check(VERBATIM_CASES),
    )


def reply(body: dict) -> str:
    """The scripted model: the new judge says yes when the answer holds the reference; the answers
    are as ANSWERS says ("Lists." otherwise); every shipped judge answers as structured_reply."""
    text = body["messages"][-1]["content"]
    if ASKS in text:
        ref = re.search(r"Reference answer: (.*)\n", text).group(1)
        answer = re.search(r"\nAnswer: (.*)\n", text).group(1)
        return "Yes: it repeats the reference." if ref in answer else "No: it says it in other words."
    for marker, answers in ANSWERS.items():
        if marker in text:
            return next((a for q, a in answers.items() if f"Question: {q}" in text), "Lists.")
    return structured_reply(body)


@pytest.fixture
def project(small_project):
    for marker in ANSWERS:
        (small_project / f"{marker[-1].lower()}.md").write_text(
            f"{marker}\nDocuments:\n{{contexts}}\n\nQuestion: {{question}}\nAnswer:"
        )
    prompt = small_project / "verbatim.md"
    prompt.write_text(PROMPT)
    with registered(verbatim_judge(prompt)):
        yield small_project


def _config(project, base_url, prompts, metrics="[refusal, verbatim]"):
    llm = f"{{provider: openai, model: scripted, base_url: '{base_url}'}}"
    listed = ", ".join(f"{p}: {project / (p + '.md')}" for p in prompts)
    cfg = project / f"audit-{'-'.join(prompts)}.yaml"
    cfg.write_text(
        (project / "audit.yaml").read_text()
        + f"generation:\n  retriever: bm25\n  top_k: 2\n  prompts: {{{listed}}}\n  llm: {llm}\n"
        + f"judges:\n  llm: {llm}\n  metrics: {metrics}\n"
        + f"cache_dir: {project / 'cache'}\n"
    )
    return load_config(cfg)


def _cases(path):
    rows = []
    for i in range(6):
        ref = f"The answer is number {i}."
        rows.append({"judge": "verbatim", "question": f"Q{i}?", "reference": ref, "answer": ref, "label": "verbatim"})
        rows.append(
            {"judge": "verbatim", "question": f"Q{i}?", "reference": ref, "answer": f"It is {i}.", "label": "reworded"}
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_judge_declared_in_one_place_runs_in_judge_check_audit_and_compare(project, capsys, monkeypatch):
    # Its own cache folder: the calibration judge-check saves stays with this test.
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(project / "cache"))
    with ScriptedServer(reply=reply) as s:
        # judge-check: measured on its own kind of case, its cut-off fitted and saved for audits.
        out = project / "check.json"
        code = main(
            ["--quiet", "judge-check", "--llm", "openai", "--model", "scripted", "--base-url", s.base_url]
            + ["--cases", str(_cases(project / "cases.jsonl")), "--judges", "verbatim", "--save", "--json", str(out)]
        )
        assert code == 0, capsys.readouterr()
        scores = {x["source"]: x for x in json.loads(out.read_text())["scores"] if x["judge"] == "verbatim"}
        assert scores["all"]["accuracy"]["value"] == 1.0 and scores["all"]["accuracy"]["n"] == 12
        assert scores["all"]["auc"] == 1.0
        assert scores["all"]["confusion"] == {"verbatim": {"verbatim": 6}, "reworded": {"not verbatim": 6}}
        assert 0.1 < scores["all"]["cutoffs"]["verbatim"] <= 0.9

        # An audit: the judge runs on the answers it applies to, aggregates to its figure, decides
        # `incorrect` by its role, and uses the cut-off judge-check saved.
        run_dir = run_audit(_config(project, s.base_url, ["a"]))
        audit_calls = len(s.bodies)
        run_compare_dir = run_compare(_config(project, s.base_url, ["a", "b"]))
        new = s.bodies[audit_calls:]

    records = [json.loads(line) for line in (run_dir / "judgements.jsonl").read_text().splitlines()]
    mine = {r["question_id"]: r for r in records if r["judge"] == "verbatim"}
    assert {q: (r["status"], r["verdict"]) for q, r in mine.items()} == {
        "q1": ("judged", "verbatim"),  # "Lists." repeats "Lists."
        "q2": ("judged", "reworded"),
        "q3": ("skipped", None),  # no reference answer
        "q4": ("skipped", None),  # unanswerable
    }
    assert mine["q1"]["probability"] == pytest.approx(0.9) and mine["q2"]["probability"] == pytest.approx(0.1)
    report = json.loads((run_dir / "report.json").read_text())
    assert report["judges"]["calibration"]["verbatim"]["calibrated"] is True
    assert report["judges"]["calibration"]["verbatim"]["cutoff"] == scores["all"]["cutoffs"]["verbatim"]
    summary = json.loads((run_dir / "summary.json").read_text())
    fig = summary["generation"]["a"]["verbatim"]
    assert (fig["value"], fig["n"], fig["n_not_judged"]) == (0.5, 2, 0)
    rows = {r["question_id"]: r for r in report["attribution"]["rows"]}
    assert rows["q2"]["outcome"] == "incorrect" and rows["q2"]["why"] == "reworded: it says it in other words."
    assert rows["q1"]["outcome"] == "ok" and rows["q1"]["why"].endswith("judged correct")
    assert "verbatim" in (run_dir / "report.md").read_text()

    # compare: prompt b's answers judged, a's taken from the run before; b's "Lists." is the same
    # request as a's, answered from the response cache: one new call of the judge, and one more for
    # its reason on q2, the question a's answer failed (shown in the report for both prompts).
    assert sum(ASKS in b["messages"][-1]["content"] for b in new) == 2
    comparison = json.loads((run_compare_dir / "summary.json").read_text())["comparison"]["verbatim"]["a_vs_b"]
    assert (comparison["wins"], comparison["losses"], comparison["ties"]) == (0, 1, 1)


def test_the_registry_derives_the_config_choices_and_roles(project):
    assert deciders("correctness") == ("verbatim", "correctness")
    with pytest.raises(ConfigError, match="unknown judge 'verbatm'; did you mean 'verbatim'"):
        _config(project, "http://127.0.0.1:9/v1", ["a"], metrics="[refusal, verbatm]")


def test_a_judge_leaves_the_registry_with_its_block(tmp_path):
    with registered(verbatim_judge(tmp_path / "verbatim.md")):
        assert "verbatim" in JUDGES
    assert "verbatim" not in JUDGES and deciders("correctness") == ("correctness",)
    with pytest.raises(ValueError, match="exists already"), registered(JUDGES["refusal"]):
        pass


def test_an_installed_plugins_judge_is_a_choice_of_the_config(small_project, monkeypatch, capsys):
    # A distribution that declares its judge in the entry points rag_eval.judges: the config's
    # check of judge names reads the registry, which reads the plug-in on its first lookup.
    install(
        small_project / "site",
        monkeypatch,
        """
        [rag_eval.judges]
        echoes = rag_eval_echo:ECHOES
        """,
        {
            "rag_eval_echo": f"""
                from rag_eval.judges.registry import Figure, JudgeSpec, PromptFile
                ECHOES = JudgeSpec(
                    "echoes",
                    ("question", "answer"),
                    (Figure("echoes", "all", "echo"),),
                    labels=("echo", "new"),
                    judge=lambda f, x: f.scored.verdict("echoes", x),
                    prompts={{"echoes": PromptFile({str(small_project / "echoes.md")!r}, ("question", "answer"))}},
                )
            """
        },
    )
    (small_project / "echoes.md").write_text("Question: {question}\nAnswer: {answer}\nDoes it echo the question?")
    config = small_project / "audit.yaml"
    llm = "{provider: openai, model: scripted, base_url: 'http://127.0.0.1:9/v1'}"
    config.write_text(config.read_text() + f"judges:\n  llm: {llm}\n  metrics: [refusal, echoes]\n")
    with plugins_read_again(JUDGES):
        assert main(["validate", str(config)]) == 0, capsys.readouterr()
        assert JUDGES["echoes"].labels == ("echo", "new")
        config.write_text(config.read_text().replace("echoes]", "echos]"))
        assert main(["validate", str(config)]) == 2
        assert "unknown judge 'echos'; did you mean 'echoes'?" in capsys.readouterr().err
    assert "echoes" not in JUDGES


async def _words(families, x):
    n = len((x.answer or "").split())
    return Judgement("words", x.question_id, x.prompt, "judged", score=float(n), reason=f"{n} words")


WORDS = JudgeSpec(
    "words", ("question", "answer"), (Figure("words"),), family="plain", calls=lambda k, s: 0, judge=_words
)


def test_a_judge_that_asks_no_model_runs_beside_the_scored_ones(project):
    # family plain: no prompt, cut-off, band or reasons to ask; the scored judges run as before.
    with registered(WORDS), ScriptedServer(reply=reply) as s:
        run_dir = run_audit(_config(project, s.base_url, ["a"], metrics="[refusal, words]"))
    records = [json.loads(line) for line in (run_dir / "judgements.jsonl").read_text().splitlines()]
    words = {
        r["question_id"]: (r["score"], r["reason"], r["judge_prompt_hash"]) for r in records if r["judge"] == "words"
    }
    assert words == {
        "q1": (1.0, "1 words", None),
        "q2": (5.0, "5 words", None),
        "q3": (1.0, "1 words", None),
        "q4": (1.0, "1 words", None),
    }
    assert {r["question_id"] for r in records if r["judge"] == "refusal" and r["status"] == "judged"} == {
        "q1",
        "q2",
        "q3",
        "q4",
    }
    report = json.loads((run_dir / "report.json").read_text())
    assert "words" not in report["judges"]["calibration"] and "refusal" in report["judges"]["calibration"]


def test_a_plugin_that_imports_rag_eval_is_read_after_the_package_imports(tmp_path, monkeypatch):
    # Nothing reads the plug-ins while the package imports: a plug-in may import any of rag_eval.
    site = tmp_path / "site"
    install(
        site,
        monkeypatch,
        """
        [rag_eval.judges]
        echoes = rag_eval_echo_full:ECHOES
        """,
        {
            "rag_eval_echo_full": """
                from rag_eval.config import AuditConfig  # the whole package, as a plug-in may
                from rag_eval.judges.registry import Figure, JudgeSpec
                ECHOES = JudgeSpec("echoes", ("question", "answer"), (Figure("echoes"),), family="plain")
            """
        },
    )
    code = "import rag_eval.cli; from rag_eval.judges.registry import JUDGES; print('echoes' in JUDGES)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "True\n"), proc.stderr[-2000:]
