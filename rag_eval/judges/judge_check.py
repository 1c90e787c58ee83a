"""How far can the judges be trusted? Every judge on labelled cases, against the labels.

Cases (JSONL, one per line) are for the correctness judge (labels correct, partial, incorrect;
partial counts as not correct, as in attribution), the refusal judge (refused, answered) and the
faithfulness judges (faithful, unfaithful): the case kinds of the judge registry, each judge's
``check`` saying which kind it is measured on and how its judgement is read. Each case may name its ``source``; figures are given
per source and overall. HaluEval QA items convert to faithfulness and correctness cases
(:func:`halueval_cases`).

Probability-scored judges get their cut-off fitted by cross-validation: every figure is
out-of-fold (each case decided with a cut-off fitted on the other folds), never in-sample:
accuracy (Wilson interval), balanced accuracy, Cohen's kappa (bootstrap interval) and the AUC of
the probability. ``save`` stores the cut-off fitted on all cases for audits to use.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import field_validator

from rag_eval.base_records import Model, required
from rag_eval.calibration.adaptation import Item
from rag_eval.calibration.cutoffs import (
    SavedCalibration,
    balanced_accuracy,
    blends_for,
    fit_cutoff,
    out_of_fold,
    user_path,
    user_saved,
)
from rag_eval.calibration.cutoffs import key as calibration_key
from rag_eval.calibration.cutoffs import save as save_calibration
from rag_eval.data.records import read_records
from rag_eval.errors import ConfigError, DataError, Problem, did_you_mean
from rag_eval.judges.adapted import adaptable, adapted_check, item_of, saved_sources, shipped_deciders
from rag_eval.judges.judge_records import FittedBand
from rag_eval.judges.ragas_judges import RagasJudges
from rag_eval.judges.registry import CASE_KINDS, FAITHFUL_SHARE, JUDGES, Families, Inputs, judges_for
from rag_eval.judges.scored import ScoredJudges
from rag_eval.judges.uncertain import bands_out_of_fold, fit_band
from rag_eval.judges.uncertain import target as target_of
from rag_eval.judges.yesno import REASONS_WANTED
from rag_eval.llm.session import LLMSession
from rag_eval.llm.settings import LLMConfig
from rag_eval.progress import track_async
from rag_eval.resources import resolve_shipped
from rag_eval.stats import Estimate, bootstrap_kappa, wilson_interval
from rag_eval.text import record_lines


class Case(Model):
    """One labelled case: a line of a cases file (``load_cases``, which adds its ``source``), a
    HaluEval item's (``halueval_cases``) or a dict given to ``api.judge_check``; keys not named here
    are kept."""

    id: str
    judge: str
    label: str
    source: str
    question: str | None = None  # every kind's cases have one; a judge reads it (``case_inputs``)
    answer: str | None = None
    contexts: list[str] | None = None
    reference: str | None = None

    @field_validator("id", "source", mode="before")
    @classmethod
    def _as_text(cls, v: Any) -> Any:
        """An id or source given as a number (``{"id": 7}``) is its text, as it was echoed before."""
        return str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def as_cases(cases: Sequence[Case | dict]) -> list[Case]:
    """The cases as records (the dicts ``load_cases`` and ``halueval_cases`` give read once)."""
    return [Case.load(c) for c in cases]


class CaseLine(Model):
    """What ``load_cases`` checks of a line before it is a case: any value, checked there."""

    judge: Any = None
    label: Any = None
    id: Any = None


class HaluEvalItem(Model):
    """A HaluEval QA item (``qa_data.json``'s lines)."""

    knowledge: str
    question: str
    right_answer: str
    hallucinated_answer: str


# What --save needs of a judge prompt's labelled cases before its cut-off and band decide later audits.
MIN_SAVE_CASES = 10
MIN_SAVE_PER_VERDICT = 3


def load_cases(path: Path) -> list[dict]:
    cases, problems = [], []
    for rec in read_records(path, "judge-check"):
        d = rec.data
        line = CaseLine.model_validate(d)
        judge = line.judge
        kind = CASE_KINDS.get(judge) if isinstance(judge, str) else None
        if kind is None:
            problems.append(
                Problem(
                    rec.where,
                    f"judge must be one of {', '.join(CASE_KINDS)}, got {judge!r}",
                    did_you_mean(str(judge), list(CASE_KINDS)) if isinstance(judge, str) else "fix the judge field",
                )
            )
            continue
        missing = [f for f in kind.needs if not d.get(f)] + ([] if line.label is not None else ["label"])
        if missing or line.label not in kind.labels:
            wrong = f"label {line.label!r} is not one of {', '.join(map(str, kind.labels))}"
            problems.append(
                Problem(
                    rec.where,
                    f"a {judge} case needs {', '.join(kind.needs)} and a label in {kind.labels}",
                    f"missing: {', '.join(missing)}" if missing else wrong,
                )
            )
            continue
        cases.append({"source": path.stem, **d, "id": str(line.id or f"{path.stem}:{rec.where}")})
    if problems:
        raise DataError(problems)
    return cases


# The source tree's path of the default cases; installed with the package, found from any folder.
DEFAULT_CASES = "data/judge-check/cases.jsonl"


def read_case_files(paths: list[str | Path]) -> list[dict]:
    """Every case of the files (``data/judge-check/cases.jsonl``: the shipped cases, from any
    folder); a missing file is a DataError naming the working folder."""
    found = [resolve_shipped(Path(p)) for p in paths]
    missing = [p for p in found if not p.exists()]
    if missing:
        raise DataError(
            Problem(
                str(missing[0]),
                "the cases file does not exist",
                f"give --cases PATH (relative to {Path.cwd()}); without --cases the shipped {DEFAULT_CASES} is used",
            )
        )
    return [c for p in found for c in load_cases(p)]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s*(?=[A-Z])", text) if s.strip()]


def halueval_cases(path: Path, start: int = 0, stop: int | None = None) -> list[dict]:
    """Cases from HaluEval QA items (``knowledge, question, right_answer, hallucinated_answer``):
    faithfulness with the knowledge as context (right answer faithful, hallucinated one not) and
    correctness with the right answer as reference (a knowledge sentence stating it is correct,
    the hallucinated answer incorrect). A span that holds no item is a DataError saying how many
    the file has (an empty span would otherwise measure nothing and print figures of other cases)."""
    try:
        every = record_lines(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataError(
            Problem(
                str(path), f"cannot read the HaluEval file: {exc.strerror or exc}", "give --halueval PATH[:START-STOP]"
            )
        ) from None
    lines = every[start:stop]
    if not lines:
        raise DataError(
            Problem(
                f"{path}:{start}-{'' if stop is None else stop}",
                f"no HaluEval item in this span: the file has {len(every)} items (0-{len(every) - 1})",
                f"give a span within 0-{len(every)}, e.g. {path}:0-{min(40, len(every))}",
            )
        )
    cases = []
    for i, line in enumerate(lines, start=start):
        item = HaluEvalItem.model_validate(json.loads(line))
        k, q, right, wrong = item.knowledge.strip(), item.question, item.right_answer, item.hallucinated_answer
        base = {"source": "halueval", "question": q}
        cases.append(
            {**base, "id": f"h{i}-f1", "judge": "faithfulness", "contexts": [k], "answer": right, "label": "faithful"}
        )
        cases.append(
            {**base, "id": f"h{i}-f0", "judge": "faithfulness", "contexts": [k], "answer": wrong, "label": "unfaithful"}
        )
        stating = [s for s in _sentences(k) if right.lower() in s.lower() and len(s) > len(right) + 10]
        if stating:
            cases.append(
                {
                    **base,
                    "id": f"h{i}-c1",
                    "judge": "correctness",
                    "reference": right,
                    "answer": stating[0],
                    "label": "correct",
                }
            )
            cases.append(
                {
                    **base,
                    "id": f"h{i}-c0",
                    "judge": "correctness",
                    "reference": right,
                    "answer": wrong,
                    "label": "incorrect",
                }
            )
    return cases


@dataclass
class JudgeScore:
    """Out-of-fold agreement of one judge with the labels, on one source (or all)."""

    judge: str
    source: str
    accuracy: Estimate
    balanced_accuracy: float | None
    kappa: Estimate
    auc: float | None
    not_judged: int
    confusion: dict[str, dict[str, int]]
    # Fitted on all cases of the judge (what --save stores): one per variant of the judge's prompt.
    cutoffs: dict[str, float] | None = None
    method: str = ""
    extra: dict = field(default_factory=dict)
    # --save: the variants whose cut-off was not saved, and why (too few cases).
    not_saved: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    def cutoff_text(self) -> str:
        """The fitted cut-off, or each variant's with its name."""
        cuts = self.cutoffs or {}
        if len(cuts) == 1:
            return f"{next(iter(cuts.values())):.3f}"
        return ", ".join(f"{v} {c:.3f}" for v, c in cuts.items())


@dataclass
class Prediction:
    """A judge's output on one case: the probabilities behind its decision, or its fixed decision."""

    probs: list[float] | None = None  # one per statement (one for a verdict judge)
    fixed: bool | None = None  # judges without probabilities (Ragas): the decision itself
    score: float | None = None  # a continuous value for the AUC
    error: str | None = None
    variant: str | None = None  # the prompt asked, for a judge with several (its own cut-off)
    item: Item | None = None  # what the decision was made of (model P, word evidence): adaptation reads it
    from_text: bool = False  # the endpoint returned no logprobs: the verdict was read from the text (P 0 or 1)


def case_inputs(case: Case | dict) -> Inputs:
    """A labelled case as the inputs of a judge (the generation prompt's name is "check")."""
    c = Case.load(case)
    return Inputs(
        c.id, "check", required(c.question, f"case {c.id}'s question"), c.answer, c.contexts or [], c.reference
    )


def prediction(name: str, j) -> Prediction:
    """What judge-check reads of a judgement, as the judge's ``check.reading`` says."""
    if j.status != "judged":
        return Prediction(error=j.error)
    reading = JUDGES[name].checked.reading
    if reading == "score":
        return Prediction(fixed=None, score=j.score)
    text = j.method == "text"
    if reading == "statements":
        ps = j.typed_details.probabilities
        return Prediction(probs=ps, score=min(ps), item=item_of(j), from_text=text)
    return Prediction(
        probs=[j.probability], score=j.probability, variant=j.typed_details.variant, item=item_of(j), from_text=text
    )


def kind_of(name: str) -> str:
    """The kind of case a judge is measured on."""
    return JUDGES[name].checked.kind.name


async def _predict(cases: list[Case], llm, scored, ragas, judges: list[str]) -> dict[str, list[Prediction]]:

    families = Families(scored, ragas)

    async def one(name: str, i: int, c: Case):
        # Decided as an audit decides it: an own judge by its verdict asked alone (the 2-token
        # request), a criterion by its request with the reason (``judging.JudgeRun.run``).
        token = REASONS_WANTED.set(JUDGES[name].criterion is not None)
        try:
            return name, i, prediction(name, await JUDGES[name].judge(families, case_inputs(c)))
        finally:
            REASONS_WANTED.reset(token)

    jobs = [one(name, i, c) for name in judges for i, c in enumerate(cases) if name in judges_for(c.judge)]
    out: dict[str, list[Prediction]] = {name: [Prediction(error="not run")] * len(cases) for name in judges}
    async for name, i, pred in track_async(jobs, "judge check"):
        out[name][i] = pred
    return out


def _auc(positive: np.ndarray, score: np.ndarray) -> float | None:
    if len(set(positive.tolist())) < 2:
        return None
    from sklearn.metrics import roc_auc_score  # noqa: PLC0415

    return float(roc_auc_score(positive, score))


def cutoff_fitter(name: str, probs: list[np.ndarray], positive: np.ndarray, variant: list[str], threshold: float):
    """(decide, fit) for one judge's cases: ``decide(indices, cutoffs) -> bools`` (a statement
    judge: the share at or above the cut-off reaches ``threshold``), ``fit(train) -> {variant: cut}``
    (each variant's cut-off fitted on its training cases)."""
    variants = sorted(set(variant))

    statements = JUDGES[name].checked.reading == "statements"

    def decide(sub, cuts: dict[str, float]) -> np.ndarray:
        if statements:
            return np.array([np.mean(probs[j] >= cuts[variant[j]]) >= threshold for j in sub], dtype=bool)
        return np.array([probs[j][0] >= cuts[variant[j]] for j in sub], dtype=bool)

    def fit(train) -> dict[str, float]:
        cuts = {}
        for v in variants:
            mine = [j for j in train if variant[j] == v]
            flat = np.concatenate([probs[j] for j in mine]) if mine else np.array([0.5])
            cuts[v] = fit_cutoff(flat, positive[mine], decide=lambda c, mine=mine, v=v: decide(mine, {v: c}))
        return cuts

    return decide, fit


def score_judge(
    name: str,
    cases: Sequence[Case | dict],
    preds: list[Prediction],
    *,
    threshold: float,
    folds: int,
    seed: int,
    fixed_cutoff: dict[str, float] | float | None = None,
    uncertain_target: float | None = None,
) -> list[JudgeScore]:
    """Out-of-fold figures of one judge, overall and per source; with ``fixed_cutoff`` (fitted on
    other cases; one per variant of the judge's prompt), every case is decided at it instead.
    A judge that asks one of several prompts gets a cut-off per prompt, each fitted on its cases.
    Probability-scored judges also get the band of uncertain decisions around each cut-off
    (``judges/uncertain.py``; ``uncertain_target``: the decided verdicts' agreement it aims at,
    default per judge), fitted on all cases and measured out of fold, in ``extra``."""
    cases = as_cases(cases)
    kind = kind_of(name)
    pos_label = CASE_KINDS[kind].positive
    extra: dict = {}
    idx = [i for i, c in enumerate(cases) if c.judge == kind]
    ok = [i for i in idx if preds[i].error is None]
    positive = np.array([cases[i].label == pos_label for i in ok])
    if JUDGES[name].checked.reading == "score":  # Ragas: a score, decided at the attribution threshold
        predicted = np.array([required(preds[i].score, f"{name}'s score on case {i + 1}") >= threshold for i in ok])
        cutoffs, method = None, f"Ragas score >= {threshold}"
    else:
        probs = [np.array(preds[i].probs) for i in ok]
        variant = [preds[i].variant or name for i in ok]
        variants = sorted(set(variant))
        decide, fit = cutoff_fitter(name, probs, positive, variant, threshold)

        if fixed_cutoff is not None:
            fixed = fixed_cutoff if isinstance(fixed_cutoff, dict) else dict.fromkeys(variants, fixed_cutoff)
            predicted = decide(list(range(len(ok))), fixed)
            cutoffs = {v: fixed[v] for v in variants}
            method = "P(yes) >= " + ", ".join(f"{c:.3f}" for c in cutoffs.values()) + ", fitted on other cases"
        else:
            predicted, _ = out_of_fold(
                len(ok), positive, fit, lambda test, c: decide(list(test), c), folds=folds, seed=seed
            )
            cutoffs = fit(np.arange(len(ok))) if ok else None
            used = min(folds, len(ok))  # folds with a case in them
            method = f"P(yes) cut-off{'s per prompt' if len(variants) > 1 else ''}, {used}-fold cross-validated"
            if ok:
                extra = {
                    **uncertain_bands(probs, positive, variant, cutoffs, fit, uncertain_target, threshold, folds, seed),
                    "cases": [
                        {
                            "id": cases[i].id,
                            "p": [float(x) for x in probs[n]],
                            "positive": bool(positive[n]),
                            "variant": variant[n],
                        }
                        for n, i in enumerate(ok)
                    ],
                }
    scores = []
    source_of = {i: cases[i].source for i in idx}
    sources = ["all"] + sorted({source_of[i] for i in idx})
    for source in sources:
        sel = [n for n, i in enumerate(ok) if source == "all" or source_of[i] == source]
        n_all = sum(1 for i in idx if source == "all" or source_of[i] == source)
        if not sel and not n_all:
            continue
        pos, pred = positive[sel], predicted[sel]
        lab = [pos_label if p else f"not {pos_label}" for p in pos]
        out = [pos_label if p else f"not {pos_label}" for p in pred]
        confusion: dict[str, dict[str, int]] = {}
        for n in sel:
            row = confusion.setdefault(cases[ok[n]].label, {})
            key = pos_label if predicted[n] else f"not {pos_label}"
            row[key] = row.get(key, 0) + 1
        sc = np.array([preds[ok[n]].score for n in sel], dtype=float)
        scores.append(
            JudgeScore(
                name,
                source,
                wilson_interval(int((pos == pred).sum()), len(sel)),
                balanced_accuracy(pos, pred) if len(sel) else None,
                bootstrap_kappa(lab, out, seed=seed),
                _auc(pos, sc) if len(sel) else None,
                n_all - len(sel),
                confusion,
                cutoffs,
                method,
                extra if source == "all" else {},
            )
        )
    return scores


def uncertain_bands(probs, positive, variant, cutoffs, fit, target, threshold, folds, seed) -> dict:
    """The band around each variant's cut-off, fitted on all cases, and its out-of-fold figures."""

    targets = {v: target or target_of(v) for v in cutoffs}
    bands = {}
    for v, cut in cutoffs.items():
        mine = [j for j in range(len(probs)) if variant[j] == v]
        b = fit_band([probs[j] for j in mine], positive[mine], cut, target=targets[v], threshold=threshold)
        bands[v] = {**dataclasses.asdict(b), "target": targets[v]}
    oof = bands_out_of_fold(probs, positive, variant, fit, targets=targets, threshold=threshold, folds=folds, seed=seed)
    return {"bands": bands, "band_out_of_fold": oof}


def _families(judges: list[str]) -> set[str]:
    return {JUDGES[n].family for n in judges}


def predict(
    cases: Sequence[Case | dict],
    llm_cfg: LLMConfig,
    cache_dir: Path,
    prompts_dir: Path | None,
    judges: list[str],
    *,
    blends: bool = True,
) -> tuple[dict[str, list[Prediction]], list[dict], str, ScoredJudges]:
    """Every judge's prediction on every case it applies to; the usage; the model identity; the
    judges. ``blends``: the saved blends with word evidence apply (the judges as an audit runs
    them); without, the model's own probabilities (what a blend is fitted on)."""
    session = LLMSession(cache_dir)
    rows = as_cases(cases)

    async def main() -> tuple[dict[str, list[Prediction]], str, ScoredJudges]:
        llm = session.llm(llm_cfg, "judge-check --llm")
        scored = ScoredJudges.load(llm, prompts_dir)
        if blends:
            scored.blends = blends_for(llm.identity, scored)
        ragas = RagasJudges(llm, json_schema=llm_cfg.json_schema) if _families(judges) & {"ragas"} else None
        try:
            return await _predict(rows, llm, scored, ragas, judges), llm.identity, scored
        finally:
            await session.aclose()

    try:
        preds, identity, scored = asyncio.run(main())
    finally:
        usage = session.usage()
        session.close()
    return preds, usage, identity, scored


def run_judge_check(
    cases: Sequence[Case | dict],
    llm_cfg: LLMConfig,
    cache_dir: Path,
    prompts_dir: Path | None,
    *,
    judges: list[str] | None = None,
    threshold: float = FAITHFUL_SHARE,
    folds: int = 5,
    seed: int = 0,
    save: bool = False,
    uncertain_target: float | None = None,
    adapt: int | None = None,
) -> tuple[list[JudgeScore], list[dict]]:
    """Every judge on the cases; the scores, and the model usage. ``save`` stores each fitted cut-off.
    ``adapt``: each adaptable judge also adapted on that many labelled cases of each source (seeded
    draws) and measured on the source's other cases, beside the saved judge on the same cases
    (``JudgeScore.extra["adapted"]`` of the source's score)."""
    cases = as_cases(cases)
    kinds = {c.judge for c in cases}
    measured = [n for n, spec in JUDGES.items() if spec.check is not None]
    for name in judges or []:
        if name not in measured:
            raise ConfigError(
                Problem(
                    "judge-check --judges",
                    f"no judge '{name}' is measured by judge-check",
                    did_you_mean(name, measured),
                )
            )
    judges = judges or [j for k in CASE_KINDS if k in kinds for j in judges_for(k) if JUDGES[j].checked.by_default]
    preds, usage, identity, scored = predict(cases, llm_cfg, cache_dir, prompts_dir, judges)
    from_text = {name: sum(p.from_text for p in preds[name]) for name in judges}
    if save and (texted := [n for n, k in from_text.items() if k]):
        raise ConfigError(
            Problem(
                f"judge-check --save ({llm_cfg.model} at {llm_cfg.base_url or llm_cfg.provider})",
                f"the endpoint returned no logprobs for {', '.join(f'{from_text[n]} verdicts of {n}' for n in texted)}: "
                "they were read from the text (P 0 or 1), so there is no probability to fit a cut-off or band on",
                "use an endpoint that returns logprobs (llama-server, vLLM, OpenAI's chat API), or run without --save "
                "to measure the verdicts as they are",
            )
        )
    scores = []
    for name in judges:
        mine = score_judge(
            name, cases, preds[name], threshold=threshold, folds=folds, seed=seed, uncertain_target=uncertain_target
        )
        for sc in mine:
            if from_text[name]:
                sc.extra = {**sc.extra, "from_text": from_text[name]}
        scores += mine
        if adapt:
            _add_adapted(name, cases, preds[name], mine, identity, scored, threshold, adapt, seed)
        if not (save and mine):
            continue
        overall = mine[0]
        for variant, cut in (overall.cutoffs or {}).items():
            kind = kind_of(name)
            mine_cases = [
                c.label == CASE_KINDS[kind].positive
                for p, c in zip(preds[name], as_cases(cases), strict=True)
                if c.judge == kind and p.probs is not None and (p.variant or name) == variant
            ]
            fewest = min(sum(mine_cases), len(mine_cases) - sum(mine_cases))
            if len(mine_cases) < MIN_SAVE_CASES or fewest < MIN_SAVE_PER_VERDICT:
                # A cut-off and band fitted on a handful of cases would decide every later audit with
                # this judge model (user trial 4 F17: 2 cases saved an empty band).
                earlier = user_saved().get(calibration_key(identity, variant, scored.prompt_hash(variant)))
                still = (
                    f"; the calibration you saved before (n {SavedCalibration.load(earlier).n}) still applies: "
                    f"delete its entry from {user_path()} to decide as shipped"
                    if isinstance(earlier, dict)
                    else ""
                )
                overall.not_saved[variant] = (
                    f"{len(mine_cases)} cases, {fewest} of its rarer verdict: saving needs "
                    f"{MIN_SAVE_CASES} cases with {MIN_SAVE_PER_VERDICT} of each verdict{still}"
                )
                continue
            save_calibration(
                identity,
                variant,
                scored.prompt_hash(variant),
                {
                    "cutoff": cut,
                    # The cases this variant's cut-off was fitted on (a judge of two prompts splits them).
                    "n": len(mine_cases),
                    "accuracy_out_of_fold": overall.accuracy.value,
                    "balanced_accuracy_out_of_fold": overall.balanced_accuracy,
                    "auc": overall.auc,
                    "sources": sorted({c.source for c in cases if name in judges_for(c.judge)}),
                    **saved_band(overall.extra, variant),
                    # The cut-off is on the scale the judge decided on: the blend it was measured with stays.
                    **({"blend": scored.blends[variant].to_dict()} if variant in scored.blends else {}),
                },
            )
    return scores, usage


def _add_adapted(name, cases: list[Case], preds, scores, identity, scored, threshold, labels: int, seed: int) -> None:
    """Each source's score gets the judge adapted on ``labels`` of its cases (``adapted.adapted_check``)."""
    if not adaptable(name):
        return
    shipped = shipped_deciders(identity, scored.prompt_hash, threshold)
    positive = JUDGES[name].checked.kind.positive
    for s in scores:
        items = [
            (p.variant or name, dataclasses.replace(p.item, positive=c.label == positive))
            for c, p in zip(cases, preds, strict=True)
            if p.item is not None and c.judge == kind_of(name) and s.source in ("all", c.source)
        ]
        found = adapted_check(name, s.source, items, shipped, labels, seed=seed)
        if found is not None:
            fitted_on = saved_sources(identity, scored.prompt_hash, JUDGES[name].variants)
            found.saved_on_these = s.source in fitted_on or (s.source == "all" and bool(fitted_on))
            s.extra = {**s.extra, "adapted": found.to_dict()}


class CaseProbabilities(Model):
    """One case's probabilities as ``score_judge`` keeps them (``JudgeScore.extra["cases"]``)."""

    id: str = ""
    p: list[float] = []
    positive: bool = False
    variant: str = ""


class CheckExtra(Model):
    """What ``score_judge`` adds to a probability-scored judge's overall score (``JudgeScore.extra``):
    the band fitted around each variant's cut-off, the bands' out-of-fold figures, each case's
    probabilities; and the adapted judge (``--adapt``)."""

    bands: dict[str, FittedBand] | None = None
    band_out_of_fold: Any = None
    cases: list[CaseProbabilities] = []
    adapted: dict[str, Any] | None = None
    from_text: int = 0  # verdicts read from the text (the endpoint returned no logprobs)


def saved_band(extra: dict, variant: str) -> dict:
    """What a calibration keeps of the band: its edges and target, its out-of-fold figures, and the
    cases' probabilities (so a band can be refitted without asking the model again)."""
    got = CheckExtra.model_validate(extra)
    band = (got.bands or {}).get(variant)
    if not band:
        return {}
    return {
        "band": [band.low, band.high],
        "band_target": band.target,
        "band_reached": band.reached,
        "band_out_of_fold": got.band_out_of_fold,
        "cases": [[c.p, c.positive] for c in got.cases if c.variant == variant],
    }
