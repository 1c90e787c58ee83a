"""What the labelling page shows, in order: the answers of the run's labels file (``rag-eval
label``'s draw) or, before there is one, the same active draw (``labels/active.py``: exactly
``DRAW_N`` questions, favouring uncertain and outcome-deciding verdicts, each with its inclusion
probability); then the answers with an uncertain verdict outside the draw, the most unsure first.
Those are labelled because they are uncertain, not drawn: once one is labelled, every labelled
uncertain answer up to it in that order (drawn ones too) enters the labels file with inclusion
probability 1, the rest keep the draw's, so the prediction-powered figures stay unbiased for the
design "the draw, then the uncertain answers down to here"."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from rag_eval.answers.generation import context_seen
from rag_eval.attribution import AttributionRow, JudgeBrief
from rag_eval.config import AuditConfig
from rag_eval.data.records import read_records
from rag_eval.data.testset import stable_id
from rag_eval.errors import RagEvalError
from rag_eval.judges.registry import HUMAN_LABELS, JUDGES
from rag_eval.labels.columns import criteria_of, run_columns
from rag_eval.labels.human import DrawnAnswer, LabelsRow, draw
from rag_eval.orchestration.run_contexts import run_contexts
from rag_eval.report.quotes import highlight
from rag_eval.report.report_records import Report
from rag_eval.report.triage import uncertain_answers
from rag_eval.types import Corpus
from rag_eval.view.labels_file import from_cell, has_label

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
            QueueItem(n.question_id, n.prompt, "labels file", _float(n.inclusion_probability), _float(n.weight) or 1.0)
            for n in map(LabelsRow.of, rows)
            if n.question_id
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
        n = LabelsRow.of(r)
        at = ranks.get((n.question_id, n.prompt))
        if at is not None and at <= last and has_label(r):
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
class RunSources:
    """What the labelling page reads beside the report, as the run read it: its corpus (the kept
    ``inputs/corpus.jsonl``, else the corpus its saved config names), how many characters of each
    context its generator and judges were given (``max_chars``; None when its config cannot be
    read), the test set's evidence quotes by question id, and what may differ from the run."""

    corpus: Corpus | None
    max_chars: int | None
    evidence: dict[str, list[str]]
    notes: list[str] = field(default_factory=list)


@dataclass
class ContextView:
    """One context as the page shows it: the part the generator and the judges were given
    (``html``: HTML-escaped, the evidence marked) and the part cut off (``rest_html``), which the
    model never saw."""

    id: str
    html: str
    relevant: bool
    rest_html: str = ""
    seen_chars: int = 0
    total_chars: int = 0
    evidence_unseen: bool = False  # the test set's evidence lies only in the part cut off
    title: str = ""  # read by the generator and the judges before the text

    @property
    def cut(self) -> bool:
        return self.total_chars > self.seen_chars


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
    max_chars: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def labelled(self) -> bool:
        return any(self.values.get(c) is not None for c, _ in self.columns)


def _test_set_path(run_dir: Path, report: Report, cfg: AuditConfig | None) -> Path | None:
    """The run's test set file: where its config names it (resolved as the run resolved it), else
    the path its report recorded (absolute, or relative to where the run was started)."""
    recorded = Path(report.test_set.path) if report.test_set and report.test_set.path else None
    if cfg is not None and cfg.test_set.path:
        path = cfg.resolve_path(cfg.test_set.path)
        if path.is_file():
            return path
    return recorded if recorded is not None and recorded.is_file() else None


class _TestSetQuote(BaseModel):
    """An evidence quote given as a record (``{"quote": ...}``) in a test set line."""

    model_config = ConfigDict(extra="ignore")

    quote: Any = ""


class _TestSetLine(BaseModel):
    """What the view reads of a test set line: its id, question and evidence (a quote, or a list
    of quotes, each text or a record)."""

    model_config = ConfigDict(extra="ignore")

    id: Any = None
    question: Any = None
    evidence: Any = None


def _evidence(path: Path | None) -> dict[str, list[str]]:
    """The test set's evidence quotes by question id; none when it cannot be read."""
    if path is None:
        return {}
    try:
        records = read_records(path, "test set")
    except RagEvalError:
        return {}
    out: dict[str, list[str]] = {}
    for rec in records:
        line = _TestSetLine.model_validate(rec.data)
        question = line.question
        if not question:
            continue
        ev = line.evidence
        ev = ev if isinstance(ev, list) else [ev] if ev else []
        quotes = [e if isinstance(e, str) else _TestSetQuote.model_validate(e or {}).quote for e in ev]
        out[str(line.id or stable_id(str(question)))] = [q for q in quotes if isinstance(q, str) and q]
    return out


def run_sources(run_dir: Path, report: Report) -> RunSources:
    """The corpus, the contexts' cut and the evidence of a run, read as the run read them."""
    ctx = run_contexts(run_dir, report)
    return RunSources(
        corpus=ctx.corpus,
        max_chars=ctx.max_chars,
        evidence=_evidence(_test_set_path(run_dir, report, ctx.config)),
        notes=ctx.notes,
    )


def context_view(cid: str, relevant: bool, sources: RunSources, quotes: list[str]) -> ContextView:
    """One context split where the generator and the judges stopped reading: the part of its text
    they were given (``context_seen``, as ``judged_contexts`` cuts it), the rest folded away."""
    corpus = sources.corpus
    if corpus is None or cid not in corpus.index:
        return ContextView(cid, "(text not available)", relevant)
    chunk = corpus.chunks[corpus.index[cid]]
    text = chunk.text
    seen = context_seen(text, sources.max_chars) if sources.max_chars else text
    rest = text[len(seen) :]
    marked = highlight(seen, quotes)
    return ContextView(
        cid,
        marked,
        relevant,
        rest_html=highlight(rest, quotes) if rest else "",
        seen_chars=len(seen),
        total_chars=len(text),
        evidence_unseen=bool(rest) and "<mark>" not in marked and "<mark>" in highlight(text, quotes),
        title=chunk.title.strip(),
    )


def _columns(report: Report, item: QueueItem, row: AttributionRow | None) -> list[tuple[str, str]]:
    """The label columns that feed a figure for this answer: those of its judges that applied."""
    records = report.judges.records if report.judges else []
    criteria = criteria_of(report)  # a criterion's column is named as it (the view registers none)
    used = {
        r.judge if r.judge in criteria else JUDGES[r.judge].human_label
        for r in records
        if r.question_id == item.question_id
        and r.prompt == item.prompt
        and r.status != "skipped"
        and (r.judge in JUDGES or r.judge in criteria)
    }
    cols = [(c, q) for c, q in run_columns(report).items() if c in used]
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
    sources: RunSources,
    rows: list[dict[str, str]],
) -> AnswerView:
    """One queue item with its question, contexts (as the model saw them, evidence marked),
    reference, answer, the label columns to ask, the judges' verdicts and the labels given so far."""
    row = next((r for r in report.rows() if (r.question_id, r.prompt) == item.key), None)
    quotes = sources.evidence.get(item.question_id, [])
    contexts = [context_view(m.id, m.relevant, sources, quotes) for m in (row.contexts if row else [])]
    saved = next((r for r in rows if (LabelsRow.of(r).question_id, LabelsRow.of(r).prompt) == item.key), {})
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
        values={c: from_cell(saved.get(c)) for c in run_columns(report)},
        note=LabelsRow.of(saved).note or "",
        max_chars=sources.max_chars,
        notes=sources.notes,
    )
