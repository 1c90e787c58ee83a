"""P(label) from a reply's first-token logprobs, whatever else the reply holds."""

from __future__ import annotations

import math

import pytest

from rag_eval.judges.yesno import first_choice, label_probabilities

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
