"""Ragas 0.4 metrics (``ragas.metrics.collections``) driven through rag-eval's client layer.

The Ragas LLM wraps the same ``AsyncOpenAI`` client as everything else, so the response cache,
the concurrency bound, retries, timeouts and token counts apply to Ragas' calls too. Instructor's
JSON-schema mode is used where the endpoint does guided decoding. Each metric's steps are run
here (with Ragas' own prompts and output models) so that every verdict keeps its reason.

Ragas' output models ask for a free-text ``reason`` before each verdict; a small model writes long
ones, and they are most of what Ragas generates. Where the endpoint does guided decoding, each
``reason`` carries ``maxLength: REASON_CHARS`` in the JSON schema sent (the prompt text, the fields
and their validation stay Ragas'), so the reason stops there and the verdict follows.

``judges.ragas_requests: native`` sends Ragas' own requests instead, unchanged: the LLM comes from
Ragas' own ``llm_factory`` over the same client (instructor JSON mode, the schema in a system
message, Ragas' sampling defaults) and each step asks for Ragas' own output model, so every request
is the one Ragas' ``metric.ascore`` sends, for users who must reproduce a Ragas number.
"""

from __future__ import annotations

import asyncio
import re
import types
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, Field, create_model

from rag_eval.base_records import Model
from rag_eval.hashing import text_hash
from rag_eval.judges.judgement import Judgement
from rag_eval.llm.client import redact
from rag_eval.offline import go_offline

if typing.TYPE_CHECKING:
    from ragas.metrics.collections.context_precision.util import ContextPrecisionOutput
    from ragas.metrics.collections.context_recall.util import ContextRecallOutput
    from ragas.metrics.collections.faithfulness.util import NLIStatementOutput

REASON_CHARS = 160
RAGAS_REQUESTS = ("guided", "native")


M = TypeVar("M", bound=BaseModel)


def bounded_reasons(model: type[M], chars: int | None) -> type[M]:
    """A subclass of a Ragas output model, with the same name and fields, whose ``reason`` strings
    (nested ones too) carry ``maxLength`` in its JSON schema; the model itself when ``chars`` is None."""
    if chars is None:
        return model
    fields: dict[str, Any] = {}
    for name, f in model.model_fields.items():
        ann = f.annotation
        inner = typing.get_args(ann)[0] if typing.get_origin(ann) is list else None
        if name == "reason" and ann is str:
            fields[name] = (str, Field(..., description=f.description, json_schema_extra={"maxLength": chars}))
        elif isinstance(inner, type) and issubclass(inner, BaseModel):
            fields[name] = (
                types.GenericAlias(list, (bounded_reasons(inner, chars),)),
                Field(..., description=f.description),
            )
    return create_model(model.__name__, __base__=model, **fields)


class RagasRequests(Model):
    """How the Ragas metrics sent their requests (``RagasJudges.settings``, the report's
    ``judges.ragas_requests``); a key not written reads as None."""

    setting: Any = None
    mode: Any = None
    reason_chars: Any = None
    temperature: Any = None
    top_p: Any = None


def describe_requests(requests: dict | RagasRequests) -> str:
    """One sentence for the report: what the Ragas metrics sent (``RagasJudges.settings``) and how
    that differs from Ragas' own requests."""
    settings = RagasRequests.load(requests)
    sampling = f"temperature {settings.temperature}, top_p {settings.top_p}"
    if settings.setting == "native":
        return (
            f"Ragas metrics: `ragas_requests: native`: Ragas' own requests, unchanged (Ragas' `llm_factory`: "
            f"instructor {settings.mode}, the schema in a system message, unbounded reasons, {sampling}), "
            "as Ragas' own `metric.ascore` sends them, so the figures are Ragas' numbers. rag-eval's default, "
            "`guided` (schema-guided decoding, reasons bounded), is stricter: on the demo's answers the two agree "
            "on faithfulness (same side of 0.5) but differ on context precision and context recall."
        )
    if settings.reason_chars:
        how = (
            f"schema-guided decoding (instructor {settings.mode}), each reason bounded to "
            f"{settings.reason_chars} characters, {sampling}"
        )
        return (
            f"Ragas metrics: `ragas_requests: guided`: Ragas' prompts and output models, sent with {how}. This is "
            "stricter than Ragas' own requests (instructor JSON mode: the schema in a system message, unbounded "
            "reasons): on the demo's answers the two agree on faithfulness (same side of 0.5) but differ on context "
            "precision and context recall, so these are not the numbers Ragas' own API gives; "
            "`judges.ragas_requests: native` sends Ragas' requests unchanged, to reproduce one."
        )
    return (
        f"Ragas metrics: `ragas_requests: guided`, but the endpoint does no guided decoding (`llm.json_schema: "
        f"false`): Ragas' prompts and output models in instructor {settings.mode}, unbounded reasons, "
        f"{sampling}; `judges.ragas_requests: native` sends Ragas' own requests unchanged (its own sampling), "
        "to reproduce a Ragas number."
    )


def describe_error(exc: Exception) -> str:
    """A short message: instructor's retry errors carry every failed completion, keep the last error."""
    text = redact(str(exc))
    attempts = getattr(exc, "n_attempts", None)
    found = re.findall(r"<exception>\s*(.*?)\s*</exception>", text, flags=re.S)
    if found:
        last = " ".join(found[-1].split())
        return f"{type(exc).__name__}: {attempts or len(found)} attempts; last error: {last}"[:600]
    return f"{type(exc).__name__}: {' '.join(text.split())}"[:600]


class RagasJudges:
    """Faithfulness (2 calls), context precision with reference (k calls), context recall (1 call)."""

    def __init__(
        self,
        llm,
        *,
        json_schema: bool,
        requests: str = "guided",
        max_tokens: int = 1024,
        reason_chars: int | None = REASON_CHARS,
    ):
        """``requests``: ``guided`` (rag-eval's requests) or ``native`` (Ragas' own, unchanged)."""
        go_offline()
        import instructor  # noqa: PLC0415
        import ragas  # noqa: PLC0415
        from ragas.llms.base import InstructorLLM, InstructorModelArgs, llm_factory  # noqa: PLC0415
        from ragas.metrics.collections import ContextPrecisionWithReference, ContextRecall, Faithfulness  # noqa: PLC0415
        from ragas.metrics.collections.context_precision.util import ContextPrecisionOutput  # noqa: PLC0415
        from ragas.metrics.collections.context_recall.util import ContextRecallOutput  # noqa: PLC0415
        from ragas.metrics.collections.faithfulness.util import NLIStatementOutput  # noqa: PLC0415

        if requests not in RAGAS_REQUESTS:
            raise ValueError(f"ragas_requests must be one of {', '.join(RAGAS_REQUESTS)}, not {requests!r}")
        self.model = llm.model
        if requests == "native":
            # Ragas' own factory decides the mode, the system message and the sampling: whatever
            # Ragas sends, this sends, also after a Ragas upgrade.
            # Annotated as the abstract InstructorBaseRagasLLM; for an OpenAI client its instructor
            # adapter makes an InstructorLLM (model_args and client are read below).
            self.rllm = typing.cast(InstructorLLM, llm_factory(llm.model, provider="openai", client=llm.client))
            chars = None
        else:
            mode = instructor.Mode.JSON_SCHEMA if json_schema else instructor.Mode.JSON
            client = instructor.from_openai(llm.client, mode=mode)
            args = InstructorModelArgs(temperature=0.0, top_p=1.0, max_tokens=max_tokens)
            self.rllm = InstructorLLM(client=client, model=llm.model, provider="openai", model_args=args)
            chars = reason_chars if json_schema else None  # without guided decoding nothing enforces it
        self.faithfulness = Faithfulness(llm=self.rllm)
        self.precision = ContextPrecisionWithReference(llm=self.rllm)
        self.recall = ContextRecall(llm=self.rllm)
        self.nli_output = bounded_reasons(NLIStatementOutput, chars)
        self.precision_output = bounded_reasons(ContextPrecisionOutput, chars)
        self.recall_output = bounded_reasons(ContextRecallOutput, chars)
        # Ragas stores model_args as a dict (the constructor's InstructorModelArgs dumped) but the
        # attribute keeps the parameter's type.
        sent: dict[str, Any] = self.rllm.model_args  # type: ignore[assignment]
        self.settings = {
            "setting": requests,
            "mode": getattr(self.rllm.client, "mode", instructor.Mode.JSON).value,
            "reason_chars": chars,
            **{k: sent.get(k) for k in ("temperature", "top_p", "max_tokens")},
        }
        # The setting is part of each judge's identity: a resumed run redoes the Ragas judgements
        # when it changes (the response cache keeps the two apart anyway: the requests differ).
        version = (
            ragas.__version__ + (f"|reason<={chars}" if chars else "") + ("|native" if requests == "native" else "")
        )
        self.hashes = {
            "faithfulness": text_hash(
                version
                + self.faithfulness.statement_generator_prompt.instruction
                + self.faithfulness.nli_statement_prompt.instruction
            ),
            "context_precision": text_hash(version + self.precision.prompt.instruction),
            "context_recall": text_hash(version + self.recall.prompt.instruction),
        }

    def _not_judged(self, name: str, qid: str, prompt: str, error: str) -> Judgement:
        return Judgement(
            name, qid, prompt, "not_judged", error=error, judge_prompt_hash=self.hashes[name], model=self.model
        )

    def _failed(self, name: str, qid: str, prompt: str, exc: Exception) -> Judgement:
        return self._not_judged(name, qid, prompt, describe_error(exc))

    async def judge_faithfulness(
        self, qid: str, prompt: str, question: str, answer: str, contexts: list[str]
    ) -> Judgement:
        name = "faithfulness"
        try:
            statements = await self.faithfulness._create_statements(question, answer)
            if not statements:
                return self._not_judged(name, qid, prompt, "no statements could be extracted")
            from ragas.metrics.collections.faithfulness.util import NLIStatementInput  # noqa: PLC0415

            verdicts: NLIStatementOutput = await self.rllm.agenerate(
                self.faithfulness.nli_statement_prompt.to_string(
                    NLIStatementInput(context="\n".join(contexts), statements=statements)
                ),
                self.nli_output,
            )
        except Exception as exc:  # instructor, openai and validation errors all mean "not judged"
            return self._failed(name, qid, prompt, exc)
        if not verdicts.statements:
            return self._not_judged(name, qid, prompt, "the judge returned no verdicts")
        supported = sum(1 for s in verdicts.statements if s.verdict)
        score = supported / len(verdicts.statements)
        unsupported = [f"{s.statement} ({s.reason})" for s in verdicts.statements if not s.verdict]
        reason = f"{supported} of {len(verdicts.statements)} statements are supported by the contexts" + (
            f"; unsupported: {'; '.join(unsupported)}" if unsupported else ""
        )
        return Judgement(
            name,
            qid,
            prompt,
            "judged",
            score,
            None,
            reason,
            None,
            self.hashes[name],
            self.model,
            {"statements": [s.model_dump() for s in verdicts.statements]},
        )

    async def judge_context_precision(
        self, qid: str, prompt: str, question: str, reference: str, contexts: list[str]
    ) -> Judgement:
        from ragas.metrics.collections.context_precision.util import ContextPrecisionInput  # noqa: PLC0415

        name = "context_precision"
        try:
            outputs: list[ContextPrecisionOutput] = await asyncio.gather(
                *(
                    self.rllm.agenerate(
                        self.precision.prompt.to_string(
                            ContextPrecisionInput(question=question, context=c, answer=reference)
                        ),
                        self.precision_output,
                    )
                    for c in contexts
                )
            )
        except Exception as exc:  # any failure of any context leaves the metric unjudged
            return self._failed(name, qid, prompt, exc)
        verdicts = [int(bool(o.verdict)) for o in outputs]
        score = float(self.precision._calculate_average_precision(verdicts))
        reason = "; ".join(
            f"context {i + 1}: {'useful' if v else 'not useful'} ({o.reason})"
            for i, (v, o) in enumerate(zip(verdicts, outputs))
        )
        return Judgement(
            name,
            qid,
            prompt,
            "judged",
            score,
            None,
            reason,
            None,
            self.hashes[name],
            self.model,
            {"verdicts": verdicts},
        )

    async def judge_context_recall(
        self, qid: str, prompt: str, question: str, reference: str, contexts: list[str]
    ) -> Judgement:
        from ragas.metrics.collections.context_recall.util import ContextRecallInput  # noqa: PLC0415

        name = "context_recall"
        try:
            out: ContextRecallOutput = await self.rllm.agenerate(
                self.recall.prompt.to_string(
                    ContextRecallInput(question=question, context="\n".join(contexts), answer=reference)
                ),
                self.recall_output,
            )
        except Exception as exc:  # as above
            return self._failed(name, qid, prompt, exc)
        if not out.classifications:
            return self._not_judged(name, qid, prompt, "the judge returned no classifications")
        attributed = sum(1 for c in out.classifications if c.attributed)
        missing = [c.statement for c in out.classifications if not c.attributed]
        reason = f"{attributed} of {len(out.classifications)} reference statements are found in the contexts" + (
            f"; missing: {'; '.join(missing)}" if missing else ""
        )
        return Judgement(
            name,
            qid,
            prompt,
            "judged",
            attributed / len(out.classifications),
            None,
            reason,
            None,
            self.hashes[name],
            self.model,
            {"classifications": [c.model_dump() for c in out.classifications]},
        )
