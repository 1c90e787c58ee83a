"""Run against run: two finished run folders of one test set, compared question by question.

Questions are matched by id. For every figure both runs have (retrieval metrics per retriever,
matched by name or paired explicitly; judged figures and outcome shares per prompt, likewise) the
paired difference new − base on the questions both runs can compare, with its paired bootstrap
interval and the paired test the in-run comparisons use (exact sign test, i.e. McNemar, for binary
figures; the sign-flip permutation test for scores), Holm-corrected across every figure of the
diff, and the verdict in words (``rag_eval.stats``). The questions that moved keep both runs'
evidence: ranks and top chunks for retrieval; answers, outcomes and the judges' reasons for
generation.

Runs over different corpora (a re-chunking) compare a question only while its label means the
same in both: evidence quotes always do; a chunk named by id does only while its passage is
unchanged. Every question that cannot be compared is listed with the reason, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval.attribution import OUTCOMES, AttributionRow, ContextMark
from rag_eval.base_records import Model
from rag_eval.errors import ConfigError, DataError, Problem, did_you_mean
from rag_eval.judges.judge_records import judge_settings, settings_changes
from rag_eval.judges.registry import Criterion, criteria_registered, figures
from rag_eval.metrics import parse_metric
from rag_eval.orchestration.compare import per_question_values
from rag_eval.orchestration.finished import Run, read_finished_run
from rag_eval.orchestration.history import SavedConfig
from rag_eval.orchestration.judge_noise import flag_judge_noise, same_input_flips
from rag_eval.report.diff_records import DiffData, Evidence, FigureEntry, MovedEntry, NotCompared
from rag_eval.report.diff_report import diff_screen, render_diff_markdown
from rag_eval.report.markdown import AdaptedNote
from rag_eval.report.settings import StatsConfig
from rag_eval.retrievers.retrieval_records import QuestionRecord
from rag_eval.rundir import write_json, write_text
from rag_eval.stats import Comparison, apply_holm, compare_paired

GOOD_OUTCOMES = ("ok", "correct_refusal")
TOP_SHOWN = 5
_STATS = StatsConfig()


@dataclass
class RunDiff:
    """Two runs compared: figures, the questions that moved, and what could not be compared.

    ``figures_df()``, ``moved_df()`` and ``not_compared_df()`` are pandas views;
    ``to_json()`` is what ``rag-eval diff --json`` writes (``DiffData``)."""

    base: str
    new: str
    base_name: str
    new_name: str
    shared: int
    figures: list[FigureEntry]
    moved: list[MovedEntry]
    only_in_base: list[str]
    only_in_new: list[str]
    not_compared: list[NotCompared]
    notes: list[str]
    same_corpus: bool
    confidence: float = _STATS.confidence
    alpha: float = _STATS.alpha
    warnings: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """No figure differs on any question, and every question of both runs was compared."""
        return (
            not self.moved
            and not any(f.changed for f in self.figures)
            and not self.only_in_base
            and not self.only_in_new
            and not self.not_compared
        )

    def figure(self, name: str) -> FigureEntry:
        for f in self.figures:
            if f.name == name:
                return f

        raise KeyError(f"the diff has no figure '{name}'; {did_you_mean(name, [f.name for f in self.figures])}")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "base": self.base,
            "new": self.new,
            "base_name": self.base_name,
            "new_name": self.new_name,
            "confidence": self.confidence,
            "alpha": self.alpha,
            "shared_questions": self.shared,
            "same_corpus": self.same_corpus,
            "empty": self.empty,
            "figures": {f.name: f.entry() for f in self.figures},
            "moved": {f.name: {"better": f.better_ids, "worse": f.worse_ids} for f in self.figures},
            "questions": [m.dump() for m in self.moved],
            "only_in_base": self.only_in_base,
            "only_in_new": self.only_in_new,
            "not_compared": [x.dump() for x in self.not_compared],
            "notes": self.notes,
        }
        return {**out, "warnings": self.warnings} if self.warnings else out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunDiff:
        """The diff back from what ``to_json`` wrote (a run's diff.json)."""
        data = DiffData.load(d)
        return cls(
            data.base,
            data.new,
            data.base_name,
            data.new_name,
            data.shared_questions,
            data.named_figures(),
            list(data.questions),
            list(data.only_in_base),
            list(data.only_in_new),
            list(data.not_compared),
            list(data.notes),
            data.same_corpus,
            float(data.confidence),
            float(data.alpha),
            list(data.warnings),
        )

    def figures_df(self):
        """One row per figure: base, new, diff with its interval, counts, p-values, verdict."""
        import pandas as pd  # noqa: PLC0415

        return pd.DataFrame(
            [{"figure": f.name, **{k: v for k, v in f.entry().items() if k != "judge_noise"}} for f in self.figures]
        )

    def moved_df(self):
        """One row per moved question and system, worst regression first: both runs' rank (retrieval)
        or outcome (generation), and the figures it moved on."""
        import pandas as pd  # noqa: PLC0415

        rows = []
        for m in self.moved:
            key = "rank" if m.scope == "retrieval" else "outcome"
            rows.append(
                {
                    "question_id": m.question_id,
                    "scope": m.scope,
                    "system": m.system,
                    "severity": m.severity,
                    f"base_{key}": getattr(m.base, key),
                    f"new_{key}": getattr(m.new, key),
                    "worse": m.worse,
                    "better": m.better,
                    "question": m.question,
                }
            )
        return pd.DataFrame(rows)

    def not_compared_df(self):
        """One row per question left out of a comparison, with the reason."""
        import pandas as pd  # noqa: PLC0415

        only = [
            {"question_id": q, "scope": "all", "system": "", "why": "only in the base run"} for q in self.only_in_base
        ]
        only += [
            {"question_id": q, "scope": "all", "system": "", "why": "only in the new run"} for q in self.only_in_new
        ]
        rows = only + [x.model_dump(include={"question_id", "scope", "system", "why"}) for x in self.not_compared]
        return pd.DataFrame(rows, columns=["question_id", "scope", "system", "why"])

    def __str__(self) -> str:
        return diff_screen(self.to_json())


def pair_names(base: list[str], new: list[str], pairs: dict[str, str]) -> tuple[list[tuple[str, str]], list[str]]:
    """(base name, new name) pairs: the explicit ``pairs`` (base -> new) whose names exist, then the
    names both runs have that no explicit pair uses; and a note for every name left unpaired."""
    out = [(b, n) for b, n in pairs.items() if b in base and n in new]
    used_new = {n for _, n in out}
    used_base = {b for b, _ in out}
    out += [(x, x) for x in new if x in base and x not in used_new and x not in used_base]
    paired_b, paired_n = {b for b, _ in out}, {n for _, n in out}
    notes = [f"'{x}' is only in the base run: not compared" for x in base if x not in paired_b]
    notes += [f"'{x}' is only in the new run: not compared" for x in new if x not in paired_n]
    return out, notes


def check_pairs(b: Run, n: Run, pairs: dict[str, str]) -> None:
    """Every explicit pair names a retriever (or a prompt) of the base run and one of the new run;
    a ConfigError naming what each run has otherwise."""
    problems = []
    for bname, nname in pairs.items():
        if (bname in b.by_retriever and nname in n.by_retriever) or (bname in b.rows and nname in n.rows):
            continue
        missing = [
            f"'{x}' is no retriever or prompt of the {role} run ({_names(run)})"
            for x, run, role in ((bname, b, "base"), (nname, n, "new"))
            if x not in run.by_retriever and x not in run.rows
        ] or [f"'{bname}' and '{nname}' are not both retrievers or both prompts"]
        problems.append(
            Problem(
                f"--pair {bname}={nname}",
                "; ".join(missing),
                "pair BASE_NAME=NEW_NAME with a name of each run, e.g. --pair "
                + (f"{next(iter(b.by_retriever), 'bm25')}={next(iter(n.by_retriever), 'hybrid')}"),
            )
        )
    if problems:
        raise ConfigError(problems)


def _adapted(run: Run) -> str:
    """How the run's judges were adapted to its corpus (``rag-eval report --labels F --adapt``, or a
    saved adaptation an audit reused), in words; empty when they decided as shipped."""
    parts = []
    report = run.report
    for variant, a in sorted(
        (v, a) for c in (report.judges.calibration.values() if report.judges else []) for v, a in c.adapted.items()
    ):
        parts.append(f"{variant} with {AdaptedNote.load(a).labels} labels")
    if report.adaptation is not None:
        parts += [f"{j.variant} with {j.labels} labels" for j in report.adaptation.judges if j.labels]
    return ", ".join(sorted(set(parts)))


def _settings(run: Run) -> dict[str, dict[str, str]]:
    """The run's judge settings (``judge_settings``); none for a run without judges."""
    return judge_settings(run.report.judges.calibration, run.report.judges.records) if run.report.judges else {}


def _names(run: Run) -> str:
    parts = [f"retrievers: {', '.join(run.by_retriever) or 'none'}"]
    if run.rows:
        parts.append(f"prompts: {', '.join(sorted(run.rows))}")
    return "; ".join(parts)


class LabelProvenance(Model):
    """A question's labels as a run recorded them (``QuestionRecord.labels``, written by
    ``data.testset.label_provenance``): its evidence quotes and its chunk-id labels with the hash of
    each chunk's passage."""

    evidence: list[Any] = []
    chunk_ids: dict[str, Any] = {}


def retrieval_why(b: QuestionRecord, n: QuestionRecord, same_corpus: bool) -> str | None:
    """Why a question's retrieval figures cannot be compared between two runs, or None."""
    if b.answerable != n.answerable:
        return "answerable in one run, unanswerable in the other"
    if same_corpus:
        if b.relevant != n.relevant:
            return (
                f"its labels changed between the runs (relevant chunks {sorted(b.relevant)} before, "
                f"{sorted(n.relevant)} after)"
            )
        return None
    lb, ln = b.labels, n.labels
    if lb is None or ln is None:
        return (
            "the corpus changed and a run folder has no label records (written by an older rag-eval), so "
            "whether its labels still mean the same cannot be checked: rerun that audit"
        )
    lb, ln = LabelProvenance.load(lb), LabelProvenance.load(ln)
    if sorted(lb.evidence) != sorted(ln.evidence):
        return "its evidence quotes changed between the runs"
    # Chunk-id labels: each labelled chunk's id and the hash of its passage in that run.
    base_ids, new_ids = lb.chunk_ids, ln.chunk_ids
    for cid in sorted(set(base_ids) | set(new_ids)):
        if cid not in new_ids:
            return f"chunk-id label '{cid}' no longer exists in the new run's corpus (or labels)"
        if cid not in base_ids:
            return f"chunk-id label '{cid}' does not exist in the base run's corpus (or labels)"
        if base_ids[cid] != new_ids[cid]:
            return (
                f"labelled by chunk id '{cid}', whose passage differs between the runs (the corpus was re-chunked "
                "or edited); an evidence quote would make it comparable"
            )
    return None


def generation_why(b: AttributionRow | None, n: AttributionRow | None) -> str | None:
    """Why a question's answers cannot be compared between two runs, or None."""
    if b is None or n is None:
        return f"not answered in the {'base' if b is None else 'new'} run (outside its generation sample)"
    if b.answerable != n.answerable:
        return "answerable in one run, unanswerable in the other"
    if (b.reference or None) != (n.reference or None):
        return "its reference answer changed between the runs"
    return None


class _Builder:
    """Collects the comparisons of a diff, then corrects and words them together."""

    def __init__(self, stats: StatsConfig):
        self.st = stats
        self.figs: list[tuple[FigureEntry, Comparison | None]] = []
        self.moves: dict[tuple[str, str, str], dict[str, tuple[float, float]]] = {}

    def add(self, fig: FigureEntry, vb: dict[str, float], vn: dict[str, float], qids: list[str]) -> None:
        """``vb`` / ``vn``: per-question values where higher is better; the figure is reported in its
        own direction (``fig.better``)."""
        fig.n = len(qids)
        if not qids:
            fig.verdict = f"{fig.name}: no question could be compared"
            self.figs.append((fig, None))
            return
        a = np.array([vn[q] for q in qids])
        b = np.array([vb[q] for q in qids])
        st = self.st
        c = compare_paired(
            a,
            b,
            names=("new", "base"),
            metric=fig.name,
            binary=fig.binary,
            n_resamples=st.permutation_resamples,
            bootstrap_resamples=st.bootstrap_resamples,
            confidence=st.confidence,
            seed=st.seed,
            alpha=st.alpha,
        )
        sign = 1.0 if fig.better == "higher" else -1.0
        natural: Callable[[np.ndarray], np.ndarray] = (lambda v: v) if fig.better == "higher" else (lambda v: 1.0 - v)
        fig.base, fig.new = float(natural(b).mean()), float(natural(a).mean())
        fig.diff = sign * c.diff
        lo, hi = sorted((sign * c.ci_low, sign * c.ci_high))
        fig.ci_low, fig.ci_high = lo, hi
        fig.test, fig.p_value, fig.detectable = c.test, c.p_value, c.detectable
        fig.better_on, fig.worse_on, fig.same_on = int(c.wins), int(c.losses), int(c.ties)
        d = a - b
        order = sorted(range(len(qids)), key=lambda i: (-abs(d[i]), qids[i]))
        fig.better_ids = [qids[i] for i in order if d[i] > 0]
        fig.worse_ids = [qids[i] for i in order if d[i] < 0]
        for i, q in enumerate(qids):
            if d[i] != 0:
                move = self.moves.setdefault(
                    (fig.scope if fig.scope == "retrieval" else "generation", fig.system, q), {}
                )
                move[fig.name] = (float(d[i]), sign * float(d[i]))  # (in the good direction, new − base)
        self.figs.append((fig, c))

    def finish(self) -> list[FigureEntry]:
        comps = [c for _, c in self.figs if c is not None]
        apply_holm(comps, alpha=self.st.alpha)
        for fig, c in self.figs:
            if c is not None:
                fig.p_holm = c.p_holm
                fig.verdict = c.verdict
        return [f for f, _ in self.figs]


def _figure(
    name: str, scope: str, system: str, base_system: str, metric: str, better: str, binary: bool
) -> FigureEntry:
    """A figure to compare, every key of its JSON entry set (the unmeasured ones None)."""
    return FigureEntry(
        base=None,
        new=None,
        diff=None,
        ci_low=None,
        ci_high=None,
        p_value=None,
        p_holm=None,
        verdict="",
        n=0,
        test=None,
        better=better,
        better_on=0,
        worse_on=0,
        same_on=0,
        detectable=None,
        base_system=base_system,
        scope=scope,
        system=system,
        metric=metric,
        binary=binary,
        name=name,
    )


def _stats_settings(run: Run) -> StatsConfig:
    """The statistics settings the new run was made with (a config of another version: the defaults)."""
    try:
        return StatsConfig(**(SavedConfig.load(run.config).stats or {}))
    except Exception:
        return StatsConfig()


def diff_runs(base: str | Path, new: str | Path, *, pairs: dict[str, str] | None = None) -> RunDiff:
    """Compare two finished run folders question by question (see the module's docstring).
    ``pairs``: base name -> new name, for retrievers or prompts whose names differ."""
    b, n = read_finished_run(base, "base"), read_finished_run(new, "new")
    pairs = pairs or {}
    check_pairs(b, n, pairs)
    st = _stats_settings(n)
    same_corpus = b.fingerprint is not None and b.fingerprint == n.fingerprint
    shared = sorted(set(b.questions) & set(n.questions))
    only_b = sorted(set(b.questions) - set(n.questions))
    only_n = sorted(set(n.questions) - set(b.questions))
    warnings = []
    if b.name != n.name:
        warnings.append(
            f"the base run is of config '{b.name}', the new run of config '{n.name}': compared as two runs of one "
            "test set, question by question"
        )
    if not shared:
        raise DataError(
            Problem(
                f"{b.path} -> {n.path}",
                f"the runs share no question id (base: {len(b.questions)} questions of config '{b.name}', new: "
                f"{len(n.questions)} of config '{n.name}'), so nothing can be compared",
                "give a baseline run of the same test set (a run of this config, e.g. from the main branch)",
            )
        )
    notes: list[str] = []
    adapted_b, adapted_n = _adapted(b), _adapted(n)
    if adapted_b != adapted_n:
        warnings.append(
            "the runs' judges were adapted differently to the corpus (base: "
            f"{adapted_b or 'as shipped'}; new: {adapted_n or 'as shipped'}), so their verdicts differ by that too: "
            "rerun the base with the same adaptation (rag-eval run reuses the one saved for the corpus) to compare "
            "the systems alone"
        )
    calibrated = settings_changes(_settings(b), _settings(n))
    if calibrated and adapted_b == adapted_n:
        warnings.append(
            "the runs' judges decided with other settings ("
            + "; ".join(calibrated)
            + "), so their verdicts differ by that too (a judge-check --save, another judge model or prompt): "
            "rerun the base with the new settings (its model calls come from the cache) to compare the systems alone"
        )
    if only_b or only_n:
        notes.append(
            f"the test sets differ: compared on the {len(shared)} questions both runs have; {len(only_b)} only in "
            f"the base run, {len(only_n)} only in the new run (listed below)"
        )
    if not same_corpus:
        bc, nc = b.report.corpus, n.report.corpus
        notes.append(
            f"the corpora differ ({bc.chunks if bc else '?'} chunks from {bc.source if bc else '?'} vs "
            f"{nc.chunks if nc else '?'} from {nc.source if nc else '?'}): retrieval is compared on the questions "
            "whose labels mean the same in both (evidence quotes; chunk ids whose passage is unchanged)"
        )
    builder = _Builder(st)
    not_compared: list[NotCompared] = []
    _retrieval_figures(b, n, shared, same_corpus, pairs, builder, not_compared, notes)
    # The runs' own criteria (read back from their reports) are judges for this diff.
    with criteria_registered(run_criteria(b, n, warnings)):
        _generation_figures(b, n, shared, pairs, builder, not_compared, notes)
        figs = builder.finish()
        flag_judge_noise(b, n, figs)
    moved = _moved(b, n, builder.moves, figs)
    notes.append(
        f"p-values are Holm-corrected across all {sum(f.p_value is not None for f in figs)} figures; the "
        f"{st.confidence:.0%} intervals (and gates on them) are per figure"
    )
    return RunDiff(
        str(b.path),
        str(n.path),
        b.name,
        n.name,
        len(shared),
        figs,
        moved,
        only_b,
        only_n,
        not_compared,
        notes,
        same_corpus,
        st.confidence,
        st.alpha,
        warnings,
    )


def run_criteria(b: Run, n: Run, warnings: list[str]) -> dict[str, Criterion]:
    """The criteria of both runs (the new run's where both have one), a warning for each criterion
    the two runs ask differently (its figures then compare two questions)."""
    base, new = ((r.report.judges.criteria if r.report.judges else {}) for r in (b, n))
    found = {name: c.criterion() for name, c in base.items()}
    for name, c in new.items():
        if name in found and _asks(found[name]) != _asks(c.criterion()):
            warnings.append(
                f"the criterion '{name}' is defined differently in the two runs (base: {found[name].question!r}; "
                f"new: {c.question!r}): its figures compare two different questions"
            )
        found[name] = c.criterion()
    return found


def _asks(c: Criterion) -> tuple:
    """What a criterion asks, and of which answers (its band may differ between runs)."""
    return (c.question, c.sees, c.applies, c.passes, c.levels, c.pass_level, c.steps)


def _retrieval_figures(
    b: Run,
    n: Run,
    shared: list[str],
    same_corpus: bool,
    pairs: dict[str, str],
    builder: _Builder,
    not_compared: list[NotCompared],
    notes: list[str],
) -> None:
    names, unpaired = pair_names(list(b.by_retriever), list(n.by_retriever), pairs)
    notes += [f"retriever {x}" for x in unpaired]
    for bname, nname in names:
        rb, rn = b.by_retriever[bname], n.by_retriever[nname]
        comparable = []
        for q in shared:
            if q not in rb or q not in rn:
                continue
            why = retrieval_why(rb[q], rn[q], same_corpus)
            if why:
                not_compared.append(NotCompared(question_id=q, scope="retrieval", system=nname, why=why))
            elif rb[q].answerable:
                comparable.append(q)
        known_b = b.summary.retrieval.get(bname, {})
        known_n = n.summary.retrieval.get(nname, {})
        metrics = [m for m in known_n if m in known_b]
        notes += _one_sided(f"retriever '{nname}'", list(known_b), list(known_n))
        for m in metrics:
            qids = [q for q in comparable if m in (rb[q].metrics or {}) and m in (rn[q].metrics or {})]
            fig = _figure(f"retrieval.{nname}.{m}", "retrieval", nname, bname, m, "higher", parse_metric(m).binary)
            builder.add(fig, {q: _metric(rb[q], m) for q in qids}, {q: _metric(rn[q], m) for q in qids}, qids)


def _metric(r: QuestionRecord, m: str) -> float:
    return (r.metrics or {})[m]


def _generation_figures(
    b: Run,
    n: Run,
    shared: list[str],
    pairs: dict[str, str],
    builder: _Builder,
    not_compared: list[NotCompared],
    notes: list[str],
) -> None:
    if not b.rows and not n.rows:
        return
    names, unpaired = pair_names(sorted(b.rows), sorted(n.rows), pairs)
    notes += [f"prompt {x}" for x in unpaired]
    judges = [j for j in n.judges if j in b.judges]
    values_b = per_question_values(b.report, _answerable(b), judges, answer_independent=True)
    values_n = per_question_values(n.report, _answerable(n), judges, answer_independent=True)
    for bp, np_ in names:
        rb, rn = b.rows.get(bp, {}), n.rows.get(np_, {})
        comparable = []
        for q in shared:
            if q not in rb and q not in rn:
                continue
            why = generation_why(rb.get(q), rn.get(q))
            if why:
                not_compared.append(NotCompared(question_id=q, scope="generation", system=np_, why=why))
            else:
                comparable.append(q)
        judged_b = b.summary.generation.get(bp, {})
        judged_n = n.summary.generation.get(np_, {})
        notes += _one_sided(f"prompt '{np_}'", list(judged_b), list(judged_n))
        for _spec, f in figures(judges):
            if f.name not in judged_b or f.name not in judged_n:
                continue
            vb = values_b[f.comparison_name].get(bp, {})
            vn = values_n[f.comparison_name].get(np_, {})
            qids = [q for q in comparable if q in vb and q in vn]
            fig = _figure(f"generation.{np_}.{f.name}", "generation", np_, bp, f.name, f.better, f.binary)
            builder.add(fig, vb, vn, qids)
        for o in OUTCOMES:
            if not any(rb[q].outcome == o or rn[q].outcome == o for q in comparable):
                continue
            better = "higher" if o in GOOD_OUTCOMES else "lower"
            good = (lambda hit: hit) if better == "higher" else (lambda hit: 1.0 - hit)
            vb = {q: good(float(rb[q].outcome == o)) for q in comparable}
            vn = {q: good(float(rn[q].outcome == o)) for q in comparable}
            fig = _figure(f"attribution.{np_}.{o}", "attribution", np_, bp, o, better, True)
            builder.add(fig, vb, vn, comparable)
    weighted = [r.path.name for r in (b, n) if r.report.judges is not None and r.report.judges.weighted]
    if weighted:
        notes.append(
            f"{', '.join(weighted)} judged a stratified sample: the diff compares the sampled questions both runs "
            "answered, unweighted"
        )


def _one_sided(what: str, base: list[str], new: list[str]) -> list[str]:
    """A note naming the figures only one run measured (another k, another judge)."""
    only_b, only_n = [m for m in base if m not in new], [m for m in new if m not in base]
    parts = [f"only in the base run: {', '.join(only_b)}"] * bool(only_b)
    parts += [f"only in the new run: {', '.join(only_n)}"] * bool(only_n)
    return [f"{what}: figures not compared, {'; '.join(parts)}"] if parts else []


def _answerable(run: Run) -> dict[str, bool]:
    return {q: v.answerable for q, v in run.questions.items()}


def _retrieval_evidence(record: QuestionRecord) -> Evidence:
    top = [ContextMark(id=r.id, relevant=r.grade > 0, score=r.score) for r in record.retrieved[:TOP_SHOWN]]
    return Evidence(rank=record.first_relevant_rank, top=top, relevant=sorted(record.relevant))


def _generation_evidence(row: AttributionRow) -> Evidence:
    return Evidence(outcome=row.outcome, why=row.why, answer=row.answer, contexts=row.contexts, judges=row.judges)


def _moved(b: Run, n: Run, moves: dict, figs: list[FigureEntry]) -> list[MovedEntry]:
    systems = {(f.scope if f.scope == "retrieval" else "generation", f.system): f.base_system for f in figs}
    position = {f.name: i for i, f in enumerate(figs)}
    out = []
    for (scope, system, q), changes in moves.items():
        base_system = systems[(scope, system)]
        if scope == "retrieval":
            eb = _retrieval_evidence(b.by_retriever[base_system][q])
            en = _retrieval_evidence(n.by_retriever[system][q])
            noise: list[str] = []
        else:
            eb, en = _generation_evidence(b.rows[base_system][q]), _generation_evidence(n.rows[system][q])
            noise = same_input_flips(b, n, base_system, system, q)
        good = {name: d for name, (d, _) in changes.items() if not name.startswith("attribution.")}
        severity = sum(good.values())
        if scope == "generation" and (eb.outcome in GOOD_OUTCOMES) != (en.outcome in GOOD_OUTCOMES):
            severity += 1.0 if en.outcome in GOOD_OUTCOMES else -1.0
        text = next((r.questions[q].question for r in (n, b) if q in r.questions and r.questions[q].question), "")
        out.append(
            MovedEntry(
                question_id=q,
                question=text,
                scope=scope,
                system=system,
                base_system=base_system,
                severity=severity,
                changes={name: nat for name, (_, nat) in changes.items()},
                better=sorted((name for name, (d, _) in changes.items() if d > 0), key=position.__getitem__),
                worse=sorted((name for name, (d, _) in changes.items() if d < 0), key=position.__getitem__),
                base=eb,
                new=en,
                judge_noise=noise,
            )
        )
    # Grouped as the figures are (retrievers, then prompts, in the run's order), worst regression first.
    group: dict[tuple[str, str], int] = {}
    for f in figs:
        group.setdefault((f.scope if f.scope == "retrieval" else "generation", f.system), len(group))
    return sorted(out, key=lambda m: (group[(m.scope, m.system)], m.severity, m.question_id))


def write_diff(diff: RunDiff, folder: Path) -> None:
    """diff.json and diff.md into a folder (the new run's, for ``--baseline``)."""
    data = diff.to_json()
    write_json(folder / "diff.json", data)
    write_text(folder / "diff.md", render_diff_markdown(data))
