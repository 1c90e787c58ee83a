"""The records of a run-against-run diff: what ``rag_eval.orchestration.diff`` builds, what
``rag-eval diff --json`` writes (``DiffData``), and what the renderers and the diff gates read."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from rag_eval.attribution.records import ContextMark, JudgeBrief
from rag_eval.base_records import Model, Num
from rag_eval.report.settings import StatsConfig

_STATS = StatsConfig()


class JudgeNoise(Model):
    """A judged figure's difference set against the judge's own noise (or why it is unmeasured)."""

    noise: Num | None = None
    source: str | None = None
    within: bool | None = None
    note: str | None = None


class FigureEntry(Model):
    """One figure of both runs, compared on the questions both can compare (new − base).

    ``name`` (``retrieval.<retriever>.<metric>``, ``generation.<prompt>.<figure>``,
    ``attribution.<prompt>.<outcome>``) is the figure's key in the JSON; ``better_ids`` /
    ``worse_ids`` the questions where the new run is better / worse (the JSON's ``moved``)."""

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
    name: str = Field("", exclude=True)
    better_ids: list[str] = Field([], exclude=True)
    worse_ids: list[str] = Field([], exclude=True)

    def entry(self) -> dict[str, Any]:
        """The figure's entry in the JSON of the diff (every key; ``judge_noise`` where measured)."""
        out = self.model_dump(mode="json", exclude={"judge_noise"})
        return {**out, "judge_noise": self.judge_noise.dump()} if self.judge_noise is not None else out

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


class MovedIds(Model):
    """The questions that moved on one figure: better and worse."""

    better: list[str] = []
    worse: list[str] = []


class DiffData(Model):
    """Two runs compared: every shared figure, the questions that moved, what was not compared."""

    base: str = ""
    new: str = ""
    base_name: str = ""
    new_name: str = ""
    confidence: Num = _STATS.confidence
    alpha: Num = _STATS.alpha
    shared_questions: int = 0
    same_corpus: bool = True
    empty: bool = False
    figures: dict[str, FigureEntry] = {}
    moved: dict[str, MovedIds] = {}
    questions: list[MovedEntry] = []
    only_in_base: list[str] = []
    only_in_new: list[str] = []
    not_compared: list[NotCompared] = []
    notes: list[str] = []
    warnings: list[str] = []  # what the reader must know first (runs of two configs)

    def changed(self) -> dict[str, FigureEntry]:
        """The figures that moved on some question."""
        return {n: e for n, e in self.figures.items() if e.changed}

    def named_figures(self) -> list[FigureEntry]:
        """The figures with their names and moved questions filled in from the JSON's keys."""
        out = []
        for name, e in self.figures.items():
            moved = self.moved.get(name, MovedIds())
            out.append(e.model_copy(update={"name": name, "better_ids": moved.better, "worse_ids": moved.worse}))
        return out

    def moved_lines(self, figure: str, *, limit: int = 10) -> list[str]:
        """The questions that got worse on a figure, as ``id: before -> after`` lines (gate output)."""
        worse = self.moved.get(figure, MovedIds()).worse
        system = figure.split(".")[1] if figure.count(".") >= 2 else ""
        scope = "retrieval" if figure.startswith("retrieval.") else "generation"
        by_q = {m.question_id: m for m in self.questions if m.scope == scope and m.system == system}
        out = []
        for q in sorted(worse, key=lambda q: by_q[q].severity if q in by_q else 0.0):  # worst first
            m = by_q.get(q)
            if m is None:
                out.append(q)
            elif scope == "retrieval":
                rb, rn = (e.rank or "not retrieved" for e in (m.base, m.new))
                out.append(f"{q}: first relevant chunk at rank {rb} -> {rn} ({m.question})")
            else:
                out.append(f"{q}: {m.base.outcome} -> {m.new.outcome} ({m.question})")
        return out[:limit] + ([f"... and {len(out) - limit} more"] if len(out) > limit else [])
