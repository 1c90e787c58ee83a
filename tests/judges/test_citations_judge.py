"""The citations judge: recall (a claim supported by the union of its cited passages), precision
(ALCE's rule), the kinds of a wrong claim and their precedence, the calls it makes, uncertain
decisions counted apart; and through ``rag-eval run``: the outcomes miscited and uncited, the gates,
the report section and the figures."""

import asyncio
import csv
import json
import re
from pathlib import Path

import pytest

import rag_eval
from rag_eval.answers.answer_records import Answer
from rag_eval.attribution import attribute
from rag_eval.calibration.lexical import Blend
from rag_eval.cli import main
from rag_eval.config import load_config
from rag_eval.judges.citations_judge import band_from, judge_citations, makes_claim
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.registry import JUDGES, Inputs
from rag_eval.judges.scored import ScoredJudges
from rag_eval.llm.client import ChatResult
from rag_eval.orchestration.runner import run_compare
from rag_eval.types import Question

from .. import scripted_server
from ..scripted_server import ScriptedServer

LISTS = "Lists are mutable sequences, typically used to store collections."
SETS = "A set object is an unordered collection of distinct hashable objects."
TUPLES = "Tuples are immutable sequences, typically used to store heterogeneous data."
CONTEXTS = [LISTS, SETS, TUPLES]

# P(yes) of "is the sentence supported by these passages?", by the sentence's first words and the
# passages shown (numbered from 1, as the answer numbered them).
SUPPORT = {
    ("Lists can be changed", (1,)): 0.95,
    ("Lists can be changed", (1, 2, 3)): 0.95,
    ("A set holds no duplicates", (1,)): 0.05,
    ("A set holds no duplicates", (1, 2, 3)): 0.9,
    ("Tuples cannot change", (1, 3)): 0.9,
    ("Tuples cannot change", (3,)): 0.9,
    ("Tuples cannot change", (1,)): 0.1,
    ("Sets are unordered", (1, 2, 3)): 0.9,
    ("Lists are sorted by default", (1,)): 0.1,
    ("Lists are sorted by default", (1, 2, 3)): 0.05,
    ("Lists hold items", (1,)): 0.5,
    # A citation moved to the wrong passage that the model still calls supported.
    ("A set is an unordered collection", (1,)): 0.9,
    ("A set is an unordered collection", (1, 2, 3)): 0.9,
}


def shown(text: str) -> tuple[str, tuple[int, ...]]:
    """The sentence a citation request asks about and the passages it shows."""
    sentence = re.search(r"\nSentence: (.*)", text).group(1)
    passages = text.rsplit("Cited passages:\n", 1)[1].split("\n\nQuestion:")[0]
    return sentence, tuple(int(n) for n in re.findall(r"^\[(\d+)\] ", passages, re.M))


def p_support(text: str) -> float:
    sentence, passages = shown(text)
    return next((p for (start, ps), p in SUPPORT.items() if sentence.startswith(start) and ps == passages), 0.5)


class ScriptedLLM:
    """The judge model: replies Yes or No as SUPPORT leans, with logprobs; records what it was asked."""

    model = identity = "scripted"

    def __init__(self):
        self.asked: list[tuple[str, tuple[int, ...]]] = []

    async def chat(self, messages, max_tokens=48, logprobs=None, stop=None):
        text = messages[0]["content"]
        self.asked.append(shown(text))
        p = p_support(text)
        reply = "Yes: the passage says so." if p >= 0.5 else "No: the passage says something else."
        logp = scripted_server.first_token_logprobs(reply, max(p, 1 - p))
        return ChatResult(reply, "scripted", raw={"choices": [{"message": {"content": reply}, "logprobs": logp}]})


def judged(answer: str, band=(0.3, 0.7)) -> tuple[Judgement, ScriptedLLM]:
    llm = ScriptedLLM()
    scored = ScoredJudges.load(llm, None)
    scored.citation_band = band
    x = Inputs("q1", "cite", "Which sequences can change?", answer, CONTEXTS)
    return asyncio.run(judge_citations(scored, x)), llm


MIXED = (
    "Lists can be changed in place [1]. A set holds no duplicates [1]. Tuples cannot change [3][1]. "
    "Sets are unordered. The documents do not say who wrote them."
)


def test_recall_precision_and_each_claims_kind_by_alces_rule():
    j, llm = judged(MIXED)
    rows = j.details["sentences"]
    assert [r["kind"] for r in rows] == ["supported", "miscited", "supported", "uncited", "no_claim"]
    # Recall: 2 of the 4 claims are supported by their citations; the refusal sentence is not counted.
    assert j.status == "judged" and j.score == 0.5 and j.details["claims"] == 4
    # Precision: [1] of the first (relevant), [1] of the second (not: the sentence is not supported by
    # it), [3] of the third (alone it supports), [1] of the third (alone it does not, and [3] without
    # it still does: irrelevant); 2 of 4.
    assert [[c["relevant"] for c in r["citations"]] for r in rows[:4]] == [[True], [False], [True, False], []]
    assert j.details["citation_precision"] == 0.5
    # The worst claim decides: miscited (its citation fails, another passage supports it) before uncited.
    assert j.verdict == "miscited"
    # One question per cited claim; the miscited and uncited claims asked once more against every
    # passage; the sentence with two citations asked each alone ([3] without [1] is [3] alone: asked once).
    assert sorted(llm.asked) == sorted(
        [
            ("Lists can be changed in place.", (1,)),
            ("A set holds no duplicates.", (1,)),
            ("A set holds no duplicates.", (1, 2, 3)),
            ("Tuples cannot change.", (1, 3)),
            ("Tuples cannot change.", (3,)),
            ("Tuples cannot change.", (1,)),
            ("Sets are unordered.", (1, 2, 3)),
        ]
    )
    assert j.details["calls"] == 7


def test_a_claim_no_passage_supports_is_unsupported_and_decides_unfaithful_without_a_faithfulness_judge():
    j, _ = judged("Lists are sorted by default [1].")
    assert j.verdict == "unsupported" and j.details["sentences"][0]["citations"][0]["relevant"] is False
    q = Question("q1", "Which sequences can change?", {"py/lists": 1.0}, True, reference="Lists.")
    answer = Answer(question_id="q1", prompt="cite", answer="Lists are sorted by default [1].")
    outcome, why = attribute(q, True, answer, {"citations": j}, faithfulness_threshold=1.0, faithfulness_judge=None)
    assert outcome == "unfaithful" and why.startswith("citations: 0 of 1 claims")
    # A faithfulness judge that found the claim supported: the citation is what failed.
    faithful = Judgement("faithfulness_yesno", "q1", "cite", "judged", score=1.0)
    outcome, _ = attribute(
        q,
        True,
        answer,
        {"citations": j, "faithfulness_yesno": faithful},
        faithfulness_threshold=1.0,
        faithfulness_judge="faithfulness_yesno",
    )
    assert outcome == "miscited"


def test_one_wrong_sentence_is_one_failure_unfaithful_before_miscited():
    j, _ = judged(MIXED)
    q = Question("q1", "Which sequences can change?", {"py/lists": 1.0}, True, reference="Lists.")
    answer = Answer(question_id="q1", prompt="cite", answer=MIXED)
    unfaithful = Judgement("faithfulness_yesno", "q1", "cite", "judged", score=0.5, reason="1 of 2")
    judgements = {"citations": j, "faithfulness_yesno": unfaithful}
    kw = {"faithfulness_threshold": 1.0, "faithfulness_judge": "faithfulness_yesno"}
    assert attribute(q, True, answer, judgements, **kw)[0] == "unfaithful"
    judgements["faithfulness_yesno"] = Judgement("faithfulness_yesno", "q1", "cite", "judged", score=1.0)
    assert attribute(q, True, answer, judgements, **kw)[0] == "miscited"
    uncited, _ = judged("Lists can be changed in place [1]. Sets are unordered.")
    judgements["citations"] = uncited
    assert uncited.verdict == "uncited" and attribute(q, True, answer, judgements, **kw)[0] == "uncited"


def test_an_uncertain_decision_is_counted_apart():
    j, _ = judged("Lists hold items [1]. Lists can be changed in place [1].")
    assert [r["kind"] for r in j.details["sentences"]] == ["uncertain", "supported"]
    # The certain claim is supported: the answer could still be either, so it is uncertain.
    assert j.status == "uncertain" and j.details["uncertain_sentences"] == 1
    assert j.details["citation_recall"] == 1.0
    # Without a band (judges.uncertain: off) P 0.5 reaches the cut-off: supported.
    j, _ = judged("Lists hold items [1]. Lists can be changed in place [1].", band=band_from("off"))
    assert j.status == "judged" and j.verdict == "cited" and j.score == 1.0


def test_a_saved_blend_decides_on_the_cited_passages_words_and_finds_the_moved_citation():
    moved = "A set is an unordered collection of hashable objects [1]."
    j, _ = judged(moved)
    assert j.verdict == "cited"  # the model alone: P(yes) 0.9 for the lists passage
    llm = ScriptedLLM()
    scored = ScoredJudges.load(llm, None)
    scored.citation_band = band_from("auto", saved=(0.4, 0.6))
    scored.blends["citations"] = Blend(-4.0, 0.3, {"word_share": 6.0, "name_share": 0.0, "elsewhere_gap": -3.0})
    x = Inputs("q1", "cite", "Which sequences can change?", moved, CONTEXTS)
    j = asyncio.run(judge_citations(scored, x))
    row = j.details["sentences"][0]
    # Cited [1]: 1 of 5 content words there, passage 2 holds all five: -4 + 0.3 logit(0.9) + 6 x 0.2
    # - 3 x 0.8 = -4.54, P 0.011; every passage: -4 + 0.66 + 6 = 2.66, P 0.935: supported elsewhere.
    assert row["p_model"] == pytest.approx(0.9, abs=1e-6) and row["p_supported"] == pytest.approx(0.0106, abs=1e-3)
    assert row["p_elsewhere"] == pytest.approx(0.935, abs=1e-3)
    assert row["kind"] == "miscited" and j.verdict == "miscited"
    words = row["evidence"]["words"]
    assert words["missing"] == ["set", "unordered", "hashable", "objects"] and words["better_passage"] == 2
    assert words["features"]["elsewhere_gap"] == 0.8 and words["p_model"] == pytest.approx(0.9, abs=1e-6)
    # The shown reason names the words behind the decision, for the decided side.
    assert row["reason"].endswith(
        'the passages lack "set", "unordered", "hashable", "objects"; passage [2] holds more of the sentence\'s words'
    )
    # The question against every passage has a blend of its own where one was saved: here one that
    # finds no support anywhere, so the claim is unsupported, not miscited; the cited question's is unchanged.
    scored.blends["citations/every_passage"] = Blend(-10.0, 0.0, {"word_share": 1.0})
    again = asyncio.run(judge_citations(scored, x)).details["sentences"][0]
    assert again["p_supported"] == pytest.approx(row["p_supported"]) and again["p_elsewhere"] < 0.001
    assert again["kind"] == "unsupported"


def test_the_band_is_the_configs_else_the_saved_calibrations_else_the_default():
    assert band_from("auto") == (0.3, 0.7)
    assert band_from("auto", saved=(0.28, 0.28)) == (0.28, 0.28)
    assert band_from({"citations": [0.2, 0.6]}, saved=(0.28, 0.28)) == (0.2, 0.6)
    assert band_from("off", saved=(0.28, 0.28)) is None


def test_a_citation_naming_no_given_passage_supports_nothing_and_is_never_relevant():
    j, llm = judged("Lists can be changed in place [7].")
    row = j.details["sentences"][0]
    assert row["cited"] == [] and row["reason"].startswith("no citation names a given passage")
    assert j.details["unresolved"] == 1 and j.details["citation_precision"] == 0.0
    assert j.verdict == "uncited" and llm.asked == [("Lists can be changed in place.", (1, 2, 3))]


@pytest.mark.parametrize(
    ("sentence", "claim"),
    [
        ("The documents do not say who wrote the tutorial.", False),
        ("The provided context does not mention a default timeout.", False),
        ("What does it return?", False),
        ("For example:", False),
        ("Yes.", False),
        ("The timeout is not set by default.", True),
        ("Lists are mutable sequences.", True),
        # User trial 5 F3: claims that hold a word of the material beside a negation.
        ("The context manager does not close the file.", True),
        ("Rich prints the text with no markup applied.", True),
        ("If no total is provided, the bar pulses.", True),
        ("Escaped text is not interpreted as markup.", True),
        ("There is no information about the author in the provided documents.", False),
        ("The author is not mentioned in the documents.", False),
        ("The context doesn't provide details on that.", False),
        # User trial 5 F11: a code example with no sentence before it claims nothing.
        ('```python\nConfirm.ask("Continue?")\n```', False),
    ],
)
def test_which_sentences_make_a_claim(sentence, claim):
    assert makes_claim(sentence) is claim


def test_the_cost_estimate_counts_the_citation_checks():
    spec = JUDGES["citations"]
    assert spec.calls(3, 2) == 3 and spec.calls(3, 4) == 6


# -- through rag-eval run -------------------------------------------------------------------------

CITING = "CITE-PROMPT\nDocuments:\n{numbered_contexts}\n\nQuestion: {question}\nAnswer:"
ANSWERS = {
    "Which sequence type can be changed in place?": "Lists can be changed in place [1].",
    "What is a set?": "A set holds no duplicates [2]. It is unordered.",
    "How do I wrap a block with a context manager?": "Use the with statement around the block.",
    "Who wrote the Python tutorial?": "The documents do not say who wrote the tutorial.",
}


def run_p(body: dict) -> float:
    """P(yes) of the scripted judge: a citation request as the passages it shows hold the sentence's
    key word; every other judge yes."""
    text = body["messages"][0]["content"]
    if "Sentence: " not in text:
        return scripted_server.YES_P
    sentence, _ = shown(text)
    passages = text.rsplit("Cited passages:\n", 1)[1].split("\n\nQuestion:")[0].lower()
    key = {"Lists": "lists", "A set": "set object", "It is": "unordered", "Use the": "with statement"}
    word = next((w for start, w in key.items() if sentence.startswith(start)), "")
    return 0.95 if word and word in passages else 0.05


def run_reply(body: dict) -> str:
    messages = body["messages"]
    text = messages[0]["content"]
    if messages[-1]["role"] == "assistant":
        return "the passage"
    if "CITE-PROMPT" in text:
        return next((a for q, a in ANSWERS.items() if f"Question: {q}" in text), "Lists.")
    if "Sentence: " in text:
        return "Yes: it says so." if run_p(body) >= 0.5 else "No: it does not."
    return scripted_server.structured_reply(body)


def _project(small_project: Path, base_url: str, gates: str = "") -> Path:
    (small_project / "cite.md").write_text(CITING)
    llm = f"{{provider: openai, model: scripted, base_url: '{base_url}'}}"
    path = small_project / "cite.yaml"
    path.write_text(
        (small_project / "audit.yaml").read_text()
        + f"generation:\n  retriever: bm25\n  top_k: 2\n  prompts: {{cite: {small_project / 'cite.md'}}}\n"
        + f"  llm: {llm}\n"
        + f"judges:\n  llm: {llm}\n  metrics: [refusal, citations]\n"
        + gates
        + f"cache_dir: {small_project / 'cache'}\n"
    )
    return path


def test_a_run_decides_miscited_and_uncited_reports_them_and_gates_on_citation_recall(small_project, capsys):
    with ScriptedServer(reply=run_reply, probability=lambda b: max(run_p(b), 1 - run_p(b))) as s:
        path = _project(small_project, s.base_url, gates="gates:\n  generation.cite.citation_recall: '>= 0.9'\n")
        code = main(["--quiet", "run", str(path)])
    captured = capsys.readouterr()
    out = captured.out
    assert code == 1 and "gate FAIL: generation.cite.citation_recall" in out, captured.err[-3000:]
    run_dir = next((small_project / "runs").iterdir())
    rows = [json.loads(line) for line in (run_dir / "judgements.jsonl").read_text().splitlines()]
    cit = {r["question_id"]: r for r in rows if r["judge"] == "citations"}
    assert cit["q1"]["verdict"] == "cited" and cit["q1"]["score"] == 1.0
    # q2: bm25 ranked the passage on sets first, so its "[2]" names the with statement's passage
    # (miscited: [1] supports it); "It is unordered." cites nothing (uncited); the worse one decides.
    assert cit["q2"]["verdict"] == "miscited" and cit["q2"]["score"] == 0.0
    assert [s["kind"] for s in cit["q2"]["details"]["sentences"]] == ["miscited", "uncited"]
    # q3 cites nothing; q4 declines (no claim: skipped).
    assert cit["q3"]["verdict"] == "uncited" and cit["q4"]["status"] == "skipped"
    report = json.loads((run_dir / "report.json").read_text())
    outcomes = {r["question_id"]: r["outcome"] for r in report["attribution"]["rows"]}
    assert (outcomes["q1"], outcomes["q2"], outcomes["q3"]) == ("ok", "miscited", "uncited")
    figs = json.loads((run_dir / "summary.json").read_text())["generation"]["cite"]
    assert figs["citation_recall"]["value"] == pytest.approx(1 / 3)
    assert figs["citation_precision"]["value"] == 0.5  # q1's [1] needed, q2's [2] not; q3 cites nothing
    assert figs["miscited"]["value"] == pytest.approx(1 / 3) and figs["uncited"]["value"] == pytest.approx(1 / 3)
    md = (run_dir / "report.md").read_text()
    assert "## Citations" in md
    assert "A set holds no duplicates [2]. — MISCITED" in md and "It is unordered. — UNCITED" in md
    page = (run_dir / "report.html").read_text()
    assert "<h2>Citations</h2>" in page and "A set holds no duplicates [2]. — <b>MISCITED" in page


def test_supplied_answers_through_the_python_api_are_judged_for_citations(tmp_path):
    rows = [
        {
            "question": "Which sequence type can be changed in place?",
            "contexts": [SETS, LISTS],
            "answer": "Lists can be changed in place [2].",
        },
        {"question": "What is a set?", "contexts": [LISTS, SETS], "answer": "A set holds no duplicates [1]."},
    ]
    with ScriptedServer(reply=run_reply, probability=lambda b: max(run_p(b), 1 - run_p(b))) as s:
        llm = {"provider": "openai", "model": "scripted", "base_url": s.base_url, "max_retries": 1}
        result = rag_eval.judge_answers(rows, judges={"llm": llm, "metrics": ["refusal", "citations"]}, out=tmp_path)
    att = result.attribution_df().set_index("question")
    assert att.loc["Which sequence type can be changed in place?", "outcome"] == "ok"
    assert att.loc["What is a set?", "outcome"] == "miscited"
    assert result.figure("generation.system.citation_recall")["value"] == 0.5
    assert result.figure("generation.system.miscited")["value"] == 0.5


def test_compare_tests_the_citation_figures_between_prompts_question_by_question(small_project):
    plain = "PLAIN-PROMPT\nDocuments:\n{contexts}\n\nQuestion: {question}\nAnswer:"
    (small_project / "plain.md").write_text(plain)

    def reply(body: dict) -> str:
        text = body["messages"][0]["content"]
        if "PLAIN-PROMPT" in text and body["messages"][-1]["role"] != "assistant":
            # The same answers without their markers: every claim uncited.
            answer = next((a for q, a in ANSWERS.items() if f"Question: {q}" in text), "Lists.")
            return re.sub(r"\s*\[\d\]", "", answer)
        return run_reply(body)

    with ScriptedServer(reply=reply, probability=lambda b: max(run_p(b), 1 - run_p(b))) as s:
        path = _project(small_project, s.base_url)
        text = path.read_text().replace(
            f"prompts: {{cite: {small_project / 'cite.md'}}}",
            f"prompts: {{cite: {small_project / 'cite.md'}, plain: {small_project / 'plain.md'}}}",
        )
        path.write_text(text)
        run_dir = run_compare(load_config(path))
    comparison = json.loads((run_dir / "summary.json").read_text())["comparison"]
    recall = comparison["citation_recall"]["cite_vs_plain"]
    # q1 cites right (1.0 against 0.0), q2 and q3 are 0.0 either way; q4 declines (skipped).
    assert (recall["wins"], recall["losses"], recall["ties"]) == (1, 0, 2)
    assert "no_uncited" in comparison and "citation_precision" not in comparison  # plain cites nothing


def test_a_run_with_the_judge_has_a_citations_label_column_read_into_its_figure(small_project, capsys):
    """rag-eval label asks "Does each citation support its sentence?" only for a run with the
    citations judge; report --labels reads the column into well_cited's figure (its positive
    verdict) and not into miscited's or uncited's, which a yes does not record."""
    with ScriptedServer(reply=run_reply, probability=lambda b: max(run_p(b), 1 - run_p(b))) as s:
        path = _project(small_project, s.base_url)
        assert main(["--quiet", "run", str(path)]) == 0
    run_dir = next((small_project / "runs").iterdir())
    assert main(["--quiet", "label", str(run_dir), "--n", "4", "--uniform"]) == 0
    csv_path = run_dir / "labels" / "labels.csv"
    header = next(csv.reader(csv_path.open(encoding="utf-8")))
    # No correctness judge ran: no 'correct' column to fill for nothing (user trial 4 F16).
    assert "citations_support" in header and "refused" in header and "correct" not in header
    assert "Does each citation support its sentence?" in (run_dir / "labels" / "labels.html").read_text()
    rows = list(csv.DictReader(csv_path.open(encoding="utf-8")))
    cells = {"q1": "yes", "q2": "no", "q3": "no"}
    for r in rows:
        r["citations_support"] = cells.get(r["question_id"], "")
    with csv_path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    capsys.readouterr()
    assert main(["report", str(run_dir), "--labels", str(csv_path)]) == 0
    assert "citations_support 3" in capsys.readouterr().out
    labelled = json.loads((run_dir / "report.labelled.json").read_text())
    figs = labelled["labels"]["figures"]["cite"]
    assert figs["well_cited"]["label"] == "citations_support"
    assert figs["well_cited"]["human"]["value"] == pytest.approx(1 / 3)
    assert "miscited" not in figs and "uncited" not in figs and "citation_precision" not in figs
