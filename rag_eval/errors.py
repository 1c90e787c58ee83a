"""Errors that rag-eval reports to the user without a traceback."""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the user's input: where, what, and how to fix it."""

    where: str
    what: str
    fix: str = ""

    def __str__(self) -> str:
        text = f"{self.where}: {self.what}"
        if self.fix:
            text += f"\n    fix: {self.fix}"
        return text


class RagEvalError(Exception):
    """Base class of every error shown to the user as a message (exit status 2)."""

    exit_code = 2

    def __init__(self, problems: list[Problem] | Problem | str):
        items = [problems] if isinstance(problems, (Problem, str)) else problems
        self.problems = [p if isinstance(p, Problem) else Problem("error", p) for p in items]
        super().__init__(self.render())

    def render(self) -> str:
        head = f"{len(self.problems)} problems found:\n" if len(self.problems) > 1 else ""
        return head + "\n".join(f"- {p}" if head else str(p) for p in self.problems)


class ConfigError(RagEvalError):
    """The audit's YAML configuration is wrong."""


class DataError(RagEvalError):
    """The corpus, the test set or a run file is wrong."""


def did_you_mean(value: str, known: list[str] | tuple[str, ...]) -> str:
    """A suggestion such as "did you mean 'bm25'? known: bm25, dense", for error messages."""
    close = difflib.get_close_matches(value, list(known), n=1, cutoff=0.5)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return hint + "known: " + ", ".join(known)
