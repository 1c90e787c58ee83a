"""What the labelling page shows, in order: the answers of the run's labels file (``rag-eval
label``'s draw) or, before there is one, the same active draw (``labels/active.py``: exactly
``DRAW_N`` questions, favouring uncertain and outcome-deciding verdicts, each with its inclusion
probability); then the answers with an uncertain verdict outside the draw, the most unsure first.
Those are labelled because they are uncertain, not drawn: once one is labelled, every labelled
uncertain answer up to it in that order (drawn ones too) enters the labels file with inclusion
probability 1, the rest keep the draw's, so the prediction-powered figures stay unbiased for the
design "the draw, then the uncertain answers down to here"."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from rag_eval.attribution import AttributionRow, JudgeBrief
from rag_eval.config import load_config
from rag_eval.data.corpus import load_corpus
from rag_eval.data.testset import stable_id
from rag_eval.errors import RagEvalError
from rag_eval.judges.registry import HUMAN_LABELS, JUDGES
from rag_eval.labels.human import DrawnAnswer, draw
from rag_eval.report.quotes import highlight
from rag_eval.report.report_records import Report
from rag_eval.report.triage import uncertain_answers
from rag_eval.rundir import read_jsonl
from rag_eval.view.labels_file import from_cell

# rag-eval label's defaults, so the view's draw is the one the command would make.
DRAW_N = 30
DRAW_SEED = 0


@dataclass
class QueueItem:
    """One answer to label and why it is in the queue (``drawn``, ``labels file``, ``uncertain``)."""

    question_id: str
    prompt: str
    part: str
    inclusion_probability: float | None
    weight: float = 1.0

    @property
    def key(self) -> tuple[str, str]:
        return (self.question_id, self.prompt)


def _float(raw: str | None) -> float | None:
    try:
        return float(raw) if raw not in (None, "") else None
    except ValueError:
        return None


def build_queue(run_dir: Path, report: Report, rows: list[dict[str, str]]) -> list[QueueItem]:
    """The labelling queue: the labels file's rows (else a fresh active draw), then the uncertain
    answers not among them, most unsure first."""
    if rows:
        items = [
            QueueItem(
                r["question_id"],
                r["prompt"],
                "labels file",
                _float(r.get("inclusion_probability")),
                _float(r.get("weight")) or 1.0,
            )
            for r in rows
            if r.get("question_id")
        ]
    else:
        drawn = draw(run_dir, DRAW_N, DRAW_SEED, active=True)
        items = [QueueItem(d.question_id, d.prompt, "drawn", d.inclusion_probability, d.weight) for d in drawn]
    seen = {i.key for i in items}
    weights = {r.question_id: 1.0 for r in report.rows()}
    for u in uncertain_answers(report):
        key = (u.question_id, u.prompt)
        if key not in seen:
            seen.add(key)
            items.append(QueueItem(u.question_id, u.prompt, "uncertain", 1.0, weights.get(u.question_id, 1.0)))
    return items


def uncertain_ranks(report: Report) -> dict[tuple[str, str], int]:
    """Each answer with an uncertain verdict and its place in the queue's order (most unsure first)."""
    ranks: dict[tuple[str, str], int] = {}
    for u in uncertain_answers(report):
        ranks.setdefault((u.question_id, u.prompt), len(ranks))
    return ranks


def labelled_with_certainty(
    rows: list[dict[str, str]], ranks: dict[tuple[str, str], int], upto: tuple[str, str]
) -> list[dict[str, str]]:
    """``rows`` after an uncertain answer outside the draw (``upto``) is labelled: every labelled
    uncertain answer up to its place in the order now had inclusion probability 1 (the design is
    the draw, then every uncertain answer up to there), drawn ones included; the rest keep the
    draw's."""
    last = ranks[upto]
    for r in rows:
        at = ranks.get((r.get("question_id", ""), r.get("prompt", "")))
        if at is not None and at <= last and any(r.get(c) for c in HUMAN_LABELS):
            r["inclusion_probability"] = "1.0"
    return rows


def base_row(item: QueueItem, row: AttributionRow | None) -> dict[str, str]:
    """The labels-file row of an answer before it is labelled (``rag-eval label``'s columns)."""
    d = DrawnAnswer(
        question_id=item.question_id,
        prompt=item.prompt,
        weight=item.weight,
        inclusion_probability=item.inclusion_probability,
        question=row.question if row else "",
        reference=(row.reference or "") if row else "",
        answer=(row.answer or "") if row else "",
    )
    return {k: "" if v is None else str(v) for k, v in d.dump().items() if not isinstance(v, list | bool)}


@dataclass
class ContextView:
    """One context as the page shows it: its text HTML-escaped with the evidence marked."""

    id: str
    html: str
    relevant: bool


@dataclass
class JudgeView:
    """One judge's verdict on the answer (hidden until the answer is labelled)."""

    name: str
    shown: str
    status: str
    probability: float | None
    reason: str


@dataclass
class AnswerView:
    """Everything the labelling page shows of one answer."""

    index: int
    item: QueueItem
    question: str
    reference: str
    answerable: bool
    answer: str
    contexts: list[ContextView]
    columns: list[tuple[str, str]]
    judges: list[JudgeView]
    values: dict[str, bool | None] = field(default_factory=dict)
    note: str = ""

    @property
    def labelled(self) -> bool:
        return any(self.values.get(c) is not None for c, _ in self.columns)


def context_texts(run_dir: Path, report: Report) -> dict[str, str]:
    """Chunk texts: from the run's kept inputs (inputs/corpus.jsonl), else its config's corpus."""
    kept = read_jsonl(run_dir / "inputs" / "corpus.jsonl")
    if kept:
        return {r["id"]: r.get("text", "") for r in kept if "id" in r}
    path = report.config_path
    if path and Path(path).exists():
        try:
            return {c.id: c.passage for c in load_corpus(load_config(path)).chunks}
        except RagEvalError:
            return {}
    return {}


def evidence_quotes(report: Report) -> dict[str, list[str]]:
    """The test set's evidence quotes by question id (a JSONL test set that is still where the run
    read it); none otherwise."""
    path = Path(report.test_set.path) if report.test_set and report.test_set.path else None
    if path is None or path.suffix != ".jsonl" or not path.exists():
        return {}
    out: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(rec, dict) or not rec.get("question"):
            continue
        ev = rec.get("evidence")
        ev = ev if isinstance(ev, list) else [ev] if ev else []
        quotes = [e if isinstance(e, str) else (e or {}).get("quote", "") for e in ev]
        out[str(rec.get("id") or stable_id(rec["question"]))] = [q for q in quotes if isinstance(q, str) and q]
    return out


def _columns(report: Report, item: QueueItem, row: AttributionRow | None) -> list[tuple[str, str]]:
    """The label columns that feed a figure for this answer: those of its judges that applied."""
    records = report.judges.records if report.judges else []
    used = {
        JUDGES[r.judge].human_label
        for r in records
        if r.question_id == item.question_id and r.prompt == item.prompt and r.status != "skipped" and r.judge in JUDGES
    }
    cols = [(c, q) for c, q in HUMAN_LABELS.items() if c in used]
    if cols:
        return cols
    answerable = row.answerable if row else True
    return [(c, q) for c, q in HUMAN_LABELS.items() if answerable or c == "refused"]


def _judge(name: str, j: JudgeBrief) -> JudgeView:
    return JudgeView(name, j.shown(), j.status, j.probability, (j.reason or j.error or "")[:500])


def answer_view(
    index: int,
    item: QueueItem,
    report: Report,
    texts: dict[str, str],
    evidence: dict[str, list[str]],
    rows: list[dict[str, str]],
) -> AnswerView:
    """One queue item with its question, contexts (evidence marked), reference, answer, the label
    columns to ask, the judges' verdicts and the labels given so far."""
    row = next((r for r in report.rows() if (r.question_id, r.prompt) == item.key), None)
    quotes = evidence.get(item.question_id, [])
    marks = row.contexts if row else []
    contexts = [
        ContextView(m.id, highlight(texts.get(m.id, "(text not available)"), quotes), m.relevant) for m in marks
    ]
    saved = next((r for r in rows if (r.get("question_id"), r.get("prompt")) == item.key), {})
    return AnswerView(
        index=index,
        item=item,
        question=row.question if row else "",
        reference=(row.reference or "") if row else "",
        answerable=row.answerable if row else True,
        answer=(row.answer or "") if row else "",
        contexts=contexts,
        columns=_columns(report, item, row),
        judges=[_judge(n, j) for n, j in (row.judges.items() if row else []) if j.status != "skipped"],
        values={c: from_cell(saved.get(c)) for c in HUMAN_LABELS},
        note=saved.get("note", "") or "",
    )
