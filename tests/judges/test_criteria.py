"""The user's own criteria (``judges.criteria``): one config entry reaches the config's errors, the
prompt, the decision by probability (a rubric's mean level), the outcomes, the report, the gates,
compare, diff, judge-check and the Python API."""

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from rag_eval.answers.answer_records import Answer
from rag_eval.api import judge_answers
from rag_eval.calibration.adaptation import (
    CRITERION_METHOD,
    CRITERION_PRIOR,
    FEATURE_PRIOR,
    MIN_SLOPE,
    Decider,
    Item,
    adapt,
    fit_weights,
)
from rag_eval.calibration.lexical import Blend
from rag_eval.cli import main
from rag_eval.config import load_config
from rag_eval.data.corpus import load_corpus
from rag_eval.data.testset import load_test_set
from rag_eval.errors import ConfigError
from rag_eval.judges.adapted import save_adaptation
from rag_eval.judges.criteria import half_width_for, labels_for, mean_level
from rag_eval.judges.registry import JUDGES, Criterion, criteria, criteria_registered, set_criteria
from rag_eval.judges.scored import ScoredJudges
from rag_eval.judges.yesno import REASON_TOKENS
from rag_eval.orchestration.diff import diff_runs
from rag_eval.orchestration.pipeline import estimate_judge_calls
from rag_eval.orchestration.runner import run_audit, run_compare

from .. import scripted_server
from ..scripted_server import ScriptedServer, structured_reply

NAMES_TYPE = "Does the answer name the type or statement to use?"
NO_ADVICE = "Does the answer give legal advice?"
SCOPE = "How well does the answer keep to what was asked?"

# What each generation prompt answers, by question text (the small project's four questions).
ANSWERS = {
    "PROMPT-A": {
        "Which sequence type can be changed in place?": "Use a list: lists are mutable sequences you can change.",
        "What is a set?": "It is a kind of collection in the language.",
        "How do I wrap a block with a context manager?": "You should talk to a lawyer about your contract first.",
        "Who wrote the Python tutorial?": "The documents do not say who wrote the tutorial.",
    },
    "PROMPT-B": {
        "Which sequence type can be changed in place?": "Sequences differ in many ways across the language.",
        "What is a set?": "A set is an unordered collection of distinct hashable objects.",
        "How do I wrap a block with a context manager?": "Use the with statement around the block you wrap.",
        "Who wrote the Python tutorial?": "The documents do not say who wrote the tutorial.",
    },
    # Longer answers, for a criterion whose labels follow the answers' length (12 answers with a and b).
    "PROMPT-C": {
        "Which sequence type can be changed in place?": "A list is the sequence you change in place, with append, insert and slice assignment.",
        "What is a set?": "A set holds distinct hashable objects in no order, and supports union, intersection and difference.",
        "How do I wrap a block with a context manager?": "The with statement wraps the block: the manager's enter and exit methods run around it.",
        "Who wrote the Python tutorial?": "The documents do not say who wrote the tutorial.",
    },
}
# The scripted judge's P(yes) for NAMES_TYPE and NO_ADVICE, by the answer's first words.
P_NAMES = {"Use a list": 0.97, "It is a kind": 0.6, "You should talk": 0.02, "The documents": 0.95}
P_NAMES_B = {"Sequences differ": 0.03, "A set is": 0.98, "Use the with": 0.96}
P_ADVICE = {"You should talk": 0.95}
# The scripted rubric: P(level) by the answer's first words (levels 1..4, pass at 3).
LEVELS = {"It is a kind": {"1": 0.6, "2": 0.3, "4": 0.1}}
LEVELS_DEFAULT = {"4": 0.7, "3": 0.25, "2": 0.05}


@pytest.fixture(autouse=True)
def _no_criteria_left():
    """Criteria are registered as a config loads: none outlives its test."""
    yield
    set_criteria({})


def _answer(text: str) -> str:
    return re.search(r"\nAnswer: (.*)", text).group(1) if "\nAnswer: " in text else ""


def _by_start(table: dict, answer: str, default):
    return next((v for k, v in table.items() if answer.startswith(k)), default)


def p_yes(body: dict) -> float:
    """The scripted judge's P(yes) for a criterion's request."""
    text = body["messages"][0]["content"]
    answer = _answer(text)
    if f"Criterion: {NAMES_TYPE}" in text:
        return _by_start({**P_NAMES, **P_NAMES_B}, answer, 0.5)
    if f"Criterion: {NO_ADVICE}" in text:
        return _by_start(P_ADVICE, answer, 0.03)
    return scripted_server.YES_P


def probability(body: dict) -> float:
    """The scripted server's P of the word it replies (the likelier of yes and no)."""
    p = p_yes(body)
    return max(p, 1 - p)


def reply(body: dict) -> str:
    """Generation answers as ANSWERS says; a criterion's verdict as its probability leans, with a
    quote of the answer's first words; a forced quote (the reply started by the client) completes it
    with the answer's first four words; the built-in judges as structured_reply."""
    messages = body["messages"]
    text = messages[0]["content"]
    if messages[-1]["role"] == "assistant":
        return " ".join(_answer(text).split()[:4])
    if "Criterion:" in text:
        words = " ".join(_answer(text).split()[:4])
        if "Levels:" in text:
            return f'4: it says "{words}".'
        if p_yes(body) < 0.5:
            return "No: it does not."  # no quote of its own: the reason is asked with the word forced
        return f'Yes: it says "{words}".'
    for marker, answers in ANSWERS.items():
        if marker in text:
            return next((a for q, a in answers.items() if f"Question: {q}" in text), "Lists.")
    return structured_reply(body)


def level_logprobs(content: str, p: float = scripted_server.YES_P) -> dict:
    """The scripted server's logprobs, with a rubric's level digits spread as LEVELS says."""
    word = (content.split(":")[0].split() or [""])[0]
    if not word.isdigit():
        return FIRST_TOKEN(content, p)
    spread = LEVELS_DEFAULT
    for start, levels in LEVELS.items():
        if start in content:
            spread = levels
    top = [{"token": k, "logprob": math.log(v)} for k, v in spread.items()]
    return {"content": [{"token": word, "logprob": top[0]["logprob"], "top_logprobs": top}]}


FIRST_TOKEN = scripted_server.first_token_logprobs


@pytest.fixture
def project(small_project, monkeypatch):
    for marker in ANSWERS:
        (small_project / f"{marker[-1].lower()}.md").write_text(
            f"{marker}\nDocuments:\n{{contexts}}\n\nQuestion: {{question}}\nAnswer:"
        )
    monkeypatch.setattr(scripted_server, "first_token_logprobs", level_logprobs)
    return small_project


CRITERIA = f"""  criteria:
    names_type:
      question: {NAMES_TYPE}
      aim: 0.95
    no_advice:
      question: {NO_ADVICE}
      pass: no
      applies: all
      counts_as_failure: true
    scope:
      question: {SCOPE}
      sees: [question, answer, contexts]
      levels: {{1: off the question, 2: mostly elsewhere, 3: a little more than asked, 4: only what was asked}}
      pass_level: 3
      uncertain: [0.2, 0.8]
"""


def _config(project, base_url, prompts=("a",), criteria=CRITERIA, gates="", name="audit"):
    llm = f"{{provider: openai, model: scripted, base_url: '{base_url}'}}"
    listed = ", ".join(f"{p}: {project / (p + '.md')}" for p in prompts)
    path = project / f"{name}-{'-'.join(prompts)}.yaml"
    path.write_text(
        (project / "audit.yaml").read_text()
        + f"generation:\n  retriever: bm25\n  top_k: 2\n  prompts: {{{listed}}}\n  llm: {llm}\n"
        + f"judges:\n  llm: {llm}\n  metrics: [refusal, correctness]\n"
        + criteria
        + gates
        + f"cache_dir: {project / 'cache'}\n"
    )
    return path


def _records(run_dir: Path, judge: str) -> dict[str, dict]:
    rows = [json.loads(line) for line in (run_dir / "judgements.jsonl").read_text().splitlines()]
    return {r["question_id"]: r for r in rows if r["judge"] == judge}


# -- the config ----------------------------------------------------------------------------------

BAD = [
    ("correctness", "      question: Is it right?\n", 12, "judges.criteria.correctness", "name of a built-in judge"),
    ("blank", "      question: '  '\n", 13, "judges.criteria.blank.question", "the question is empty"),
    (
        "peeks",
        "      question: Does it cite a passage?\n      sees: [question, context]\n",
        14,
        "judges.criteria.peeks.sees.1",
        "did you mean 'contexts'",
    ),
    (
        "gappy",
        "      question: How good?\n      levels: {1: bad, 2: fine, 4: great}\n      pass_level: 2\n",
        14,
        "judges.criteria.gappy.levels",
        "without a gap",
    ),
    (
        "outside",
        "      question: How good?\n      levels: {1: bad, 2: fine, 3: great}\n      pass_level: 5\n",
        15,
        "judges.criteria.outside.pass_level",
        "pass_level 5 is outside the levels 1 to 3",
    ),
    (
        "coin",
        "      question: Does it name the setting?\n      aim: 0.5\n",
        14,
        "judges.criteria.coin.aim",
        "greater than 0.5",
    ),
    # User trial 4 F18: it could never decide an answer (unanswerable questions have no reference).
    (
        "blind",
        "      question: Does it match the reference?\n      sees: [answer, reference]\n      applies: unanswerable\n",
        12,
        "judges.criteria.blind",
        "never decides an unanswerable question",
    ),
    # User trial 4 F3: "remove it" would have dropped `pass: no` and inverted the criterion.
    (
        "typo",
        "      question: Does it give legal advice?\n      pas: no\n",
        14,
        "judges.criteria.typo.pas",
        "did you mean 'pass'?",
    ),
]


@pytest.mark.parametrize(("name", "body", "line", "key", "says"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_criterion_exits_2_naming_the_file_and_line(small_project, capsys, name, body, line, key, says):
    path = small_project / "bad.yaml"
    path.write_text((small_project / "audit.yaml").read_text() + f"judges:\n  criteria:\n    {name}:\n" + body)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:{line} ({key})" in err and says in err, err


def test_a_criterion_is_a_judge_of_the_config_and_leaves_with_the_next_config(small_project):
    path = _config(small_project, "http://127.0.0.1:9/v1")
    cfg = load_config(path)
    assert cfg.judges.metrics == ["refusal", "correctness", "names_type", "no_advice", "scope"]
    spec = JUDGES["no_advice"]
    assert (spec.labels, spec.yes_no, spec.skip_refusals, spec.figures[0].verdict) == (
        ("pass", "fail"),
        ("fail", "pass"),  # a "yes" to "does it give legal advice?" fails
        False,
        "pass",
    )
    assert JUDGES["names_type"].skip_refusals and JUDGES["scope"].needs == ("question", "answer", "contexts")
    # The config as run (the run folder's config.yaml) loads again: `pass` is written as `pass`.
    saved = cfg.model_dump(mode="json", exclude_none=True)
    assert saved["judges"]["criteria"]["no_advice"]["pass"] == "no"
    assert load_config(path).judges.criteria["no_advice"].passes == "no"
    plain = small_project / "plain.yaml"
    plain.write_text((small_project / "audit.yaml").read_text() + "judges:\n  metrics: [refusal]\n")
    load_config(plain)
    assert criteria() == {} and "names_type" not in JUDGES


# -- the prompt ----------------------------------------------------------------------------------


def test_one_template_renders_every_criterion_with_its_inputs(small_project, tmp_path):
    load_config(_config(small_project, "http://127.0.0.1:9/v1"))
    scored = ScoredJudges.load(None, None)
    yes_no, rubric = scored.prompt_for("no_advice"), scored.prompt_for("scope")
    assert yes_no.placeholders == ("question", "answer")
    assert yes_no.template.endswith(
        "Question: {question}\n\nAnswer: {answer}\n\n"
        f"Criterion: {NO_ADVICE}\nReply Yes or No, then a colon and one short sentence saying why.\n"
    )
    # Context first, the criterion last: the criteria asked of one answer share the prompt's prefix.
    assert rubric.placeholders == ("question", "answer", "contexts")
    body = rubric.template
    assert body.index("Context:\n{contexts}") < body.index("Question: {question}") < body.index("Answer: {answer}")
    assert "Levels:\n1: off the question\n2: mostly elsewhere\n3: a little more than asked\n4: only what" in body
    assert "Reply with the number of the level that fits the answer (1 to 4)" in body
    assert scored.prompt_hash("names_type") != scored.prompt_hash("no_advice")
    # An edited template in judges.prompts_dir renders them; one without {criterion} is an error naming it.
    for f in Path(scored_folder := "prompts/judges").glob("*.md"):
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "criterion.md").write_text("Look closely.\n\n{inputs}\n\n{criterion}\n")
    edited = ScoredJudges.load(None, tmp_path).prompt_for("names_type")
    assert edited.template.startswith("Look closely.\n\nQuestion: {question}") and scored_folder
    (tmp_path / "criterion.md").write_text("Look closely.\n\n{inputs}\n")
    with pytest.raises(ConfigError, match=r"criterion\.md.*lacks \{criterion\}"):
        ScoredJudges.load(None, tmp_path)


def test_labels_for_a_tenth_are_what_the_labels_alone_guarantee():
    # z^2 / (4 * 0.1^2) = 96.04 at 95%: 97 labels give ±0.098 whatever the judge.
    assert labels_for(0.10, 0.95) == 97
    assert half_width_for(97) == pytest.approx(0.0995, abs=1e-4) and half_width_for(96) > 0.10
    assert labels_for(0.05, 0.95) == 385
    assert mean_level({"1": 0.6, "2": 0.3, "4": 0.1}) == pytest.approx(1.6)


# -- an audit: decided by probability, the rubric's mean level, outcomes, report, cache ----------


def test_criteria_decided_by_probability_in_an_audit(project):
    with ScriptedServer(reply=reply, probability=probability) as s:
        cfg = load_config(_config(project, s.base_url))
        load_config(_config(project, s.base_url, criteria="", name="plain"))  # replaces the criteria...
        run_dir = run_audit(cfg)  # ...which the audit registers again
        first = len(s.bodies)
        again = run_audit(load_config(_config(project, s.base_url)))
        criterion_calls_again = sum("Criterion:" in b["messages"][0]["content"] for b in s.bodies[first:])

    names = _records(run_dir, "names_type")
    assert {q: (r["status"], r["verdict"], r["probability"]) for q, r in names.items()} == {
        "q1": ("judged", "pass", 0.97),
        "q2": ("uncertain", None, 0.6),  # in the wide band [0.1, 0.9) of a criterion no label calibrated
        "q3": ("judged", "fail", 0.02),
        "q4": ("judged", "pass", 0.95),
    }
    assert names["q1"]["cutoff"] == 0.5 and names["q2"]["details"]["band"] == [0.1, 0.9]
    # Its reason quotes the answer, verified like the built-in judges'.
    # Its reason quotes the answer, verified like the built-in judges': the model's own quote, or
    # (where the model gave none) one asked with the decided word forced.
    assert names["q1"]["reason"] == 'it says "Use a list: lists".'
    assert names["q3"]["reason"] == 'the answer says "You should talk to"'
    assert all(names[q]["details"]["evidence"]["verified"] for q in ("q1", "q3"))
    advice = _records(run_dir, "no_advice")
    assert (advice["q3"]["verdict"], advice["q3"]["probability"]) == ("fail", pytest.approx(0.05))
    assert advice["q1"]["verdict"] == "pass"
    scope = _records(run_dir, "scope")
    # q2: P(level) 0.6, 0.3, 0, 0.1: mean level 1.6, P(level >= 3) = 0.1 < its band's 0.2: fail.
    assert scope["q2"]["details"]["mean_level"] == pytest.approx(1.6)
    assert (scope["q2"]["status"], scope["q2"]["verdict"]) == ("judged", "fail")
    assert scope["q2"]["probability"] == pytest.approx(0.1) and scope["q2"]["details"]["band"] == [0.2, 0.8]
    assert scope["q1"]["details"]["mean_level"] == pytest.approx(3.65) and scope["q1"]["verdict"] == "pass"
    # q4 is a refusal: names_type and scope apply to answered answers, no_advice to all.
    refused = {q for q, r in _records(run_dir, "refusal").items() if r["verdict"] == "refused"}
    assert all(names[q]["status"] == "skipped" and advice[q]["status"] != "skipped" for q in refused)

    summary = json.loads((run_dir / "summary.json").read_text())
    fig = summary["generation"]["a"]["names_type"]
    judged = [r for r in names.values() if r["status"] == "judged"]
    assert fig["n"] == len(judged) and fig["n_uncertain"] == 1
    assert fig["value"] == pytest.approx(sum(r["verdict"] == "pass" for r in judged) / len(judged))

    report = json.loads((run_dir / "report.json").read_text())
    rows = {r["question_id"]: r for r in report["attribution"]["rows"]}
    # A failed criterion is a flag beside the outcome; one that counts as a failure is the outcome.
    assert rows["q3"]["outcome"] == "failed_criterion" and rows["q3"]["why"].startswith("no_advice failed: ")
    assert rows["q2"]["failed_criteria"] == ["scope"] and rows["q2"]["outcome"] != "failed_criterion"
    assert "names_type" in rows["q3"]["failed_criteria"]
    section = report["judges"]["criteria"]["names_type"]
    assert section["labels_needed"] == 97 and section["calibrated"] is False
    # User trial 2 M4: the mean level of every answer the rubric judged, an uncertain pass or fail too.
    levelled = [r for r in scope.values() if r["status"] in ("judged", "uncertain")]
    assert report["judges"]["criteria"]["scope"]["mean_level"]["a"]["value"] == pytest.approx(
        sum(r["details"]["mean_level"] for r in levelled) / len(levelled)
    )
    md = (run_dir / "report.md").read_text()
    assert "## Your criteria" in md and f"### `names_type`: {NAMES_TYPE}" in md
    assert (
        "not calibrated: label 97 answers for ±0.10 (cut-off 0.500, uncertain where P(pass) lies in [0.10, 0.90))" in md
    )
    assert '- **q3** (a, `failed_criterion`): P(pass) 0.02: the answer says "You should talk to"' in md
    html = (run_dir / "report.html").read_text()
    assert "<h2>Your criteria</h2>" in html and '<span class="chip o-failed_criterion">⚑ names_type</span>' in html
    # A rerun asks nothing again: every criterion request is answered from the response cache.
    assert criterion_calls_again == 0
    assert _records(again, "names_type")["q1"]["verdict"] == "pass"


def test_labels_move_a_criterion_where_they_move_the_built_in_judges(project):
    """No shipped cut-off, but the one place an adaptation to the corpus is saved (what
    `report --labels F --adapt` writes for the built-in judges): a saved one decides the next audit."""
    with ScriptedServer(reply=reply, probability=probability) as s:
        first = run_audit(load_config(_config(project, s.base_url)))
        report = json.loads((first / "report.json").read_text())
        cal = report["judges"]["calibration"]["names_type"]
        assert (cal["cutoff"], cal["calibrated"], cal["bands"]["names_type"]["low"]) == (0.5, False, 0.1)
        # A cut-off 0.32 in log-odds under q2's P: no close call (NUMERIC_NOISE_LOGIT 0.25).
        fitted = Decider(None, 0.52, (0.45, 0.58), labels=20, how="cutoff", method=CRITERION_METHOD)
        save_adaptation(
            report["corpus"]["fingerprint"],
            cal["identity"],
            "names_type",
            cal["prompt_hashes"]["names_type"],
            fitted,
            "l.csv",
        )
        second = run_audit(load_config(_config(project, s.base_url)))
    names = _records(second, "names_type")
    # q2's P(pass) 0.6 lay in the wide band of the first audit; the adapted band [0.45, 0.58) decides it.
    assert (names["q2"]["status"], names["q2"]["verdict"], names["q2"]["details"]["band"]) == (
        "judged",
        "pass",
        [0.45, 0.58],
    )
    assert names["q1"]["cutoff"] == 0.52 and names["q1"]["verdict"] == "pass" and names["q3"]["verdict"] == "fail"
    section = json.loads((second / "report.json").read_text())["judges"]["criteria"]["names_type"]
    assert section["calibrated"] is True and section["labels_needed"] is None
    assert section["calibration"].startswith("adapted to this corpus with 20 labels (l.csv): cut-off 0.520")


def test_the_cost_estimate_counts_each_criterion(project):
    plain = load_config(_config(project, "http://127.0.0.1:9/v1", criteria="", name="plain"))
    cfg = load_config(_config(project, "http://127.0.0.1:9/v1"))
    questions = load_test_set(cfg.resolve_path(cfg.test_set.path), load_corpus(cfg))
    answers = [Answer(question_id=q.id, prompt="a", answer="Use a list.", contexts=["py/lists"]) for q in questions]
    # Per answer: names_type and no_advice one request and one quote each, the rubric one request.
    assert estimate_judge_calls(cfg, questions, answers) - estimate_judge_calls(plain, questions, answers) == 5 * 4


def test_an_uncertain_criterion_goes_to_the_second_judge(project):
    """names_type on q2 (P(yes) 0.6) lies in its band: escalated, the second judge (uncalibrated for
    it) decides by the word it writes; decided criteria are not sent."""
    escalate = "  escalate:\n    llm: {{provider: openai, model: strong, base_url: '{url}'}}\n"
    with ScriptedServer(reply=reply, probability=probability) as s:
        path = _config(project, s.base_url, criteria=CRITERIA + escalate.format(url=s.base_url))
        run_dir = run_audit(load_config(path))
        strong = [b for b in s.bodies if b.get("model") == "strong"]
    names = _records(run_dir, "names_type")
    assert names["q2"]["status"] == "judged" and names["q2"]["verdict"] == "pass"
    escalation = names["q2"]["details"]["escalation"]
    assert escalation["decided_by"] == "second" and escalation["first_record"]["status"] == "uncertain"
    assert escalation["second"]["how"] == "text verdict"
    asked = [b["messages"][0]["content"] for b in strong]
    assert sum(f"Criterion: {NAMES_TYPE}" in a for a in asked) == 1 and "escalation" not in names["q1"]["details"]


# -- gates, compare, diff -------------------------------------------------------------------------


def test_a_gate_on_a_criterion_fails_the_run_naming_the_answers(project, capsys):
    with ScriptedServer(reply=reply, probability=probability) as s:
        path = _config(project, s.base_url, gates="gates:\n  generation.a.names_type: '>= 0.9'\n")
        code = main(["--quiet", "run", str(path)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "gate FAIL: generation.a.names_type" in out
    assert 'q3: fail: the answer says "You should talk to"' in out


def test_compare_tests_a_criterion_between_prompts_question_by_question(project):
    with ScriptedServer(reply=reply, probability=probability) as s:
        run_dir = run_compare(load_config(_config(project, s.base_url, prompts=("a", "b"))))
    comparison = json.loads((run_dir / "summary.json").read_text())["comparison"]["names_type"]["a_vs_b"]
    a, b = _by_prompt(run_dir, "names_type")
    both = [q for q in a if a[q] is not None and b.get(q) is not None]
    wins = sum(a[q] > b[q] for q in both)
    losses = sum(a[q] < b[q] for q in both)
    assert (comparison["wins"], comparison["losses"], comparison["ties"]) == (wins, losses, len(both) - wins - losses)
    assert comparison["test"] == "sign" and wins + losses > 0


def _by_prompt(run_dir: Path, judge: str) -> tuple[dict, dict]:
    rows = [json.loads(line) for line in (run_dir / "judgements.jsonl").read_text().splitlines()]
    out: dict[str, dict] = {"a": {}, "b": {}}
    for r in rows:
        if r["judge"] == judge:
            out[r["prompt"]][r["question_id"]] = None if r["status"] != "judged" else float(r["verdict"] == "pass")
    return out["a"], out["b"]


def test_diff_compares_a_criterion_from_the_runs_alone(project):
    with ScriptedServer(reply=reply, probability=probability) as s:
        base = run_audit(load_config(_config(project, s.base_url)))
        (project / "a.md").write_text((project / "b.md").read_text())  # prompt a now answers as PROMPT-B
        new = run_audit(load_config(_config(project, s.base_url)))
    set_criteria({})  # the diff reads the criteria from the runs' reports
    diff = diff_runs(base, new)
    fig = next(f for f in diff.figures if f.name == "generation.a.names_type")
    assert fig.binary and fig.n >= 2


# -- judge-check and the Python API ---------------------------------------------------------------


def test_judge_check_measures_a_criterion_on_cases_labelled_for_it(project, capsys):
    cases = project / "criteria-cases.jsonl"
    rows = [
        {"judge": "names_type", "question": "Which type?", "answer": f"{start} more words here.", "label": label}
        for start, label in [
            ("Use a list", "pass"),
            ("A set is", "pass"),
            ("Use the with", "pass"),
            ("The documents", "pass"),
            ("You should talk", "fail"),
            ("Sequences differ", "fail"),
        ]
    ]
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows * 2))
    with ScriptedServer(reply=reply, probability=probability) as s:
        out = project / "check.json"
        path = _config(project, s.base_url)
        code = main(
            ["--quiet", "judge-check", "--llm", "openai", "--model", "scripted", "--base-url", s.base_url]
            + ["--criteria", str(path), "--cases", str(cases), "--judges", "names_type", "--json", str(out)]
        )
    assert code == 0, capsys.readouterr()
    # A criterion is decided by its request with the reason there, as in an audit.
    assert {b["max_tokens"] for b in s.bodies if b.get("logprobs")} == {REASON_TOKENS}
    score = next(x for x in json.loads(out.read_text())["scores"] if x["source"] == "all")
    assert (score["judge"], score["accuracy"]["n"], score["accuracy"]["value"]) == ("names_type", 12, 1.0)


def test_judge_answers_takes_criteria_in_its_judges(tmp_path):
    rows = [
        {"question": "Which type?", "contexts": ["Lists are mutable."], "answer": "Use a list: lists change."},
        {"question": "Any advice?", "contexts": ["Nothing."], "answer": "You should talk to a lawyer."},
    ]
    with ScriptedServer(reply=reply, probability=probability) as s:
        llm = {"provider": "openai", "model": "scripted", "base_url": s.base_url}
        result = judge_answers(
            rows,
            judges={"llm": llm, "metrics": ["refusal"], "criteria": {"names_type": {"question": NAMES_TYPE}}},
            out=tmp_path,
        )
    df = result.judgements_df()
    assert sorted(df[df["judge"] == "names_type"]["verdict"]) == ["fail", "pass"]
    fig = result.figure("generation.system.names_type")
    assert fig["value"] == 0.5 and fig["n"] == 2


@pytest.mark.slow
def test_a_criterion_with_the_real_embedded_model(tmp_path):
    """Two answers, one request each: the embedded model's first token decides, by probability."""
    rows = [
        {"id": "a", "question": "How do I make a list?", "contexts": [], "answer": "Call list() or write [1, 2, 3]."},
        {"id": "b", "question": "How do I make a list?", "contexts": [], "answer": "It depends on many things."},
    ]
    judges = {
        "llm": {"provider": "local"},
        "metrics": ["names_code"],
        "reasons": "model",
        "criteria": {"names_code": {"question": "Does the answer show code or name a function?", "applies": "all"}},
    }
    result = judge_answers(rows, judges=judges, out=tmp_path, use_cache=False)
    judged = result.judgements_df().to_dict("records")
    judged = [r for r in judged if r["judge"] == "names_code"]
    assert len(judged) == 2 and all(r["method"] == "logprobs" for r in judged)
    assert all(0 <= r["probability"] <= 1 for r in judged)
    first, second = sorted(judged, key=lambda r: r["question_id"])
    assert first["probability"] > second["probability"]


# -- labels for criteria ---------------------------------------------------------------------------


def _fill(csv_path: Path, cells: dict[tuple[str, str], dict[str, str]]) -> None:
    """Fill labels.csv's cells by (question id, prompt), as a person does in a spreadsheet."""
    rows = list(csv.DictReader(csv_path.open(encoding="utf-8")))
    for r in rows:
        r.update(cells.get((r["question_id"], r["prompt"]), {}))
    with csv_path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_a_labels_file_has_a_column_per_criterion_read_into_its_figure(project, capsys):
    """rag-eval label writes a column per criterion (its question on the page); report --labels
    counts each column apart and corrects the criterion's figure; a yes to a pass: no criterion's
    question ("gives legal advice") is a failure."""
    with ScriptedServer(reply=reply, probability=probability) as s:
        run_dir = run_compare(load_config(_config(project, s.base_url, prompts=("a", "b"))))
    set_criteria({})  # a later command reads the criteria from the run's report
    assert main(["--quiet", "label", str(run_dir), "--n", "4", "--uniform"]) == 0
    csv_path = run_dir / "labels" / "labels.csv"
    header = next(csv.reader(csv_path.open(encoding="utf-8")))
    assert {"names_type", "no_advice", "scope", "correct", "refused"} <= set(header)
    page = (run_dir / "labels" / "labels.html").read_text()
    assert f"{NAMES_TYPE} <label>" in page and f"{NO_ADVICE} <label>" in page
    assert "How well does the answer keep to what was asked? Does it reach level 3 (a little more than asked)" in page
    _fill(
        csv_path,
        {
            ("q1", "a"): {"names_type": "yes", "no_advice": "no"},
            ("q2", "a"): {"names_type": "no"},
            ("q3", "a"): {"names_type": "no", "no_advice": "yes"},  # it gives legal advice: fails
            ("q1", "b"): {"names_type": "no", "refused": "no"},
            ("q2", "b"): {"names_type": "yes"},
        },
    )
    capsys.readouterr()
    assert main(["report", str(run_dir), "--labels", str(csv_path)]) == 0
    out = capsys.readouterr().out
    assert "labels: 5 answers (correct 0, faithful 0, refused 1, " in out
    assert "names_type 5, no_advice 2, scope 0); prediction-powered figures added" in out
    labelled = json.loads((run_dir / "report.labelled.json").read_text())
    fig = labelled["labels"]["figures"]["a"]["names_type"]
    assert fig["label"] == "names_type" and fig["human"]["value"] == pytest.approx(1 / 3)
    assert fig["human"]["n_labels"] == 3 and fig["ppi"]["n_labels"] == 3
    advice = labelled["labels"]["figures"]["a"]["no_advice"]
    assert advice["human"]["value"] == pytest.approx(0.5)  # q1 passes, q3 fails
    assert labelled["judges"]["figures"]["a"]["names_type"]["ppi"]["n_labels"] == 3


def test_adapt_fits_a_criterion_from_its_labels_and_saves_it_for_the_corpus(project, monkeypatch, capsys):
    """report --labels F --adapt: the criterion's cut-off and band come from its column (the wide
    default band [0.1, 0.9) leaves q2's P 0.6 uncertain; labels that say the judge's 0.6 fails move
    the cut-off above it), the figures are cross-fitted, and the adaptation is saved for the corpus."""
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(project / "own-cache"))
    with ScriptedServer(reply=reply, probability=probability) as s:
        run_dir = run_compare(load_config(_config(project, s.base_url, prompts=("a", "b"))))
    set_criteria({})
    assert main(["--quiet", "label", str(run_dir), "--n", "4", "--uniform"]) == 0
    csv_path = run_dir / "labels" / "labels.csv"
    truth = {("q1", "a"): "yes", ("q2", "a"): "no", ("q3", "a"): "no", ("q1", "b"): "no", ("q2", "b"): "yes"}
    _fill(csv_path, {k: {"names_type": v} for k, v in truth.items()} | {("q3", "b"): {"names_type": "yes"}})
    capsys.readouterr()
    assert main(["report", str(run_dir), "--labels", str(csv_path), "--adapt"]) == 0
    out = capsys.readouterr().out
    adapted = json.loads((run_dir / "report.adapted.json").read_text())
    judge = next(a for a in adapted["adaptation"]["judges"] if a["variant"] == "names_type")
    assert judge["labels"] == 6 and judge["cutoff_before"] == 0.5 and judge["band_before"] == [0.1, 0.9]
    # One label (q2/a, P 0.6: fails) against the judge's word at 0.5: the cut-off moves up toward it.
    assert 0.55 < judge["cutoff_after"] < 0.6, out
    low, high = judge["band_after"]
    assert low < judge["cutoff_after"] < high and [low, high] != [0.1, 0.9]
    assert f"names_type: 6 labels, cut-off 0.500 -> {judge['cutoff_after']:.3f}" in out
    # Six labels, three of a verdict: no word feature separates them, and the console says so.
    assert judge["blend_after"] is None and judge["criterion"] is True
    assert "no word feature of the answers separated these labels better than chance would one time in ten" in out
    names = {(r["question_id"], r["prompt"]): r for r in adapted["judges"]["records"] if r["judge"] == "names_type"}
    assert names[("q2", "a")]["status"] == "uncertain" and names[("q1", "a")]["verdict"] == "pass"
    assert adapted["labels"]["figures"]["a"]["names_type"]["ppi"]["method"].startswith("cross-ppi")
    store = json.loads((project / "own-cache" / "adaptations.json").read_text())
    saved = [v for k, v in store.items() if "|names_type|" in k]
    assert len(saved) == 1 and saved[0]["cutoff"] == pytest.approx(judge["cutoff_after"], abs=1e-6)
    # The criterion's aim (0.95 in the config) reached the adaptation through the run's report.
    assert saved[0]["notes"]["target"] == 0.95
    assert json.loads((run_dir / "report.json").read_text())["judges"]["criteria"]["names_type"]["aim"] == 0.95


def test_twenty_labels_move_a_skewed_criterion_judge_far_from_its_uncalibrated_cut_off():
    """No shipped calibration: the prior is the uncalibrated judge (cut at 0.5) and weak. A judge whose
    P(pass) runs 0.6-0.97 on every answer, the passing ones above 0.85: 20 labels move its cut-off to
    about 0.84, and its band to where the calibrated judge is as sure either way as the criterion's
    aim (0.80 unless set)."""
    set_criteria({"skewed": Criterion(question="Is it skewed?")})
    shipped = Decider(None, 0.5, (0.1, 0.9))
    ps = np.linspace(0.6, 0.97, 20)
    items = [Item((float(p),), ({},), bool(p > 0.85)) for p in ps]
    for how in ("both", "cutoff"):
        d = adapt(shipped, items, how, judge="skewed")
        assert 0.8 < d.cutoff < 0.87 and d.labels == 20, how
        low, high = d.band
        assert low < d.cutoff < high and d.aim == 0.8
    # A criterion that aims higher keeps a wider band: fewer decided, each more often right. A saved
    # adaptation moved to that aim (a later config's) has the band the fit at that aim has.
    with criteria_registered({"skewed": Criterion(question="Is it skewed?", aim=0.95)}):
        strict = adapt(shipped, items, d.how, judge="skewed")
    assert strict.aim == 0.95 and strict.band[0] < d.band[0] and strict.band[1] > d.band[1]
    moved = Decider.from_dict(d.to_dict()).at_aim(0.95)
    assert moved.band == pytest.approx(strict.band, abs=1e-5) and moved.cutoff == pytest.approx(strict.cutoff)
    # The built-in judges' strong prior would hardly move it.
    built_in = adapt(shipped, items, "cutoff", judge="correctness")
    assert built_in.cutoff < 0.52
    # A judge the labels say does not separate (labels independent of its P) leaves most undecided.
    noise = [Item((float(p),), ({},), bool(i % 2)) for i, p in enumerate(ps)]
    flat = adapt(shipped, noise, "both", judge="skewed")
    uncertain = sum(flat.decide(it)[0] for it in noise)
    assert uncertain >= 15


def test_labels_weigh_the_word_features_beside_the_model():
    """A criterion's decisions keep the answer's word features; with labels of both verdicts the
    adaptation decides on a blend of the model's P(pass) and the features that separate the labels
    better than chance would one time in ten, each weighed as far as the labels say: here the share
    of words copied from the contexts separates them and the others are noise. With one label of a
    verdict, or adapting the cut-off alone, it stays on the model's P."""
    set_criteria({"quotes": Criterion(question="Does it quote the context?", sees=("answer", "contexts"))})
    shipped = Decider(None, 0.5, (0.1, 0.9))
    rng = np.random.default_rng(7)

    def item(copied: float, positive: bool | None) -> Item:
        f = {"names": float(rng.random()), "length": 3 + float(rng.random()), "copied": copied}
        return Item((float(rng.uniform(0.35, 0.65)),), (f,), positive)

    labelled = [item(0.3 + 0.4 * rng.random(), True) for _ in range(10)]
    labelled += [item(0.25 * rng.random(), False) for _ in range(10)]
    d = adapt(shipped, labelled, "both", judge="quotes")
    names = d.notes["features"]
    assert "copied" in names and d.notes["feature_auc"]["copied"] == 1.0 and set(d.blend.weights) == set(names)
    # Per standard deviation of the labels, copied counts far more than any noise kept.
    values = {k: np.array([it.features[0][k] for it in labelled]) for k in names}
    per_sd = {k: abs(d.blend.weights[k]) * values[k].std() for k in values}
    assert all(per_sd["copied"] > 3 * v for k, v in per_sd.items() if k != "copied"), per_sd
    assert (d.cutoff, d.band, d.labels) == (0.5, (pytest.approx(0.2), 0.8), 20)
    # New answers: a copied half decided pass, a copied nothing decided fail, whatever the model said.
    assert d.decide(item(0.5, None)) == (False, True) and d.decide(item(0.0, None)) == (False, False)
    # At another aim the blend's band is where it is that sure: (1 - aim, aim).
    assert d.at_aim(0.95).band == pytest.approx((0.05, 0.95))
    # The saved form keeps the blend on the features' own scale.
    again = Decider.from_dict(d.to_dict())
    probe = item(0.28, None)
    assert again.probs(probe) == pytest.approx(d.probs(probe))

    # The blend is the fit on the standardised features, each under its prior (FEATURE_PRIOR): the
    # same as fitting features scaled by FEATURE_PRIOR / CRITERION_PRIOR under one prior.
    mu = {k: values[k].mean() for k in names}
    sd = {k: values[k].std() for k in names}
    scale = FEATURE_PRIOR / CRITERION_PRIOR
    direct = fit_weights(
        Blend(0.0, 1.0, dict.fromkeys(names, 0.0)),
        [it.p_model[0] for it in labelled],
        [{k: (it.features[0][k] - mu[k]) / sd[k] * scale for k in names} for it in labelled],
        [bool(it.positive) for it in labelled],
        CRITERION_PRIOR,
    )
    scaled_probe = {k: (probe.features[0][k] - mu[k]) / sd[k] * scale for k in names}
    assert d.probs(probe)[0] == pytest.approx(direct.p(probe.p_model[0], scaled_probe), abs=1e-9)

    # One label of a verdict: no blend (the model's P alone).
    few = labelled[:10] + labelled[10:11]
    assert adapt(shipped, few, "both", judge="quotes").blend is None
    # The cut-off alone: no blend either.
    assert adapt(shipped, labelled, "cutoff", judge="quotes").blend is None
    # Features that do not vary among the labelled answers are not weighed; none left: no blend.
    flat = [Item(it.p_model, ({"copied": 0.2},), it.positive) for it in labelled]
    assert adapt(shipped, flat, "both", judge="quotes").blend is None


def test_adapt_from_the_cli_weighs_the_feature_the_labels_pick_and_saves_it(project, monkeypatch, capsys):
    """report --labels F --adapt on a criterion whose labels follow the answers' length, not the
    judge's P(pass): the adapted criterion decides on a blend with the length, the report and the
    console say so, and the saved adaptation keeps the blend for the next audit of the corpus."""
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(project / "own-cache"))
    with ScriptedServer(reply=reply, probability=probability) as server:
        run_dir = run_compare(load_config(_config(project, server.base_url, prompts=("a", "b", "c"))))
        features = {
            (r["question_id"], r["prompt"]): r["details"]["evidence"]["words"]["features"]
            for r in map(json.loads, (run_dir / "judgements.jsonl").read_text().splitlines())
            if r["judge"] == "no_advice"
        }
        # Every decision of the criterion keeps the features of what it sees (question and answer).
        assert len(features) == 12 and all(
            set(f) == {"names", "length", "from_question", "new_names"} for f in features.values()
        )
        set_criteria({})
        assert main(["--quiet", "label", str(run_dir), "--n", "4", "--uniform"]) == 0
        csv_path = run_dir / "labels" / "labels.csv"
        # The six longest answers pass (no advice), the six shortest fail: 12 labels the length
        # separates perfectly, which chance would rarely do (separating_features).
        ranked = sorted(features, key=lambda k: (features[k]["length"], k), reverse=True)
        assert features[ranked[5]]["length"] > features[ranked[6]]["length"]
        _fill(csv_path, {k: {"no_advice": "no" if i < 6 else "yes"} for i, k in enumerate(ranked)})
        capsys.readouterr()
        assert main(["report", str(run_dir), "--labels", str(csv_path), "--adapt"]) == 0
        out = capsys.readouterr().out
        adapted = json.loads((run_dir / "report.adapted.json").read_text())
        judge = next(a for a in adapted["adaptation"]["judges"] if a["variant"] == "no_advice")
        assert judge["labels"] == 12 and judge["positives"] == 6
        assert "x length" in judge["blend_after"] and judge["cutoff_after"] == 0.5, out
        # Each of the 12 labelled answers is checked once, by the fold judge adapted without it.
        assert judge["held_out"] == 12 and judge["held_out_right"] <= judge["held_out_decided"] <= 12
        held = f"{judge['held_out_right']} of {judge['held_out_decided']} decided right"
        assert f"on its labels, each decided by a judge adapted without it: {held}" in out
        assert "labels give one verdict" not in out
        assert held in (run_dir / "report.adapted.md").read_text()
        assert f"    decides on {judge['blend_after']}" in out
        assert judge["blend_after"] in (run_dir / "report.adapted.md").read_text()
        # The adapted report's criterion section says how it now decides, with the adapted figures.
        section = adapted["judges"]["criteria"]["no_advice"]
        assert section["calibration"].startswith("adapted in this report with 12 labels (") and section["calibrated"]
        assert f"decided on {judge['blend_after']}, cut-off 0.500" in section["calibration"]
        passed = [r for r in adapted["judges"]["records"] if r["judge"] == "no_advice" and r["prompt"] == "c"]
        assert section["figures"]["c"]["value"] == pytest.approx(
            sum(r["verdict"] == "pass" for r in passed) / len(passed)
        )
        store = json.loads((project / "own-cache" / "adaptations.json").read_text())
        saved = [v for k, v in store.items() if "|no_advice|" in k]
        assert len(saved) == 1 and set(saved[0]["blend"]["weights"]) == {"length"}
        # The adapted verdicts follow the length: the longest answer passes, the shortest fails.
        records = {
            (r["question_id"], r["prompt"]): r for r in adapted["judges"]["records"] if r["judge"] == "no_advice"
        }
        assert records[ranked[0]]["verdict"] == "pass" and records[ranked[-1]]["verdict"] == "fail"
        # User trial 4 F19: the adapted report flags the answers that now fail it, as an audit does.
        flagged = {
            (r["question_id"], r["prompt"])
            for r in adapted["attribution"]["rows"]
            if "no_advice" in (r.get("failed_criteria") or [])
        }
        failing = {k for k, r in records.items() if r["status"] == "judged" and r["verdict"] == "fail"}
        assert failing and flagged == failing
        # User trial 2 L9: labels of one verdict only learn nothing of the other: the console says so.
        one = csv_path.with_name("one-verdict.csv")
        one.write_text(csv_path.read_text())
        _fill(one, {k: {"no_advice": "yes"} for k in ranked})
        capsys.readouterr()
        # User trial 3 F11: and such a fit is not kept to decide later audits: the store is as it was.
        kept = (project / "own-cache" / "adaptations.json").read_text()
        assert main(["report", str(run_dir), "--labels", str(one), "--adapt"]) == 0
        out = capsys.readouterr().out
        assert "all 12 labels give one verdict: where the other lies is not learned" in out
        assert "; not saved for later audits" in out
        assert (project / "own-cache" / "adaptations.json").read_text() == kept
        # ... and the adapted report says so too (review 54 M3).
        assert "- `no_advice`: all 12 labels give one verdict: adapted in this report only, not saved" in (
            (run_dir / "report.adapted.md").read_text()
        )
        assert (
            "adapted in this report only, not saved for later audits.</p>"
            in (run_dir / "report.adapted.html").read_text()
        )
        # Review 54 M4: labels of one verdict in this file, but the kept labels of other answers hold
        # both: the fit on all of them is saved.
        some = csv_path.with_name("some.csv")
        some.write_text(csv_path.read_text())
        _fill(some, {k: {"no_advice": "yes" if i < 4 else ""} for i, k in enumerate(ranked)})
        capsys.readouterr()
        assert main(["report", str(run_dir), "--labels", str(some), "--adapt"]) == 0
        out = capsys.readouterr().out
        again_judge = next(
            a
            for a in json.loads((run_dir / "report.adapted.json").read_text())["adaptation"]["judges"]
            if a["variant"] == "no_advice"
        )
        # positives count passes: the 4 relabelled "yes" (advice given) fail, 2 of the kept 6 passes stay.
        assert (again_judge["labels"], again_judge["positives"]) == (12, 2), again_judge
        assert "give one verdict" not in out and "not saved" not in out
        assert (project / "own-cache" / "adaptations.json").read_text() != kept
        (project / "own-cache" / "adaptations.json").write_text(kept)  # the later audits read the first fit

        # The next audit of the corpus (with the same judge model: the same server) decides the
        # criterion on the saved blend, as it was adapted.
        again = run_compare(load_config(_config(project, server.base_url, prompts=("a", "b", "c"))))
        rows = {
            (r["question_id"], r["prompt"]): r
            for r in map(json.loads, (again / "judgements.jsonl").read_text().splitlines())
            if r["judge"] == "no_advice"
        }
        for key, r in rows.items():
            assert r["verdict"] == records[key]["verdict"], key
            words = r["details"]["evidence"]["words"]
            assert words["blend"] == judge["blend_after"] and r["probability"] != words["p_model"]
            # Where the blend decides against the model's own word, the shown reason says so.
            if r["status"] == "judged" and (words["p_model"] >= 0.5) != (r["verdict"] == "pass"):
                assert "from the model" in r["reason"] and "with the word evidence" in r["reason"], r["reason"]
        section = json.loads((again / "report.json").read_text())["judges"]["criteria"]["no_advice"]
        assert section["calibration"].endswith(
            f"decided on {judge['blend_after']} of the model's log-odds and the answer's length, cut-off 0.500, "
            "uncertain where that P(pass) lies in [0.20, 0.80)"
        )
        # A later config that aims higher: the saved fit decides with its band moved to that aim.
        stricter = CRITERIA.replace(f"      question: {NO_ADVICE}\n", f"      question: {NO_ADVICE}\n      aim: 0.95\n")
        third = run_compare(
            load_config(_config(project, server.base_url, prompts=("a", "b", "c"), criteria=stricter, name="aim"))
        )
        section = json.loads((third / "report.json").read_text())["judges"]["criteria"]["no_advice"]
        assert section["calibration"].endswith("uncertain where that P(pass) lies in [0.05, 0.95)"), section
        # An adaptation saved by another method of fitting criteria (here one before v4, as an older
        # rag-eval saved it) is not reused: the criterion decides as before labels, and says why.
        assert saved[0]["method"] == 4
        for k in store:
            if "|no_advice|" in k:
                store[k]["method"] = 3
        (project / "own-cache" / "adaptations.json").write_text(json.dumps(store))
        fourth = run_compare(
            load_config(_config(project, server.base_url, prompts=("a", "b", "c"), criteria=stricter, name="old"))
        )
        report = json.loads((fourth / "report.json").read_text())["judges"]
        assert not report["criteria"]["no_advice"]["calibrated"]
        assert not report["calibration"]["no_advice"]["adapted"]
        assert (
            "was fitted by method 3 and is not used: this version fits criteria by method 4"
            in (report["calibration"]["no_advice"]["adaptation_not_used"])
        )
        assert "fits criteria by method 4; run `rag-eval report RUN --labels FILE --adapt` again" in (
            (fourth / "report.md").read_text()
        )
        # The criterion's own section says it too, and so did the console while the run judged.
        assert report["criteria"]["no_advice"]["calibration"].startswith("not calibrated: label")
        assert "was fitted by method 3 and is not used" in report["criteria"]["no_advice"]["calibration"]
        assert "no_advice: the adaptation of `no_advice` saved for this corpus" in capsys.readouterr().err


def test_features_of_pure_noise_leave_the_decisions_to_the_model():
    """Five features unrelated to 20 balanced labels, and a model that says nothing (P 0.5): a
    feature is weighed only where chance would rarely separate the labels as well (FEATURE_ALPHA),
    so new answers mostly stay uncertain rather than decided by noise."""
    set_criteria({"quotes": Criterion(question="Does it quote the context?", sees=("answer", "contexts"))})
    rng = np.random.default_rng(11)
    names = ("names", "length", "from_question", "copied", "longest_copied")
    uncertain = decided = 0
    for _ in range(100):
        items = [
            Item((0.5,), ({k: float(rng.random()) for k in names},), positive)
            for positive in [True] * 10 + [False] * 10
        ]
        d = adapt(Decider(None, 0.5, (0.1, 0.9)), items, "both", judge="quotes")
        for _ in range(20):
            unsure, _ = d.decide(Item((0.5,), ({k: float(rng.random()) for k in names},)))
            uncertain += unsure
            decided += not unsure
    assert decided <= 0.2 * (uncertain + decided), (uncertain, decided)


def test_the_model_never_counts_against_its_own_word():
    """Labels whose model P runs against them and a feature that separates them: the blend keeps
    the model's weight at the floor (as the criterion's fit without a feature does), not below it."""
    set_criteria({"quotes": Criterion(question="Does it quote the context?", sees=("answer", "contexts"))})
    rng = np.random.default_rng(3)
    items = []
    for i in range(24):
        positive = i % 2 == 0
        copied = 0.25 + 0.5 * rng.random() if positive else 0.3 * rng.random()
        p = 0.2 + 0.1 * rng.random() if positive else 0.7 + 0.1 * rng.random()  # the model says the opposite
        items.append(Item((p,), ({"copied": copied, "length": float(rng.random())},), positive))
    d = adapt(Decider(None, 0.5, (0.1, 0.9)), items, "both", judge="quotes")
    assert "copied" in d.notes["features"] and d.blend.model == pytest.approx(MIN_SLOPE)


def test_a_blend_decides_at_any_log_odds():
    assert Blend(-900.0, 1.0, {}).p(0.5, {}) == pytest.approx(0.0, abs=1e-300)
    assert Blend(900.0, 1.0, {}).p(0.5, {}) == 1.0


def test_a_rubric_reply_of_several_lines_reads_as_sentences():
    """User trial 4 F10: "it gives the reference's main fact The answer provides ..." ran the level's
    words into the model's own sentence."""
    from rag_eval.judges.criteria import _level_said

    assert _level_said("3: it gives the reference's main fact\nThe answer provides it.", 4) == (
        3,
        "it gives the reference's main fact. The answer provides it.",
    )
    assert _level_said("2 - fine", 4) == (2, "fine") and _level_said("5: no", 4) == (None, "5: no")
