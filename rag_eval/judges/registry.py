"""Every judge, declared once: what it reads, when it applies, how it judges an answer, its labels
or score, the prompts it asks, its calls per answer, the figures it aggregates to, how judge-check
measures it, and the outcome it decides in attribution.

The judging stage, aggregation, attribution, ``compare``, ``judge-check``, the uncertain bands,
escalation, the config's choices and the cost estimate loop over this registry: a new judge is
one :class:`JudgeSpec` (here, or passed to ``JUDGES.register``; an installed plug-in names it in
the entry points ``rag_eval.judges``) and one prompt file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rag_eval.registry import Registry

if TYPE_CHECKING:
    from rag_eval.types import Chunk

Subset = Literal["all", "answerable", "unanswerable"]
# What a judge's verdict or score decides in attribution: ``refusal`` (refused, correct_refusal,
# answered_unanswerable), ``correctness`` (incorrect), ``faithfulness`` (unfaithful, below the
# threshold), ``retrieval`` (retrieval_miss where no retrieval labels exist: supplied answers) and
# ``citations`` (miscited, uncited).
Role = Literal["refusal", "correctness", "faithfulness", "retrieval", "citations"]


@dataclass(frozen=True)
class Figure:
    """One aggregate of a judge: the mean of its score, or the share of a verdict, over a subset of
    the questions. ``better`` says which direction is good (for comparisons)."""

    name: str
    subset: Subset = "all"
    verdict: str | None = None  # the share of this verdict; None: the mean of the score
    better: Literal["higher", "lower"] = "higher"
    detail: str | None = None  # the mean of this number of the judgement's details instead of its score

    @property
    def binary(self) -> bool:
        return self.verdict is not None

    def value(self, j: Any) -> float | None:
        """This figure's value for one judged record: 1 or 0 for a verdict's share, else its score or
        the number its ``detail`` names (None where the record has none)."""
        if self.binary:
            return float(j.verdict == self.verdict)
        v = (getattr(j, "details", None) or {}).get(self.detail) if self.detail else j.score
        return None if v is None else float(v)

    @property
    def comparison_name(self) -> str:
        """The name of the paired comparison, where higher is always better."""
        return self.name if self.better == "higher" else f"no_{self.name}"


# Once labels calibrate a criterion, a decision stays decided where the calibrated judge is at least
# this sure of it (the criterion's ``aim`` unless set; the band before labels is its own ``band``,
# never fitted). 0.80 since method v4 of benchmarks/criteria (0.85 in v3, the built-in judges'
# 0.90 before): a blend's decided verdicts are right more often than its band's edge says, so on
# the study's labelled parts an aim of 0.80 kept them right about 0.86-0.93 of the time with the
# fewest uncertain; chosen on those parts, measured on its fourth fresh part.
CRITERION_AIM = 0.80


@dataclass(frozen=True)
class Criterion:
    """A user's own criterion (``judges.criteria`` of a config): a yes/no ``question`` about the answer,
    or a rubric (``levels``: the description of level 1, 2, ... N; it passes at ``pass_level`` or
    above), the inputs the judge ``sees``, which answers it ``applies`` to, and how a failure counts."""

    question: str
    sees: tuple[str, ...] = ("question", "answer")  # of: question, answer, contexts, reference
    applies: Literal["answered", "all", "answerable", "unanswerable"] = "answered"
    passes: Literal["yes", "no"] = "yes"  # the answer to ``question`` that passes
    levels: tuple[str, ...] = ()
    pass_level: int | None = None
    steps: tuple[str, ...] = ()  # evaluation steps shown to the judge, in order (DeepEval's GEval)
    gate_only: bool = False  # a figure for gates only: no flag beside the outcomes, no list of failures
    counts_as_failure: bool = False  # a failure turns an otherwise ``ok`` outcome into ``failed_criterion``
    band: tuple[float, float] = (0.1, 0.9)  # uncertain while P(pass) lies here, until labels calibrate it
    aim: float = CRITERION_AIM  # once calibrated, decided where the calibrated judge is this sure

    @property
    def rubric(self) -> bool:
        return bool(self.levels)


@dataclass(frozen=True)
class PromptFile:
    """A yes/no prompt a judge asks: a file name in the judges' prompt folder (``judges.prompts_dir``,
    else the shipped ``prompts/judges/``) or a path, and the placeholders it must hold. Its key (the
    file's stem, or ``name``) names it among the loaded prompts. A criterion's prompt is the shared
    template rendered with the criterion (``judges/criteria.py``)."""

    file: str
    placeholders: tuple[str, ...]
    name: str | None = None
    criterion: Criterion | None = None

    @property
    def key(self) -> str:
        return self.name or Path(self.file).stem


@dataclass(frozen=True)
class CaseKind:
    """A kind of labelled judge-check case (a case's ``judge`` field): its labels, the positive one
    first, and the fields a case needs."""

    name: str
    labels: tuple[str, ...]
    needs: tuple[str, ...]

    @property
    def positive(self) -> str:
        return self.labels[0]


Reading = Literal["probability", "statements", "score"]


@dataclass(frozen=True)
class Check:
    """How judge-check measures a judge: on which kind of case, and how a decision is read from its
    judgement. ``probability``: its P(positive), decided at a cut-off fitted on the cases;
    ``statements``: each statement's P(supported), the case positive when the share at the cut-off
    reaches the threshold; ``score``: its score at the threshold, no cut-off (Ragas)."""

    kind: CaseKind
    reading: Reading = "probability"
    by_default: bool = True  # measured when judge-check is given no --judges


@dataclass(frozen=True)
class Inputs:
    """What a judge reads of one answer; ``prompt`` names the generation prompt ("check" in judge-check)."""

    question_id: str
    prompt: str
    question: str
    answer: str | None = None
    contexts: list[str] = field(default_factory=list)
    reference: str | None = None
    # The contexts as chunks (their ids and titles: what a citation may name); empty where unknown.
    chunks: list[Chunk] = field(default_factory=list)


@dataclass(frozen=True)
class Families:
    """The judge implementations bound to one judge model: ``scored`` (``ScoredJudges``, yes/no
    prompts scored by probability) and ``ragas`` (``RagasJudges``; None when no Ragas judge runs)."""

    scored: Any = None
    ragas: Any = None


# The registry sits in the config layer (the config checks judge names against it), below the
# judges' own records: a judge callable returns a ``judges.judgement.Judgement``, typed here as Any.
JudgeFn = Callable[[Families, Inputs], Awaitable[Any]]


def _undeclared(families: Families, x: Inputs) -> Awaitable[Any]:
    raise NotImplementedError("this judge declares no judge callable")


@dataclass(frozen=True)
class JudgeSpec:
    """A judge: what it reads, when it applies, how it judges, what it returns and what it is used for."""

    name: str
    needs: tuple[str, ...]  # of: question, answer, contexts, reference
    figures: tuple[Figure, ...]
    labels: tuple[str, ...] = ()  # verdict judges: the verdicts, positive first; score judges: ()
    # scored: yes/no prompts scored by probability; ragas: a Ragas metric; plain: asks no model
    # (a judge of your own that reads its inputs alone: no prompt, cut-off, band or reasons to ask).
    family: Literal["ragas", "scored", "plain"] = "scored"
    answer_independent: bool = False  # judged once per question, shared by every prompt
    answerable_only: bool = False
    unanswerable_only: bool = False
    skip_refusals: bool = False  # a refusal makes no claim to check
    role: Role | None = None  # the outcome it decides in attribution (None: it decides none)
    precedence: int = 0  # among configured judges of one role, the highest decides
    calls: Callable[[int, int], int] = lambda top_k, statements: 1  # (top k, statements) -> calls
    # The short requests more per answer for a quoted reason (judges.reasons: quote), at most.
    reason_calls: Callable[[int, int], int] = lambda top_k, statements: 0
    description: str = ""
    human_label: str | None = None  # the column of a labels file a person fills for this judge (yes/no)
    # (judges, inputs) -> the Judgement; e.g. ``lambda f, x: f.scored.verdict("mine", x)``.
    judge: JudgeFn = _undeclared
    # Scored judges: the prompt behind each cut-off name, one per judge or one per variant of a
    # judge that asks one of several prompts case by case (each variant has its own cut-off).
    prompts: Mapping[str, PromptFile] = field(default_factory=dict, hash=False)
    yes: str | None = None  # verdict judges: the verdict a "yes" means (default: the positive)
    check: Check | None = None  # how judge-check measures it (None: it does not)
    band_target: float | None = None  # the decided verdicts' agreement its uncertain band aims at; None: no band
    criterion: Criterion | None = None  # a user's own criterion (``judges.criteria``); None: a built-in judge

    @property
    def checked(self) -> Check:
        """How judge-check measures this judge; an error for a judge it does not measure."""
        if self.check is None:
            raise ValueError(
                f"judge-check does not measure the judge {self.name!r}: pick one of {', '.join(checked_judges())}"
            )
        return self.check

    @property
    def positive(self) -> str | None:
        return self.labels[0] if self.labels else None

    def labelled(self, fig: Figure) -> bool:
        """Whether a person's label column estimates this figure of the judge: a column exists, and
        the figure is a score or the share of the positive verdict (what a yes records)."""
        return self.human_label is not None and not fig.detail and (not fig.binary or fig.verdict == self.positive)

    @property
    def yes_no(self) -> tuple[str, str]:
        """(the verdict for yes, the verdict for no) of a verdict judge."""
        yes = self.yes or self.labels[0]
        return yes, next(v for v in self.labels[:2] if v != yes)

    @property
    def variants(self) -> tuple[str, ...]:
        """The names of its cut-offs: one per prompt it may ask, else its own name."""
        return tuple(self.prompts) or (self.name,)

    def applies(self, answerable: bool, has_reference: bool, refused: bool | None) -> str | None:
        """None when the judge applies to this answer, else why it is skipped."""
        if self.answerable_only and not answerable:
            return "unanswerable question"
        if self.unanswerable_only and answerable:
            return "answerable question"
        if "reference" in self.needs and not has_reference:
            return "no reference answer"
        if self.skip_refusals and refused:
            return "the answer is a refusal"
        return None


SUPPORTED = PromptFile("supported.md", ("context", "question", "statement"))
CITATION_SUPPORTED = PromptFile("citation_supported.md", ("context", "question", "statement"))
USEFUL = PromptFile("useful.md", ("question", "reference", "context"))

# The share of an answer's statements that must be supported for it to count as faithful: every
# one, as the labels of the real cases define it (judges.faithfulness_threshold; judge-check --threshold).
FAITHFUL_SHARE = 1.0

# The kinds of labelled cases judge-check reads (partial counts as not correct, as in attribution).
CORRECTNESS_CASES = CaseKind("correctness", ("correct", "partial", "incorrect"), ("question", "reference", "answer"))
REFUSAL_CASES = CaseKind("refusal", ("refused", "answered"), ("question", "answer"))
FAITHFULNESS_CASES = CaseKind("faithfulness", ("faithful", "unfaithful"), ("question", "contexts", "answer"))
_SHIPPED_CASES = (CORRECTNESS_CASES, REFUSAL_CASES, FAITHFULNESS_CASES)
# The shipped kinds, then those of the judges registered since (kept in step with JUDGES).
CASE_KINDS: dict[str, CaseKind] = {k.name: k for k in _SHIPPED_CASES}


def _same_cases(spec: JudgeSpec) -> None:
    """A judge's judge-check cases are new, or the same as those declared under that name."""
    if spec.check is not None and CASE_KINDS.get(spec.check.kind.name, spec.check.kind) != spec.check.kind:
        raise ValueError(f"judge-check cases '{spec.check.kind.name}' are declared already, differently")


def _case_kinds() -> None:
    kinds = {k.name: k for k in _SHIPPED_CASES}
    for spec in JUDGES.so_far().values():
        if spec.check is not None:
            kinds.setdefault(spec.check.kind.name, spec.check.kind)
    CASE_KINDS.clear()
    CASE_KINDS.update(kinds)


# Every judge by name: the shipped ones, then the registered (``JUDGES.register(spec)``, an installed
# plug-in's entry point in ``rag_eval.judges``, a config's criteria).
JUDGES: Registry[JudgeSpec] = Registry("judge", lambda spec: spec.name, check=_same_cases, changed=_case_kinds)
for _spec in (
    JudgeSpec(
        "refusal",
        ("question", "answer"),
        (
            Figure("refusal_accuracy", "unanswerable", "refused"),
            Figure("needless_refusal", "answerable", "refused", better="lower"),
        ),
        labels=("refused", "answered"),
        role="refusal",
        reason_calls=lambda k, s: 1,
        human_label="refused",
        description="did the answer give the information, or decline? (yes/no, scored by probability)",
        judge=lambda f, x: f.scored.refusal(x.question_id, x.prompt, x.question, x.answer),
        # The prompt asks "does the answer give the information?": a small model reads "does it
        # decline?" backwards (AUC 0.14 against 0.98 on the hand-labelled refusal cases).
        prompts={"refusal": PromptFile("refusal.md", ("question", "answer"))},
        yes="answered",
        check=Check(REFUSAL_CASES),
        band_target=0.95,
    ),
    JudgeSpec(
        "correctness",
        ("question", "reference", "answer"),
        (Figure("correctness", "answerable", "correct"),),
        labels=("correct", "incorrect"),
        answerable_only=True,
        role="correctness",
        reason_calls=lambda k, s: 2,
        human_label="correct",
        description="does the answer give the reference's fact? (yes/no, scored by probability)",
        judge=lambda f, x: f.scored.correctness(x.question_id, x.prompt, x.question, x.reference, x.answer),
        # A short reference is asked about by name, a longer one as a statement (scored.py).
        prompts={
            "correctness": PromptFile("correctness.md", ("question", "reference", "answer")),
            "correctness_short": PromptFile("correctness_short.md", ("question", "reference", "answer")),
        },
        check=Check(CORRECTNESS_CASES),
        band_target=0.90,
    ),
    JudgeSpec(
        "faithfulness",
        ("question", "answer", "contexts"),
        (Figure("faithfulness"),),
        family="ragas",
        skip_refusals=True,
        role="faithfulness",
        human_label="faithful",
        calls=lambda k, s: 2,
        description="Ragas Faithfulness: statements from the answer, each checked against the contexts",
        judge=lambda f, x: f.ragas.judge_faithfulness(x.question_id, x.prompt, x.question, x.answer, x.contexts),
        check=Check(FAITHFULNESS_CASES, "score", by_default=False),
    ),
    JudgeSpec(
        "faithfulness_yesno",
        ("question", "answer", "contexts"),
        (Figure("faithfulness_yesno"),),
        skip_refusals=True,
        role="faithfulness",
        precedence=1,  # decides attribution when both faithfulness judges run
        human_label="faithful",
        calls=lambda k, s: s,
        reason_calls=lambda k, s: 2 * s,
        description="share of the answer's sentences the contexts support (yes/no per sentence)",
        judge=lambda f, x: f.scored.faithfulness(x.question_id, x.prompt, x.question, x.answer, x.contexts),
        prompts={"faithfulness_yesno": SUPPORTED},
        check=Check(FAITHFULNESS_CASES, "statements"),
        band_target=0.90,
    ),
    JudgeSpec(
        "citations",
        ("question", "answer", "contexts"),
        (
            Figure("citation_recall"),
            Figure("citation_precision", detail="citation_precision"),
            Figure("well_cited", verdict="cited"),
            Figure("miscited", verdict="miscited", better="lower"),
            Figure("uncited", verdict="uncited", better="lower"),
        ),
        labels=("cited", "miscited", "uncited", "unsupported"),
        skip_refusals=True,
        role="citations",
        human_label="citations_support",
        # One per claim; about one in two more: the precision checks of a sentence citing several
        # passages, and where a claim's own citations fail, the check against every given passage.
        calls=lambda k, s: s + (s + 1) // 2,
        reason_calls=lambda k, s: 2 * s,
        description="each sentence's citations: supported by the passages it cites (recall), each "
        "citation needed (precision, ALCE's rule); yes/no per cited sentence",
        judge=lambda f, x: f.scored.citations(x),
        prompts={"citations": CITATION_SUPPORTED},
    ),
    JudgeSpec(
        "context_precision",
        ("question", "reference", "contexts"),
        (Figure("context_precision"),),
        family="ragas",
        answer_independent=True,
        calls=lambda k, s: k,
        description="Ragas ContextPrecisionWithReference: usefulness of each context, average precision",
        judge=lambda f, x: f.ragas.judge_context_precision(
            x.question_id, x.prompt, x.question, x.reference, x.contexts
        ),
    ),
    JudgeSpec(
        "context_precision_yesno",
        ("question", "reference", "contexts"),
        (Figure("context_precision_yesno"),),
        answer_independent=True,
        calls=lambda k, s: k,
        reason_calls=lambda k, s: k,
        description="usefulness of each context (yes/no), average precision",
        judge=lambda f, x: f.scored.context_precision(x.question_id, x.prompt, x.question, x.reference, x.contexts),
        prompts={"context_precision_yesno": USEFUL},
    ),
    JudgeSpec(
        "context_recall",
        ("question", "reference", "contexts"),
        (Figure("context_recall"),),
        family="ragas",
        answer_independent=True,
        role="retrieval",
        description="Ragas ContextRecall: reference statements found in the contexts",
        judge=lambda f, x: f.ragas.judge_context_recall(x.question_id, x.prompt, x.question, x.reference, x.contexts),
    ),
    JudgeSpec(
        "context_recall_yesno",
        ("question", "reference", "contexts"),
        (Figure("context_recall_yesno"),),
        answer_independent=True,
        role="retrieval",
        precedence=1,
        calls=lambda k, s: s,
        reason_calls=lambda k, s: 2 * s,
        description="share of the reference's sentences the contexts support (yes/no per sentence)",
        judge=lambda f, x: f.scored.context_recall(x.question_id, x.prompt, x.question, x.reference, x.contexts),
        prompts={"context_recall_yesno": SUPPORTED},
    ),
):
    JUDGES.register(_spec)
JUDGE_NAMES = tuple(JUDGES.so_far())  # the shipped judges; JUDGES also holds the ones registered since
# What a default audit runs: the three Ragas metrics the user named, rag-eval's correctness and
# refusal, and the probability-scored faithfulness that decides attribution on small models.
DEFAULT_METRICS = (
    "faithfulness",
    "context_precision",
    "context_recall",
    "correctness",
    "refusal",
    "faithfulness_yesno",
)


# What a person answers for each label column of a labels file.
HUMAN_LABELS = {
    "correct": "Does the answer give the reference answer's information (correct)?",
    "faithful": "Is everything the answer states supported by the contexts?",
    "refused": "Did the answer decline to answer (instead of giving information)?",
}
# The label columns of built-in judges a run may leave out: a labels file has one only where its run
# ran the judge (``labels/columns.py``), by judge name: (column, what a person answers).
OPTIONAL_LABELS = {"citations": ("citations_support", "Does each citation support its sentence?")}


def register(spec: JudgeSpec) -> JudgeSpec:
    """``JUDGES.register(spec)``: add a judge (after the shipped ones; its judge-check case kind too);
    ValueError if the name is taken. Config validation, the judging stage and judge-check see it from then on."""
    return JUDGES.register(spec)


def registered(*specs: JudgeSpec) -> contextlib.AbstractContextManager[None]:
    """``JUDGES.registered(*specs)``: the judges registered for a ``with`` block (a plug-in's tests, a notebook)."""
    return JUDGES.registered(*specs)


def figures(names: list[str]) -> list[tuple[JudgeSpec, Figure]]:
    """Every figure of the named judges, in registry order."""
    return [(spec, f) for n, spec in JUDGES.items() if n in names for f in spec.figures]


def of_role(role: Role) -> tuple[str, ...]:
    """The judges that decide ``role``, in registry order."""
    return tuple(n for n, spec in JUDGES.items() if spec.role == role)


def deciders(role: Role) -> tuple[str, ...]:
    """The judges that decide ``role``, the one that decides first (highest precedence, then
    registry order)."""
    return tuple(sorted(of_role(role), key=lambda n: -JUDGES[n].precedence))


def decider(role: Role, present) -> str | None:
    """The judge that decides ``role`` among ``present`` (names, or records keyed by name)."""
    return next((n for n in deciders(role) if n in present), None)


def variants(name: str) -> tuple[str, ...]:
    """The cut-off names of a judge (one per prompt it may ask); a name that is no judge (a variant
    such as ``correctness_short``) stands for itself."""
    spec = JUDGES.get(name)
    return spec.variants if spec is not None else (name,)


def prompt_files() -> dict[str, PromptFile]:
    """Every cut-off name of the scored judges and the prompt behind it, in registry order."""
    return {v: p for spec in JUDGES.values() if spec.family == "scored" for v, p in spec.prompts.items()}


def banded() -> tuple[str, ...]:
    """The judges whose decisions an uncertain band can mark, in registry order."""
    return tuple(n for n, spec in JUDGES.items() if spec.band_target is not None)


def band_targets() -> dict[str, float]:
    """The agreement each cut-off's band aims at, by cut-off name."""
    return {v: spec.band_target for spec in JUDGES.values() if spec.band_target is not None for v in spec.variants}


def checked_judges() -> list[str]:
    """The judges judge-check measures, in registry order."""
    return [n for n, spec in JUDGES.items() if spec.check is not None]


def judges_for(kind: str) -> tuple[str, ...]:
    """The judges judge-check measures on cases of ``kind``, in registry order, those run by
    default first."""
    mine = [n for n, spec in JUDGES.items() if spec.check is not None and spec.check.kind.name == kind]
    return tuple(sorted(mine, key=lambda n: not JUDGES[n].checked.by_default))


# -- the user's own criteria (``judges.criteria``) ------------------------------------------------

CRITERION_PROMPT = "criterion.md"  # the one template every criterion's prompt is rendered from
CRITERION_INPUTS = ("question", "answer", "contexts", "reference")
CRITERION_APPLIES = ("answered", "all", "answerable", "unanswerable")


def criterion_spec(name: str, c: Criterion) -> JudgeSpec:
    """The judge a criterion is: one probability-scored question (a rubric's P(level >= pass_level))
    whose verdict is ``pass`` or ``fail``; its figure, named as the criterion, is the share passing."""
    subset: Subset = (
        "answerable" if c.applies == "answerable" else "unanswerable" if c.applies == "unanswerable" else "all"
    )
    needs = tuple(i for i in CRITERION_INPUTS if i in c.sees)
    what = f"rubric of {len(c.levels)} levels, passes at {c.pass_level}" if c.rubric else f"passes on {c.passes}"
    return JudgeSpec(
        name,
        needs,
        (Figure(name, subset, "pass"),),
        labels=("pass", "fail"),
        answerable_only=c.applies == "answerable",
        unanswerable_only=c.applies == "unanswerable",
        skip_refusals=c.applies == "answered",
        # A yes/no criterion's reason: one forced quote (``evidence.py``); a rubric keeps the model's own words.
        reason_calls=(lambda k, s: 0) if c.rubric else (lambda k, s: 1),
        description=f"your criterion: {c.question} ({what})",
        judge=lambda f, x: f.scored.verdict(name, x),
        prompts={name: PromptFile(CRITERION_PROMPT, needs, name=name, criterion=c)},
        yes="fail" if c.passes == "no" and not c.rubric else "pass",
        check=Check(CaseKind(name, ("pass", "fail"), needs)),
        band_target=c.aim,
        # Its labels file column, named as it; read as whether the answer passes (``labels/columns.py``).
        human_label=name,
        criterion=c,
    )


def criteria() -> dict[str, Criterion]:
    """The criteria registered now (those of the config validated last), by name."""
    return {n: spec.criterion for n, spec in JUDGES.items() if spec.criterion is not None}


def builtin_names() -> set[str]:
    """The names a criterion may not take: every judge that is not a criterion, and their figures."""
    specs = [spec for spec in JUDGES.values() if spec.criterion is None]
    figures = {name for s in specs for f in s.figures for name in (f.name, f.comparison_name)}
    # "ok": the outcome that prompt comparisons compare beside the judges' figures.
    return {s.name for s in specs} | figures | {"ok"}


def set_criteria(found: Mapping[str, Criterion]) -> None:
    """Make ``found`` the registered criteria (those registered before are dropped): a config's
    criteria reach every stage and surface that reads the registry. ValueError for a name that is a
    built-in judge or figure."""
    for name in found:
        if name in builtin_names():
            raise ValueError(f"the criterion '{name}' has the name of a built-in judge or figure; rename it")
    for name in list(criteria()):
        JUDGES.pop(name)
        CASE_KINDS.pop(name, None)
    for name, c in found.items():
        register(criterion_spec(name, c))


@contextlib.contextmanager
def criteria_registered(found: Mapping[str, Criterion]) -> Iterator[None]:
    """``found`` as the registered criteria for a ``with`` block (another run's criteria, read back
    from its report), the ones registered before restored after."""
    before = criteria()
    set_criteria(found)
    try:
        yield
    finally:
        set_criteria(before)
