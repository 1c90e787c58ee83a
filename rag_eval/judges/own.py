"""rag-eval's own judges: correctness (against the reference) and refusal (did it decline?).

Prompts are files in ``prompts/judges/``; the output is JSON constrained by a schema whose reason
field comes before the verdict (with the verdict first, small models justify whatever they said).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from rag_eval.errors import ConfigError, Problem
from rag_eval.judges.base import Judgement, text_hash

VERDICTS = {"correctness": ("correct", "partial", "incorrect"), "refusal": ("refused", "answered")}
SCORES = {
    "correctness": {"correct": 1.0, "partial": 0.5, "incorrect": 0.0},
    "refusal": {"refused": 1.0, "answered": 0.0},
}
PLACEHOLDERS = {"correctness": ("{question}", "{reference}", "{answer}"), "refusal": ("{question}", "{answer}")}


@dataclass(frozen=True)
class OwnJudge:
    """A prompt file and the verdicts it may return."""

    name: str
    template: str

    @property
    def hash(self) -> str:
        return text_hash(self.template)

    def response_format(self, json_schema: bool) -> dict:
        if not json_schema:
            return {"type": "json_object"}
        schema = {
            "type": "object",
            "properties": {
                "reason": {"type": "string"},
                "verdict": {"type": "string", "enum": list(VERDICTS[self.name])},
            },
            "required": ["reason", "verdict"],
            "additionalProperties": False,
        }
        return {"type": "json_schema", "json_schema": {"name": self.name, "schema": schema, "strict": True}}

    def render(self, **values: str) -> str:
        text = self.template
        for key, value in values.items():
            text = text.replace("{" + key + "}", value)
        return text

    async def judge(
        self, llm, *, question_id: str, prompt: str, parse_retries: int, json_schema: bool, **values: str
    ) -> Judgement:
        """Ask the model; re-ask (as a new request) after an unparseable output, then give up."""
        messages = [{"role": "user", "content": self.render(**values)}]
        raws: list[str | None] = []
        error = None
        for _ in range(parse_retries + 1):
            result = await llm.chat(messages, response_format=self.response_format(json_schema), max_tokens=256)
            raws.append(result.text)
            if result.error:
                error = result.error
                break
            parsed, error = parse_verdict(result.text, VERDICTS[self.name])
            if parsed:
                return Judgement(
                    self.name,
                    question_id,
                    prompt,
                    "judged",
                    SCORES[self.name][parsed["verdict"]],
                    parsed["verdict"],
                    parsed["reason"],
                    None,
                    self.hash,
                    result.model,
                    {"raw": raws},
                )
            messages = messages + [
                {"role": "assistant", "content": result.text or ""},
                {"role": "user", "content": f"That was not valid: {error}. Reply with the JSON object only."},
            ]
        return Judgement(
            self.name,
            question_id,
            prompt,
            "not_judged",
            error=error,
            judge_prompt_hash=self.hash,
            model=llm.model,
            details={"raw": raws},
        )


def parse_verdict(text: str | None, allowed: tuple[str, ...]) -> tuple[dict | None, str | None]:
    """``({"reason", "verdict"}, None)`` or ``(None, what is wrong)``."""
    if not text:
        return None, "empty output"
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, f"output is not JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(data, dict):
        return None, "output is not a JSON object"
    verdict = str(data.get("verdict", "")).strip().lower()
    if verdict not in allowed:
        return None, f"verdict {data.get('verdict')!r} is not one of {', '.join(allowed)}"
    return {"verdict": verdict, "reason": str(data.get("reason") or "").strip()}, None


def load_own_judges(prompts_dir: Path, names: list[str]) -> dict[str, OwnJudge]:
    """The own judges named in ``names``, from ``<prompts_dir>/<name>.md``."""
    judges, problems = {}, []
    for name in names:
        if name not in VERDICTS:
            continue
        path = prompts_dir / f"{name}.md"
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            problems.append(
                Problem(
                    str(path),
                    f"cannot read the {name} judge's prompt: {exc.strerror or exc}",
                    "set judges.prompts_dir to the folder that holds correctness.md and refusal.md",
                )
            )
            continue
        missing = [p for p in PLACEHOLDERS[name] if p not in text]
        if missing:
            problems.append(Problem(str(path), f"the prompt lacks {', '.join(missing)}", "add the placeholders"))
            continue
        judges[name] = OwnJudge(name, text)
    if problems:
        raise ConfigError(problems)
    return judges
