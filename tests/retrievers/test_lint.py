"""Test-set health: each finding is triggered by a test set built for it, and a clean set triggers none."""

import numpy as np
import pytest

from rag_eval.config import AuditConfig
from rag_eval.retrievers.lint import fails, lint
from rag_eval.retrievers.rankings import Rankings
from rag_eval.retrievers.stage import evaluate
from rag_eval.stats import detectable_hit_difference, independent_discordance, sign_test
from rag_eval.types import Chunk, Corpus, Question

CHUNKS = [
    Chunk(
        "lists",
        "Lists are mutable sequences, typically used to store collections of homogeneous items.",
        "Lists",
        doc_id="seq",
    ),
    Chunk(
        "tuples",
        "Tuples are immutable sequences, typically used to store collections of heterogeneous data.",
        "Tuples",
        doc_id="seq",
    ),
    Chunk("sets", "A set object is an unordered collection of distinct hashable objects.", "Sets", doc_id="set"),
    Chunk(
        "dicts",
        "A mapping object maps hashable values to arbitrary objects. Mappings are mutable objects.",
        "Dicts",
        doc_id="map",
    ),
    Chunk(
        "slots",
        "__slots__ allow us to explicitly declare data members and deny the creation of __dict__.",
        "Slots",
        doc_id="cls",
    ),
]
CORPUS = Corpus(CHUNKS, source="test")


def cfg(**lint_options) -> AuditConfig:
    return AuditConfig.model_validate(
        {
            "name": "lint",
            "corpus": {"path": "x"},
            "test_set": {"path": "y"},
            "lint": lint_options,
            "retrieval": {"k": [1, 5], "depth": 5, "retrievers": {"bm25": {"type": "bm25"}}},
        }
    )


def clean_set() -> list[Question]:
    return [
        Question("a", "which built-in sequence can I change in place?", {"lists": 1}, True, reference="Lists."),
        Question("b", "what should I use for a fixed record of mixed values?", {"tuples": 1}, True),
        Question("c", "how do I keep only unique items without caring about order?", {"sets": 1}, True),
        Question("d", "how can I stop instances from getting a __dict__?", {"slots": 1}, True),
        Question("e", "which container looks things up by key?", {"dicts": 1}, True),
        Question("f", "who designed the Python logo?", {}, False),
    ]


def codes(findings, min_severity="warning"):
    order = {"info": 0, "warning": 1, "severe": 2}
    return {f.code for f in findings if order[f.severity] >= order[min_severity]}


def test_clean_set_has_no_warnings():
    findings = lint(cfg(), CORPUS, clean_set())
    assert codes(findings) == set()
    assert {f.code for f in findings} <= {"exact_tokens", "coverage"}
    assert not fails(cfg(), findings)


def test_copied_wording_is_severe_when_most_questions_copy():
    qs = [
        Question("a", "Lists are mutable sequences typically used to store what?", {"lists": 1}, True),
        Question("b", "a set object is an unordered collection of what?", {"sets": 1}, True),
        Question("c", "which container looks things up by key?", {"dicts": 1}, True),
        Question("u", "who designed the logo?", {}, False),
    ]
    findings = lint(cfg(), CORPUS, qs)
    f = next(f for f in findings if f.code == "copied_wording")
    assert f.questions == ["a", "b"]
    assert f.severity == "severe"  # 2 of 3 answerable >= 50%
    assert fails(cfg(), findings)
    assert not fails(cfg(fail_on="never"), findings)


def test_no_unanswerable_and_no_exact_tokens():
    qs = [q for q in clean_set() if q.answerable and q.id != "d"]
    assert {"few_unanswerable", "no_exact_tokens"} <= codes(lint(cfg(), CORPUS, qs))


def test_a_set_where_most_questions_name_a_symbol_is_warned_about():
    """User trial 3 F2: 10 of 11 generated questions named the filter; bm25 and hybrid both had hit@1
    1.00, and lint said only [info]."""
    from rag_eval.retrievers.lint import exact_token_questions

    named = [Question(f"n{i}", f"What does `filter_{i}` return?", {"lists": 1}, True) for i in range(5)]
    plain = [Question(f"p{i}", "which container keeps its items in order?", {"lists": 1}, True) for i in range(2)]
    [warned] = exact_token_questions(named)
    assert (warned.code, warned.severity) == ("mostly_exact_tokens", "warning")
    assert warned.message.startswith("5 of 5 answerable questions name an exact symbol")
    [info] = exact_token_questions(named[:4] + plain)  # 4 of 6: under the share
    assert (info.code, info.severity) == ("exact_tokens", "info")
    assert exact_token_questions(named[:4])[0].code == "exact_tokens"  # too few to say


def test_duplicates_and_near_duplicates():
    qs = clean_set() + [
        Question("a2", "Which built-in sequence can I change in place?", {"lists": 1}, True),
        Question("c2", "how do I keep only the unique items, without caring about their order?", {"sets": 1}, True),
    ]
    findings = {f.code: f for f in lint(cfg(), CORPUS, qs)}
    assert findings["duplicate_questions"].questions == ["a", "a2"]
    assert findings["near_duplicate_questions"].questions == ["c", "c2"]


def test_suspect_label():
    qs = clean_set() + [
        Question(
            "w",
            "what holds distinct hashable things?",
            {"lists": 1},
            True,
            reference="A set object: an unordered collection of distinct hashable objects.",
        )
    ]
    f = next(f for f in lint(cfg(), CORPUS, qs) if f.code == "suspect_labels")
    assert f.questions == ["w"]
    assert f.data["w"]["better_chunk"] == "sets"


def test_size_finding_from_retrieval_results():
    qs = clean_set()
    rankings = {"bm25": Rankings.from_lists([[(0, 1.0)]] * len(qs), 5)}
    res = evaluate(cfg(), CORPUS, qs, rankings)
    f = next(f for f in lint(cfg(), CORPUS, qs, res) if f.code == "test_set_size")
    assert f.data["n"] == 5
    assert f.severity == "warning"  # 5 questions cannot detect anything useful


def test_coverage_counts_documents():
    f = next(f for f in lint(cfg(), CORPUS, clean_set()) if f.code == "coverage")
    assert (f.data["touched"], f.data["documents"]) == (4, 4)


@pytest.mark.parametrize(("n", "hit_rate"), [(100, 0.8), (300, 0.6)])
def test_stated_detectable_difference_is_detected_80_percent_of_the_time(n, hit_rate):
    diff = detectable_hit_difference(n, hit_rate)
    psi = independent_discordance(hit_rate)
    rng = np.random.default_rng(42)
    trials, detected = 2000, 0
    for _ in range(trials):
        discordant = rng.random(n) < psi
        b_wins = rng.random(n) < 0.5 + diff / (2 * psi)
        both = rng.random(n) < hit_rate
        a = np.where(discordant, ~b_wins, both).astype(float)
        b = np.where(discordant, b_wins, both).astype(float)
        detected += sign_test(a, b)[3] < 0.05
    assert detected / trials == pytest.approx(0.8, abs=0.03)


def test_generic_quote_is_flagged_with_its_match_count(small_project):
    import json

    from rag_eval.config import load_config
    from rag_eval.data.inputs import load_inputs

    rows = [json.loads(x) for x in (small_project / "questions.jsonl").read_text().splitlines()]
    rows[1]["evidence"] = "typically used to store"  # in the lists and the tuples chunk
    (small_project / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = load_config(small_project / "audit.yaml")
    cfg.lint.max_quote_matches = 1
    from rag_eval.retrievers.lint import generic_labels

    inputs = load_inputs(cfg)
    q2 = next(q for q in inputs.questions if q.id == "q2")
    assert q2.quote_matches == {"typically used to store": 2}
    (f,) = generic_labels(cfg, inputs.questions)
    assert f.code == "generic_labels" and f.questions == ["q2"] and "matches 2" in f.message


def test_answer_outside_label_names_the_chunk_to_add():
    # The quote matches the tuples chunk only after normalisation (case, markup, punctuation), so
    # the label (exact quotes) missed it; no retrieval run is needed to see it.
    quote = "TUPLES are *immutable* sequences -- typically used to store collections"
    q = Question("t", "what should I use for a fixed record?", {"lists": 1}, True, evidence=[quote])
    (f,) = [f for f in lint(cfg(), CORPUS, clean_set() + [q]) if f.code == "answer_outside_label"]
    assert f.questions == ["t"] and f.data["t"] == {"chunk_to_add": "tuples", "by": "evidence quote"}
    assert "t -> tuples" in f.fix


def test_answer_outside_label_from_a_retrieved_chunk_holding_the_reference():
    # Labelled "lists", but bm25 ranks "sets" first and it holds the reference answer.
    q = Question(
        "w",
        "what holds distinct hashable things?",
        {"lists": 1},
        True,
        reference="An unordered collection of distinct hashable objects: a set.",
    )
    qs = clean_set() + [q]
    order = [[(CORPUS.index["lists"], 1.0)]] * len(clean_set()) + [[(CORPUS.index["sets"], 2.0), (0, 1.0)]]
    res = evaluate(cfg(), CORPUS, qs, {"bm25": Rankings.from_lists(order, 5)})
    (f,) = [f for f in lint(cfg(), CORPUS, qs, res) if f.code == "answer_outside_label"]
    assert f.questions == ["w"]
    found = f.data["w"]
    assert found["chunk_to_add"] == "sets" and found["retriever"] == "bm25" and found["by"] == "reference answer"
    assert found["reference_share"] >= found["label_share"] + cfg().diagnosis.reference_margin
    # Without the retrieval run nothing points at the sets chunk (no quote matches it).
    assert "answer_outside_label" not in codes(lint(cfg(), CORPUS, qs))


def test_loose_text_and_near_duplicates_equal_their_plain_definitions():
    """loose() (translate + split for ASCII) equals markup stripped, lower-cased, non-words
    dropped; near_duplicates (one sparse product) equals the Jaccard overlap of every pair."""
    import itertools
    import random
    import re

    from rag_eval.data.testset import strip_markup
    from rag_eval.retrievers.answer_match import loose
    from rag_eval.retrievers.lint import near_duplicates
    from rag_eval.text import jaccard

    rng = random.Random(2)
    alphabet = list("aZ09_*`#>[]|-., \t\n\x0b\x1c") + ["İ", "Σ", "K", "ß", "É", "é"]
    for _ in range(3000):
        t = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        assert loose(t) == " ".join(re.sub(r"[^a-z0-9]+", " ", strip_markup(t).lower()).split()), repr(t)
    for _ in range(200):
        pool = [f"w{k}" for k in range(rng.randint(1, 8))]
        sets = [(f"q{n}", set(rng.sample(pool, rng.randint(0, min(4, len(pool)))))) for n in range(rng.randint(0, 20))]
        t = rng.choice([0.0, 0.3, 0.5, 0.8, 1.0])
        want = [
            (a, b, round(jaccard(sa, sb), 2))
            for (a, sa), (b, sb) in itertools.combinations(sets, 2)
            if sa and sb and jaccard(sa, sb) >= t
        ]
        assert near_duplicates(sets, t) == want


def test_a_reference_that_restates_its_question_is_warned_about():
    """User trial 3 F2: a reference adding at most one word to its question (a synonym, here)."""
    qs = clean_set() + [
        Question(
            "t",
            "What is the last item in a sequence?",
            {"lists": 1},
            True,
            reference="The last item of a sequence is the last element in the sequence.",
        ),
        Question("y", "Are lists mutable sequences?", {"lists": 1}, True, reference="Yes, lists are mutable."),
        Question("n", "What is the default size of a list?", {"lists": 1}, True, reference="The default size is 0."),
    ]
    [f] = [f for f in lint(cfg(), CORPUS, qs) if f.code == "reference_restates_question"]
    assert (f.severity, f.questions, f.data["added"]) == ("warning", ["t"], {"t": ["element"]})
    assert f.message.startswith("1 reference restates its question, adding at most one word")
    assert "reference_restates_question" not in codes(lint(cfg(), CORPUS, clean_set()))
