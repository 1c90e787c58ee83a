"""The judges' settings (``judges:``): which judges run, their model, cut-offs, bands, escalation and the
user's own criteria; judge names and roles are checked against the judge registry (``judges/registry.py``)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from rag_eval.config_base import Settings
from rag_eval.errors import did_you_mean
from rag_eval.judges.registry import (
    CRITERION_AIM,
    DEFAULT_METRICS,
    FAITHFUL_SHARE,
    JUDGES,
    Criterion,
    Role,
    banded,
    builtin_names,
    deciders,
    of_role,
    set_criteria,
    variants,
)
from rag_eval.llm.settings import LLMConfig, PriceConfig


class EscalateConfig(Settings):
    """A second, stronger judge asked only the decisions the first judge is uncertain of."""

    llm: LLMConfig = Field(description="the second judge: any OpenAI-compatible endpoint")
    max_calls: int | None = Field(None, ge=0, description="at most this many decisions sent to the second judge")
    prices: PriceConfig | None = Field(
        None, description="price per million tokens of the second judge (else llm.prices)"
    )

    @property
    def second(self) -> LLMConfig:
        """The second judge's model config, with the prices given here."""
        return self.llm.model_copy(update={"prices": self.prices}) if self.prices else self.llm


Input = Literal["question", "answer", "contexts", "reference"]


class CriterionConfig(Settings):
    """One of your own criteria, judged on every answer it applies to like the built-in judges: a
    yes/no question (or a rubric of levels) scored by the probability of the judge's first token,
    with a quoted reason, cached, in the cost estimate, escalated where uncertain."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False, serialize_by_alias=True)

    question: str = Field(
        description="the yes/no question asked about each answer, e.g. 'Does the answer name the function or "
        "setting to use?' (a rubric: what its levels rate)"
    )
    sees: list[Input] = Field(
        default_factory=lambda: list[Input](["question", "answer"]),
        min_length=1,
        description="what the judge is shown: question, answer, contexts (the passages the generator was given), "
        "reference (the reference answer; answers without one are skipped)",
    )
    applies: Literal["answered", "all", "answerable", "unanswerable"] = Field(
        "answered",
        description="which answers are judged: answered (every answer the refusal judge did not call a refusal), "
        "all, answerable or unanswerable (by the question's label)",
    )
    passes: Literal["yes", "no"] = Field(
        "yes",
        alias="pass",
        description="the answer to the question that passes (no: e.g. 'Does it give legal advice?')",
    )
    levels: dict[int, str] | None = Field(
        None,
        description="a rubric instead of yes/no: {1: description, 2: ..., N: ...}; the answer's score is the "
        "probability-weighted mean level, its verdict P(level >= pass_level) at the cut-off",
    )
    pass_level: int | None = Field(None, description="a rubric: the lowest level that passes")
    steps: list[str] = Field(
        default_factory=list, description="evaluation steps shown to the judge in order (DeepEval's GEval)"
    )
    gate_only: bool = Field(
        False, description="the figure only, for gates: no flag beside the outcomes and no list of failing answers"
    )
    counts_as_failure: bool = Field(
        False,
        description="a failed criterion turns an answer the built-in judges call ok into the outcome "
        "failed_criterion (a generation failure); else it shows as a flag beside the outcome",
    )
    uncertain: tuple[float, float] = Field(
        (0.1, 0.9),
        description="[low, high]: a decision whose P(pass) lies here is uncertain, until labels calibrate the "
        "criterion (rag-eval judge-check --save, or an adaptation); the cut-off is 0.5",
    )
    aim: float = Field(
        CRITERION_AIM,
        gt=0.5,
        lt=1.0,
        description="once labels calibrate the criterion, a decision stays decided where the calibrated judge is "
        "at least this sure of it; the rest are uncertain (higher: fewer decided, each more often right)",
    )

    @field_validator("passes", mode="before")
    @classmethod
    def _yaml_yes_no(cls, value):
        # YAML reads a bare yes / no as a boolean.
        return {True: "yes", False: "no"}.get(value, value) if isinstance(value, bool) else value

    @field_validator("question")
    @classmethod
    def _question(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question is empty; write the yes/no question the judge answers about each answer")
        return value.strip()

    @field_validator("sees")
    @classmethod
    def _sees_answer(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    @field_validator("levels")
    @classmethod
    def _contiguous(cls, levels: dict[int, str] | None) -> dict[int, str] | None:
        if levels is None:
            return None
        keys = sorted(levels)
        if len(keys) > 9:
            raise ValueError(
                f"a rubric of {len(keys)} levels: use at most 9 (a level is one digit, the reply's first token)"
            )
        if len(keys) < 2 or keys != list(range(1, len(keys) + 1)):
            raise ValueError(
                f"levels must be numbered 1, 2, ... N without a gap (N >= 2), got {', '.join(map(str, keys))}; "
                "number them 1 to N"
            )
        empty = [k for k in keys if not str(levels[k]).strip()]
        if empty:
            raise ValueError(f"level {empty[0]} has no description; say what an answer at that level is like")
        return {k: str(levels[k]).strip() for k in keys}

    @field_validator("pass_level")
    @classmethod
    def _pass_level(cls, value: int | None, info) -> int | None:
        if value is None or "levels" not in info.data:  # no pass level, or levels already wrong
            return value
        levels = info.data.get("levels")
        if not levels:
            raise ValueError("pass_level is set but the criterion has no levels; add levels or remove pass_level")
        if value not in levels:
            raise ValueError(f"pass_level {value} is outside the levels 1 to {len(levels)}; pick one of them")
        return value

    @field_validator("uncertain")
    @classmethod
    def _band(cls, value: tuple[float, float]) -> tuple[float, float]:
        low, high = value
        if not 0 <= low <= 0.5 <= high <= 1:
            raise ValueError(f"need 0 <= low <= 0.5 <= high <= 1 around the cut-off 0.5, got [{low}, {high}]")
        return value

    @model_validator(mode="after")
    def _rubric_complete(self) -> CriterionConfig:
        if self.levels and self.pass_level is None:
            raise ValueError("a rubric needs pass_level: the lowest of its levels that passes")
        if self.gate_only and self.counts_as_failure:
            raise ValueError("gate_only and counts_as_failure exclude each other: a gate-only criterion never shows")
        if "reference" in self.sees and self.applies == "unanswerable":
            # Unanswerable questions have no reference answer, and answers without one are skipped.
            raise ValueError(
                "a criterion that sees the reference never decides an unanswerable question (they have none); "
                "remove reference from sees, or apply it to answerable ones"
            )
        return self

    def criterion(self) -> Criterion:
        """The criterion as the judge registry declares it."""
        return Criterion(
            question=self.question,
            sees=tuple(self.sees),
            applies=self.applies,
            passes=self.passes,
            levels=tuple(self.levels[k] for k in sorted(self.levels)) if self.levels else (),
            pass_level=self.pass_level,
            steps=tuple(self.steps),
            gate_only=self.gate_only,
            counts_as_failure=self.counts_as_failure,
            band=(float(self.uncertain[0]), float(self.uncertain[1])),
            aim=float(self.aim),
        )


_CRITERION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _criterion_name(name: str) -> str:
    if not _CRITERION_NAME.match(name):
        raise ValueError(f"the criterion name '{name}': use lower-case letters, digits and _ (e.g. names_setting)")
    if name in builtin_names():
        raise ValueError(
            f"the criterion '{name}' has the name of a built-in judge or figure; rename it (e.g. my_{name})"
        )
    return name


CriterionName = Annotated[str, AfterValidator(_criterion_name)]


OPENAI_API = "https://api.openai.com/v1"


def _endpoint(llm: LLMConfig) -> tuple[str, str | None, str | None, str | None]:
    """What makes two judges one: provider, model, endpoint (OpenAI's API where an openai judge names
    none) and, for the embedded server, the GGUF file (the shipped model where none is named)."""
    base = (llm.base_url or (OPENAI_API if llm.provider == "openai" else "")).rstrip("/") or None
    return llm.provider, llm.model, base, llm.model_path if llm.provider == "local" else None


class JudgesConfig(Settings):
    """Which judges run on the generated answers, with which model."""

    llm: LLMConfig = LLMConfig()
    criteria: dict[CriterionName, CriterionConfig] = Field(
        default_factory=dict,
        validate_default=True,
        description="your own criteria, by name (lower-case letters, digits, _): each is judged on every answer it "
        "applies to, its figure generation.<prompt>.<name> the share passing (see the guide 'Your own criteria')",
    )
    metrics: list[str] = Field(
        default_factory=lambda: list(DEFAULT_METRICS),
        min_length=1,
        description="judges to run: " + ", ".join(JUDGES.so_far()),  # plug-ins not read while the package imports
    )
    prompts_dir: str | None = Field(
        None, description="folder of the own judges' prompts; default: the prompts shipped with rag-eval"
    )
    parse_retries: int = Field(1, ge=0, description="re-asks after an unparseable Ragas output")
    ragas_requests: Literal["guided", "native"] = Field(
        "guided",
        description="what the Ragas metrics send: guided (schema-guided decoding, each reason bounded; stricter) "
        "or native (Ragas' own requests unchanged, to reproduce a Ragas number)",
    )
    faithfulness_threshold: float = Field(
        FAITHFUL_SHARE,
        ge=0,
        le=1,
        description="attribution: unfaithful below this share of supported statements (1.0: every claim "
        "supported, as the labels define faithful; 0.5: the majority rule of earlier versions)",
    )
    faithfulness_judge: str | None = Field(
        None,
        description="the faithfulness figure that decides attribution; default: faithfulness_yesno if run, "
        "else faithfulness",
    )
    labels: str | None = Field(
        None,
        description="a labels file (rag-eval label's CSV, filled in): judged figures get prediction-powered "
        "estimates and intervals from it",
    )
    cutoffs: dict[str, float] = Field(
        default_factory=dict,
        description="P(yes) cut-offs per judge, overriding the calibration saved by judge-check --save; "
        "correctness sets both of its prompts, correctness_short only the short-reference one",
    )
    uncertain: Literal["auto", "off"] | dict[str, tuple[float, float]] = Field(
        "auto",
        description="decisions in a band around the cut-off are uncertain: auto (the band saved with the "
        "calibration by judge-check --save), off, or {judge: [low, high]}",
    )
    escalate: EscalateConfig | None = Field(
        None, description="a second judge for the uncertain decisions: {llm: {...}, max_calls, prices}"
    )
    reasons: Literal["quote", "model"] = Field(
        "quote",
        description="the own judges' shown reasons: quote (a verified quote of the answer, context or reference, "
        "asked with the decided word forced: one or two short requests more per decision) or model (the words "
        "the model wrote after its verdict)",
    )

    @field_validator("criteria")
    @classmethod
    def _register_criteria(cls, found: dict[str, CriterionConfig]) -> dict[str, CriterionConfig]:
        # Registered as the config loads, so that every stage and surface that reads the judge
        # registry (judging, attribution, gates, compare, judge-check) knows them; an audit
        # registers its config's again as it starts (``JudgesConfig.register_criteria``).
        set_criteria({name: c.criterion() for name, c in found.items()})
        return found

    @field_validator("metrics")
    @classmethod
    def _known_judges(cls, names: list[str]) -> list[str]:
        for n in names:
            if n not in JUDGES:
                raise ValueError(JUDGES.unknown(n))
        return list(dict.fromkeys(names))

    @model_validator(mode="after")
    def _criteria_run(self) -> JudgesConfig:
        # Every criterion runs: it is one of the judges (after the ones named in metrics).
        self.metrics = [*self.metrics, *(n for n in self.criteria if n not in self.metrics)]
        return self

    @model_validator(mode="after")
    def _faithfulness_judge(self) -> JudgesConfig:
        fj, choices = self.faithfulness_judge, of_role("faithfulness")
        if fj is not None and fj not in choices:
            raise ValueError(f"faithfulness_judge must be {' or '.join(choices)}, not '{fj}'")
        if fj is not None and fj not in self.metrics:
            raise ValueError(f"faithfulness_judge '{fj}' is not among judges.metrics; add it there")
        return self

    @model_validator(mode="after")
    def _escalate_elsewhere(self) -> JudgesConfig:
        # A second judge that is the first (one endpoint, one model) only asks the same question
        # again: its answer is the first judge's close call once more.
        esc = self.escalate
        if esc is not None and _endpoint(esc.llm) == _endpoint(self.llm):
            raise ValueError(
                "escalate.llm is the first judge's own model and endpoint (judges.llm); the second judge must be "
                "another, stronger model: give escalate.llm another model or base_url"
            )
        return self

    @field_validator("uncertain", mode="before")
    @classmethod
    def _yaml_off(cls, value):
        # YAML reads a bare off / on as a boolean.
        return {False: "off", True: "auto"}.get(value, value) if isinstance(value, bool) else value

    @field_validator("uncertain")
    @classmethod
    def _bands(cls, value):
        if isinstance(value, dict):
            judges = banded()
            known = (*judges, *(v for j in judges for v in variants(j) if v != j))
            for judge, (low, high) in value.items():
                if judge not in known:
                    raise ValueError(f"judges.uncertain: no band for '{judge}'; " + did_you_mean(judge, list(known)))
                if not 0 <= low <= high <= 1:
                    raise ValueError(f"judges.uncertain.{judge}: need 0 <= low <= high <= 1, got [{low}, {high}]")
        return value

    def register_criteria(self) -> None:
        """Make this config's criteria the registered ones (a config validated since may have
        replaced them: the criteria of the config loaded last are registered)."""
        set_criteria({name: c.criterion() for name, c in self.criteria.items()})

    @property
    def deciding_faithfulness(self) -> str | None:
        """The faithfulness judge whose score decides ``unfaithful`` in attribution."""
        return self.deciding("faithfulness")

    def deciding(self, role: Role) -> str | None:
        """The configured judge that decides ``role`` in attribution (the registry's precedence;
        for faithfulness, ``faithfulness_judge`` first)."""
        if role == "faithfulness" and self.faithfulness_judge:
            return self.faithfulness_judge
        return next((n for n in deciders(role) if n in self.metrics), None)
