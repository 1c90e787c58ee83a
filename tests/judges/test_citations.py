"""Citations read from answers: every common form, an answer's own list of sources, a configured
pattern, brackets that are not citations, and answers without citations."""

import pytest

from rag_eval.cli import main
from rag_eval.judges.citations import CitedAnswer, read_citations
from rag_eval.judges.scored import split_statements
from rag_eval.types import Chunk

# The contexts an answer was given, in the order the prompt numbered them [1] ... [4].
CONTEXTS = [
    Chunk("guide.md#install", "Install it with pip install tool.", "Install guide"),
    Chunk("guide.md#config", "Settings live in tool.yaml.", "Configuration"),
    Chunk("api.md#run", "Run it with tool run.", "Running"),
    Chunk("faq.md#why", "It is fast.", "FAQ"),
]


def cites(answer: str, pattern: str | None = None) -> list[tuple[str, list[int]]]:
    """Each sentence's text a judge reads and the contexts (from 0) it cites."""
    return [(s.text, s.cited) for s in read_citations(answer, CONTEXTS, pattern).sentences]


def refs(read: CitedAnswer) -> list[list[tuple[str, str, list[int]]]]:
    return [[(c.ref, c.form, c.contexts) for c in s.citations] for s in read.sentences]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # One number, before and after the full stop.
        (
            "Install it with pip [1]. Settings live in a YAML file.[2]",
            [("Install it with pip.", [0]), ("Settings live in a YAML file.", [1])],
        ),
        # A list, a range with a hyphen and with an en dash, markers side by side.
        (
            "Install and configure it first [1, 2]. Every step is on these pages [1-3]. "
            "The same holds here [2–4]. Run it after that [1][3].",
            [
                ("Install and configure it first.", [0, 1]),
                ("Every step is on these pages.", [0, 1, 2]),
                ("The same holds here.", [1, 2, 3]),
                ("Run it after that.", [0, 2]),
            ],
        ),
        # A marker glued to its word, and one alone on the next line.
        ("Install it with pip[1]. The tool is fast.\n[4]", [("Install it with pip.", [0]), ("The tool is fast.", [3])]),
        # Superscripts: one, a run read as two where no twelfth context exists, a list, a range.
        (
            "Install it with pip¹. Configure and run it¹². It is fast and small.⁴ Use every page¹⁻³.",
            [
                ("Install it with pip.", [0]),
                ("Configure and run it.", [0, 1]),
                ("It is fast and small.", [3]),
                ("Use every page.", [0, 1, 2]),
            ],
        ),
        (
            "It is fast<sup>4</sup>. Settings go in a file<sup>[2]</sup>.",
            [("It is fast.", [3]), ("Settings go in a file.", [1])],
        ),
        # Names: a doc number, a chunk id, a title, a parenthesised document.
        (
            "Install it with pip [doc1]. Settings live in a file [guide.md#config]. "
            "Run it with tool run [Running]. It is a fast tool (Document 4).",
            [
                ("Install it with pip.", [0]),
                ("Settings live in a file.", [1]),
                ("Run it with tool run.", [2]),
                ("It is a fast tool.", [3]),
            ],
        ),
        # Sources in parentheses, by title, by id, and a list of both.
        (
            "Install it with pip (Source: Install guide). Settings live in a file (source: guide.md#config). "
            "Run it after installing it (Sources: Install guide; api.md#run).",
            [
                ("Install it with pip.", [0]),
                ("Settings live in a file.", [1]),
                ("Run it after installing it.", [0, 2]),
            ],
        ),
        # (see [2]): the parentheses go with the marker.
        ("Settings live in a YAML file (see [2]).", [("Settings live in a YAML file.", [1])]),
    ],
)
def test_each_form_is_read_to_the_contexts_it_names(answer, expected):
    assert cites(answer) == expected


def test_markers_are_removed_for_the_judge_and_kept_where_written_for_display():
    read = read_citations("Install it with pip [1]. Settings live in a file.[2] Run it¹ now.", CONTEXTS)
    assert [s.text for s in read.sentences] == ["Install it with pip.", "Settings live in a file.", "Run it now."]
    assert [s.display for s in read.sentences] == [
        "Install it with pip [1].",
        "Settings live in a file.[2]",
        "Run it¹ now.",
    ]
    assert refs(read) == [[("1", "number", [0])], [("2", "number", [1])], [("1", "superscript", [0])]]


def test_sentences_are_the_statements_the_faithfulness_judge_splits():
    answer = "Lists are mutable [1]. Tuples are not, e.g. (1, 2). Yes [2].\n- sets are unordered [3]\n2. dicts map keys"
    read = read_citations(answer, CONTEXTS)
    assert [s.text for s in read.sentences] == split_statements(
        "Lists are mutable. Tuples are not, e.g. (1, 2). Yes.\n- sets are unordered\n2. dicts map keys"
    )
    assert [s.cited for s in read.sentences] == [[0], [1], [2], []]


def test_a_citation_naming_no_given_context_is_kept_and_counted():
    read = read_citations(
        "Install it with pip [7]. Settings live in a file [doc9] [2]. Run it on a server (Source: Deployment notes). "
        "Every page says so [3-6].",
        CONTEXTS,
    )
    assert refs(read) == [
        [("7", "number", [])],
        [("doc9", "name", []), ("2", "number", [1])],
        [("Deployment notes", "source", [])],
        [("3", "number", [2]), ("4", "number", [3]), ("5", "number", []), ("6", "number", [])],
    ]
    assert read.unresolved == 5 and len(read.citations) == 8 and read.cites


def test_footnotes_with_their_list_name_titles_and_without_it_numbers():
    listed = read_citations(
        "Install it with pip[^a]. Settings live in a file [^b].\n\n[^a]: Install guide\n[^b]: guide.md#config", CONTEXTS
    )
    assert refs(listed) == [[("a", "footnote", [0])], [("b", "footnote", [1])]]
    assert [s.text for s in listed.sentences] == ["Install it with pip.", "Settings live in a file."]
    bare = read_citations("Install it with pip[^1]. Run it with tool run[^3].", CONTEXTS)
    assert [s.cited for s in bare.sentences] == [[0], [2]]
    nameless = read_citations("Install it with pip[^x].", CONTEXTS)
    assert refs(nameless) == [[("x", "footnote", [])]] and nameless.unresolved == 1


def test_the_answers_own_numbered_list_says_what_its_numbers_name():
    # Its [1] is the prompt's second context; its entry no marker names cites the uncited sentence.
    read = read_citations(
        "Settings live in a file [1]. Run it with tool run.\n\nSources:\n[1] Configuration\n[2] Running", CONTEXTS
    )
    assert [(s.text, s.cited) for s in read.sentences] == [
        ("Settings live in a file.", [1]),
        ("Run it with tool run.", [2]),
    ]
    # Closing reference lines without a heading; a URL entry keeps the prompt's number.
    tail = read_citations(
        "Install it with pip [1]. Run it with tool run [2].\n\n[1]: Install guide\n[2]: https://example.com/run",
        CONTEXTS,
    )
    assert [s.cited for s in tail.sentences] == [[0], [1]]


def test_source_lines_and_lists_cite_the_sentences_before_them_without_their_own():
    assert cites("Install it with pip. Settings live in a file [2].\nSource: Install guide") == [
        ("Install it with pip.", [0]),
        ("Settings live in a file.", [1]),
    ]
    assert cites("Install it with pip and run it. Sources: [1], [3]") == [("Install it with pip and run it.", [0, 2])]
    assert cites("Install it with pip.\n\n**Sources:**\n- Install guide\n- api.md#run") == [
        ("Install it with pip.", [0, 2])
    ]
    # A source line between paragraphs cites the paragraph before it only.
    assert cites("Install it with pip.\nSource: Install guide\n\nIt is a fast tool.\nSource: FAQ") == [
        ("Install it with pip.", [0]),
        ("It is a fast tool.", [3]),
    ]
    unattached = read_citations("Source: Install guide", CONTEXTS)
    assert unattached.sentences == [] and [c.contexts for c in unattached.unattached] == [[0]]


def test_a_marker_after_a_paragraphs_last_full_stop_cites_that_sentence_only():
    """User trial 2 L8, decided for ALCE's per-sentence reading (the one the citation labels of
    benchmarks/citations were given on): "S1. S2. [2]" cites S2 and leaves S1 uncited; a source line
    after the paragraph cites both."""
    one, two = "Install the tool with the pip command first.", "Then write the settings into a YAML file."
    assert cites(f"{one} {two} [2]") == [(one, []), (two, [1])]
    assert cites(f"{one} {two}\n[2][3]") == [(one, []), (two, [1, 2])]
    assert cites(f"{one} {two}\nSource: Configuration") == [(one, [1]), (two, [1])]


def test_a_configured_pattern_reads_an_answers_own_form():
    pattern = r"【(?P<ref>\d+)†[^】]*】"
    read = read_citations("Install it with pip【1†source】. Run it with tool run【9†source】.", CONTEXTS, pattern)
    assert refs(read) == [[("1", "pattern", [0])], [("9", "pattern", [])]]
    assert [s.text for s in read.sentences] == ["Install it with pip.", "Run it with tool run."]
    # A pattern that names a context by id, and one that claims a Markdown link as its citation.
    assert cites("Install it with pip {{guide.md#install}}.", r"\{\{(?P<ref>[^}]+)\}\}") == [
        ("Install it with pip.", [0])
    ]
    assert cites("Install it with pip [1](https://x.test/a).", r"\[(?P<ref>\d+)\]\([^)]*\)") == [
        ("Install it with pip.", [0])
    ]
    with pytest.raises(ValueError, match="no named group ref"):
        read_citations("x", CONTEXTS, r"\[\d+\]")


@pytest.mark.parametrize(
    "answer",
    [
        "Call it as `tool.run(a[1])` and read `[x]` from the list.",
        "Index the list: a[1] holds the second item, and row_2[3] and obj.items[2] too.",
        "The result f(x)[1] is a number.",
        "The type is list[int] and the box [x] is ticked.",
        "Read [the guide](https://example.com/guide) or [1](https://example.com/1) and ![shot](img.png).",
        "It is a [reference link][1] in Markdown.",
        "```python\nvalues = [1, 2]\nfirst = values[1]\n```",
        "The area is 5 m² and x³ grows as 10³ does.",
        "Nothing here cites anything (really). Copy the [...] part too.",
    ],
)
def test_brackets_that_are_not_citations_stay_text(answer):
    read = read_citations(answer, CONTEXTS)
    assert read.citations == [] and not read.cites
    # A fenced block is one unit, whole (trial 4 F8); the rest as the faithfulness judge splits it.
    expected = [answer] if answer.startswith("```") else split_statements(answer, limit=100)
    assert [s.text for s in read.sentences] == expected


def test_an_answer_without_citations_is_its_sentences_uncited():
    read = read_citations("Install it with pip. Then run it with tool run.", CONTEXTS)
    assert [(s.text, s.display, s.citations) for s in read.sentences] == [
        ("Install it with pip.", "Install it with pip.", []),
        ("Then run it with tool run.", "Then run it with tool run.", []),
    ]
    assert read.unresolved == 0 and not read.cites
    assert read_citations("", CONTEXTS).sentences == []
    # With no contexts given every citation names none.
    assert read_citations("Install it [1].", []).unresolved == 1


def test_a_record_round_trips_through_json():
    read = read_citations("Install it with pip [1, 7].", CONTEXTS)
    again = CitedAnswer.load(read.dump())
    assert again == read and again.sentences[0].citations[1].resolved is False


def test_the_pattern_setting_is_checked_when_the_config_loads(small_project, capsys):
    cfg = small_project / "audit.yaml"
    cfg.write_text(
        cfg.read_text() + "generation:\n  retriever: bm25\n  citations:\n    pattern: '\\[\\d+\\]'\n"
        "  llm: {provider: local}\n"
    )
    assert main(["--quiet", "validate", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "audit.yaml:13" in err and "generation.citations.pattern" in err and "named group ref" in err
    cfg.write_text(cfg.read_text().replace("'\\[\\d+\\]'", "'【(?P<ref>\\d+)†[^】]*】'"))
    assert main(["--quiet", "validate", str(cfg)]) == 0


def test_a_fenced_code_block_goes_whole_with_the_sentence_before_it():
    """User trial 4 F8: "... you can use the following code: ```python import httpx" and "client =
    httpx.Client(...) ```" were judged as two claims, the fence cut in half."""
    code = "```python\nimport httpx\n\nclient = httpx.Client(timeout=(10, 5))\n```"
    answer = f"Use a Client with a timeout tuple [1].\n\n{code}\n\nThe second value is the read timeout [2]."
    got = read_citations(answer, CONTEXTS[:2])
    assert [s.text for s in got.sentences] == [
        f"Use a Client with a timeout tuple.\n{code}",
        "The second value is the read timeout.",
    ]
    assert got.sentences[0].display == f"Use a Client with a timeout tuple [1].\n{code}"
    assert [[c.contexts for c in s.citations] for s in got.sentences] == [[[0]], [[1]]]
    # A block before any sentence stands alone; ~~~ fences too.
    first = read_citations("~~~\nx = 1\n~~~\nIt sets x [1].", CONTEXTS[:1])
    assert [s.text for s in first.sentences] == ["~~~\nx = 1\n~~~", "It sets x."]


def test_a_cited_lead_in_of_a_code_block_keeps_its_citation():
    """Review 55 M6: "[1]:" anywhere was read as a source definition, so "Install it [1]:" and its
    code block were judged as an uncited claim."""
    got = read_citations("Install it with pip [1]:\n```bash\npip install tool\n```", CONTEXTS)
    [s] = got.sentences
    assert s.text.startswith("Install it with pip:") and [c.contexts for c in s.citations] == [[0]]
    # At a line's start it is still the answer's own list of sources.
    listed = read_citations("Install it with pip [1].\n\n[1]: Install guide", CONTEXTS)
    assert [c.contexts for c in listed.sentences[0].citations] == [[0]] and len(listed.sentences) == 1


def test_an_unclosed_fence_does_not_swallow_the_rest_into_one_claim():
    """Review 55 L2: a fence never closed made every later sentence part of the lead-in's claim."""
    got = read_citations("Install it [1].\n```bash\npip install tool\n\nThen configure it. Run it.", CONTEXTS)
    assert len(got.sentences) >= 3 and got.sentences[0].text.startswith("Install it.")
