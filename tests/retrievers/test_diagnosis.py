"""Miss diagnosis: misses constructed for each cause are diagnosed as constructed."""

import pytest

from rag_eval.config import AuditConfig
from rag_eval.retrievers.diagnosis import CAUSES, diagnose_misses
from rag_eval.retrievers.rankings import Rankings
from rag_eval.retrievers.settings import HybridConfig
from rag_eval.retrievers.stage import evaluate
from rag_eval.types import Chunk, Corpus, Question

FILLER = [
    Chunk("f1", "Tuples are immutable sequences used to store heterogeneous data.", "Tuples"),
    Chunk("f2", "Sets hold distinct hashable objects without any order.", "Sets"),
    Chunk("f3", "Ranges represent arithmetic progressions of integers.", "Ranges"),
    Chunk("f4", "Strings are sequences of Unicode code points.", "Strings"),
]


def config() -> AuditConfig:
    return AuditConfig.model_validate(
        {
            "name": "diag",
            "corpus": {"path": "x"},
            "test_set": {"path": "y"},
            "retrieval": {
                "k": [1],
                "depth": 10,
                "miss_k": 1,
                "retrievers": {"bm25": {"type": "bm25"}, "dense": {"type": "dense"}},
            },
        }
    )


def diagnose(chunks, question, ranks: dict[str, list[str]], retriever="dense", fixes=None, rechunked=None, k=1):
    cfg = config()
    cfg.retrieval.miss_k = k
    corpus = Corpus(FILLER + chunks, source="test")
    rankings = {
        name: Rankings.from_lists([[(corpus.index[c], 10.0 - j) for j, c in enumerate(ids)]], 10)
        for name, ids in ranks.items()
    }
    if "hybrid" in ranks:
        cfg.retrieval.retrievers["hybrid"] = HybridConfig(type="hybrid", of=["dense", "bm25"])
    res = evaluate(cfg, corpus, [question], rankings)
    return diagnose_misses(cfg, corpus, res, fixes, rechunked)[retriever][0]


def test_long_passage():
    long_text = " ".join(f"Paragraph {i} discusses unrelated matters of style and layout." for i in range(120))
    long_text += " The zfill method pads a numeric string on the left with zeros."
    q = Question(
        "q",
        "how do I pad a number with zeros on the left?",
        {"long": 1},
        True,
        evidence=["The zfill method pads a numeric string on the left with zeros."],
    )
    d = diagnose([Chunk("long", long_text, "String methods")], q, {"bm25": ["f1", "long"], "dense": ["f4", "long"]})
    assert d.cause == "long_passage"
    assert d.evidence["length"] > 3 * d.evidence["median_length"]


def test_vocabulary_gap():
    q = Question("q", "assign to a variable of the enclosing function from inside a nested function", {"nl": 1}, True)
    chunk = Chunk(
        "nl",
        "The nonlocal statement causes the listed identifiers to refer to previously bound "
        "variables in the nearest enclosing scope excluding globals.",
        "The nonlocal statement",
    )
    # Neither search ranks it near the top (rank 3 > 2 x miss_k).
    d = diagnose([chunk], q, {"bm25": ["f1", "f2", "nl"], "dense": ["f3", "f4", "nl"]})
    assert d.cause == "vocabulary_gap"
    assert d.evidence["overlap"] <= 0.3


def test_exact_token():
    q = Question("q", "What is __length_hint__ supposed to return?", {"lh": 1}, True)
    chunk = Chunk(
        "lh",
        "object.__length_hint__(self) Called to implement operator.length_hint(). Should return "
        "an estimated length for the object.",
        "Emulating container types",
    )
    d = diagnose([chunk], q, {"bm25": ["lh", "f1"], "dense": ["f2", "lh"]})
    assert d.cause == "exact_token"
    assert d.evidence["tokens"] == ["__length_hint__"]
    assert d.evidence["keyword_ranks"] == {"bm25": 1}
    # The keyword retriever itself is never diagnosed with exact_token.
    d_bm25 = diagnose([chunk], q, {"bm25": ["f2", "lh"], "dense": ["f2", "lh"]}, retriever="bm25")
    assert d_bm25.cause != "exact_token"


def test_distractor():
    text = (
        "Augmented assignment is the combination, in a single statement, of a binary operation and an "
        "assignment statement. The target is only evaluated once."
    )
    q = Question("q", "is x += 1 evaluated once?", {"aug": 1}, True)
    d = diagnose(
        [Chunk("aug", text, "Augmented assignment"), Chunk("aug-copy", text + " See also PEP 203.", "Copy")],
        q,
        {"bm25": ["aug-copy", "aug"], "dense": ["aug-copy", "aug"]},
    )
    assert d.cause == "distractor"
    assert d.evidence["distractor"] == "aug-copy" and d.evidence["similarity"] >= 0.6


def test_suspect_label():
    q = Question(
        "q",
        "Do dictionaries keep insertion order?",
        {"f3": 1},
        True,
        reference="Yes, dictionary order is guaranteed to be insertion order since 3.7.",
    )
    chunk = Chunk("dict", "Changed in version 3.7: Dictionary order is guaranteed to be insertion order.", "dict")
    d = diagnose([chunk], q, {"bm25": ["dict", "f3"], "dense": ["dict", "f3"]})
    assert d.cause == "suspect_label"
    assert d.evidence["top_chunk"] == "dict"


def test_unclear_when_no_rule_fires():
    q = Question("q", "Which immutable sequences store heterogeneous data?", {"f1": 1}, True)
    d = diagnose([], q, {"bm25": ["f2", "f1"], "dense": ["f3", "f1"]}, retriever="bm25")
    assert d.cause == "unclear"


def test_paraphrase_when_embeddings_find_what_keywords_miss():
    q = Question("q", "Which sequences cannot change after creation?", {"f1": 1}, True)
    d = diagnose([], q, {"bm25": ["f2", "f1"], "dense": ["f1", "f2"]}, retriever="bm25")
    assert d.cause == "paraphrase"
    assert d.evidence["embedding_ranks"] == {"dense": 1} and d.evidence["rank"] == 2


def test_keyword_only_when_keywords_find_what_embeddings_miss():
    q = Question("q", "Which sequences cannot change after creation?", {"f1": 1}, True)
    d = diagnose([], q, {"bm25": ["f1", "f2"], "dense": ["f2", "f1"]}, retriever="dense")
    assert d.cause == "keyword_only" and d.evidence["keyword_ranks"] == {"bm25": 1}


def _hybrid_case(rrf_k=60):
    """bm25 ranks f1 (relevant) first, dense third: the fusion puts f2 (1st and 2nd) above it."""
    cfg = config().model_copy(deep=True)
    cfg.retrieval.retrievers["hybrid"] = HybridConfig(type="hybrid", of=["dense", "bm25"], rrf_k=rrf_k)
    corpus = Corpus(FILLER + [Chunk("f5", "Bytes are immutable sequences of single bytes.", "Bytes")], source="t")
    q = Question("q", "Which sequences cannot change after creation?", {"f1": 1}, True)
    order = {"bm25": ["f1", "f2", "f3", "f4", "f5"], "dense": ["f2", "f3", "f1", "f4", "f5"]}
    rankings = {
        n: Rankings.from_lists([[(corpus.index[c], 10.0 - j) for j, c in enumerate(ids)]], 10)
        for n, ids in order.items()
    }
    from rag_eval.retrievers.hybrid import fuse

    h = cfg.retrieval.retrievers["hybrid"]
    rankings["hybrid"] = fuse([rankings["dense"], rankings["bm25"]], len(corpus), 10, h.rrf_k, h.weights)
    return cfg, corpus, q, rankings


def test_fusion_buried_shows_the_component_ranks():
    cfg, corpus, q, rankings = _hybrid_case()
    res = evaluate(cfg, corpus, [q], rankings)
    d = diagnose_misses(cfg, corpus, res)["hybrid"][0]
    assert d.cause == "fusion_buried"
    assert d.evidence["component_ranks"] == {"dense": 3, "bm25": 1} and d.evidence["rank"] > 1


def test_simulated_fixes_equal_what_applying_them_gives():
    from rag_eval.retrievers.diagnosis import simulate_fixes
    from rag_eval.retrievers.hybrid import fuse

    cfg, corpus, q, rankings = _hybrid_case()
    res = evaluate(cfg, corpus, [q], rankings)
    fixes = {f.change: f for f in simulate_fixes(cfg, corpus, res) if f.retriever == "hybrid"}
    # Weighting bm25 twice puts f1 first: the simulation says it fixes q...
    assert fixes["hybrid with weights [1.0, 2.0]"].fixes == ["q"]
    # ...and really applying that config does.
    applied = fuse([rankings["dense"], rankings["bm25"]], len(corpus), 10, 60, [1.0, 2.0])
    rankings2 = {**rankings, "hybrid": applied}
    res2 = evaluate(cfg, corpus, [q], rankings2)
    assert not res2.is_miss("hybrid", 0) and res.is_miss("hybrid", 0)


def test_hits_are_not_diagnosed():
    q = Question("q", "Which sequences cannot change after creation?", {"f1": 1}, True)
    corpus = Corpus(FILLER, source="test")
    rankings = {n: Rankings.from_lists([[(0, 1.0)]], 10) for n in ("bm25", "dense")}
    res = evaluate(config(), corpus, [q], rankings)
    assert diagnose_misses(config(), corpus, res) == {"bm25": {}, "dense": {}}


@pytest.mark.parametrize("cause", CAUSES)
def test_every_cause_has_a_fix(cause):
    from rag_eval.retrievers.diagnosis import FIXES

    assert FIXES[cause]


def test_generic_label():
    q = Question("q", "How do I check a config file?", {"f2": 1}, True, evidence=["Check it:"])
    d = diagnose([], q, {"bm25": ["f1", "f2"], "dense": ["f3", "f2"]})
    assert d.cause == "generic_label"
    assert d.evidence["quotes"] == ["Check it:"]
    many = Question("q", "What are sequences?", {f"f{i}": 1 for i in range(1, 5)}, True)
    d2 = diagnose(
        [Chunk(f"x{i}", f"Sequence note {i}.", "Notes") for i in range(3)],
        Question("q", many.question, {**many.qrels, "x0": 1, "x1": 1}, True),
        {"bm25": ["x2"], "dense": ["x2"]},
    )
    assert d2.cause == "generic_label" and d2.evidence["relevant_chunks"] == 6


def test_chunk_boundary():
    # The question's words sit in part 1 of the document; the evidence in part 2, its neighbour.
    part1 = Chunk("doc#1", "To hide the input of a prompt, such as a password, use the option below.", "Prompts", "doc")
    part2 = Chunk("doc#2", "hide_input=True makes the typed characters invisible.", "Prompts", "doc")
    q = Question("q", "How do I hide the input of a password prompt?", {"doc#2": 1}, True)
    ranks = {"bm25": ["doc#1", "f1", "doc#2"], "dense": ["doc#1", "f1", "f2", "doc#2"]}
    # Nothing simulated (a corpus given as chunks): reported, marked unconfirmed, after the cause
    # seen directly (few shared words, neither search near the top).
    d = diagnose([part1, part2], q, ranks, "bm25")
    assert d.causes == ["vocabulary_gap", "chunk_boundary"]
    boundary = d.also[0]
    assert boundary["evidence"]["neighbour"] == "doc#1" and boundary["evidence"]["neighbour_rank"] == 1
    assert boundary["evidence"]["question_words_in_neighbour"] > boundary["evidence"]["question_words_in_relevant"]
    assert boundary["decided"].startswith("unconfirmed: re-chunking could not be simulated")
    # Re-chunking simulated and it fixes this miss: confirmed, naming the chunker.
    fix = {"retriever": "bm25", "change": "fixed-size chunks of 2,000 characters", "config": {"corpus": {}}}
    confirmed = diagnose([part1, part2], q, ranks, "bm25", [{**fix, "fixes": ["q"]}], {"bm25"})
    assert confirmed.cause == "chunk_boundary"
    assert (
        confirmed.decided == "confirmed: simulated re-chunking (fixed-size chunks of 2,000 characters) fixes this miss"
    )
    # Re-chunking simulated and it fixes nothing here: not a chunk boundary; the drop is recorded.
    dropped = diagnose([part1, part2], q, ranks, "bm25", [{**fix, "fixes": ["other"]}], {"bm25"})
    assert dropped.cause == "vocabulary_gap"  # the next cause that fits (few shared words, neither search near)
    assert [x["cause"] for x in dropped.dropped] == ["chunk_boundary"]
    assert dropped.dropped[0]["decided"] == "dropped: no simulated re-chunking fixes this miss"


def test_a_top_chunk_that_answers_is_a_label_problem_before_a_boundary():
    # dense ranks the neighbour first, and the neighbour already holds the reference answer.
    part1 = Chunk(
        "doc#1",
        "To hide what the user types at a prompt, pass hide_input=True: the typed characters stay invisible.",
        "Prompts",
        "doc",
    )
    part2 = Chunk("doc#2", "hide_input=True makes the typed characters invisible.", "Prompts", "doc")
    q = Question(
        "q",
        "How do I hide the input of a password prompt?",
        {"doc#2": 1},
        True,
        reference="Pass hide_input=True so the typed characters stay invisible.",
    )
    d = diagnose([part1, part2], q, {"bm25": ["doc#2"], "dense": ["doc#1", "f1", "f2", "doc#2"]})
    assert d.cause == "suspect_label"
    assert d.evidence["top_chunk"] == "doc#1" and d.evidence["by"] == "reference answer"
    assert d.evidence["reference_share"] >= d.evidence["label_share"] + 0.1
    # The boundary also fits (the neighbour ranks first): reported with its own evidence.
    assert "chunk_boundary" in d.causes
    assert next(a for a in d.also if a["cause"] == "chunk_boundary")["evidence"]["neighbour"] == "doc#1"


def test_a_hybrid_with_a_part_in_the_top_k_is_fusion_before_boundary():
    part1 = Chunk("doc#1", "To hide the input of a prompt, such as a password, use the option below.", "Prompts", "doc")
    part2 = Chunk("doc#2", "hide_input=True makes the typed characters invisible.", "Prompts", "doc")
    q = Question("q", "How do I hide the input of a password prompt?", {"doc#2": 1}, True)
    ranks = {"bm25": ["doc#1", "f1", "f2", "doc#2"], "dense": ["doc#2", "doc#1"], "hybrid": ["doc#1", "doc#2"]}
    d = diagnose([part1, part2], q, ranks, "hybrid")
    assert d.cause == "fusion_buried" and d.evidence["component_ranks"] == {"dense": 1, "bm25": 4}
    # The other causes that fit follow, each with its evidence: dense finds it, bm25 does not
    # (paraphrase), and the neighbour ranks first (boundary, unconfirmed: nothing simulated).
    assert d.causes == ["fusion_buried", "paraphrase", "chunk_boundary"]
    assert d.also[1]["decided"].startswith("unconfirmed")


def test_paraphrase_when_embeddings_nearly_find_it_and_words_differ():
    # k = 1: dense ranks the chunk 2 (within 2 x k), bm25 far down, few shared words.
    q = Question("q", "which containers refuse edits once built?", {"f1": 1}, True)
    d = diagnose([], q, {"bm25": ["f2", "f3", "f4", "f1"], "dense": ["f2", "f1"]}, "bm25")
    assert d.cause == "paraphrase" and d.evidence["embedding_ranks"] == {"dense": 2}
    # Same ranks, but the question shares most of its words with the passage: not a paraphrase.
    copied = Question("q", "immutable sequences heterogeneous data tuples?", {"f1": 1}, True)
    d2 = diagnose([], copied, {"bm25": ["f2", "f3", "f4", "f1"], "dense": ["f2", "f1"]}, "bm25")
    assert d2.cause != "paraphrase"
    # A hybrid whose keyword part fails and whose embedding part nearly finds it: paraphrase too.
    d3 = diagnose([], q, {"bm25": ["f2", "f3", "f4", "f1"], "dense": ["f2", "f1"], "hybrid": ["f2", "f1"]}, "hybrid")
    assert d3.cause == "paraphrase"


def test_distractor_from_another_page_on_the_same_topic():
    # dense ranks the relevant chunk 6 (k = 5); a chunk of another document with the question's
    # words ranks first.
    rel = Chunk("a#1", "Identity comparisons: x is y is true if and only if x and y are the same object.", "Is", "a")
    other = Chunk("b#1", "Integers compare by value with ==; small integers are cached objects.", "Ints", "b")
    extra = [Chunk(f"x{i}", f"Unrelated note {i}.", "Notes", f"x{i}") for i in range(3)]
    q = Question("q", "why do integers compare surprisingly with is?", {"a#1": 1}, True)
    order = ["b#1", "x0", "x1", "x2", "f1", "a#1"]
    d = diagnose([rel, other, *extra], q, {"bm25": order, "dense": order}, "dense", k=5)
    assert d.cause == "distractor"
    assert d.evidence["distractor"] == "b#1" and d.evidence["rank"] == 6
    assert d.evidence["question_words_in_distractor"] >= d.evidence["question_words_in_relevant"]


def test_suspect_label_from_the_evidence_quote_after_normalisation():
    # The top chunk holds the quote with other markup and case: the label missed it.
    quote = "Use `str.zfill()` to pad a numeric string with zeros."
    other = Chunk("copy", "Tip: use *str.zfill()* to pad a NUMERIC string with zeros!", "Tips", "tips")
    labelled = Chunk("lab", f"String methods. {quote} More methods follow.", "String methods", "str")
    q = Question("q", "pad a number with zeros", {"lab": 1}, True, evidence=[quote])
    d = diagnose([other, labelled], q, {"bm25": ["copy", "lab"], "dense": ["copy", "lab"]})
    assert d.cause == "suspect_label"
    assert d.evidence == {"top_chunk": "copy", "top_rank": 1, "by": "evidence quote", "quote": quote}


def test_a_long_chunk_with_the_reference_words_scattered_does_not_answer():
    from rag_eval.retrievers.answer_match import answer_in_chunk, passage_share

    reference = "Declare the name nonlocal in the inner function so it rebinds the enclosing variable."
    words = ["declare", "name", "nonlocal", "inner", "function", "rebinds", "enclosing", "variable"]
    scattered = " ".join(f"{w} " + " ".join(f"filler{i}x{j}" for j in range(70)) for i, w in enumerate(words))
    close = "You declare the name nonlocal inside the inner function; it rebinds the enclosing variable."
    q = Question("q", "change an outer variable from a nested function", {"x": 1}, True, reference=reference)
    ref = {"declare", "name", "nonlocal", "inner", "function", "rebinds", "enclosing", "variable"}
    assert passage_share(ref, scattered.split()) == 1 / 8  # one word per 60-word passage
    assert answer_in_chunk(q, scattered, ["unrelated text"], 0.5, 0.1) is None
    found = answer_in_chunk(q, close, ["unrelated text"], 0.5, 0.1)
    assert found["by"] == "reference answer" and found["reference_share"] == 1.0 and found["label_share"] == 0.0


@pytest.mark.slow
def test_suspect_label_by_meaning_with_the_dense_model(tmp_path):
    """A retrieved chunk that says the answer in other words than the labelled one: words alone
    (no 10-point margin) do not call it, the embedding model's closeness does."""
    from rag_eval.retrievers.diagnosis import meaning_match

    labelled = Chunk(
        "examples#validators",
        "Validators are given as a decorator or a list. Define classes validate attributes at initialization; "
        "an attribute setting hook also exists, see on_setattr in the API reference for field and define and the "
        "setters module for what each hook does.",
        "Validators",
        "examples",
    )
    answering = Chunk(
        "init#callables",
        "Assigning to an attribute later checks its validators again: with attrs.define they run on assignment too.",
        "Callables",
        "init",
    )
    q = Question(
        "q",
        "are validators checked again when I assign to the attribute later?",
        {"examples#validators": 1},
        True,
        reference="With attrs.define validators run on initialization and on attribute setting.",
    )
    cfg = config()
    corpus = Corpus(FILLER + [labelled, answering], source="test")
    order = ["init#callables", "f1", "examples#validators"]
    rankings = {
        n: Rankings.from_lists([[(corpus.index[c], 10.0 - j) for j, c in enumerate(order)]], 10)
        for n in ("bm25", "dense")
    }
    res = evaluate(cfg, corpus, [q], rankings)
    by_words = diagnose_misses(cfg, corpus, res)["dense"][0]
    assert by_words.cause != "suspect_label"
    meaning = meaning_match(cfg, corpus, tmp_path)
    d = diagnose_misses(cfg, corpus, res, meaning=meaning)["dense"][0]
    assert d.cause == "suspect_label" and d.evidence["by"] == "reference answer (meaning)"
    assert d.evidence["top_chunk"] == "init#callables" and d.evidence["closeness"] >= d.evidence["label_closeness"]
    # Switched off in the config: by words only.
    cfg.diagnosis.answer_meaning = False
    assert meaning_match(cfg, corpus, tmp_path) is None


def test_error_class_names_are_exact_tokens():
    from rag_eval.text import exact_tokens

    assert exact_tokens("ValueError No mandatory attributes allowed") == ["ValueError"]
    assert exact_tokens("Why is my class Frozen?") == []


def test_report_says_how_each_cause_was_decided_and_the_other_causes():
    from rag_eval.report.markdown import cause_notes
    from rag_eval.retrievers.retrieval_records import Cause

    d = {
        "cause": "fusion_buried",
        "decided": "from the component ranks; confirmed: hybrid with rrf_k 10 fixes this miss",
        "also": [{"cause": "paraphrase", "rule": "embedding search ranks the chunk within 10", "decided": "x"}],
    }
    assert cause_notes(Cause(**d)) == (
        "; from the component ranks; confirmed: hybrid with rrf_k 10 fixes this miss"
        "; also paraphrase: embedding search ranks the chunk within 10 (x)"
    )


def test_a_dense_near_miss_that_keywords_find_is_a_distractor_before_keyword_only():
    # dense ranks the relevant chunk 6 (k = 5, near = 10), bm25 ranks it 1; a section whose heading
    # names the same thing ("Filtering") ranks first in dense: the competing chunk keeps it out.
    rel = Chunk("p#filter", "Raise DropEvent in a processor to drop log entries silently.", "Filtering", "p")
    other = Chunk("b#levels", "Log levels below the configured one are skipped cheaply.", "Level filtering", "b")
    extra = [Chunk(f"x{i}", f"Unrelated note {i}.", "Notes", f"x{i}") for i in range(8)]
    q = Question("q", "throw away certain log entries from a processor", {"p#filter": 1}, True)
    dense = ["b#levels", "x0", "x1", "x2", "x3", "p#filter"]
    d = diagnose([rel, other, *extra], q, {"bm25": ["p#filter", "b#levels"], "dense": dense}, "dense", k=5)
    assert d.cause == "distractor"
    assert d.evidence["distractor"] == "b#levels" and d.evidence["heading_words_shared"] == ["filtering"]
    assert d.evidence["question_words_in_distractor"] < d.evidence["question_words_in_relevant"]
    assert "keyword_only" in d.causes
    # Far down in dense (rank 12 > 2 x k): embedding search fails, keyword search finds it.
    far = ["b#levels", *[f"x{i}" for i in range(8)], "f1", "f2", "p#filter"]
    d2 = diagnose([rel, other, *extra], q, {"bm25": ["p#filter", "b#levels"], "dense": far}, "dense", k=5)
    assert d2.cause == "keyword_only"


def test_symbols_leave_out_abbreviations():
    from rag_eval.retrievers.answer_match import distinct_symbols, symbols

    text = "Use structlog.stdlib.recreate_defaults(), e.g. once at start-up; attrs.field and field() too."
    assert {"e", "g"} not in symbols(text)
    assert {"recreate_defaults"} in symbols(text) and {"stdlib", "structlog"} in symbols(text)
    assert len([s for s in symbols(text) if s == {"field"}]) == 1
    assert distinct_symbols("field() or field()") == [{"field"}]


def test_a_top_chunk_naming_every_identifier_the_label_lacks_answers():
    from rag_eval.retrievers.answer_match import answer_in_chunk

    reference = (
        "Use merge_contextvars as first processor, call clear_contextvars() and bind_contextvars(request_id=...)."
    )
    q = Question("q", "request id on every log line", {"lab": 1}, True, reference=reference)
    example = (
        "Example: in the request handler run clear_contextvars(), then bind_contextvars(request_id=rid); "
        "with merge_contextvars as processor every entry of the request carries the id."
    )
    label = (
        "Context variables: call merge_contextvars as the first processor, clear_contextvars() at the start "
        "of a request, bind_contextvars(user=...) for values."
    )
    found = answer_in_chunk(q, example, [label], 0.5, 0.1)
    assert found["by"] == "reference identifiers" and found["symbols_in_label"] == 3
    assert found["reference_share"] < found["label_share"] + 0.1  # words alone would not call it
    # The label naming every identifier too: nothing sets the example apart.
    full = label.replace("bind_contextvars(user=...)", "bind_contextvars(request_id=...)")
    assert answer_in_chunk(q, example, [full], 0.5, 0.1) is None


def test_half_of_a_tiny_reference_is_not_an_answer():
    from rag_eval.retrievers.answer_match import answer_in_chunk

    q = Question("q", "pretty tracebacks", {"lab": 1}, True, reference="Remove format_exc_info from the chain.")
    # Two of the reference's four words (a share of 0.5) in a chunk on the topic: too few words.
    assert answer_in_chunk(q, "The chain of processors may call format_exc_info.", ["other"], 0.5, 0.1) is None
    assert answer_in_chunk(q, "Remove format_exc_info from the processor chain.", ["other"], 0.5, 0.1)
