"""P(label) from a reply's first-token logprobs, whatever else the reply holds."""

from __future__ import annotations

import math

import pytest

from rag_eval.judges.yesno import DECIDED_ALONE, VERDICT_TOKENS, first_choice, label_probabilities, verdict_reply

LABELS = {"yes": ("yes",), "no": ("no",)}


def _raw(content) -> dict:
    return {"choices": [{"message": {"content": "Yes"}, "logprobs": {"content": content}}]}


def test_the_first_token_decides_and_a_null_logprob_is_impossible() -> None:
    # llama-server writes a logprob of -inf as null, here in an alternative and in a later token.
    first = {
        "token": "Yes",
        "logprob": math.log(0.8),
        "top_logprobs": [{"token": "Yes", "logprob": math.log(0.8)}, {"token": "No", "logprob": math.log(0.2)}],
    }
    probs = label_probabilities(first_choice(_raw([first, {"token": ":", "logprob": None}])), LABELS)
    assert probs == pytest.approx({"yes": 0.8, "no": 0.2})
    first["top_logprobs"].append({"token": "no", "logprob": None})
    assert label_probabilities(first_choice(_raw([first])), LABELS) == pytest.approx({"yes": 0.8, "no": 0.2})


@pytest.mark.parametrize("content", ["not a list", [{"token": 3, "logprob": "x"}], []])
def test_logprobs_in_another_shape_leave_the_verdict_to_the_text(content) -> None:
    assert label_probabilities(first_choice(_raw(content)), LABELS) is None


class _Reply:
    def __init__(self, text: str | None, error: str | None, p_yes: float = 0.7) -> None:
        self.text, self.error = text, error
        top = [{"token": "Yes", "logprob": math.log(p_yes)}, {"token": "No", "logprob": math.log(1 - p_yes)}]
        self.raw = {
            "choices": [
                {"message": {"content": text}, "logprobs": {"content": [{"token": "Yes", "top_logprobs": top}]}}
            ]
        }


class _Judge:
    """A judge endpoint whose verdict-alone request (2 tokens) fails and whose reasoned one answers."""

    def __init__(self) -> None:
        self.asked: list[int | None] = []

    async def chat(self, messages, max_tokens=None, logprobs=None) -> _Reply:
        self.asked.append(max_tokens)
        if max_tokens == VERDICT_TOKENS:
            return _Reply(None, "HTTP 500")
        return _Reply('Yes: it says "x".', None, p_yes=0.3)


def test_a_failed_request_alone_fails_the_verdict_it_would_decide() -> None:
    """findings-52 L3: a verdict decided by its request made alone is not decided by the request with
    its reason when the one alone fails (that would make it depend on being shown): it fails."""
    import asyncio

    judge = _Judge()
    token = DECIDED_ALONE.set(True)
    try:
        result, probs, said = asyncio.run(verdict_reply(judge, "Is it?", None, LABELS))
    finally:
        DECIDED_ALONE.reset(token)
    assert result.error == "HTTP 500" and probs is None and said is None
    assert judge.asked == [VERDICT_TOKENS]  # the request with the reason is not made
    # Not decided alone: the request with its reason decides, by its own probability.
    result, probs, said = asyncio.run(verdict_reply(judge, "Is it?", None, LABELS))
    assert result.error is None and probs == pytest.approx({"yes": 0.3, "no": 0.7}) and said is None
