"""The JSON of a run-against-run diff (``RunDiff.to_json()``, what ``rag-eval diff --json``
writes), typed for the renderers and the diff gates."""

from __future__ import annotations

from rag_eval.attribution_records import ContextMark, JudgeBrief
from rag_eval.typed import Model, Num


class JudgeNoise(Model):
    """A judged figure's difference set against the judge's own noise (or why it is unmeasured)."""

    noise: Num | None = None
    source: str | None = None
    within: bool | None = None
    note: str | None = None


class FigureEntry(Model):
    """One figure of both runs, compared on the questions both can compare (new − base)."""

    base: Num | None = None
    new: Num | None = None
    diff: Num | None = None
    ci_low: Num | None = None
    ci_high: Num | None = None
    p_value: Num | None = None
    p_holm: Num | None = None
    verdict: str = ""
    n: int = 0
    test: str | None = None
    better: str = "higher"
    better_on: int = 0
    worse_on: int = 0
    same_on: int = 0
    detectable: Num | None = None
    base_system: str = ""
    scope: str = ""
    system: str = ""
    metric: str = ""
    binary: bool = False
    judge_noise: JudgeNoise | None = None

    @property
    def changed(self) -> bool:
        return bool(self.better_on or self.worse_on)

    def settled(self, alpha: float) -> bool:
        return self.p_holm is not None and self.p_holm < alpha and self.changed

    @property
    def direction(self) -> int:
        """+1 when the new run is better on the figure, -1 when worse, 0 when equal."""
        d = self.diff or 0.0
        d = d if self.better == "higher" else -d
        return (d > 0) - (d < 0)

    @property
    def within_noise(self) -> bool:
        return bool(self.judge_noise and self.judge_noise.within)


class Evidence(Model):
    """One run's evidence for a moved question: the ranks and chunks (retrieval), or the outcome,
    answer, contexts and judges (generation)."""

    rank: int | None = None
    top: list[ContextMark] = []
    relevant: list[str] = []
    outcome: str | None = None
    why: str | None = None
    answer: str | None = None
    contexts: list[ContextMark] = []
    judges: dict[str, JudgeBrief] = {}


class MovedEntry(Model):
    """A question whose figures differ between the runs for one retriever or prompt."""

    question_id: str = ""
    question: str = ""
    scope: str = ""
    system: str = ""
    base_system: str = ""
    severity: Num = 0
    changes: dict[str, Num] = {}
    better: list[str] = []
    worse: list[str] = []
    base: Evidence = Evidence()
    new: Evidence = Evidence()
    judge_noise: list[str] = []


class NotCompared(Model):
    """A question (for one retriever or prompt) the diff could not compare, and why."""

    question_id: str = ""
    scope: str = ""
    system: str = ""
    why: str = ""


class DiffData(Model):
    """Two runs compared: every shared figure, the questions that moved, what was not compared."""

    base: str = ""
    new: str = ""
    base_name: str = ""
    new_name: str = ""
    confidence: Num = 0.95
    alpha: Num = 0.05
    shared_questions: int = 0
    same_corpus: bool = True
    empty: bool = False
    figures: dict[str, FigureEntry] = {}
    moved: dict[str, dict[str, list[str]]] = {}
    questions: list[MovedEntry] = []
    only_in_base: list[str] = []
    only_in_new: list[str] = []
    not_compared: list[NotCompared] = []
    notes: list[str] = []

    def changed(self) -> dict[str, FigureEntry]:
        """The figures that moved on some question."""
        return {n: e for n, e in self.figures.items() if e.changed}
