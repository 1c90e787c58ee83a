"""Reasons that are evidence for the decided verdict: quotes checked verbatim, the reason asked for
the decision with its word forced, the plain-words note where that fails, and prompt copies
caught. A scripted server stands in for the model only to force a decision the cut-off overturns;
the verdict request and its probability are the ones of a plain yes/no question."""

import asyncio
import json

import pytest

from rag_eval.judges.evidence import check_quote, copies_prompt, quoted_spans, without_markup
from rag_eval.judges.scored import ScoredJudges
from rag_eval.judges.yesno import label_probabilities
from rag_eval.llm.client import LLM
from rag_eval.llm.response_cache import ResponseCache
from rag_eval.llm.settings import LLMConfig
from rag_eval.resources import shipped_prompt

from ..scripted_server import ScriptedServer

REFUSAL = (shipped_prompt("judges") / "refusal.md").read_text()
QUESTION = "Which port does the web service listen on?"
ANSWER = "The service listens on   port 8443 by default.\nIt can be changed with --port."


def _forced(body: dict) -> str | None:
    """The forced start of the reply (a last message of role assistant), if any."""
    last = body["messages"][-1]
    return last["content"] if last["role"] == "assistant" else None


def _judge(server, *, reasons="quote", cutoffs=None, cache=None, run=None):
    async def main():
        llm = LLM(
            LLMConfig(provider="openai", model="m", max_retries=0, timeout_s=5),
            base_url=server.base_url,
            model="m",
            cache=cache,
        )
        try:
            scored = ScoredJudges.load(llm, None, cutoffs or {})
            scored.reasons = reasons
            return await run(scored)
        finally:
            await llm.aclose()

    return asyncio.run(main())


def _refusal(scored):
    return scored.refusal("q1", "base", QUESTION, ANSWER)


def _unsupported(question: str, answer: str, contexts: list[str], *, answer_quote: str, context_quote: str):
    """faithfulness_yesno on one statement the model calls unsupported, its forced reason quoting
    ``answer_quote`` from the answer and then ``context_quote`` as what the context says."""

    def reply(body):
        forced = _forced(body)
        if forced is None:
            return "No: not in the context."
        if forced.endswith('but the context says "'):
            return forced + context_quote + '"'
        return forced + answer_quote + '"'

    async def run(scored):
        return await scored.faithfulness("q1", "base", question, answer, contexts)

    with ScriptedServer(reply=reply, probability=lambda body: 0.8) as s:
        return _judge(s, run=run)


def test_a_quote_is_verified_verbatim_after_whitespace_normalisation():
    sources = [("answer", ANSWER), ("context 1", "Other text."), ("context 2", "Set it with\n  --port  9000.")]
    q = check_quote("listens on port 8443", sources, REFUSAL)
    assert (q.verified, q.found_in) == (True, "answer")
    assert q.excerpt[q.span[0] : q.span[1]] == "listens on port 8443"
    assert q.excerpt == " ".join(ANSWER.split())  # a short source whole, whitespace normalised
    long = "x " * 100 + "the quoted words" + " y" * 100
    q = check_quote("the quoted words", [("context 1", long)], REFUSAL)
    assert (
        q.excerpt.startswith("…") and q.excerpt.endswith("…") and q.excerpt[q.span[0] : q.span[1]] == "the quoted words"
    )
    q = check_quote("Set it with --port 9000.", sources, REFUSAL)
    assert (q.verified, q.found_in) == (True, "context 2")
    # Words the sources do not hold are not evidence, however close.
    q = check_quote("listens on port 8080", sources, REFUSAL)
    assert (q.verified, q.found_in, q.copies_prompt) == (False, None, False)
    # A quote of the prompt's own example is a copy, not evidence.
    q = check_quote("It is probably 8080, though the documents are not explicit.", sources, REFUSAL)
    assert (q.verified, q.copies_prompt) == (False, True)
    assert quoted_spans('it says "port 8443" and `--port`') == ["port 8443", "--port"]


def test_a_quote_that_drops_the_sources_markup_is_found_and_shown_with_it():
    # The real cases of the tabulate README (fresh part): the model quotes the text as read, without
    # the code fence or the backticks.
    readme = (
        "To install the Python library and the command line utility, run:\n\n```shell\npip install tabulate\n```\n\n"
        "`tabulate` is smart about column alignment. It detects columns which\ncontain only numbers."
    )
    q = check_quote(
        "To install the Python library and the command line utility, run: pip install tabulate",
        [("context 1", readme)],
        REFUSAL,
    )
    assert (q.verified, q.found_in) == (True, "context 1")
    assert (
        q.excerpt[q.span[0] : q.span[1]]
        == "To install the Python library and the command line utility, run: ```shell pip install tabulate"
    )
    q = check_quote("tabulate is smart about column alignment.", [("context 1", readme)], REFUSAL)
    assert q.verified and q.excerpt[q.span[0] : q.span[1]] == "`tabulate` is smart about column alignment."
    # A quote asked inside double quotes writes the source's double quotes as single ones.
    answer = 'The table format used if I don\'t pass tablefmt is "plain".'
    q = check_quote("The table format used if I don't pass tablefmt is 'plain'", [("answer", answer)], REFUSAL)
    assert q.verified and q.excerpt[q.span[0] : q.span[1]] == answer.rstrip(".")
    # Markup aside, the words must still be the source's own, in order.
    for other in ("tabulate is clever about column alignment.", "pip install tabulate --user"):
        assert not check_quote(other, [("context 1", readme)], REFUSAL).verified
    assert without_markup("a `b` **c**\n```py\nd") == ("a b c d", [0, 1, 3, 5, 8, 11, 18])
    # Only markup is left out: stars as operators, a word after inline backticks and a one-word
    # quote in markup stay what they are (found in a review).
    for quote, source in (
        ("10**6 rows", "It has 106 rows"),
        ("x = 23", "x = 2*3"),
        ("def f(kwargs)", "def f(**kwargs)"),
        ("see docs now", "see ```the docs``` now"),
    ):
        assert not check_quote(quote, [("answer", source)], REFUSAL).verified, quote
    q = check_quote("`None`", [("answer", "None of them")], REFUSAL)
    assert (q.verified, q.too_short) == (False, True)
    q = check_quote(
        "Not override existing variables", [("context 1", "- **Not override** existing variables")], REFUSAL
    )
    assert q.verified and q.excerpt[q.span[0] : q.span[1]] == "**Not override** existing variables"


def test_a_reason_that_repeats_the_prompt_is_no_reason():
    inputs = [QUESTION, ANSWER]
    # Issue 28's copies: the few-shot lines of refusal.md, the correctness prompt's question restated.
    assert copies_prompt("a short answer gives the information.", REFUSAL, inputs)
    assert copies_prompt("it talks about the documents instead of answering.", REFUSAL, inputs)
    assert copies_prompt("it declines.", REFUSAL, inputs)
    correctness = (shipped_prompt("judges") / "correctness.md").read_text()
    restated = "The candidate answer states the reference answer, possibly in other words or with more detail."
    assert copies_prompt(restated, correctness, inputs)
    supported = (shipped_prompt("judges") / "supported.md").read_text()
    assert copies_prompt("(the context gives 1889.)", supported, inputs)
    # A reason about this answer is one, even where it shares words with the prompt.
    assert not copies_prompt("it names port 8443 as the default", REFUSAL, inputs)
    assert not copies_prompt("the service listens on port 8443", REFUSAL, inputs)
    assert not copies_prompt("the context gives 1889.", supported, ["It opened in 1889; the context gives 1889."])


def test_the_reason_for_an_overturned_decision_is_asked_with_the_decided_word_forced(tmp_path):
    # The model writes "No: it declines." at P(no) = 0.544; the cut-off 0.589 on P(refused) decides
    # "answered" (pd-051 of issue 28). The reason must argue for "answered".
    def reply(body):
        forced = _forced(body)
        if forced is None:
            return "No: it declines."
        return forced + 'The service listens on port 8443 by default."'  # llama-server repeats the start

    with ScriptedServer(reply=reply, probability=lambda body: 0.544) as s:
        cache = ResponseCache(tmp_path / "c.sqlite3")
        j = _judge(s, cutoffs={"refusal": 0.589}, cache=cache, run=_refusal)
        bodies = list(s.bodies)
        # A rerun asks nothing: the forced request is cached like any other, with the same reply.
        again = _judge(s, cutoffs={"refusal": 0.589}, cache=cache, run=_refusal)
        assert s.calls == 2
    assert (j.verdict, j.details["model_said"]) == ("answered", "No")
    assert j.probability == pytest.approx(0.544)
    verdict_request, reason_request = bodies
    assert _forced(verdict_request) is None and verdict_request["max_tokens"] == 48
    assert _forced(reason_request) == 'Yes: the answer says "' and reason_request["stop"] == ['"']
    assert reason_request["messages"][0] == verdict_request["messages"][0]  # the same prompt: cached by the server
    assert "logprobs" not in reason_request and reason_request["max_tokens"] <= 40
    assert j.reason == (
        'the answer says "The service listens on port 8443 by default."; '
        'the model wrote "No" (P(refused) = 0.54); the calibrated cut-off 0.59 decided answered, 0.04 under it'
    )
    assert "declines" not in j.reason
    ev = j.details["evidence"]
    assert ev["shown"] == "forced" and ev["model_reason"] == "it declines." and ev["model_reason_copies_prompt"]
    [q] = ev["quotes"]
    assert (q["text"], q["found_in"], q["verified"]) == ("The service listens on port 8443 by default.", "answer", True)
    assert (ev["calls"], again.reason, again.details["evidence"]) == (1, j.reason, ev)


def test_the_decision_probability_is_the_verdict_requests_own():
    # Same prompt, same first-token logprobs: the calibration's cut-offs stay valid.
    def reply(body):
        return 'the reply"' if _forced(body) else "No: it declines."

    with ScriptedServer(reply=reply, probability=lambda body: 0.544) as s:
        quoted = _judge(s, cutoffs={"refusal": 0.589}, run=_refusal)
        plain = _judge(s, reasons="model", cutoffs={"refusal": 0.589}, run=_refusal)
        verdict_bodies = [b for b in s.bodies if _forced(b) is None]
    assert verdict_bodies[0] == verdict_bodies[1]
    # The probability read from the verdict response itself, as yesno.py reads it.
    from ..scripted_server import first_token_logprobs

    expected = label_probabilities(
        {"logprobs": first_token_logprobs("No: it declines.", 0.544)}, {"yes": ("yes",), "no": ("no",)}
    )
    assert quoted.probability == plain.probability == round(expected["no"], 6)
    assert quoted.verdict == plain.verdict == "answered"


def test_an_endpoint_that_does_not_continue_the_reply_gets_the_plain_words():
    # It answers the forced request with a reply of its own: no quote is verified, and the shown
    # reason says in plain words how the decision was taken, never the model's "it declines".
    def reply(body):
        return "No: it declines." if _forced(body) is None else "No: it declines."

    with ScriptedServer(reply=reply, probability=lambda body: 0.544) as s:
        j = _judge(s, cutoffs={"refusal": 0.589}, run=_refusal)
        one_call = _judge(s, reasons="model", cutoffs={"refusal": 0.589}, run=_refusal)
    plain = 'the model wrote "No" (P(refused) = 0.54); the calibrated cut-off 0.59 decided answered, 0.04 under it'
    assert j.reason == one_call.reason == plain
    assert j.details["evidence"]["shown"] == one_call.details["evidence"]["shown"] == "plain"
    assert j.details["evidence"]["quotes"][0]["verified"] is False
    assert one_call.details["evidence"]["calls"] == 0


def test_a_copied_reason_is_not_shown_as_evidence():
    # The real model, forced to argue "answered" on a refusal, quoted refusal.md's own example.
    def reply(body):
        forced = _forced(body)
        return "Yes: a short answer gives the information." if forced is None else forced + "100 °C."

    with ScriptedServer(reply=reply, probability=lambda body: 0.9) as s:
        j = _judge(s, run=_refusal)
    ev = j.details["evidence"]
    assert j.verdict == "answered" and ev["model_reason_copies_prompt"]
    assert ev["shown"] == "none" and not ev["verified"]
    assert [(q["text"], q["copies_prompt"]) for q in ev["quotes"]] == [("100 °C.", True)]
    assert j.reason == 'no quote: the model\'s own reason repeats its prompt; the model wrote "Yes" (P(refused) = 0.10)'


def test_a_verified_quote_in_the_models_own_reason_needs_no_second_request():
    with ScriptedServer(reply=lambda body: 'Yes: it says "port 8443 by default".') as s:
        j = _judge(s, run=_refusal)
        assert s.calls == 1
    ev = j.details["evidence"]
    assert ev["shown"] == "model" and ev["verified"] and ev["quotes"][0]["found_in"] == "answer"
    assert j.reason == 'it says "port 8443 by default".'


def test_correctness_quotes_the_answer_and_the_reference_and_statements_quote_their_context():
    reference = "The default port of the service is 8443, set in service.toml."
    contexts = ["The service reads service.toml at start.", "The default port of the service is 8443."]

    def reply(body):
        forced = _forced(body)
        if forced is None:
            return "Yes: it matches."
        if forced.endswith('the reference says "'):
            return forced + 'The default port of the service is 8443"'
        if "context says" in forced:
            return forced + 'The default port of the service is 8443."'
        return forced + 'port 8443 by default"'

    async def run(scored):
        c = await scored.correctness("q1", "base", QUESTION, reference, ANSWER)
        f = await scored.faithfulness("q1", "base", QUESTION, "The service listens on port 8443 by default.", contexts)
        return c, f

    with ScriptedServer(reply=reply) as s:
        c, f = _judge(s, run=run)
        forced = [_forced(b) for b in s.bodies if _forced(b)]
    assert forced[:2] == [
        'Yes: the answer says "',
        'Yes: the answer says "port 8443 by default", as the reference says "',
    ]
    assert (
        c.reason
        == 'the answer says "port 8443 by default", as the reference says "The default port of the service is 8443"'
    )
    assert [(q["found_in"], q["verified"]) for q in c.details["evidence"]["quotes"]] == [
        ("answer", True),
        ("reference", True),
    ]
    [row] = f.details["statements"]
    assert row["model_said"] == "Yes" and f.details["model_said"] == ["Yes"]
    [q] = row["evidence"]["quotes"]
    assert (q["found_in"], q["verified"]) == ("context 2", True)
    assert json.dumps(f.to_dict())  # the record stays JSON


def test_a_quote_from_another_input_is_shown_as_from_where_it_is():
    # Asked for the answer's words, the model quotes the reference (as the real model did on a
    # wrong answer): still evidence, named by where it was found; an unsupported statement quotes
    # the answer's claim, then what the context says instead.
    reference = "Since Python 3.7 dictionary order is guaranteed to be insertion order."
    answer = "Since Python 2.7."
    contexts = ["Changed in version 3.7: Dictionary order is guaranteed to be insertion order."]

    def reply(body):
        forced = _forced(body)
        if forced is None:
            return "No: it differs."
        if forced.endswith('the reference says "'):
            return forced + 'Since Python 2.7"'
        if forced.endswith('but the context says "'):
            return forced + 'Changed in version 3.7"'
        return forced + (
            "Since Python 2.7" if "Answer: Since" in body["messages"][0]["content"] else 'Since Python 3.7"'
        )

    async def run(scored):
        c = await scored.correctness("q1", "base", "Since which version are dicts ordered?", reference, answer)
        f = await scored.faithfulness("q1", "base", "Since which version are dicts ordered?", answer, contexts)
        return c, f

    with ScriptedServer(reply=reply, probability=lambda body: 0.8) as s:
        c, f = _judge(s, run=run)
    assert c.verdict == "incorrect"
    assert c.reason == 'the reference says "Since Python 3.7", but the answer says "Since Python 2.7"'
    assert [q["found_in"] for q in c.details["evidence"]["quotes"]] == ["reference", "answer"]
    [row] = f.details["statements"]
    assert row["supported"] is False
    assert row["reason"] == 'the answer says "Since Python 2.7", but context 1 says "Changed in version 3.7"'
    assert f.reason.endswith(f"not: Since Python 2.7. ({row['reason']})")


def test_a_second_quote_of_the_same_input_is_not_shown_as_a_contrast():
    # The demo's pd-065: asked for the context's words after the answer's, the model quoted the
    # answer again; "the answer says ..., but the answer says ..." contrasts nothing.
    answer = "To freeze your script into a Windows .exe, you can use tools like PyInstaller or cx_Freeze."
    contexts = ["A Python program is constructed from code blocks."]

    f = _unsupported(
        "How do I freeze my script?",
        answer,
        contexts,
        answer_quote="To freeze your script into a Windows .exe",
        context_quote="you can use tools like PyInstaller or cx_Freeze",
    )
    [row] = f.details["statements"]
    assert row["supported"] is False
    assert row["reason"] == 'the answer says "To freeze your script into a Windows .exe"'
    # Both quotes stay in the record, each verified where it was found.
    assert [(q["found_in"], q["verified"]) for q in row["evidence"]["quotes"]] == [("answer", True), ("answer", True)]


def test_one_passage_quoted_twice_is_shown_once():
    # Asked for the answer's words and then the reference's, the real model quoted the reference both times.
    reference = "The default port of the service is 8443, set in service.toml."

    def reply(body):
        forced = _forced(body)
        return "Yes: it matches." if forced is None else forced + 'The default port of the service is 8443"'

    async def run(scored):
        return await scored.correctness("q1", "base", QUESTION, reference, ANSWER)

    with ScriptedServer(reply=reply) as s:
        c = _judge(s, run=run)
    assert c.reason == 'the reference says "The default port of the service is 8443"'
    assert [q["found_in"] for q in c.details["evidence"]["quotes"]] == ["reference", "reference"]


def test_one_plain_word_found_in_a_source_is_no_evidence():
    # The holdout's dv-008: a supported claim "shown" as context 1 says "Fixed" (a changelog heading).
    sources = [("context 1", "### Fixed\n- Strip a leading UTF-8 BOM from `.env` file contents.")]
    q = check_quote("Fixed", sources, REFUSAL)
    assert (q.verified, q.too_short, q.found_in) == (False, True, "context 1")
    sources += [("answer", "1889: use TinyTag.get(), getLogger and TOML contents")]
    for quote, evidence in [
        ("Strip a leading", True),
        ("BOM", True),  # an acronym
        ("`.env`", True),
        ("1889", True),
        ("TinyTag", True),  # a name's inner capital
        ("getLogger", True),
        ("contents", True),  # eight letters
        ("leading", False),
        ("Fixed:", False),
    ]:
        assert check_quote(quote, sources, REFUSAL).verified is evidence, quote


def _key_without_value(context_quote: str):
    """The holdout's dv-006 answer, judged unsupported, quoting the answer right and the context as given."""
    return _unsupported(
        "What about a key without a value?",
        "It does not process lines that do not contain an equals sign.",
        ["Variable without a value: `dotenv_values` associates the variable name with `None`."],
        answer_quote="It does not process lines that do not contain an equals sign",
        context_quote=context_quote,
    )


def test_the_prompts_own_example_quoted_as_the_context_is_not_shown():
    # The holdout's dv-006 (loose prompt): asked what the context says instead, the model quoted the
    # example of supported.md ("The Eiffel Tower was completed in 1889 ..."): recorded, never shown.
    supported = (shipped_prompt("judges") / "supported.md").read_text()
    example = next(line for line in supported.splitlines() if "1889" in line and "Context" in line)
    example = example.split("Context:", 1)[1].split("Answer:")[0].strip()
    f = _key_without_value(context_quote=example)
    [row] = f.details["statements"]
    assert row["supported"] is False
    assert row["reason"] == 'the answer says "It does not process lines that do not contain an equals sign"'
    assert "1889" not in f.reason
    assert [(q["found_in"], q["copies_prompt"]) for q in row["evidence"]["quotes"]] == [("answer", False), (None, True)]


def test_a_quote_no_input_holds_is_not_shown_as_what_the_passage_says():
    """User trial 2 M9: "the context says "<words the model made up>" (not found in the inputs)" stood
    as the ground of the verdict. A made-up quote is kept in the record, never shown."""
    f = _key_without_value(context_quote="Lines without an equals sign are skipped and never processed")
    [row] = f.details["statements"]
    assert row["reason"] == 'the answer says "It does not process lines that do not contain an equals sign"'
    assert "never processed" not in f.reason
    assert [q["verified"] for q in row["evidence"]["quotes"]] == [True, False]


def _scripted(first: str, quote):
    """A scripted model: ``first`` as its reply, and to a forced reason the quote ``quote(forced)``."""

    def reply(body):
        forced = _forced(body)
        return first if forced is None else forced + quote(forced) + '"'

    return reply


def _statement(reply, question: str, claim: str, context: str, p: float = 0.95) -> tuple[dict, int]:
    """faithfulness_yesno on one statement with one context, the model scripted by ``reply``: the
    statement's record and the calls made."""

    async def run(scored):
        return await scored.faithfulness("q1", "base", question, claim, [context])

    with ScriptedServer(reply=reply, probability=lambda body: p) as s:
        f = _judge(s, run=run)
        calls = s.calls
    [row] = f.details["statements"]
    return row, calls


@pytest.mark.parametrize("forced_quote", ["Set http2=True on the Client to switch it on", "it is on by default"])
def test_a_supported_verdict_stands_on_a_quote_of_the_context_not_of_the_claim(forced_quote):
    """User trial 4 F7: 'the passage states "HTTP/2 is switched on by default"' quoted the sentence
    under judgement and was shown as what the passage says. A decision that the context supports a
    claim needs a quote of the context: it is asked for; failing one, the shown reason says so."""
    claim = "HTTP/2 is switched on by default in an httpx Client."
    context = "http2 - A boolean. Set http2=True on the Client to switch it on. Defaults to False."
    reply = _scripted(f'Yes: the passage states "{claim}"', lambda forced: forced_quote)
    row, _ = _statement(reply, "Is HTTP/2 on by default?", claim, context)
    assert row["supported"] is True
    if forced_quote in context:
        assert row["reason"] == f'context 1 says "{forced_quote}"'
        assert row["evidence"]["shown"] == "forced"
    else:
        assert row["reason"] == "no quote of the context: the model's reason quotes the answer itself"
        assert claim not in row["reason"]


def test_a_quote_in_both_the_claim_and_the_context_is_evidence_of_support():
    """Review 55 M2: an extractive answer copies the context; the model's quote is found in the
    answer first, and was taken for a quote of the claim itself (hidden, a request more)."""
    sentence = "Set http2=True on the Client to switch it on."
    context = f"http2 - A boolean. {sentence} Defaults to False."

    row, calls = _statement(lambda body: f'Yes: the context states "{sentence}"', "How to?", sentence, context)
    assert calls == 1  # no forced quote asked
    assert row["reason"] == f'the context states "{sentence}"' and row["evidence"]["shown"] == "model"
    assert row["evidence"]["quotes"][0]["found_in"] == "context 1"


def test_an_unsupported_claim_is_never_shown_as_what_the_context_gives():
    """User trial 5 F8: 'the context gives "<the invented sentence>"', the quote found only in the
    answer, stood as the reason of a statement judged not supported."""
    claim = "You can also change it globally with the RICH_THEME environment variable."
    context = "Syntax uses the monokai theme by default."

    reply = _scripted(
        f'No: the context gives "{claim}"',
        lambda forced: "RICH_THEME environment variable" if forced.endswith('the answer says "') else "monokai",
    )
    row, _ = _statement(reply, "Which theme?", claim, context)
    assert row["supported"] is False and "the context gives" not in row["reason"]
