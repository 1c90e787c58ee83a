"""Judge noise, measured: how often a judge disagrees with itself on identical inputs across two
runs, and with people (its calibration on labelled cases, or labels of the runs' answers). A
difference between runs within that disagreement could come from the judge alone."""

from __future__ import annotations

import math

from rag_eval.judges.judgement import Judgement
from rag_eval.judges.registry import JUDGES, decider
from rag_eval.orchestration.finished import Run
from rag_eval.report.diff_records import FigureEntry, JudgeNoise


def noise_sources(b: Run, n: Run, judge: str, figure: str, pairs: list[tuple[str, str]]) -> list[tuple[float, str]]:
    """The measured disagreement of a judge: with itself on identical inputs across the two runs,
    with people (its calibration on labelled cases, or labels of these runs' answers)."""
    out = []
    same = flips = 0
    for bp, np_ in pairs:
        for (name, prompt, q), jb in b.judged.items():
            jn = n.judged.get((name, np_, q))
            if name != judge or prompt != bp or jn is None or jb.status != "judged" or jn.status != "judged":
                continue
            if _same_inputs(jb, jn):
                same += 1
                flips += _flipped(jb, jn)
    if same:
        out.append(
            (flips / same, f"{judge} changed its verdict on {flips} of {same} identical inputs between the runs")
        )
    for run in (b, n):
        cal = run.report.judges.calibration.get(judge) if run.report.judges else None
        agree = cal.agreement if cal is not None else None
        if agree is not None and agree.accuracy is not None:
            out.append(
                (
                    1 - agree.accuracy,
                    f"{judge} disagrees with people on {1 - agree.accuracy:.2f} of {agree.n or '?'} labelled "
                    f"cases ({agree.measured_on or 'judge-check'})",
                )
            )
        for prompt, figs in (run.report.labels.figures if run.report.labels else {}).items():
            e = figs.get(figure)
            if e is not None and e.agreement_on_labelled is not None:
                out.append(
                    (
                        1 - e.agreement_on_labelled,
                        f"{judge} disagrees with people on {1 - e.agreement_on_labelled:.2f} of the labelled "
                        f"answers of {run.path.name} ({prompt})",
                    )
                )
    return out


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(float(a), float(b), abs_tol=1e-9)


def flag_judge_noise(b: Run, n: Run, figures: list[FigureEntry]) -> None:
    """Flag each judged figure whose difference is within its judges' measured disagreement."""
    by_figure = {f.name: spec.name for spec in JUDGES.values() for f in spec.figures}
    # The judges whose verdicts decide the outcomes: refusal, correctness, and the run's faithfulness judge.
    deciding = [d for d in (decider("refusal", n.judges), decider("correctness", n.judges)) if d]
    deciding.append((n.report.judges.faithfulness_judge if n.report.judges else None) or "faithfulness")
    for fig in figures:
        if fig.scope == "retrieval" or fig.diff is None:
            continue
        judges = [by_figure[fig.metric]] if fig.scope == "generation" else [j for j in deciding if j in n.judges]
        sources = [s for j in judges for s in noise_sources(b, n, j, fig.metric, [(fig.base_system, fig.system)])]
        if not sources:
            fig.judge_noise = JudgeNoise(
                noise=None,
                within=None,
                note=f"the disagreement of {', '.join(judges)} is not measured for this judge model: run rag-eval "
                "judge-check --save, or label answers (rag-eval label RUN_DIR)",
            )
            continue
        noise, source = max(sources)
        within = fig.changed and abs(fig.diff) <= noise
        fig.judge_noise = JudgeNoise(noise=noise, source=source, within=within)
        if within:
            fig.verdict += f"; within judge noise: {source}, more than this difference ({fig.diff:+.3f})"


def same_input_flips(b: Run, n: Run, bp: str, np_: str, q: str) -> list[str]:
    """Judges that gave another verdict on exactly the same inputs in the two runs."""
    out = []
    for (judge, prompt, qid), jb in b.judged.items():
        if prompt != bp or qid != q:
            continue
        jn = n.judged.get((judge, np_, q))
        if jn is not None and _same_inputs(jb, jn) and _flipped(jb, jn):
            out.append(judge)
    return sorted(out)


def _same_inputs(jb: Judgement, jn: Judgement | None) -> bool:
    """Both judgements were made on exactly the same inputs (judge, its prompt, model, inputs)."""
    return jn is not None and bool(jb.input_hash) and jb.input_hash == jn.input_hash


def _flipped(jb: Judgement, jn: Judgement) -> bool:
    return jb.verdict != jn.verdict or not _close(jb.score, jn.score)
