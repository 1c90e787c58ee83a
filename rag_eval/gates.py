"""Quality gates: named figures of summary.json compared with thresholds (exit status 1 on failure)."""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from rag_eval.errors import ConfigError, Problem

OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq}
_RULE = re.compile(r"^\s*(>=|<=|==|>|<)\s*(-?\d+(?:\.\d+)?)\s*$")


@dataclass
class GateResult:
    figure: str
    rule: str
    value: float | None
    passed: bool
    message: str


def parse_rule(rule: str, where: str) -> tuple[str, float]:
    m = _RULE.match(str(rule))
    if not m:
        raise ConfigError(
            Problem(
                where, f"gate rule {rule!r} is not of the form '>= 0.8'", "use one of >=, <=, >, <, == and a number"
            )
        )
    return m.group(1), float(m.group(2))


def lookup(summary: dict, figure: str) -> float | None:
    """The value of ``retrieval.hybrid.hit@5``-style paths; an estimate object gives its ``value``."""
    node = summary
    for part in _split(figure):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(part)
        node = node[part]
    if isinstance(node, dict):
        node = node.get("value")
    return None if node is None else float(node)


def _split(figure: str) -> list[str]:
    # Metric names hold dots only inside '@k' forms never; split on dots.
    return figure.split(".")


def check_gates(gates: dict[str, str], summary: dict, where: str = "gates") -> list[GateResult]:
    """Every gate's result; a figure that is not in the summary is a config error naming close ones."""
    results = []
    for figure, rule in gates.items():
        op, threshold = parse_rule(rule, f"{where}.{figure}")
        try:
            value = lookup(summary, figure)
        except KeyError as exc:
            raise ConfigError(
                Problem(
                    f"{where}.{figure}",
                    f"the summary has no figure '{figure}' ('{exc.args[0]}' is missing)",
                    "figures are retrieval.<retriever>.<metric>, "
                    "generation.<prompt>.<metric>, attribution.<prompt>.<outcome>",
                )
            ) from None
        passed = value is not None and OPS[op](value, threshold)
        shown = "no value" if value is None else f"{value:.4g}"
        results.append(
            GateResult(
                figure,
                f"{op} {threshold:g}",
                value,
                passed,
                f"{'pass' if passed else 'FAIL'}: {figure} = {shown} (needs {op} {threshold:g})",
            )
        )
    return results
