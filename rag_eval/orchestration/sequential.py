"""``rag-eval compare --stop-when-settled``: judge the questions in a seeded random order, a batch
at a time, and stop once an always-valid test settles every paired difference of the outcome
``ok`` between prompts.

The test: a sequential sign test on the questions where the two prompts' outcomes differ. Its
e-value is the Jeffreys mixture of the likelihood ratio against "each prompt wins a discordant
question half the time", E = 2^n B(w + 1/2, l + 1/2) / B(1/2, 1/2) for w wins and l losses of n;
by Ville's inequality P(E ever reaches 1/alpha) <= alpha under no difference, so it may be looked
at after every batch and stopped at will (anytime-valid). With several pairs of prompts each
must reach m / alpha (Bonferroni).

The verdicts printed are still the fixed-sample tests of ``compare`` on the questions judged: a
stop never claims more than they do; the report names the sequential test, the questions used of
the test set and the model calls the stop saved (estimated from the calls per question so far).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy.special import betaln

from rag_eval.orchestration.compare import per_question_values
from rag_eval.progress import say
from rag_eval.rundir import read_report_json

TEST_NAME = (
    "sequential sign test (Jeffreys-mixture e-value on discordant questions; anytime-valid by Ville's inequality)"
)


def sign_evalue(wins: int, losses: int) -> float:
    """The e-value against "no difference" after ``wins`` and ``losses`` on discordant questions."""
    n = wins + losses
    return float(math.exp(n * math.log(2) + betaln(wins + 0.5, losses + 0.5) - betaln(0.5, 0.5)))


def pair_evalues(report: dict, answerable: dict[str, bool], judges: list[str], prompts: list[str]) -> list[dict]:
    """Each pair of prompts: wins, losses and e-value of ``ok`` on the questions both have."""
    ok = per_question_values(report, answerable, judges)["ok"]
    out = []
    for a, b in itertools.combinations(prompts, 2):
        common = set(ok.get(a, {})) & set(ok.get(b, {}))
        wins = sum(ok[a][q] > ok[b][q] for q in common)
        losses = sum(ok[a][q] < ok[b][q] for q in common)
        out.append({"a": a, "b": b, "wins": wins, "losses": losses, "e_value": sign_evalue(wins, losses)})
    return out


class _Usage(BaseModel):
    """What a sequential comparison reads of an entry of llm_usage.json: its calls."""

    model_config = ConfigDict(extra="ignore")

    calls: Any = 0


def _calls(run_dir: Path) -> int:
    try:
        usage = json.loads((run_dir / "llm_usage.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    return sum(int(u.calls) for u in map(_Usage.model_validate, usage))


def run_until_settled(
    cfg, inputs, run_audit: Callable[..., Path], *, out: str | None, use_cache: bool, batch: int, seed: int
) -> tuple[Path, dict]:
    """The audit (``run_audit``, the runner's) of a growing prefix of the seeded question order, until
    every pair is settled or the questions run out; the run folder and the ``sequential`` section of
    the comparison."""
    alpha = cfg.stats.alpha
    prompts = list(cfg.generation.prompts)
    m = max(1, math.comb(len(prompts), 2))
    order = np.random.default_rng(seed).permutation(len(inputs.questions))
    questions = [inputs.questions[i] for i in order]
    answerable = {q.id: q.answerable for q in questions}
    run_dir: Path | None = None
    calls, looks = 0, []
    used = before = 0
    for used in range(min(batch, len(questions)), len(questions) + batch, batch):
        used = min(used, len(questions))
        part = dataclasses.replace(inputs, questions=questions[:used])
        if run_dir is not None:
            # The run folder's own "resumed ..." line follows: say that this command resumes it.
            say(
                f"--stop-when-settled: not settled on {before} questions; the same run folder goes on with {used} "
                f"({used - before} more)"
            )
        run_dir = run_audit(cfg, out=out, use_cache=use_cache, resume=run_dir, inputs=part)
        before = used
        calls += _calls(run_dir)
        report = read_report_json(run_dir)
        pairs = pair_evalues(report, answerable, cfg.judges.metrics, prompts)
        settled = all(p["e_value"] >= m / alpha for p in pairs)
        looks.append({"questions": used, "pairs": pairs, "settled": settled})
        if settled or used >= len(questions):
            break
    left = len(questions) - used
    assert run_dir is not None  # the loop ran at least once: a test set has questions
    return run_dir, {
        "test": TEST_NAME,
        "alpha": alpha,
        "threshold": m / alpha,
        "seed": seed,
        "batch": batch,
        "questions_used": used,
        "questions_total": len(questions),
        "settled": looks[-1]["settled"] if looks else False,
        "calls": calls,
        "calls_saved_estimate": round(calls / used * left) if used else 0,
        "looks": looks,
    }
