"""The report's settings: where run folders go (``report:``), the statistics behind its intervals
(``stats:``) and the rule of a gate (``gates:``)."""

from __future__ import annotations

import operator
import re

from pydantic import (
    Field,
)

from rag_eval.config_base import Settings
from rag_eval.errors import ConfigError, Problem


class StatsConfig(Settings):
    """Intervals and paired tests of the report's figures."""

    seed: int = Field(
        0,
        description="seed of the bootstrap and permutation resamples, of generation.sample's draw and of the "
        "traces drawn to label: the same seed gives the same intervals and p-values",
    )
    bootstrap_resamples: int = Field(
        10_000,
        ge=100,
        description="resamples of each bootstrap interval (metrics and paired differences); fewer: faster, "
        "interval ends less stable",
    )
    permutation_resamples: int = Field(
        10_000,
        ge=100,
        description="resamples of the paired permutation test, whose p-value is the one reported for metrics that "
        "are not yes/no (mrr, ndcg@k); yes/no metrics (hit@k) use the exact sign test",
    )
    confidence: float = Field(0.95, gt=0, lt=1, description="confidence level of every interval (0.95: 95% intervals)")
    alpha: float = Field(
        0.05,
        gt=0,
        lt=1,
        description="significance level of the paired comparisons after the Holm correction: below it a "
        "difference is settled; also the level of the questions-needed (80% power) figure",
    )


class ReportConfig(Settings):
    """Where the run folders (report, records, logs) are written."""

    out: str = Field(
        "runs/",
        description="folder of the run folders (<name>-<date>-<time>/), relative to the config's folder; "
        "--out overrides it",
    )


# A gate's rule: a comparison and a number (``gates: {figure: ">= 0.8"}``), checked when the
# config loads; rag_eval/report/gates.py applies it to a run's figures.
OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq}
_RULE = re.compile(r"^\s*(>=|<=|==|>|<)\s*(-?\d+(?:\.\d+)?)\s*$")


def parse_rule(rule: str, where: str) -> tuple[str, float]:
    """The comparison and the threshold of a gate rule such as ``>= 0.8``."""
    m = _RULE.match(str(rule))
    if not m:
        raise ConfigError(
            Problem(
                where, f"gate rule {rule!r} is not of the form '>= 0.8'", "use one of >=, <=, >, <, == and a number"
            )
        )
    return m.group(1), float(m.group(2))
