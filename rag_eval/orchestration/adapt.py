"""A finished run's verdicts adapted to its corpus with the labels of its own answers, and its
figures kept honest afterwards (``rag-eval report RUN --labels F --adapt``).

1. Each adaptable judge (a cut-off on a probability, with a band: refusal, correctness,
   faithfulness_yesno) is adapted on every labelled answer (``calibration/adaptation.py``), every
   verdict of the run is re-decided from what it was made of (no model call), and the judged
   figures and outcomes are recomputed from them.
2. The labels that adapted the judge must not also grade it: the prediction-powered figures are
   cross-fitted (Zrnic & Candès, 2024). The labelled answers are split into folds, the judges are
   adapted once per fold on the other folds, a labelled answer's correction uses the verdicts of
   the judges that never saw its labels, and an unlabelled answer counts with the mean over the
   fold judges. The labels-only figures are unchanged (they never depend on a judge).
3. The adaptation is saved under the corpus fingerprint, the judge model and the judge prompt, so
   a later audit of the same documents decides with it (``judges/adapted.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import yaml

from rag_eval.answers.answer_records import Answer
from rag_eval.attribution import attribute
from rag_eval.attribution.outcomes import failed_criteria
from rag_eval.attribution.records import AttributionSection
from rag_eval.base_records import Model
from rag_eval.calibration.adaptation import HOW, Decider, Item, adapt, cross_ppi_mean
from rag_eval.judges.adapted import (
    Texts,
    adaptable,
    answer_id,
    answer_ids,
    deciders_of,
    deciding,
    item_of,
    redecide,
    save_adaptation,
    saved_items,
    start_again,
    variant_of,
)
from rag_eval.judges.judge_records import JudgesSection, LabelledEstimate
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.judging import aggregate
from rag_eval.judges.registry import FAITHFUL_SHARE, JUDGES, criteria_registered, figures
from rag_eval.judges.uncertain import leaning_value
from rag_eval.labels.columns import criteria_of
from rag_eval.labels.human import Label, apply_labels, human_outcomes
from rag_eval.labels.ppi import PPIEstimate, at_least_exact, human_mean
from rag_eval.orchestration.history import SavedConfig
from rag_eval.report.assemble import judge_brief, outcome_shares
from rag_eval.report.report_records import AdaptationSection, AdaptedJudge, Report
from rag_eval.report.settings import StatsConfig
from rag_eval.text import record_lines
from rag_eval.types import Question

FOLDS = 5
Key = tuple[str, str]  # (question id, prompt): one answer


def _threshold(report: Report) -> float:
    j = report.judges
    return FAITHFUL_SHARE if j is None or j.faithfulness_threshold is None else float(j.faithfulness_threshold)


def _sections(report: Report) -> tuple[JudgesSection, AttributionSection]:
    """The report's judges and attribution sections (``adapt_run`` returns early without them)."""
    if report.judges is None or report.attribution is None:
        raise ValueError("the report has no judged answers to adapt")
    return report.judges, report.attribution


def _label(j: Judgement, labels: dict[Key, Label]) -> bool | None:
    lab = labels.get((j.question_id, j.prompt))
    col = JUDGES[j.judge].human_label if j.judge in JUDGES else None
    return None if lab is None or col is None else lab.values.get(col)


def labelled_items(
    records: list[Judgement], labels: dict[Key, Label], variant: str, answers: set[Key] | None = None
) -> dict[Key, Item]:
    """The labelled decisions of ``variant`` (of ``answers`` only, unless None), by answer."""
    out: dict[Key, Item] = {}
    for r in records:
        if variant_of(r) != variant or not adaptable(r.judge):
            continue
        if answers is not None and (r.question_id, r.prompt) not in answers:
            continue
        y = _label(r, labels)
        it = item_of(r, y) if y is not None else None
        if it is not None:
            out[(r.question_id, r.prompt)] = it
    return out


def fit_deciders(
    shipped: dict[str, Decider],
    records: list[Judgement],
    labels: dict[Key, Label],
    how: str,
    answers: set[Key] | None,
    earlier: dict[str, dict[str, Item]] | None = None,
) -> dict[str, Decider]:
    """Each variant adapted on the labelled records of ``answers`` (all labelled answers: None) and
    on the labelled answers of earlier adaptations of the corpus (``earlier``, by variant)."""
    out = dict(shipped)
    for variant, d in shipped.items():
        items = [
            *labelled_items(records, labels, variant, answers).values(),
            *(earlier or {}).get(variant, {}).values(),
        ]
        if d.blend is not None and not all(f for it in items for f in it.features):
            d = d.model_copy(update={"blend": None})  # decided without word evidence: the model's P alone
        judge = next((r.judge for r in records if variant_of(r) == variant), None)
        out[variant] = adapt(d, items, how, judge=judge)
    return out


def redecided(
    records: list[Judgement],
    deciders: dict[str, Decider],
    notes: dict[str, dict],
    *,
    rules: bool = True,
    texts: dict[Key, Texts] | None = None,
) -> list[Judgement]:
    """``records`` with every adaptable judge's verdict decided by ``deciders``; ``rules`` and
    ``texts`` (by answer) as ``redecide`` takes them."""
    texts = texts or {}
    return [
        redecide(
            r,
            deciders[variant_of(r)],
            notes.get(variant_of(r), {}),
            rules=rules,
            texts=texts.get((r.question_id, r.prompt)),
        )
        if adaptable(r.judge) and variant_of(r) in deciders
        else r
        for r in records
    ]


def answer_texts(report: Report, gens: dict[Key, Answer]) -> dict[Key, Texts]:
    """Each answer's question, reference and answer text, where the run folder holds the answer."""
    _, att = _sections(report)
    out: dict[Key, Texts] = {}
    for row in att.rows:
        g = gens.get((row.question_id, row.prompt))
        if g is not None and g.answer:
            out[(row.question_id, row.prompt)] = Texts(question=row.question, reference=row.reference, answer=g.answer)
    return out


def _value(r: Judgement, verdict: str | None) -> float | None:
    """What a figure counts of one record: 1/0 for its verdict (a share) or its score; an uncertain
    record by what it leaned to."""
    if r.status == "uncertain":
        return leaning_value(r.to_dict(), verdict)
    if r.status != "judged":
        return None
    if verdict is not None:
        return float(r.verdict == verdict)
    return None if r.score is None else float(r.score)


def _generations(run_dir: Path | None) -> dict[Key, Answer]:
    path = None if run_dir is None else run_dir / "generation.jsonl"
    if path is None or not path.exists():
        return {}
    gens = [Answer.load(json.loads(line)) for line in record_lines(path.read_text(encoding="utf-8")) if line.strip()]
    return {(g.question_id, g.prompt): g for g in gens}


def outcomes_of(report: Report, records: list[Judgement], gens: dict[Key, Answer]) -> dict[Key, tuple[str, str]]:
    """Each answer's (outcome, why) with ``records`` as its judges' verdicts, by attribution's
    rules; a retrieval miss stays one (adapting a judge changes no retrieval)."""
    judges, att = _sections(report)
    by_answer: dict[Key, dict[str, Judgement]] = {}
    for j in records:
        by_answer.setdefault((j.question_id, j.prompt), {})[j.judge] = j
    deciding = att.faithfulness_judge or judges.faithfulness_judge
    out: dict[Key, tuple[str, str]] = {}
    for row in att.rows:
        key = (row.question_id, row.prompt)
        if row.outcome == "retrieval_miss":
            out[key] = (row.outcome, row.why)
            continue
        q = Question(row.question_id, row.question, {}, row.answerable, row.reference)
        gen = gens.get(key) or Answer(question_id=row.question_id, prompt=row.prompt, answer=row.answer)
        out[key] = attribute(
            q, True, gen, by_answer.get(key, {}), faithfulness_threshold=_threshold(report), faithfulness_judge=deciding
        )
    return out


def _saved_config(run_dir: Path | None) -> SavedConfig:
    """The run's resolved config.yaml as written (empty where there is none or it does not read)."""
    path = None if run_dir is None else run_dir / "config.yaml"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) if path and path.exists() else {}
        return SavedConfig.load(raw if isinstance(raw, dict) else {})
    except (OSError, ValueError, yaml.YAMLError):
        return SavedConfig()


def _stats(run_dir: Path | None) -> StatsConfig:
    """The run's ``stats`` settings (its resolved config.yaml), else the defaults."""
    try:
        return StatsConfig.model_validate(_saved_config(run_dir).stats or {})
    except ValueError:
        return StatsConfig()


class _SavedJudges(Model):
    """The run's saved ``judges`` settings as ``_rules_on`` reads them."""

    uncertain: Any = None


def _rules_on(run_dir: Path | None) -> bool:
    """Whether the run left close calls and restated references uncertain (not ``judges.uncertain: off``)."""
    judges = _saved_config(run_dir).judges
    # YAML reads a bare off as false.
    return not (isinstance(judges, dict) and _SavedJudges.load(judges).uncertain in ("off", False))


def rebuild(
    report: Report, records: list[Judgement], gens: dict[Key, Answer], stats: StatsConfig, weights: dict[str, float]
) -> Report:
    """``report`` with ``records`` as its verdicts: judged figures, outcomes, shares and split recomputed."""
    report = Report.load(report.dump())
    judges, att = _sections(report)
    questions = [Question(r.question_id, r.question, {}, r.answerable, r.reference) for r in att.rows]
    cfg = SimpleNamespace(stats=stats, judges=SimpleNamespace(metrics=judges.metrics))
    judges.records = records
    judges.figures = aggregate(cfg, list({q.id: q for q in questions}.values()), records, weights)  # type: ignore[arg-type]  # aggregate reads only cfg.stats and cfg.judges.metrics
    outs = outcomes_of(report, records, gens)
    by_answer: dict[Key, dict[str, Judgement]] = {}
    for j in records:
        by_answer.setdefault((j.question_id, j.prompt), {})[j.judge] = j
    for row in att.rows:
        key = (row.question_id, row.prompt)
        row.outcome, row.why = outs[key]
        row.judges = {name: judge_brief(j) for name, j in by_answer.get(key, {}).items()}
        # The criteria it now fails, flagged beside its outcome as the audit flags them (trial 4 F19).
        failed = failed_criteria(by_answer.get(key, {}))
        if failed or "failed_criteria" in row.model_fields_set:
            row.failed_criteria = failed
    for prompt in sorted({r.prompt for r in att.rows}):
        rows = [r for r in att.rows if r.prompt == prompt]
        att.shares[prompt], att.split[prompt] = outcome_shares(
            [r.outcome for r in rows], [weights.get(r.question_id, 1.0) for r in rows], stats.confidence
        )
    return report


def _folds(answers: Iterable[Key], folds: int, seed: int) -> dict[Key, int]:
    keys = sorted(answers)
    k = max(1, min(folds, len(keys)))
    order = np.random.default_rng(seed).permutation(len(keys))
    return {keys[i]: int(pos % k) for pos, i in enumerate(order)}


def adapt_run(
    report: Report,
    labels: list[Label],
    *,
    run_dir: Path | None = None,
    weights: dict[str, float] | None = None,
    how: str = "both",
    folds: int = FOLDS,
    seed: int = 0,
    confidence: float = 0.95,
    source: str = "",
    save: bool = True,
) -> Report:
    """The report with its verdicts decided by judges adapted on ``labels`` and its prediction-
    powered figures cross-fitted; the adaptation saved for the corpus where ``save``. The run's
    criteria (read back from its report) are adapted like the built-in judges, each from its own
    label column (``calibration.adaptation.adapt_criterion``)."""
    report = Report.load(report)
    with criteria_registered(criteria_of(report)):
        return _adapt_run(report, labels, run_dir, weights, how, folds, seed, confidence, source, save)


def _adapt_run(
    report: Report,
    labels: list[Label],
    run_dir: Path | None,
    weights: dict[str, float] | None,
    how: str,
    folds: int,
    seed: int,
    confidence: float,
    source: str,
    save: bool,
) -> Report:
    if how not in HOW:
        raise ValueError(f"how must be one of {', '.join(HOW)}")
    report = Report.load(report)
    if report.judges is None or report.attribution is None:
        return report
    weights = weights or {}
    by_key = {(lab.question_id, lab.prompt): lab for lab in labels}
    records = list(report.judges.records)
    as_run = deciders_of(report.judges.calibration, records, _threshold(report))
    gens = _generations(run_dir)
    labelled = {
        k for k in by_key if any(_label(r, by_key) is not None for r in records if (r.question_id, r.prompt) == k)
    }
    ids = {k: _answer_id(k, gens) for k in labelled}
    # Every adaptation starts from the shipped judge (a run a saved adaptation decided, too) and
    # fits on these labels and on those the corpus's saved adaptation rests on (a label of the same
    # answer here replaces the saved one): no label counts twice, none drops out. The full fit and
    # the fold judges alike; the saved labels are of other answers, so they grade no fold.
    shipped = {**as_run, **start_again(report.judges.calibration, _threshold(report))}
    if not shipped:
        return apply_labels(report, labels, weights, confidence, source)
    every_id = {i for k in labelled for i in _answer_ids(k, gens)}
    earlier, unknown = _earlier(report, set(shipped), every_id)
    stats = _stats(run_dir)
    full = fit_deciders(shipped, records, by_key, how, None, earlier)
    note = {v: {"labels": d.labels, "how": how, "source": source} for v, d in full.items()}
    rules, texts = _rules_on(run_dir), answer_texts(report, gens)
    new = redecided(records, full, note, rules=rules, texts=texts)
    adapted = rebuild(report, new, gens, stats, weights)
    adapted = apply_labels(adapted, labels, weights, confidence, source)
    # Cross-fitting: the fold judges, each adapted without one fold's labels.
    fold_of = _folds(labelled, folds, seed)
    k = max(fold_of.values(), default=-1) + 1
    fold_records, fold_deciders = [], []
    for f in range(k):
        train = {a for a, g in fold_of.items() if g != f}
        fold_deciders.append(fit_deciders(shipped, records, by_key, how, train, earlier))
        fold_records.append(redecided(records, fold_deciders[-1], note, rules=rules, texts=texts))
    if k:
        _cross_fit(adapted, by_key, fold_of, fold_records, gens, weights, confidence)
    adapted.adaptation = _section(report, adapted, as_run, full, records, new, by_key, how, k, source, earlier)
    _held_out_check(adapted.adaptation, records, by_key, fold_of, fold_deciders)
    decided_by_saved = {v for cal in report.judges.calibration.values() for v in cal.adapted}
    for j in adapted.adaptation.judges:
        j.from_saved = j.variant in decided_by_saved
        j.earlier_labels = len(earlier.get(j.variant, {}))
        j.earlier_unknown = j.variant in unknown
    _criteria_as_adapted(adapted)
    if save:
        _save(adapted, full, records, source, {v: _items_by_id(records, by_key, v, ids, earlier) for v in full})
    return adapted


def _earlier(report: Report, variants: set[str], ids: set[str]) -> tuple[dict[str, dict[str, Item]], set[str]]:
    """The labelled answers the corpus's saved adaptation of each variant rests on, less those
    labelled here (by ``answer_id``); and the variants whose saved adaptation does not keep them."""
    judges, _ = _sections(report)
    corpus = report.corpus.fingerprint if report.corpus else None
    earlier: dict[str, dict[str, Item]] = {}
    unknown: set[str] = set()
    for cal in judges.calibration.values():
        for v, prompt_hash in cal.prompt_hashes.items():
            if v not in variants or not corpus or not cal.identity:
                continue
            items = saved_items(corpus, cal.identity, v, prompt_hash)
            if items is None:
                unknown.add(v)
            elif items:
                earlier[v] = {i: it for i, it in items.items() if i not in ids}
    return earlier, unknown


def _items_by_id(
    records: list[Judgement],
    labels: dict[Key, Label],
    variant: str,
    ids: dict[Key, str],
    earlier: dict[str, dict[str, Item]],
) -> dict[str, Item]:
    """What ``variant``'s adaptation now rests on, by ``answer_id``: the saved labelled answers and these."""
    here = {ids[k]: it for k, it in labelled_items(records, labels, variant).items() if k in ids}
    return {**earlier.get(variant, {}), **here}


def _answer_id(key: Key, gens: dict[Key, Answer]) -> str:
    """``adapted.answer_id`` of a labelled answer, with its text where the run folder has it."""
    gen = gens.get(key)
    return answer_id(key[0], key[1], gen.answer if gen is not None else None)


def _answer_ids(key: Key, gens: dict[Key, Answer]) -> set[str]:
    """``adapted.answer_ids`` of a labelled answer: every id a saved adaptation may hold for it."""
    gen = gens.get(key)
    return answer_ids(key[0], key[1], gen.answer if gen is not None else None)


def _held_out_check(
    section: AdaptationSection,
    records: list[Judgement],
    labels: dict[Key, Label],
    fold_of: dict[Key, int],
    fold_deciders: list[dict[str, Decider]],
) -> None:
    """Each adapted judge's labelled answers decided by the fold judge adapted without their label:
    how many it decides and how many of those agree with the label (``AdaptedJudge.held_out*``)."""
    by_variant = {j.variant: j for j in section.judges}
    for r in records:
        a, v = (r.question_id, r.prompt), variant_of(r)
        y = _label(r, labels) if adaptable(r.judge) and a in fold_of else None
        it = item_of(r, y) if y is not None else None
        d = fold_deciders[fold_of[a]].get(v) if it is not None else None
        j = by_variant.get(v)
        if it is None or d is None or j is None:
            continue
        unsure, positive = deciding(it, d).decide(it)
        j.held_out += 1
        j.held_out_decided += int(not unsure)
        j.held_out_right += int(not unsure and positive == y)


def _criteria_as_adapted(report: Report) -> None:
    """Each adapted criterion's section as the adapted verdicts stand: its figures and how it now
    decides (the run's own words were those of the judge before the labels)."""
    judges = report.judges
    if judges is None or report.adaptation is None:
        return
    for a in report.adaptation.judges:
        section = judges.criteria.get(a.judge)
        if section is None:
            continue
        section.figures = {p: figs[a.judge] for p, figs in judges.figures.items() if a.judge in figs}
        how = f"decided on {a.blend_after}, " if a.blend_after else ""
        band = f"[{a.band_after[0]:.2f}, {a.band_after[1]:.2f})" if a.band_after else None
        where = f"uncertain where {'that ' if a.blend_after else ''}P(pass) lies in {band}" if band else "no band"
        section.calibration = (
            f"adapted in this report with {a.labels} labels ({report.adaptation.labels_file}): "
            f"{how}cut-off {a.cutoff_after:.3f}, {where}"
        )
        section.calibrated, section.labels_needed = True, None


def _cross_fit(
    report: Report,
    labels: dict[Key, Label],
    fold_of: dict[Key, int],
    fold_records: list[list[Judgement]],
    gens: dict[Key, Answer],
    weights: dict[str, float],
    confidence: float,
) -> None:
    """Every labelled figure's and outcome's prediction-powered estimate, cross-fitted."""
    judges, att = _sections(report)
    answerable = {r.question_id: r.answerable for r in att.rows}
    index = [{(j.judge, j.question_id, j.prompt): j for j in recs} for recs in fold_records]
    pis = [lab.inclusion_probability for lab in labels.values()]
    known = [p for p in pis if p is not None]
    unequal = bool(pis) and len(known) == len(pis) and max(known) - min(known) > 1e-9
    for prompt, figs in (report.labels.figures if report.labels else {}).items():
        for spec, fig in figures(judges.metrics):
            if fig.name not in figs or spec.human_label is None or not spec.labelled(fig):
                continue
            keys = [
                (j.judge, j.question_id, j.prompt)
                for j in fold_records[0]
                if j.judge == spec.name
                and j.prompt == prompt
                and (fig.subset == "all" or answerable.get(j.question_id) is (fig.subset == "answerable"))
            ]
            y: list[float] = []
            h: list[float] = []
            pi: list[float | None] = []
            w: list[float] = []
            u: list[float] = []
            wu: list[float] = []
            for key in keys:
                a = (key[1], key[2])
                lab = labels.get(a)
                value = lab.values.get(spec.human_label) if lab else None
                if lab is not None and value is not None and a in fold_of:
                    v = _value(index[fold_of[a]][key], fig.verdict)
                    if v is None:
                        continue
                    y.append(float(value))
                    h.append(v)
                    pi.append(lab.inclusion_probability)
                    w.append(weights.get(key[1], 1.0))
                else:
                    vs = [v for v in (_value(ix[key], fig.verdict) for ix in index) if v is not None]
                    if vs:
                        u.append(float(np.mean(vs)))
                        wu.append(weights.get(key[1], 1.0))
            if not y:
                continue
            figs[fig.name].ppi = _estimate(y, h, u, pi if unequal else None, w, wu, confidence, len(fold_records))
            target = judges.figures.get(prompt, {}).get(fig.name)
            if target is not None:
                target.ppi = figs[fig.name].ppi
    outs = [outcomes_of(report, recs, gens) for recs in fold_records]
    human = human_outcomes(report, list(labels.values()))
    for prompt, shares in (report.labels.outcomes if report.labels else {}).items():
        rows = [r for r in att.rows if r.prompt == prompt]
        for outcome, lf in shares.items():
            y, h, pi, w, u, wu = [], [], [], [], [], []
            for r in rows:
                a = (r.question_id, prompt)
                if a in human and a in fold_of:
                    y.append(float(human[a] == outcome))
                    h.append(float(outs[fold_of[a]][a][0] == outcome))
                    pi.append(labels[a].inclusion_probability)
                    w.append(weights.get(r.question_id, 1.0))
                else:
                    u.append(float(np.mean([o[a][0] == outcome for o in outs])))
                    wu.append(weights.get(r.question_id, 1.0))
            if not y:
                continue
            lf.ppi = _estimate(y, h, u, pi if unequal else None, w, wu, confidence, len(fold_records))
            share = att.shares.get(prompt, {}).get(outcome)
            if share is not None:
                share.ppi = lf.ppi
    if report.labels:
        # A paired difference of prompts from labels that also adapted the judge is not cross-
        # fitted here: the labels alone stand for it.
        for c in report.labels.comparisons:
            c.ppi = None


def _estimate(
    y: list[float],
    h: list[float],
    u: list[float],
    pi: list[float | None] | None,
    w: list[float],
    wu: list[float],
    confidence: float,
    folds: int,
) -> LabelledEstimate:
    """The cross-fitted estimate as the report keeps it; a share from few labels (or all on one
    side) widened to contain the labels' exact interval, as every prediction-powered share is
    (``labels/ppi.py``: a normal interval is not to be trusted there)."""
    ya, wa = np.array(y), np.array(w)
    est = cross_ppi_mean(
        ya,
        np.array(h),
        np.array(u),
        None if pi is None else np.array(pi, float),
        confidence=confidence,
        w=wa,
        w_unlabelled=np.array(wu),
    )
    method = f"cross-ppi ({folds} folds: each label corrects verdicts of judges adapted without it)"
    e = PPIEstimate(est.value, est.ci_low, est.ci_high, est.n_labels, est.n_unlabelled, method)
    e = at_least_exact(e, ya, human_mean(ya, w=wa), w=wa)
    return LabelledEstimate(
        value=e.value,
        ci_low=e.ci_low,
        ci_high=e.ci_high,
        n_labels=e.n_labels,
        n_unlabelled=e.n_unlabelled,
        method=e.method,
    )


def _section(
    before: Report,
    after: Report,
    shipped: dict[str, Decider],
    full: dict[str, Decider],
    old: list[Judgement],
    new: list[Judgement],
    labels: dict[Key, Label],
    how: str,
    folds: int,
    source: str,
    earlier: dict[str, dict[str, Item]] | None = None,
) -> AdaptationSection:
    judges = []
    for variant, d in full.items():
        pairs = [(a, b) for a, b in zip(old, new, strict=True) if adaptable(a.judge) and variant_of(a) == variant]
        if not pairs:
            continue
        ys = [_label(a, labels) for a, _ in pairs]
        was = shipped[variant]
        judges.append(
            AdaptedJudge(
                judge=pairs[0][0].judge,
                variant=variant,
                labels=d.labels,
                # Over every label the fit rests on: this file's and those kept from the saved adaptation.
                positives=sum(y is True for y in ys)
                + sum(bool(it.positive) for it in (earlier or {}).get(variant, {}).values()),
                how=how,
                shift=round(d.shift, 4),
                cutoff_before=was.cutoff,
                cutoff_after=round(d.cutoff, 6),
                band_before=list(was.band) if was.band else None,
                band_after=[round(x, 6) for x in d.band] if d.band else None,
                blend_before=was.blend.describe() if was.blend else None,
                blend_after=d.blend.describe() if d.blend else None,
                criterion=JUDGES[pairs[0][0].judge].criterion is not None,
                changed=sum((a.status, a.verdict, a.score) != (b.status, b.verdict, b.score) for a, b in pairs),
                uncertain_before=sum(a.status == "uncertain" for a, _ in pairs),
                uncertain_after=sum(b.status == "uncertain" for _, b in pairs),
                decisions=len(pairs),
            )
        )
    n = len(labels)
    return AdaptationSection(
        labels_file=source,
        answers_labelled=n,
        how=how,
        folds=folds,
        judges=judges,
        corpus=before.corpus.fingerprint if before.corpus else None,
        note=(
            f"verdicts adapted to this corpus with {n} labelled answers ({source}); the prediction-powered figures "
            f"are cross-fitted in {folds} folds (each label corrects only verdicts of judges adapted without it); "
            "the labels-only figures use the labels alone"
        ),
    )


def _save(
    report: Report, full: dict[str, Decider], records: list[Judgement], source: str, items: dict[str, dict[str, Item]]
) -> None:
    """Each adapted variant kept for later audits of the corpus, with the labelled answers it rests on."""
    judges, _ = _sections(report)
    section = report.adaptation
    if section is None:
        return
    cal = judges.calibration
    identity = next((c.identity for c in cal.values() if c.identity), "")
    corpus = report.corpus.fingerprint if report.corpus else None
    if not identity or not corpus:
        section.note += "; not saved for later audits (the run recorded no judge model identity or corpus)"
        return
    hashes = {v: h for c in cal.values() for v, h in c.prompt_hashes.items()}
    where = None
    shown = {j.variant: j for j in section.judges}
    for variant, d in full.items():
        judged = shown.get(variant)
        if judged is not None and judged.labels and judged.positives in (0, judged.labels):
            # Labels of one verdict only do not say where the other lies: such a fit would decide every
            # later audit of the corpus (user trial 3 F11), so it stays in this report alone.
            judged.not_saved = f"all {judged.labels} labels give one verdict"
            continue
        # A report written before calibrations kept each variant's hash: a one-prompt judge's record
        # hash is its prompt's.
        found = {r.judge_prompt_hash for r in records if variant_of(r) == variant and r.judge == variant}
        prompt_hash = hashes.get(variant) or (found.pop() if len(found) == 1 else None)
        if prompt_hash is None or d.labels == 0:
            continue
        where = save_adaptation(corpus, identity, variant, prompt_hash, d, source, items=items.get(variant))
    kept_here = [j.variant for j in section.judges if j.not_saved]
    if where is not None:
        section.saved = str(where)
        section.note += f"; saved for later audits of this corpus ({where})"
        if kept_here:
            section.note += f", except {', '.join(kept_here)} (adapted in this report only)"
