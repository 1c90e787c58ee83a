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

import itertools
import json
import math
from pathlib import Path

import numpy as np

TEST_NAME = (
    "sequential sign test (Jeffreys-mixture e-value on discordant questions; anytime-valid by Ville's inequality)"
)


def sign_evalue(wins: int, losses: int) -> float:
    """The e-value against "no difference" after ``wins`` and ``losses`` on discordant questions."""
    from scipy.special import betaln

    n = wins + losses
    return float(math.exp(n * math.log(2) + betaln(wins + 0.5, losses + 0.5) - betaln(0.5, 0.5)))


def pair_evalues(report: dict, answerable: dict[str, bool], judges: list[str], prompts: list[str]) -> list[dict]:
    """Each pair of prompts: wins, losses and e-value of ``ok`` on the questions both have."""
    from rag_eval.orchestration.compare import per_question_values

    ok = per_question_values(report, answerable, judges)["ok"]
    out = []
    for a, b in itertools.combinations(prompts, 2):
        common = set(ok.get(a, {})) & set(ok.get(b, {}))
        wins = sum(ok[a][q] > ok[b][q] for q in common)
        losses = sum(ok[a][q] < ok[b][q] for q in common)
        out.append({"a": a, "b": b, "wins": wins, "losses": losses, "e_value": sign_evalue(wins, losses)})
    return out


def _calls(run_dir: Path) -> int:
    try:
        usage = json.loads((run_dir / "llm_usage.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    return sum(int(u.get("calls", 0)) for u in usage)


def run_until_settled(cfg, inputs, *, out: str | None, use_cache: bool, batch: int, seed: int) -> tuple[Path, dict]:
    """The audit of a growing prefix of the seeded question order, until every pair is settled or
    the questions run out; the run folder and the ``sequential`` section of the comparison."""
    from rag_eval.orchestration.runner import Inputs, run_audit

    alpha = cfg.stats.alpha
    prompts = list(cfg.generation.prompts)
    m = max(1, math.comb(len(prompts), 2))
    order = np.random.default_rng(seed).permutation(len(inputs.questions))
    questions = [inputs.questions[i] for i in order]
    answerable = {q.id: q.answerable for q in questions}
    run_dir, calls, looks = None, 0, []
    used = 0
    for used in range(min(batch, len(questions)), len(questions) + batch, batch):
        used = min(used, len(questions))
        part = Inputs(inputs.corpus, questions[:used], inputs.test_set_path)
        run_dir = run_audit(cfg, out=out, use_cache=use_cache, resume=run_dir, inputs=part)
        calls += _calls(run_dir)
        report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
        pairs = pair_evalues(report, answerable, cfg.judges.metrics, prompts)
        settled = all(p["e_value"] >= m / alpha for p in pairs)
        looks.append({"questions": used, "pairs": pairs, "settled": settled})
        if settled or used >= len(questions):
            break
    left = len(questions) - used
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


def sequential_lines(section: dict) -> list[str]:
    """The comparison's note on the sequential stop (Markdown)."""
    s = section.get("sequential")
    if not s:
        return []
    last = s["looks"][-1]["pairs"] if s["looks"] else []
    pairs = "; ".join(
        f"{p['a']} vs {p['b']}: {p['wins']} better, {p['losses']} worse, e-value {p['e_value']:.1f}" for p in last
    )
    stop = (
        f"settled after {s['questions_used']} of {s['questions_total']} questions"
        if s["settled"]
        else f"not settled: all {s['questions_used']} questions judged"
    )
    return [
        "",
        f"**Stopped when settled** (`--stop-when-settled`, seed {s['seed']}, batches of {s['batch']}): {stop}; "
        f"{s['calls']} model calls made, about {s['calls_saved_estimate']} saved. Test: {s['test']}, each pair "
        f"settled at e-value >= {s['threshold']:g} (alpha {s['alpha']}). {pairs}. The verdicts above are the "
        "fixed-sample tests on the questions judged; the stop claims no more than they do.",
    ]
