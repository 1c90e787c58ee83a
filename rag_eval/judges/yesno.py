"""Yes/no questions to a judge model, scored by probability.

The model answers with a label word first ("Yes" or "No"), then a colon and a short reason, in one
call. Where the endpoint returns token logprobs (llama-server, OpenAI, vLLM), the decision is a
probability read from the first token's top alternatives, P(label) normalised over the labels;
the reason is the text after the label. Where logprobs are missing, the label is read from the
text and the record says so (``method: "text"``).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError, field_validator

from rag_eval.base_records import Model
from rag_eval.errors import ConfigError, Problem
from rag_eval.hashing import text_hash

YES_NO = {"yes": ("yes",), "no": ("no",)}
TOP_LOGPROBS = 10
# A verdict with its reason: the label word, a colon and one short sentence.
REASON_TOKENS = 48
# A verdict alone: the label word and the colon after it (the first token's logprobs decide).
VERDICT_TOKENS = 2
# Whether the questions asked now want the model's reason (and the quotes made from it): the judging
# stage asks every verdict without (``VERDICT_TOKENS``), then asks again, with reasons, only for the
# answers a reader is shown (``judging.judge_all``'s ``shown``). Anything else asks with reasons.
REASONS_WANTED: ContextVar[bool] = ContextVar("rag_eval_reasons_wanted", default=True)


# Whether the verdicts asked now with their reasons are decided by the request made alone
# (``judging.JudgeRun.run``: an own judge's verdict asked again for an answer a reader is shown, or
# asked with its reason from the start because its answer is already shown). Their word and
# probabilities are read from that request (kept from the first pass, else asked: the response cache
# keeps it), not from the request with the reason: the two requests differ, and the server's
# numerics with them, so a verdict would otherwise move by whether its answer was shown, which
# other prompts' and criteria's outcomes decide. The reason's text is the second request's.
DECIDED_ALONE: ContextVar[bool] = ContextVar("rag_eval_decided_alone", default=False)


# What each verdict asked alone in this judging stage gave (its label probabilities and its text,
# by the request's text hash: a few hundred bytes each), so the verdict asked again with its reason
# is decided by it without a second request, also where the response cache is off
# (``judging.judge_all`` sets it).
VERDICTS_ALONE: ContextVar[dict[str, tuple[dict[str, float] | None, str | None]] | None] = ContextVar(
    "rag_eval_verdicts_alone", default=None
)


async def verdict_reply(llm, content: str, max_tokens: int | None, labels: dict[str, tuple[str, ...]]):
    """The reply to a verdict request, the label probabilities to decide by, and the text of the
    request that decided (None: the reply itself). For a verdict first asked alone
    (``DECIDED_ALONE``) and now asked with its reason, both come from that first request (kept in
    ``VERDICTS_ALONE``, else asked again: the response cache keeps it), so its word, its probability
    and the decision agree with what the answer got when nobody was shown it."""
    messages = [{"role": "user", "content": content}]
    kept = VERDICTS_ALONE.get()
    key = hashlib.sha256(content.encode()).hexdigest()  # the whole digest: one entry per request text
    alone: tuple[dict[str, float] | None, str | None] | None = None
    if max_tokens is None and REASONS_WANTED.get() and DECIDED_ALONE.get():
        alone = kept.get(key) if kept is not None else None
        if alone is None:
            first = await llm.chat(messages, max_tokens=VERDICT_TOKENS, logprobs=TOP_LOGPROBS)
            if first.error:
                # The request with the reason would decide otherwise than every verdict not shown is
                # decided: the verdict fails instead (a failed call, asked again on a rerun).
                return first, None, None
            alone = (label_probabilities(first_choice(first.raw), labels), first.text)
    result = await llm.chat(messages, max_tokens=max_tokens or reply_tokens(), logprobs=TOP_LOGPROBS)
    probs = None if result.error else label_probabilities(first_choice(result.raw), labels)
    if kept is not None and max_tokens is None and not REASONS_WANTED.get() and not result.error:
        kept[key] = (probs, result.text)
    if alone is not None:
        return result, alone[0], alone[1]
    return result, probs, None


def reply_tokens() -> int:
    """The ``max_tokens`` of a verdict request now: with its reason, or the verdict alone."""
    return REASON_TOKENS if REASONS_WANTED.get() else VERDICT_TOKENS


@dataclass(frozen=True)
class Decision:
    """One label decision: P(label) per label (None without logprobs), the label read from the text,
    the reason, and how the probabilities were obtained."""

    probs: dict[str, float] | None
    text_label: str | None
    reason: str
    method: str  # "logprobs" or "text"
    raw: str | None
    error: str | None = None
    extra: dict | None = None  # what a prompt reads beside P(label) (a rubric's levels), kept in the record

    def p(self, label: str) -> float | None:
        """P(label): from logprobs, else 1 or 0 from the text label; None if neither exists."""
        if self.probs is not None:
            return self.probs.get(label, 0.0)
        if self.text_label is None:
            return None
        return 1.0 if self.text_label == label else 0.0


def _norm(token: str) -> str:
    return token.strip().strip("*\"'`.,:;!()[]").lower()


class TokenLogprob(Model):
    """One token's logprob in a chat completion (an alternative of ``top_logprobs``)."""

    token: str | None = None
    logprob: float = -math.inf

    @field_validator("logprob", mode="before")
    @classmethod
    def _null_is_impossible(cls, v: Any) -> Any:
        # llama-server's JSON writes a logprob of -inf as null.
        return -math.inf if v is None else v


class GeneratedToken(TokenLogprob):
    """A generated token with its most likely alternatives."""

    top_logprobs: list[TokenLogprob] | None = None


class ChoiceLogprobs(Model):
    # Only the first generated token is read (``label_probabilities``): the others stay as sent,
    # unvalidated, so a reply's later tokens can neither cost time nor fail the verdict.
    content: list[Any] | None = None


class Choice(Model):
    """A chat completion's choice, as far as its logprobs are read (the rest kept as sent)."""

    logprobs: ChoiceLogprobs | None = None


class Completion(Model):
    """A chat completion as the endpoint returned it (``ChatResult.raw``)."""

    choices: list[Choice] | None = None


def first_choice(raw: dict | None) -> Choice:
    """The first choice of a chat completion's JSON (an empty one where it has none, or where its
    logprobs are not in OpenAI's shape: the verdict is then read from the text, as without them)."""
    try:
        return (Completion.model_validate(raw or {}).choices or [Choice()])[0]
    except ValidationError:
        return Choice()


def label_probabilities(choice: dict | Choice, labels: dict[str, tuple[str, ...]]) -> dict[str, float] | None:
    """P(label) from the first generated token's top logprobs, normalised over the labels; None when
    the response has no logprobs or no label word among the alternatives."""
    logprobs = Choice.load(choice).logprobs
    content = (logprobs.content if logprobs else None) or []
    if not content:
        return None
    try:
        first = GeneratedToken.load(content[0])
    except ValidationError:
        return None
    mass = dict.fromkeys(labels, 0.0)
    alternatives: list[TokenLogprob] = list(first.top_logprobs or [first])
    for alt in alternatives:
        word = _norm(alt.token or "")
        for label, words in labels.items():
            if word in words:
                mass[label] += math.exp(float(alt.logprob))
    total = sum(mass.values())
    if total <= 0:
        return None
    return {label: m / total for label, m in mass.items()}


def text_label(text: str | None, labels: dict[str, tuple[str, ...]]) -> tuple[str | None, str]:
    """(label, reason) from a reply such as ``Yes: the context says so``."""
    if not text:
        return None, ""
    m = re.match(r"\W*([A-Za-z]+)\W*(.*)", text.strip(), flags=re.S)
    if not m:
        return None, text.strip()
    word, rest = m.group(1).lower(), " ".join(m.group(2).split())
    for label, words in labels.items():
        if word in words:
            return label, rest
    return None, text.strip()


@dataclass(frozen=True)
class YesNoPrompt:
    """A judge prompt file with named placeholders; its fixed part comes first so that the server's
    KV cache keeps it between calls, and the variable part last."""

    name: str
    template: str
    placeholders: tuple[str, ...]
    labels: tuple[tuple[str, tuple[str, ...]], ...] = tuple(YES_NO.items())

    @property
    def hash(self) -> str:
        return text_hash(self.template)

    @property
    def label_words(self) -> dict[str, tuple[str, ...]]:
        return dict(self.labels)

    def render(self, **values: str) -> str:
        text = self.template
        for key, value in values.items():
            text = text.replace("{" + key + "}", value)
        return text

    async def ask(self, llm, *, max_tokens: int | None = None, **values: str) -> Decision:
        """One call: the label word, then the reason (``reply_tokens()`` unless ``max_tokens``)."""
        return await self.ask_with(llm, values, max_tokens=max_tokens)

    async def ask_with(self, llm, values: Mapping[str, str], *, max_tokens: int | None = None) -> Decision:
        """``ask`` with the placeholders' values as one mapping (values built by the caller)."""
        words = self.label_words
        result, probs, said = await verdict_reply(llm, self.render(**values), max_tokens, words)
        if result.error:
            return Decision(None, None, "", "text", None, error=result.error)
        label, reason = text_label(result.text, words)
        if said is not None:  # decided by the request made alone: its word is the model's verdict
            label = text_label(said, words)[0] or label
        if probs is None and label is None:
            return Decision(
                None,
                None,
                reason,
                "text",
                result.text,
                error=f"the reply does not start with {' or '.join(words)}: {(result.text or '')[:120]!r}",
            )
        return Decision(probs, label, reason, "logprobs" if probs is not None else "text", result.text)


def load_prompt(path: Path, name: str, placeholders: tuple[str, ...], labels=None) -> YesNoPrompt:
    """A yes/no prompt file; ConfigError when it cannot be read or lacks a placeholder."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            Problem(
                str(path),
                f"cannot read the {name} judge's prompt: {exc.strerror or exc}",
                "set judges.prompts_dir to a folder holding every judge's prompt (copy the shipped prompts/judges/)",
            )
        ) from None
    missing = [p for p in placeholders if "{" + p + "}" not in text]
    if missing:
        raise ConfigError(
            Problem(str(path), f"the prompt lacks {', '.join('{' + p + '}' for p in missing)}", "add the placeholders")
        )
    return YesNoPrompt(name, text, placeholders, tuple((labels or YES_NO).items()))
