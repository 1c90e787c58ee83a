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


def test_a_lead_in_or_a_question_is_no_statement_to_judge(tmp_path):
    """User trial 4 F13: "To get a new password, you need to follow these steps:" was judged as a
    statement, unsupported on its words "need", "follow", "steps", and a faithful answer came out
    unfaithful in the README's own prompt comparison."""
    import asyncio

    from rag_eval.judges.scored import ScoredJudges
    from rag_eval.judges.statements import states_something
    from rag_eval.llm.client import LLM
    from rag_eval.llm.settings import LLMConfig

    from ..scripted_server import ScriptedServer

    assert not states_something("To get a new password, you need to follow these steps:")
    assert not states_something("Want to know more?") and states_something("1. Open the link sent to you.")
    answer = (
        "To get a new password, you need to follow these steps:\n1. Open the link sent to your e-mail address.\n"
        "2. Choose a new password."
    )
    context = "Reset password sends a link to your e-mail address. Open it and choose a new password."

    async def main():
        cfg = LLMConfig(provider="openai", model="m", max_retries=0, timeout_s=5)
        llm = LLM(cfg, base_url=s.base_url, model="m", cache=None)
        try:
            return await ScoredJudges.load(llm, None, {}).faithfulness("q1", "p", "How?", answer, [context])
        finally:
            await llm.aclose()

    with ScriptedServer(reply=lambda body: "Yes: it says so.", probability=lambda body: 0.9) as s:
        j = asyncio.run(main())
    assert [r["statement"] for r in j.details["statements"]] == [
        "Open the link sent to your e-mail address.",
        "Choose a new password.",
    ]


def test_a_question_fragment_never_takes_its_claim_with_it():
    """Review 55 H1: "Need more?" (two words) was joined to the claim before it, and the joined
    sentence, ending in "?", was dropped: a false claim went unjudged; an answer of one claim and
    a question had no statement left."""
    assert split_statements("Tuples are mutable too. Need more?", claims_only=True) == ["Tuples are mutable too."]
    assert split_statements("HTTP/2 is on by default in httpx. Anything else?", claims_only=True) == [
        "HTTP/2 is on by default in httpx."
    ]
    assert split_statements("Want more?", claims_only=True) == ["Want more?"]  # nothing else: judged as it is
    assert split_statements("Tuples are mutable too. Need more?") == ["Tuples are mutable too. Need more?"]


def test_a_lead_in_with_a_number_or_a_name_carries_a_claim():
    """Review 55 M11: 'The default timeout is 30 seconds, and you can change it like this:' was dropped
    with its claim."""
    from rag_eval.judges.statements import states_something

    assert states_something("The default timeout is 30 seconds, and you can change it like this:")
    assert states_something("Use httpx.Client like this:")
    assert not states_something("To get a new password, you need to follow these steps:")
