"""Rendering the report data as Markdown (each section's part; the page is put together in
``report/sections.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from rag_eval.attribution import UNRECORDED_FAITHFULNESS_THRESHOLD
from rag_eval.attribution.records import AttributionRow, AttributionSection
from rag_eval.base_records import Model, Num, PairedComparison, StageReuse, required
from rag_eval.judges.judge_records import CriterionSection, EscalationRecord, JudgedFigure, JudgesSection
from rag_eval.judges.ragas_judges import describe_requests
from rag_eval.judges.registry import JUDGES
from rag_eval.labels.human import labelled_line
from rag_eval.labels.ppi import labels_needed
from rag_eval.report.formatting import _table, fmt, judge_columns, text
from rag_eval.report.quotes import markdown_quotes
from rag_eval.report.report_records import ComparisonSection, Report
from rag_eval.retrievers.diagnosis import CAUSES, FIXES
from rag_eval.retrievers.retrieval_records import Cause, Miss, SimulatedFix
from rag_eval.stats import format_p


class IndexNote(Model):
    """How an approximate index ranked (``RetrievalSection.index_notes``, one per retriever): its
    kind, its recall@10 against exact search and the questions that was measured on."""

    index: Any = ""
    recall_at_10: Any = Field(float("nan"), alias="recall@10_vs_exact")
    recall_sample: Any = None


class AdaptedNote(Model):
    """What the report says of a prompt variant's adaptation to the corpus (``Calibration.adapted``):
    the labels it was adapted with and where they came from."""

    labels: Any = None
    source: str | None = None


def comparison_rows(comparisons: list[PairedComparison], pair_first: bool) -> list[list[str]]:
    """Paired comparisons as table rows: pair and metric, difference [CI], better/worse/same, p (Holm), verdict."""
    rows = []
    for c in comparisons:
        diff, counts = c.shown()
        names = [f"{c.a} vs {c.b}", c.metric] if pair_first else [c.metric, f"{c.a} vs {c.b}"]
        rows.append(
            names
            + [
                diff,
                counts,
                format_p(required(c.p_holm, f"the p-value (Holm) of {c.a} vs {c.b} on {c.metric}")),
                c.verdict,
            ]
        )
    return rows


def retrieval_markdown(report: Report) -> list[str]:
    r = required(report.retrieval, "the report's retrieval section")
    ts = required(report.test_set, "the report's test_set")
    out = [
        f"## Retrieval ({ts.answerable} answerable questions; {ts.unanswerable} unanswerable "
        "ones are left out of rank metrics)",
        "",
        "Each figure is the mean over questions with its 95% bootstrap interval; a figure with the same "
        "value on every question (all 0 or all 1) gets the exact binomial interval instead, as a bootstrap "
        "would give it no width.",
        "",
    ]
    out += _table(
        ["retriever"] + r.table,
        [[name] + [fmt(figs.get(m)) for m in r.table] for name, figs in r.retrievers.items()],
    )
    others = [m for m in r.metrics if m not in r.table]
    if others:
        out += ["", "<details><summary>All metrics</summary>", ""]
        out += _table(
            ["retriever"] + others,
            [[name] + [fmt(figs.get(m)) for m in others] for name, figs in r.retrievers.items()],
        )
        out += ["", "</details>"]
    if r.comparisons:
        out += [
            "",
            "### Retrievers compared, question by question",
            "",
            "Paired tests on the same questions; p-values Holm-corrected across all comparisons, the "
            "difference intervals per comparison (not adjusted): an interval can exclude 0 while the "
            "corrected p-value does not settle the question.",
            "",
        ]
        header = ["pair", "metric", "difference [95% CI]", "better/worse/same", "p (Holm)", "verdict"]
        out += _table(header, comparison_rows(r.comparisons, pair_first=True))
    for name, n in ((k, IndexNote.model_validate(v)) for k, v in r.index_notes.items()):
        out += [
            "",
            f"**{name}** searched an approximate {n.index} index: recall@10 against exact search "
            f"{n.recall_at_10:.3f} on {n.recall_sample} questions "
            "(chunks exact search ranks high may be missing from its lists).",
        ]
    out += ["", f"### Misses (no relevant chunk in the top {r.miss_k}), by probable cause", ""]
    for name, rows in r.misses.items():
        out += [f"**{name}**: {len(rows)} of {ts.answerable} answerable questions", ""]
        for cause in CAUSES:
            group = [m for m in rows if (m.diagnosis.cause if m.diagnosis else "unclear") == cause]
            if not group:
                continue
            out += [f"*{cause}* ({len(group)}): {FIXES[cause]}", ""]
            header = ["question", "id", "rank found", "relevant", f"top {min(3, r.miss_k)} retrieved", "rule"]
            out += _table(header, [_miss_row(m) for m in group])
            out.append("")
    out += fixes_markdown(r.simulated_fixes)
    return out


def fixes_markdown(fixes: list[SimulatedFix]) -> list[str]:
    """Fixes tried on every question before anyone applies them."""
    if not fixes:
        return []
    out = ["", "### Fixes tried before they are advised", ""]
    out += [
        "Each change was run on every answerable question (the same fusion as the retrieval stage):",
        "",
    ]
    for f in fixes:
        detail = ""
        if f.fixes:
            detail += f"; fixes {', '.join(f.fixes[:8])}"
        if f.causes:
            detail += f"; breaks {', '.join(f.causes[:8])}"
        out.append(f"- {text(f.summary)}{text(detail)}")
    return out


def cause_notes(d: Cause | None) -> str:
    """How a miss's cause was decided, and the other causes that fit (with their evidence)."""
    return d.notes() if d is not None else ""


def _miss_row(m: Miss) -> list[str]:
    d = m.diagnosis or Cause(rule="")
    parts = d.evidence.get("component_ranks")
    rule = d.rule
    if parts:  # fusion: show where each part ranked the chunk
        rule += " (" + ", ".join(f"{n} rank {r or '>depth'}" for n, r in parts.items()) + ")"
    rule += cause_notes(m.diagnosis)
    return [
        m.question,
        m.question_id,
        str(m.rank) if m.rank else "not retrieved",
        ", ".join(m.relevant[:3]),
        ", ".join(m.top[:3]),
        rule,
    ]


def generation_markdown(report: Report) -> list[str]:
    g = required(report.generation, "the report's generation section")
    out = ["", f"## Generation ({g.questions} questions on {g.retriever}'s top {g.top_k})", ""]
    out += _table(
        ["prompt", "hash", "answered", "failed"],
        [[p, c.prompt_hash or "–", str(c.answered), str(c.failed)] for p, c in g.prompts.items()],
    )
    if g.usage:
        out += ["", "Model usage:", ""]
        out += _table(
            ["model", "calls", "cache hits", "failures", "prompt tokens", "completion tokens", "cost"],
            [
                [
                    u.model,
                    str(u.calls),
                    str(u.cache_hits),
                    str(u.failures),
                    str(u.prompt_tokens),
                    str(u.completion_tokens),
                    f"{u.cost:.4f}",
                ]
                for u in g.usage
            ],
        )
    return out


def comparison_markdown(report: Report) -> list[str]:
    c = required(report.comparison, "the report's comparison section")
    out = [
        "",
        "## Prompts compared on the same contexts",
        "",
        "Paired tests question by question (sign test for yes/no metrics, permutation test for scores); "
        "p-values Holm-corrected across metrics and pairs, the difference intervals per comparison (not "
        "adjusted): an interval can exclude 0 while the corrected p-value does not settle the question.",
        "",
    ]
    out += _table(
        ["metric", "pair", "difference [95% CI]", "better/worse/same", "p (Holm)", "verdict"],
        comparison_rows(c.comparisons, pair_first=False),
    )
    out += sequential_lines(c)
    if c.disagreements:
        out += ["", f"### Questions where the prompts disagree ({len(c.disagreements)})", ""]
        for d in c.disagreements:
            out += [f"**{d.question_id}**: {text(d.question)}", ""]
            for prompt, a in d.answers.items():
                reasons = "; ".join(
                    f"{n}: {j.verdict or j.score or j.status} ({text(j.reason or j.error, 160)})"
                    for n, j in a.judges.items()
                )
                out.append(f"- *{prompt}* `{a.outcome}`: {text(a.answer) or '–'} | {reasons}")
            out.append("")
    return out


def sequential_lines(section: ComparisonSection) -> list[str]:
    """The comparison's note on the sequential stop (Markdown)."""
    s = section.sequential
    if not s:
        return []
    last = s.looks[-1].pairs if s.looks else []
    pairs = "; ".join(f"{p.a} vs {p.b}: {p.wins} better, {p.losses} worse, e-value {p.e_value:.1f}" for p in last)
    stop = (
        f"settled after {s.questions_used} of {s.questions_total} questions"
        if s.settled
        else f"not settled: all {s.questions_used} questions judged"
    )
    return [
        "",
        f"**Stopped when settled** (`--stop-when-settled`, seed {s.seed}, batches of {s.batch}): {stop}; "
        f"{s.calls} model calls made, about {s.calls_saved_estimate} saved. Test: {s.test}, each pair "
        f"settled at e-value >= {s.threshold:g} (alpha {s.alpha}). {pairs}. The verdicts above are the "
        "fixed-sample tests on the questions judged; the stop claims no more than they do.",
    ]


def sample_note(report: Report) -> str | None:
    """How many questions the LLM stages ran on, when they were a stratified sample."""
    g = report.generation
    if g is None or not g.sampled:
        return None
    ts = required(report.test_set, "the report's test_set")
    return f"The LLM stages ran on a stratified sample of {g.questions} questions (of {ts.questions})"


def attribution_markdown(report: Report) -> list[str]:
    a: AttributionSection = required(report.attribution, "the report's attribution section")
    out = ["", "## Where it fails: one outcome per question", ""]
    note = sample_note(report)
    if note:
        out += [
            f"> {note}; each question is weighted by the size of its stratum "
            "(unanswerable, retrieved, missed) over the questions sampled from it, so shares estimate the "
            "whole test set. Set generation.sample to null for all.",
            "",
        ]
    present = a.present()
    out += _table(
        ["prompt"] + present,
        [[p] + [f"{sh[o].count} ({fmt(sh[o], 2)})" for o in present] for p, sh in a.shares.items()],
    )
    out += [""]
    for p, sp in a.split.items():
        out.append(
            f"- **{p}**: {sp.failures} failures of {sp.questions} questions: {sp.retrieval} in "
            f"retrieval, {sp.generation} in generation; {sp.not_judged} not judged"
            + (f"; {sp.uncertain} uncertain." if sp.uncertain else ".")
        )
    failed = [r for r in a.rows if r.failed]
    if failed:
        out += ["", "### Failed questions", ""]
        for r in failed:
            ctx = ", ".join(f"{c.id}{' (relevant)' if c.relevant else ''}" for c in r.contexts)
            out += [
                f"**{r.question_id}** ({r.prompt}): `{r.outcome}`: {text(r.question)}",
                "",
                f"- why: {text(r.why)}",
                *([f"- failed criteria: {', '.join(r.failed_criteria)}"] if r.failed_criteria else []),
                f"- retrieved: {text(ctx) or '–'}",
                f"- answer: {text(r.answer) or '–'}",
            ]
            if r.reference:
                out.append(f"- reference: {text(r.reference)}")
            for name, j in r.judges.items():
                out.append(f"- {name}: {j.shown()}: {text(j.reason or j.error or '', 300)}")
                out += markdown_quotes(j, text)
            out.append("")
    return out


def calibration_lines(j: JudgesSection) -> list[str]:
    """Which faithfulness judge decides attribution, and each probability-scored judge's cut-off."""
    out = []
    if j.faithfulness_judge:
        threshold = UNRECORDED_FAITHFULNESS_THRESHOLD if j.faithfulness_threshold is None else j.faithfulness_threshold
        out.append(
            f"- `unfaithful` in attribution is decided by `{j.faithfulness_judge}` (below "
            f"{threshold}); the Ragas metrics are reported under their own names."
        )
    if j.ragas_requests:
        out.append("- " + describe_requests(j.ragas_requests))
    for name, c in j.calibration.items():
        how = (
            "calibrated for this judge model and prompt"
            if c.calibrated
            else "NOT calibrated for this judge model or prompt: run `rag-eval judge-check --save`"
        )
        # The first judge's own verdicts: a second judge's decisions (escalation) are its endpoint's.
        mine = [
            r
            for r in j.records
            if r.judge == name
            and r.method is not None
            and not EscalationRecord.load(r.typed_details.escalation or {}).decided_by
        ]
        texted = sum(r.method == "text" for r in mine)
        if texted:
            how = (
                f"but {texted} of its {len(mine)} verdicts were read from the text: the judge endpoint returned no "
                "logprobs, so no probability, cut-off, band or calibration applies to them and none can be fitted "
                "(use an endpoint that returns logprobs: llama-server, vLLM, OpenAI's chat API)"
            )
        cuts: Mapping[str, Num | None] = c.cutoffs or {name: c.cutoff}
        at = " or ".join(f"{cut:.3f}" + (f" (`{v}`)" if len(cuts) > 1 else "") for v, cut in cuts.items())
        line = f"- `{name}`: decides at P(yes) >= {at} ({how})"
        if c.adapted:
            line += "; adapted to this corpus: " + ", ".join(
                f"`{v}` with {a.labels} labels ({a.source or 'rag-eval report --adapt'})"
                for v, a in ((v, AdaptedNote.model_validate(x)) for v, x in c.adapted.items())
            )
        if c.blend:
            line += (
                f"; P is the model's own P(yes) blended with word evidence, {c.blend}, fitted on labelled "
                "answers (the words behind a negative decision are named in its reason)"
            )
        agree = c.agreement
        if agree and agree.accuracy is not None:
            n10 = labels_needed(agree.accuracy, 0.10)
            line += (
                f"; agrees with people on {agree.accuracy:.2f} of {'?' if agree.n is None else agree.n} labelled cases "
                f"({agree.measured_on}). Its figures carry that error; about {n10} labelled answers "
                f"would give a prediction-powered interval of ±0.10 (`rag-eval label RUN_DIR --n {n10}`)"
            )
        bands = c.bands
        if bands and len(bands) > 1 and all(b.high <= b.low for b in bands.values()):
            line += f"; uncertain nowhere: the fitted bands ({', '.join(f'`{v}`' for v in bands)}) are empty"
            line += f" ({next(iter(bands.values())).source})"
        elif bands:
            # An empty band (low == high) is a fitted result too: every decision reached the target.
            line += "; uncertain " + " or ".join(
                (
                    "nowhere: the fitted band is empty"
                    if b.high <= b.low
                    else f"where P lies in [{b.low:.3f}, {b.high:.3f})"
                )
                + (f" (`{v}`)" if len(bands) > 1 else "")
                for v, b in bands.items()
            )
            line += f" ({next(iter(bands.values())).source})"
        if c.band_note:
            line += f"; {c.band_note}"
        if c.adaptation_not_used:
            line += f"; {c.adaptation_not_used}"
        out.append(line)

    for name, agree in j.ragas_agreement.items():
        if agree.accuracy is None:
            continue
        n10 = labels_needed(agree.accuracy, 0.10)
        out.append(
            f"- `{name}` (Ragas): agrees with people on {agree.accuracy:.2f} of "
            f"{'?' if agree.n is None else agree.n} labelled cases ({agree.measured_on}). Its figures carry that "
            f"error; about {n10} labelled answers would give a prediction-powered interval of ±0.10"
        )
    unmeasured = [
        m
        for m in j.metrics
        if m in JUDGES
        and JUDGES[m].human_label
        and not (m in j.calibration and j.calibration[m].agreement)
        and m not in j.ragas_agreement
    ]
    if unmeasured:
        out.append(
            f"- {', '.join(f'`{m}`' for m in unmeasured)}: agreement with people not measured for this judge model; "
            "label a sample of answers (`rag-eval label RUN_DIR --n 30`) to measure it and correct the figures"
        )
    return out + ([""] if out else [])


def labels_table(report: Report) -> tuple[list[str], list[list[str]]] | None:
    """Judged figures with human labels: the judge alone, the labels alone, and the two combined by
    prediction-powered inference; None without labels."""
    lab = report.labels
    if not lab:
        return None
    rows = []
    figures = report.judges.figures if report.judges else {}
    for prompt, by_fig in lab.figures.items():
        for name, e in by_fig.items():
            human = required(e.human, f"the labelled figure {prompt}/{name}'s labels-only estimate")
            ppi = required(e.ppi, f"the labelled figure {prompt}/{name}'s prediction-powered estimate")
            rows.append(
                [
                    prompt,
                    name,
                    e.label,
                    fmt(figures.get(prompt, {}).get(name), 2),
                    f"{fmt(human, 2)} n={human.n_labels}",
                    f"{fmt(ppi, 2)} ({ppi.method}, {ppi.n_labels} labelled + {ppi.n_unlabelled} judged only)",
                    agreement_cell(e.agreement_on_labelled, e.agreement_n),
                ]
            )
    for prompt, shares in lab.outcomes.items():
        for outcome, e in shares.items():
            share = required(report.attribution, "the report's attribution section").shares[prompt][outcome]
            human = required(e.human, f"the labelled outcome {prompt}/{outcome}'s labels-only estimate")
            ppi = required(e.ppi, f"the labelled outcome {prompt}/{outcome}'s prediction-powered estimate")
            if not share.count and not human.value:
                continue
            rows.append(
                [
                    prompt,
                    f"outcome {outcome}",
                    "all labels",
                    fmt(share, 2),
                    f"{fmt(human, 2)} n={human.n_labels}",
                    f"{fmt(ppi, 2)} ({ppi.method})",
                    "",
                ]
            )
    header = ["prompt", "figure", "label", "judge only", "labels only", "prediction-powered", "agreement"]
    return header, rows


def agreement_cell(agreement: float | None, n: int | None) -> str:
    """The labelled table's agreement: on how many decided answers, "–" where the judge decided none."""
    if agreement is None:
        return "– (none decided)" if n == 0 else "–"
    return f"{agreement:.2f}" if n is None else f"{agreement:.2f} of {n}"


def labels_counted(report: Report) -> str:
    """How many answers were labelled, and under each column (a row counts for a column only where it
    holds yes or no): "22 answers labelled: correct 22, faithful 20, refused 22"."""
    lab = required(report.labels, "the report's labels section")
    return labelled_line(lab.answers_labelled, lab.per_column)


def labels_markdown(report: Report) -> list[str]:
    table = labels_table(report)
    if table is None:
        return []
    lab = required(report.labels, "the report's labels section")
    out = [
        "",
        f"## With human labels ({labels_counted(report)}; {lab.source})",
        "",
        "Prediction-powered inference (PPI++): the judge's verdicts on every audited answer, corrected by its "
        "error on the labelled ones; the interval carries the judge's uncertainty. The labelled figure is what "
        "a person would say (`faithful`: the share of answers a person calls fully supported, beside the "
        "judges' mean scores). `agreement`: judge and label agree, on the labelled answers"
        + (
            " the judge decided (an uncertain verdict's leaning counts in the prediction-powered figure, not "
            "here; – where it decided none)."
            # A report written before decided answers were counted measured agreement on every labelled one.
            if any(e.agreement_n is not None for figs in lab.figures.values() for e in figs.values())
            else "."
        ),
        "",
    ]
    out += _table(*table)
    if lab.comparisons:
        out += ["", "Prompt differences on the labelled figures (first minus second; paired PPI):", ""]
        out += _table(
            ["metric", "prompts", "labels only", "prediction-powered", "labelled pairs"],
            [
                [
                    c.metric,
                    f"{c.a} − {c.b}",
                    fmt(c.human, 2),
                    fmt(c.ppi, 2) if c.ppi else "–",
                    str(required(c.ppi or c.human, f"the labelled difference {c.a} − {c.b}").n_labels),
                ]
                for c in lab.comparisons
            ],
        )
    return out


def adaptation_markdown(report: Report) -> list[str]:
    """How the judges were adapted to this corpus with the run's own labels, and what it changed."""
    a = report.adaptation
    if a is None:
        return []
    out = ["", f"## Judges adapted to this corpus ({a.answers_labelled} labelled answers)", "", a.note + ".", ""]
    out += _table(
        [
            "judge prompt",
            "labels (positive)",
            "cut-off",
            "band",
            "verdicts changed",
            "uncertain",
            "blend",
            "on its labels, cross-fitted",
        ],
        [
            [
                j.variant,
                f"{j.labels} ({j.positives})",
                f"{j.cutoff_before:.3f} → {j.cutoff_after:.3f}",
                (f"[{j.band_before[0]:.3f}, {j.band_before[1]:.3f}) → " if j.band_before else "none → ")
                + (f"[{j.band_after[0]:.3f}, {j.band_after[1]:.3f})" if j.band_after else "none"),
                str(j.changed),
                f"{j.uncertain_before} → {j.uncertain_after}",
                j.blend_after or "the model's own probability",
                j.held_out_text() or "–",
            ]
            for j in a.judges
        ],
    )
    out += [
        f"- `{j.variant}`: {j.not_saved}: adapted in this report only, not saved for later audits"
        for j in a.judges
        if j.not_saved
    ]
    return out


def figure_cell(f: JudgedFigure, sep: str = " ", not_judged: str = "nj=", uncertain: str = "unc=") -> str:
    """A judged figure with its interval, judged, not-judged and uncertain counts."""
    return f"{fmt(f, 2)} n={f.n}{sep}{not_judged}{f.n_not_judged}" + (
        f"{sep}{uncertain}{f.n_uncertain}" if f.n_uncertain else ""
    )


def judges_markdown(report: Report) -> list[str]:
    j = required(report.judges, "the report's judges section")
    out = ["", "## Judged answers", ""]
    if j.same_model:
        out += ["> Warning: the generator and the judge are the same model; it grades its own answers.", ""]
    out += [
        "Means (scores) or shares (verdicts) with 95% intervals; `n` judged, `nj` not judged (excluded, "
        "never counted as 0), `unc` uncertain (near the judge's cut-off; excluded likewise).",
        "",
    ]
    out += calibration_lines(j)
    cols = judge_columns(j.figures)
    rows = [[prompt] + [figure_cell(figs[m]) if m in figs else "–" for m in cols] for prompt, figs in j.figures.items()]
    out += _table(["prompt"] + cols, rows)
    failed = [r for r in j.records if r.status == "not_judged"]
    if failed:
        out += ["", f"Not judged ({len(failed)}):", ""]
        out += _table(
            ["judge", "question", "prompt", "error"],
            [[r.judge, r.question_id, r.prompt, text(r.error, 160)] for r in failed[:50]],
        )
    return out


CRITERIA_SHOWN = 30  # failed answers listed per criterion


def criterion_facts(c: CriterionSection) -> str:
    """What a criterion sees, applies to, passes on, and how a failure counts, in one line."""
    if c.levels:
        passes = f"a rubric of {len(c.levels)} levels, passes at level {c.pass_level} or above"
    else:
        passes = f"passes on {c.passes}"
    counts = (
        "a figure for gates only"
        if c.gate_only
        else "a failure is the outcome failed_criterion"
        if c.counts_as_failure
        else "a failure is a flag beside the outcome"
    )
    return f"sees {', '.join(c.sees)}; applies to {c.applies} answers; {passes}; {counts}"


def criterion_failures(report: Report, name: str) -> list[AttributionRow]:
    """The answers that failed a criterion (its judge's verdict ``fail``), as attribution shows them."""
    rows = report.attribution.rows if report.attribution else []
    return [r for r in rows if name in r.judges and r.judges[name].verdict == "fail"]


def criteria_markdown(report: Report) -> list[str]:
    """The user's own criteria: each one's figure per prompt, how it decided, and the answers that failed it."""
    j = report.judges
    if j is None or not j.criteria:
        return []
    out = [
        "",
        "## Your criteria",
        "",
        "Each criterion is a question the judge model answers about every answer it applies to; its figure is the "
        "share of those answers that pass (95% interval; `unc` uncertain decisions are excluded and counted). A "
        "failed criterion is a flag beside the question's outcome and changes it only where the criterion counts "
        "as a failure (`failed_criterion`).",
    ]
    for name, c in j.criteria.items():
        out += ["", f"### `{name}`: {text(c.question)}", "", f"- {criterion_facts(c)}"]
        for prompt, f in c.figures.items():
            level = c.mean_level.get(prompt)
            out.append(f"- {prompt}: {figure_cell(f)}" + (f"; mean level {fmt(level, 2)}" if level else ""))
        out.append(f"- {c.calibration}")
        if c.gate_only:
            continue
        failed = criterion_failures(report, name)
        if failed:
            out += ["", f"Failed ({len(failed)}):", ""]
            for r in failed[:CRITERIA_SHOWN]:
                b = r.judges[name]
                p = f"P(pass) {b.probability:.2f}: " if b.probability is not None else ""
                out.append(f"- **{r.question_id}** ({r.prompt}, `{r.outcome}`): {p}{text(b.reason or '', 300)}")
                out += markdown_quotes(b, text)
            if len(failed) > CRITERIA_SHOWN:
                out.append(f"- ... and {len(failed) - CRITERIA_SHOWN} more (report.json)")
    return out


def resume_markdown(resume: dict[str, StageReuse] | None) -> list[str]:
    """What a resumed run reused from the run folder, and what it redid because its inputs changed."""
    if not resume:
        return []
    out = ["## Resumed run", ""]
    for stage, r in resume.items():
        redone = r.redone_text()
        out.append(f"- {stage}: {r.reused} reused" + (f"; redone: {redone}" if redone else ""))
    return out + [""]


def lint_markdown(findings: list) -> list[str]:
    """The test-set health findings, most severe first."""
    if not findings:
        return []
    out = ["## Test-set health", ""]
    for f in findings:
        ids = ", ".join(f.questions[:10]) + (" ..." if len(f.questions) > 10 else "")
        line = f"- **{f.severity}** `{f.code}`: {f.message}"
        line += f" ({ids})" if ids else ""
        line += f". Fix: {f.fix}" if f.fix else ""
        out.append(line)
    return out + [""]
