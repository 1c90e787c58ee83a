"""The base of the records stages hand each other, and the figure every stage reports.

Records are pydantic models written to the run folder as JSON. A key is written when the stage
set it, so a record read from an older run folder (which may lack keys added since) is written
back with exactly the keys it had: ``dump()`` is ``model_dump(exclude_unset=True)``. Unknown keys
are kept as they are (``extra="allow"``), so a newer folder read by this code loses nothing.
"""

from __future__ import annotations

from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict

T = TypeVar("T")

# A JSON number: ints stay ints (a count) and floats floats, so a file rewritten is unchanged.
Num = int | float


class Model(BaseModel):
    """A record of the run folder: typed fields, keys kept as set, unknown keys kept."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True, validate_assignment=True)

    def dump(self) -> dict[str, Any]:
        """The JSON-ready dict with the keys that were set (the file's shape)."""
        return self.model_dump(mode="json", exclude_unset=True)

    @classmethod
    def load(cls, data: dict[str, Any] | Self) -> Self:
        """The record from its JSON dict (as read from a run folder), or the record itself."""
        return data if isinstance(data, cls) else cls.model_validate(data)


class Figure(Model):
    """A figure with its interval and the number of questions behind it (``summary.json``'s
    ``{value, ci_low, ci_high, n}``); ``value`` is None when nothing could be measured."""

    value: Num | None = None
    ci_low: Num | None = None
    ci_high: Num | None = None
    n: int | None = None


class PairedComparison(Model):
    """Two systems (retrievers, prompts) compared question by question on one metric
    (``stats.Comparison`` as written to the report)."""

    a: str = ""
    b: str = ""
    metric: str = ""
    wins: int = 0
    losses: int = 0
    ties: int = 0
    diff: Num | None = None
    ci_low: Num | None = None
    ci_high: Num | None = None
    p_value: Num | None = None
    test: str | None = None
    p_sign: Num | None = None
    p_permutation: Num | None = None
    detectable: Num | None = None
    p_holm: Num | None = None
    needed: int | None = None
    verdict: str = ""

    @property
    def pair(self) -> str:
        """``a_vs_b``: the comparison's key in summary.json."""
        return f"{self.a}_vs_{self.b}"

    def shown(self) -> tuple[str, str]:
        """The difference with its interval, and wins/losses/ties, as the reports print them."""
        return (
            f"{self.diff:+.3f} [{self.ci_low:+.3f}, {self.ci_high:+.3f}]",
            f"{self.wins}/{self.losses}/{self.ties}",
        )

    def picked(self, keys: tuple[str, ...]) -> dict[str, Any]:
        """The fields ``keys`` of the comparison, for summary.json."""
        return {k: getattr(self, k) for k in keys}


class StageReuse(Model):
    """What a resumed run reused of one stage, and what it redid (by the input that changed)."""

    reused: int = 0
    redone: dict[str, int] = {}

    def redone_text(self) -> str:
        """``4 because the prompt changed, 3 whose earlier attempt failed``."""
        return ", ".join(
            f"{n} whose earlier attempt failed" if why == FAILED_BEFORE else f"{n} because the {why} changed"
            for why, n in self.redone.items()
        )


# ``StageReuse.redone``'s key for work redone because its record in the run folder is a failure.
FAILED_BEFORE = "earlier attempt failed"


def required(value: T | None, what: str) -> T:
    """``value``, which the caller reads only where its stage ran (a report section, a config
    section, a check's reading); a clear error instead of an AttributeError on None otherwise."""
    if value is None:
        raise ValueError(
            f"{what} is missing: the stage that writes it did not run (or the run folder or config "
            "predates it); rerun that stage, or read this part only when it is present"
        )
    return value
