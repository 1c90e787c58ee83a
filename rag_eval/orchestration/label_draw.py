"""``rag-eval label``: a draw of a finished run's answers merged into its labels file (never over
the labels it holds, ``labels/merge.py``), and the labelling page written over every row of the
file, each context shown as the generator and the judges were given it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval.attribution import JudgeBrief
from rag_eval.labels.columns import run_columns
from rag_eval.labels.human import DrawnAnswer, Sampler, write_html
from rag_eval.labels.merge import DrawSpec, Merged, draw_into, page_rows
from rag_eval.orchestration.run_contexts import RunContexts, run_contexts
from rag_eval.report.report_records import Report
from rag_eval.report.triage import labels_plan
from rag_eval.rundir import finished_run, not_being_written


@dataclass
class DrawnLabels:
    """What ``draw_labels`` did: the labels file and page it wrote, the merge (what was kept and
    added), this draw, the questions on the page and the contexts' cut it shows."""

    csv: Path
    html: Path
    merged: Merged
    draw: DrawSpec
    questions: int
    max_chars: int | None

    @property
    def rows(self) -> int:
        return len(self.merged.rows)


def write_page(
    run_dir: Path,
    report: Report,
    page: list[DrawnAnswer],
    path: Path,
    given: dict[tuple[str, str], dict[str, str]] | None = None,
    plan: list | None = None,
) -> RunContexts:
    """The labelling page of ``page``'s answers at ``path``, each context shown as the run's
    generator and judges were given it (``run_contexts``); returns what it read of the run."""
    sources = run_contexts(run_dir, report)
    ids = {cid for d in page for cid in d.contexts}
    texts = {cid: t for cid in ids if (t := sources.text(cid)) is not None}
    verdicts: dict[tuple[str, str], dict[str, JudgeBrief | dict[str, Any]]] = {
        (r.question_id, r.prompt): dict(r.judges) for r in report.rows()
    }
    rows: list[DrawnAnswer | dict[str, Any]] = list(page)
    write_html(
        rows,
        path,
        texts,
        verdicts,
        plan=plan,
        given=given,
        max_chars=sources.max_chars,
        columns=run_columns(report),
        titles={cid: t for cid in ids if (t := sources.title(cid))},
    )
    return sources


def draw_labels(
    run_dir: Path,
    n: int = 30,
    seed: int = 0,
    active: bool = True,
    out: Path | None = None,
    width: float = 0.10,
) -> DrawnLabels:
    """A seeded draw of ``n`` questions of the run (every prompt's answer to each) merged into
    ``out/labels.csv`` (default ``RUN_DIR/labels/``; every label the file holds kept), and
    labels.html beside it over every row of the file. ``active``: favouring uncertain and
    outcome-deciding verdicts (else a plain random draw); ``width``: the interval half-width the
    page tracks progress toward."""
    run_dir = Path(run_dir)
    not_being_written(run_dir)
    finished_run(run_dir, "a draw of its answers to label")
    sampler = Sampler(run_dir)
    raw = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    out = Path(out) if out is not None else run_dir / "labels"
    csv_path = out / "labels.csv"
    merged = draw_into(sampler, csv_path, n, seed, active=active)
    page, given = page_rows(sampler, merged.rows)
    html_path = out / "labels.html"
    sources = write_page(run_dir, Report.load(raw), page, html_path, given, labels_plan(raw, width))
    return DrawnLabels(
        csv=csv_path,
        html=html_path,
        merged=merged,
        draw=merged.design.draws[-1],
        questions=len({d.question_id for d in page}),
        max_chars=sources.max_chars,
    )
