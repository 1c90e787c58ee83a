"""Judge noise, measured: how often a judge disagrees with itself on identical inputs across two
runs, and with people (its calibration on labelled cases, or labels of the runs' answers). A
difference between runs within that disagreement could come from the judge alone."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rag_eval.judges.registry import JUDGES
from rag_eval.orchestration.finished import RunView

if TYPE_CHECKING:
    from rag_eval.orchestration.diff import FigureDiff


def noise_sources(
    b: RunView, n: RunView, judge: str, figure: str, pairs: list[tuple[str, str]]
) -> list[tuple[float, str]]:
    """The measured disagreement of a judge: with itself on identical inputs across the two runs,
    with people (its calibration on labelled cases, or labels of these runs' answers)."""
    out = []
    same = flips = 0
    for bp, np_ in pairs:
        for (name, prompt, q), jb in b.judgements.items():
            jn = n.judgements.get((name, np_, q))
            if name != judge or prompt != bp or jn is None or jb["status"] != "judged" or jn["status"] != "judged":
                continue
            if _same_inputs(jb, jn):
                same += 1
                flips += _flipped(jb, jn)
    if same:
        out.append(
            (flips / same, f"{judge} changed its verdict on {flips} of {same} identical inputs between the runs")
        )
    for run in (b, n):
        agree = (((run.report.get("judges") or {}).get("calibration") or {}).get(judge) or {}).get("agreement") or {}
        if agree.get("accuracy") is not None:
            out.append(
                (
                    1 - agree["accuracy"],
                    f"{judge} disagrees with people on {1 - agree['accuracy']:.2f} of {agree.get('n', '?')} labelled "
                    f"cases ({agree.get('measured_on', 'judge-check')})",
                )
            )
        for prompt, figs in ((run.report.get("labels") or {}).get("figures") or {}).items():
            e = figs.get(figure)
            if e and e.get("agreement_on_labelled") is not None:
                out.append(
                    (
                        1 - e["agreement_on_labelled"],
                        f"{judge} disagrees with people on {1 - e['agreement_on_labelled']:.2f} of the labelled "
                        f"answers of {run.path.name} ({prompt})",
                    )
                )
    return out


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(float(a), float(b), abs_tol=1e-9)


def flag_judge_noise(b: RunView, n: RunView, figures: list[FigureDiff]) -> None:
    """Flag each judged figure whose difference is within its judges' measured disagreement."""
    by_figure = {f.name: spec.name for spec in JUDGES.values() for f in spec.figures}
    deciding = ["refusal", "correctness", (n.report.get("judges") or {}).get("faithfulness_judge") or "faithfulness"]
    for fig in figures:
        if fig.scope == "retrieval" or fig.diff is None:
            continue
        judges = [by_figure[fig.metric]] if fig.scope == "generation" else [j for j in deciding if j in n.judges]
        sources = [s for j in judges for s in noise_sources(b, n, j, fig.metric, [(fig.base_system, fig.system)])]
        if not sources:
            fig.judge_noise = {
                "noise": None,
                "within": None,
                "note": f"the disagreement of {', '.join(judges)} is not measured for this judge model: run rag-eval "
                "judge-check --save, or label answers (rag-eval label RUN_DIR)",
            }
            continue
        noise, source = max(sources)
        within = fig.changed and abs(fig.diff) <= noise
        fig.judge_noise = {"noise": noise, "source": source, "within": within}
        if within:
            fig.verdict += f"; within judge noise: {source}, more than this difference ({fig.diff:+.3f})"


def same_input_flips(b: RunView, n: RunView, bp: str, np_: str, q: str) -> list[str]:
    """Judges that gave another verdict on exactly the same inputs in the two runs."""
    out = []
    for (judge, prompt, qid), jb in b.judgements.items():
        if prompt != bp or qid != q:
            continue
        if _same_inputs(jb, n.judgements.get((judge, np_, q))) and _flipped(jb, n.judgements[(judge, np_, q)]):
            out.append(judge)
    return sorted(out)


def _same_inputs(jb: dict, jn: dict | None) -> bool:
    """Both judgements were made on exactly the same inputs (judge, its prompt, model, inputs)."""
    return jn is not None and bool(jb.get("input_hash")) and jb.get("input_hash") == jn.get("input_hash")


def _flipped(jb: dict, jn: dict) -> bool:
    return jb.get("verdict") != jn.get("verdict") or not _close(jb.get("score"), jn.get("score"))
