"""Statements of an answer, and a statement as a claim to check."""

from rag_eval.judges.statements import split_statements, without_markers


def test_numbered_citation_markers_are_no_part_of_a_claim():
    """User trial 2 M2: faithfulness counted "[1]" as a word no context holds."""
    answer = "Use click.version_option [1]. It prints the version and exits [1, 3]. See [2-4] too."
    claims = [without_markers(s) for s in split_statements(answer)]
    assert claims == ["Use click.version_option.", "It prints the version and exits.", "See too."]
    assert without_markers("A list [x] keeps [order].") == "A list [x] keeps [order]."  # not markers


def test_an_index_written_onto_a_name_is_code_not_a_marker():
    """Review 53 M6: `sys.argv[1]` is the claim's own word."""
    assert without_markers("Read sys.argv[1] for the path [2].") == "Read sys.argv[1] for the path."
    assert without_markers("Slice x[2-4] of it (see [1]).") == "Slice x[2-4] of it (see)."
