"""Your own criteria as judges (``judges.criteria``): each one a question the judge model answers
about an answer, decided by the probability of its first token like the built-in yes/no judges.

Every criterion's prompt is the one template ``prompts/judges/criterion.md`` (or the copy in
``judges.prompts_dir``) with two parts filled in: ``{inputs}``, the inputs the criterion ``sees``
(each with its own placeholder, filled per answer), and ``{criterion}``, the question with the reply
it asks for. The inputs come before the question, so that the criteria asked of one answer share
the prompt's prefix in the server's KV cache. The rendered prompt's hash names the criterion's
responses in the cache, its calibration and its adaptations: an edited question is a new judge.

A yes/no criterion reads P(yes) from the first token's top alternatives, as the built-in judges
do. A rubric (levels 1..N) reads P(level) over the level digits; the answer's score is the
probability-weighted mean level, and its verdict P(level >= pass_level) at the cut-off, so that the
cut-off, the band of uncertain decisions, escalation and adaptation work on a probability as for
every other judge. No criterion has a shipped cut-off: it decides at 0.5 with its wide band until
labels calibrate it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from scipy.stats import norm

from rag_eval.judges.registry import Criterion, PromptFile
from rag_eval.judges.yesno import (
    YES_NO,
    Decision,
    YesNoPrompt,
    load_prompt,
    verdict_reply,
)

# How each input is shown to the judge, in this order whatever the order of ``sees``.
INPUT_LINES = {
    "contexts": "Context:\n{contexts}",
    "question": "Question: {question}",
    "reference": "Reference answer: {reference}",
    "answer": "Answer: {answer}",
}
YES_NO_REPLY = "Reply Yes or No, then a colon and one short sentence saying why."
RUBRIC_REPLY = "Reply with the number of the level that fits the answer (1 to {n}), then a colon and one short sentence saying why."
TEMPLATE_PLACEHOLDERS = ("inputs", "criterion")


def render_inputs(c: Criterion) -> str:
    """The ``{inputs}`` part: each input the criterion sees, under its name, with its placeholder."""
    return "\n\n".join(line for name, line in INPUT_LINES.items() if name in c.sees)


def render_criterion(c: Criterion) -> str:
    """The ``{criterion}`` part: the question, a rubric's levels, the evaluation steps, and the reply asked for."""
    lines = [f"Criterion: {c.question}"]
    if c.rubric:
        lines += ["Levels:"] + [f"{i}: {text}" for i, text in enumerate(c.levels, start=1)]
    if c.steps:
        lines += ["Steps:"] + [f"{i}. {step}" for i, step in enumerate(c.steps, start=1)]
    lines.append(RUBRIC_REPLY.format(n=len(c.levels)) if c.rubric else YES_NO_REPLY)
    return "\n".join(lines)


def criterion_prompt(folder: Path, p: PromptFile) -> YesNoPrompt:
    """A criterion's prompt: the template in ``folder`` (its ``{inputs}`` and ``{criterion}`` filled)
    with one placeholder per input the criterion sees. ConfigError when the template cannot be read
    or lacks ``{inputs}`` or ``{criterion}``."""
    c = p.criterion
    if c is None:
        raise ValueError(f"the prompt {p.key!r} is no criterion's")
    template = load_prompt(folder / p.file, p.key, TEMPLATE_PLACEHOLDERS)
    text = template.render(inputs=render_inputs(c), criterion=render_criterion(c))
    if c.rubric:
        return RubricPrompt("criterion_rubric", text, p.placeholders, _level_words(len(c.levels)), c.pass_level or 1)
    # The yes/no criteria share one name: their forced quotes are asked one way (``evidence.LEADS``).
    return YesNoPrompt("criterion", text, p.placeholders, tuple(YES_NO.items()))


def _level_words(n: int) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((str(k), (str(k),)) for k in range(1, n + 1))


_LEVEL = re.compile(r"\W*(\d+)\W*(.*)", flags=re.S)


@dataclass(frozen=True)
class RubricPrompt(YesNoPrompt):
    """A rubric's prompt: the reply starts with a level; P(level) is read over the level digits.
    Its decision is a yes/no one (yes: the level reaches ``pass_level``) with the levels kept in
    ``Decision.extra`` (``levels``, ``mean_level``, ``level_said``), so every yes/no path (the
    cut-off, the band, escalation, adaptation) decides it unchanged."""

    pass_level: int = 1

    async def ask_with(self, llm, values: Mapping[str, str], *, max_tokens: int | None = None) -> Decision:
        result, probs, _ = await verdict_reply(llm, self.render(**values), max_tokens, self.label_words)
        if result.error:
            return Decision(None, None, "", "text", None, error=result.error)
        said, reason = _level_said(result.text, len(self.labels))
        if reason and result.finish_reason == "length":
            reason += " …"  # cut by the token limit, not ended by the model
        if probs is None and said is None:
            return Decision(
                None,
                None,
                reason,
                "text",
                result.text,
                error=f"the reply does not start with a level 1 to {len(self.labels)}: {(result.text or '')[:120]!r}",
            )
        method = "logprobs" if probs is not None else "text"
        levels = probs if probs is not None else {str(k): float(k == said) for k in range(1, len(self.labels) + 1)}
        p_pass = sum(p for k, p in levels.items() if int(k) >= self.pass_level)
        word = None if said is None else ("yes" if said >= self.pass_level else "no")
        extra = {
            "levels": {k: round(p, 6) for k, p in levels.items()},
            "mean_level": round(mean_level(levels), 6),
            "level_said": said,
        }
        return Decision({"yes": p_pass, "no": 1.0 - p_pass}, word, reason, method, result.text, extra=extra)


def _level_said(text: str | None, n: int) -> tuple[int | None, str]:
    """(the level a reply starts with, the rest) for a reply such as ``3: it names the option``."""
    m = _LEVEL.match((text or "").strip())
    if not m or not 1 <= int(m.group(1)) <= n:
        return None, (text or "").strip()
    # Lines joined as sentences: "3: it names the option" then a line of the model's own would
    # otherwise run together ("... the option The answer ...").
    lines = [" ".join(line.split()) for line in m.group(2).splitlines() if line.strip()]
    return int(m.group(1)), " ".join(
        line if k == len(lines) - 1 or line[-1] in ".!?:;" else f"{line}." for k, line in enumerate(lines)
    )


def mean_level(levels: Mapping[str, float]) -> float:
    """The probability-weighted mean level (GEval's score): sum of level x P(level)."""
    total = sum(levels.values())
    return sum(int(k) * p for k, p in levels.items()) / total if total > 0 else float("nan")


# -- how many labels calibrate a criterion --------------------------------------------------------


def labels_for(half_width: float = 0.10, confidence: float = 0.95) -> int:
    """Labelled answers that give a criterion's share passing an interval of ``±half_width`` whatever
    the judge: the labels alone estimate a share with variance at most 1/4 / n (a share of 0.5 is
    the worst case), and a prediction-powered estimate (PPI++) tunes the judge's weight so that it is
    never wider than the labels alone (asymptotically); so n = z^2 / (4 half_width^2), 97 at 95% for
    ±0.10. A judge that agrees with the labels on a share ``a`` of answers needs fewer, about
    z^2 (1 - a) / half_width^2 (``labels.ppi.labels_needed``), but an uncalibrated judge's agreement
    is what the labels are to measure."""
    z = float(norm.ppf(1 - (1 - confidence) / 2))
    return math.ceil(z * z / (4 * half_width * half_width))


def half_width_for(labels: int, confidence: float = 0.95) -> float:
    """The interval half-width ``labels`` labelled answers guarantee on a share, whatever the judge
    (``labels_for`` the other way round): z / (2 sqrt(n))."""
    z = float(norm.ppf(1 - (1 - confidence) / 2))
    return z / (2 * math.sqrt(labels))
