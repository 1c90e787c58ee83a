"""Human labels for a finished run: a seeded sample of audited answers to label (CSV and a
self-contained HTML page), reading the labels back with clear errors, and every judged figure
re-estimated with prediction-powered inference (judge verdicts on all answers, corrected by the
judge's error on the labelled ones)."""

from __future__ import annotations

import csv
import difflib
import html
import io
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from rag_eval.answers.answer_records import Answer
from rag_eval.answers.generation import context_seen
from rag_eval.attribution import UNRECORDED_FAITHFULNESS_THRESHOLD, AttributionRow, JudgeBrief, attribute
from rag_eval.base_records import Model, Num, required
from rag_eval.data.records import read_records, read_text
from rag_eval.errors import DataError, Problem
from rag_eval.hashing import text_hash
from rag_eval.judges.judge_records import LabelledEstimate
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.registry import HUMAN_LABELS, JUDGES, OPTIONAL_LABELS, Criterion, criteria_registered, figures
from rag_eval.judges.uncertain import leaning_value
from rag_eval.labels.active import active_mean, draw_questions, draw_scores, probabilities_of
from rag_eval.labels.columns import criteria_of, label_columns, optional_columns, passes, run_columns
from rag_eval.labels.label_records import JudgedReport, LabelledDifference, LabelledFigure, LabelsSection, ReportFile
from rag_eval.labels.ppi import at_least_exact, human_mean, ppi_mean
from rag_eval.text import record_lines
from rag_eval.types import Question

COLUMNS = [
    "question_id",
    "prompt",
    "weight",
    "inclusion_probability",
    *HUMAN_LABELS,
    "note",
    "question",
    "reference",
    "answer",
]
YES = {"yes", "y", "true", "1"}
NO = {"no", "n", "false", "0"}

# A report given to apply_labels or label_run comes back as the same type, labelled.
R = TypeVar("R", bound=JudgedReport)


@dataclass
class Label:
    """One labelled answer: yes/no per label column (None where left blank); a criterion's column
    holds whether the answer passes it (``columns.passes``)."""

    question_id: str
    prompt: str
    values: dict[str, bool | None]
    where: str
    inclusion_probability: float | None = None  # the chance the draw had of picking this answer

    @property
    def labelled(self) -> bool:
        """Whether any column holds yes or no."""
        return any(v is not None for v in self.values.values())


def labelled_line(answers: int, per_column: Mapping[str, int]) -> str:
    """How many answers hold a label, and how many under each column (a row counts for a column only
    where it holds yes or no), as the report, the CLI and the view say it: "22 answers labelled:
    correct 22, faithful 20, refused 22"."""
    columns = ", ".join(f"{c} {n}" for c, n in per_column.items())
    return f"{answers} answer{'' if answers == 1 else 's'} labelled" + (f": {columns}" if columns and answers else "")


class LabelsRow(BaseModel):
    """A labels file's row as read, by the columns read by name (a CSV's cells as text, None where a
    line is short; a JSON labels file's values as written; a column the file lacks is None). The
    label columns (one per judge and criterion) are read from the row by column name; the row itself
    stays the dict that is written back, so no cell is lost."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    question_id: Any = None
    prompt: Any = None
    weight: Any = None
    inclusion_probability: Any = None
    note: Any = None
    answer: Any = None  # the answer's text as the labeller was shown it

    @classmethod
    def of(cls, row: Mapping) -> LabelsRow:
        """The row's named cells (keys that are no column name, such as DictReader's None for extra cells, ignored)."""
        return cls.model_validate(row)

    @property
    def key(self) -> tuple[str, str]:
        """(question id, prompt), blank where a cell is."""
        return (self.question_id or "", self.prompt or "")


class DrawnAnswer(Model):
    """One answer drawn for people to label: a row of labels.csv and an item of labels.html."""

    question_id: str
    prompt: str
    weight: Num = 1.0
    inclusion_probability: Num | None = None
    question: str = ""
    reference: str = ""
    answerable: bool = True
    answer: str = ""
    contexts: list[str] = []


def _answers(run_dir: Path) -> list[Answer]:
    path = run_dir / "generation.jsonl"
    if not path.exists():
        return []
    return [Answer.load(json.loads(line)) for line in record_lines(path.read_text(encoding="utf-8")) if line.strip()]


@dataclass
class Drawn:
    """One draw of a run's questions: the answers chosen (every prompt's answer to each question),
    and every question's inclusion probability, drawn or not."""

    rows: list[DrawnAnswer]
    probabilities: dict[str, float]


class Sampler:
    """The draws ``rag-eval label`` makes of one run's questions, with the run read once (so draws
    of several sizes, and their inclusion probabilities, are cheap): within the audit's strata in
    proportion to their size (a plain random draw), or favouring uncertain and outcome-deciding
    decisions (``active``, ``rag_eval/labels/active.py``)."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.answers = [g for g in _answers(run_dir) if not g.failed]
        if not self.answers:
            raise DataError(
                Problem(str(run_dir), "the run has no answers to label", "label a run made by rag-eval run or compare")
            )
        self.strata: dict[str, list[str]] = {}
        for g in self.answers:
            ids = self.strata.setdefault(g.stratum or "all", [])
            if g.question_id not in ids:
                ids.append(g.question_id)
        self.report = ReportFile.load(json.loads((run_dir / "report.json").read_text(encoding="utf-8")))
        if self.report.judges is None or not self.report.judges.records:
            # A label checks a judge's verdict: a run that judged nothing (`rag-eval retrieval` of a
            # system that answers) has none to check, and no question or reference to show beside it.
            raise DataError(
                Problem(
                    str(run_dir / "report.json"),
                    "the run judged no answers, so a label would have no verdict to check",
                    "label a run whose answers were judged: rag-eval run CONFIG (or compare), or "
                    "rag_eval.judge_answers(...) for answers made elsewhere",
                )
            )
        # The run's label columns: the built-in ones and one per criterion it judged.
        self.columns = run_columns(self.report)
        self.by_key = {(g.question_id, g.prompt): g for g in self.answers}
        self._refs = {r.question_id: r for r in self.report.rows()}
        self._scores: dict[str, float] | None = None

    @property
    def questions(self) -> list[str]:
        """The run's questions with an answer to label, stratum by stratum."""
        return [q for ids in self.strata.values() for q in ids]

    def _take(self, n: int) -> dict[str, int]:
        """Questions drawn from each stratum: largest-remainder allocation, so the sample's strata
        follow the audit's."""
        total = len(self.questions)
        n = min(n, total)
        quota = {s: n * len(ids) / total for s, ids in self.strata.items()}
        take = {s: int(q) for s, q in quota.items()}
        for s in sorted(quota, key=lambda s: quota[s] - take[s], reverse=True)[: n - sum(take.values())]:
            take[s] += 1
        return take

    def probabilities(self, n: int, active: bool) -> dict[str, float]:
        """Every question's inclusion probability in a draw of ``n`` questions (the seed only picks
        which): ``take / stratum size`` for the plain draw, the active draw's otherwise."""
        if active:
            if self._scores is None:
                self._scores = draw_scores(self.report, self.questions)
            return probabilities_of(self._scores, n)
        take = self._take(n)
        return {q: take[s] / len(ids) for s, ids in self.strata.items() for q in ids}

    def draw(self, n: int, seed: int | Sequence[int] = 0, active: bool = False) -> Drawn:
        """A seeded draw of ``n`` questions (all, if fewer). ``seed``: an integer, or several
        (``[seed, k]``: random numbers independent of ``seed``'s own draw)."""
        rng = np.random.default_rng(seed)
        take = self._take(n)
        chosen = {qid for s, ids in self.strata.items() for qid in rng.permutation(sorted(ids))[: take[s]]}
        pi = self.probabilities(n, active=False)
        if active:
            chosen, pi = draw_questions(self.report, self.questions, min(n, len(self.questions)), seed)
        rows = [self.row(key, pi[key[0]]) for key in sorted(self.by_key) if key[0] in chosen]
        return Drawn([r for r in rows if r is not None], pi)

    def row(self, key: tuple[str, str], pi: float | None, weight: float | None = None) -> DrawnAnswer | None:
        """The answer ``key`` (question id, prompt) as a row to label, with ``pi`` as its inclusion
        probability and its audit weight (``weight`` where given); None for no answer of the run."""
        g = self.by_key.get(key)
        if g is None:
            return None
        ref = self._refs.get(g.question_id, AttributionRow())
        return DrawnAnswer(
            question_id=g.question_id,
            prompt=g.prompt,
            weight=weight if weight is not None else 1.0 if g.weight is None else g.weight,
            inclusion_probability=None if pi is None else round(pi, 6),
            question=ref.question,
            reference=ref.reference or "",
            answerable=ref.answerable,
            answer=g.answer or "",
            contexts=g.contexts,
        )


def draw(run_dir: Path, n: int, seed: int | Sequence[int] = 0, active: bool = False) -> list[DrawnAnswer]:
    """A seeded random sample of ``n`` questions of the run (every prompt's answer to each), drawn
    within the audit's strata in proportion to their size; each row keeps its audit weight and its
    inclusion probability. ``active``: drawn with probabilities that favour uncertain and
    outcome-deciding decisions instead (``rag_eval/labels/active.py``)."""
    return Sampler(run_dir).draw(n, seed, active).rows


def write_csv(rows: list[DrawnAnswer], path: Path, columns: Mapping[str, str] | None = None) -> None:
    """The labels file a person fills in: yes or no under each label column (``columns``: the run's,
    a criterion's after the built-in ones; default the built-in ones), blank to skip."""
    labels = columns or HUMAN_LABELS
    with path.open("w", encoding="utf-8", newline="") as fh:
        # The built-in label columns the run reads, in their place; the criteria's after them.
        fixed = [c for c in COLUMNS if c not in HUMAN_LABELS or c in labels]
        w = csv.DictWriter(fh, fieldnames=fixed + [c for c in labels if c not in fixed], extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({**DrawnAnswer.load(r).dump(), **{c: "" for c in labels}, "note": ""})


def _pre(cls: str, text: str) -> str:
    # A parser drops one newline right after <pre>: written, so a text that starts with one keeps it.
    return f'<pre class="{cls}">\n{html.escape(text)}</pre>'


def _context_html(k: int, cid: str, text: str | None, max_chars: int | None, title: str = "") -> str:
    """One context of the page: the part the generator and the judges were given, exactly
    (``context_seen``); where they were given less than the whole, the cut marked and the rest
    folded, marked as not seen by the model."""
    # The title the generator and the judges read before the text (an answer may take a name from it).
    head = f"context {k + 1}: {html.escape(cid)}" + (f" · <b>{html.escape(title)}</b>" if title else "")
    if text is None:
        return f"<details><summary>{head}</summary><pre>(text not available)</pre></details>"
    seen = context_seen(text, max_chars) if max_chars else text
    rest = text[len(seen) :]
    if not rest:
        return f'<details data-id="{html.escape(cid)}"><summary>{head}</summary>{_pre("seen", seen)}</details>'
    return (
        f'<details class="was-cut" data-id="{html.escape(cid)}"><summary>{head} <span class="meta">the model saw the '
        f"first {len(seen)} of {len(text)} characters</span></summary>{_pre('seen', seen)}"
        f'<p class="cut">&#9986; cut here (generation.max_context_chars: {max_chars}): the generator and the judges '
        "were given the text above and nothing below</p>"
        f'<details class="unseen"><summary>the other {len(rest)} characters: not seen by the model</summary>'
        f"{_pre('unseen', rest)}</details></details>"
    )


def _shown_verdict(j: JudgeBrief) -> str:
    """A verdict as the labelling page shows it: the word, else the score, else the status
    (``uncertain``, ``skipped``, ``not_judged``: never Python's None, user trial 4 F21)."""
    if j.verdict is not None:
        return str(j.verdict)
    if j.score is not None:
        return f"{j.score:.2f}"
    return str(j.status or "no verdict")


def write_html(
    rows: Sequence[DrawnAnswer | dict],
    path: Path,
    contexts: dict[str, str],
    verdicts: Mapping[tuple[str, str], Mapping[str, JudgeBrief | dict]],
    plan: list | None = None,
    given: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
    max_chars: int | None = None,
    columns: Mapping[str, str] | None = None,
    titles: Mapping[str, str] | None = None,
) -> None:
    """A self-contained page: question, contexts, answer; the judges' verdicts stay hidden until
    the answer is labelled. ``contexts``: each chunk's whole text by id (``titles``: its title,
    shown beside its id); ``max_chars``: the
    characters of each context the generator and the judges were given (``context_seen``), shown
    as they were given, the cut marked and the rest folded as not seen (None: shown whole).
    "Save labels" downloads labels.csv (the CSV's columns) with every label on the page.
    ``given``: the labels file's rows by (question id, prompt), whose labels and notes the page
    starts with (so a download holds them too). What a person picks on the page is kept in the
    browser by question and prompt, not by place, so a page written again over a merged draw shows
    each pick on its own answer. ``plan`` (``report.triage.labels_plan``): the page shows,
    per judged figure, the answers labelled so far against the labels its chosen interval width
    needs. ``columns``: the run's label columns and their questions (``Sampler.columns``: a
    criterion's after the built-in ones; default the built-in ones)."""
    asked = columns or HUMAN_LABELS
    items = []
    drawn = [DrawnAnswer.load(x) for x in rows]
    given = given or {}
    already = 0
    for i, r in enumerate(drawn):
        ctx = "".join(
            _context_html(k, cid, contexts.get(cid), max_chars, (titles or {}).get(cid, ""))
            for k, cid in enumerate(r.contexts)
        )
        v = {name: JudgeBrief.load(j) for name, j in verdicts.get((r.question_id, r.prompt), {}).items()}
        judged = "".join(
            f"<li><b>{html.escape(name)}</b>: {html.escape(_shown_verdict(j))} {html.escape(j.reason or '')}</li>"
            for name, j in v.items()
        )
        row = given.get((r.question_id, r.prompt), {})
        known = {c: _known_cell(row.get(c)) for c in asked}
        already += any(v is not None for v in known.values())
        asks = "".join(
            f'<div class="ask">{html.escape(q)} '
            + "".join(
                f'<label><input type="radio" name="{c}-{i}" value="{val}"'
                f"{' checked' if known[c] == val else ''}> {val}</label>"
                for val in ("yes", "no", "skip")
            )
            + "</div>"
            for c, q in asked.items()
        )
        items.append(
            f'<section data-i="{i}" data-prompt="{html.escape(r.prompt)}"><h3>{i + 1}. {html.escape(r.question)}</h3>'
            f"<p class=meta>question {html.escape(r.question_id)}, prompt {html.escape(r.prompt)}"
            f"{'' if r.answerable else ', unanswerable from the documents'}</p>"
            f"<p><b>Reference:</b> {html.escape(r.reference or '–')}</p>{ctx}"
            f"<p><b>Answer:</b></p><pre>{html.escape(r.answer)}</pre>{asks}"
            f'<textarea placeholder="note (optional)" name="note-{i}">{html.escape(LabelsRow.of(row).note or "")}</textarea>'
            f'<div class="judges" hidden><p>Judges (shown once every question above is answered):</p><ul>{judged}</ul></div>'
            "</section>"
        )
    page_columns = ("question_id", "prompt", "weight", "inclusion_probability", "question", "reference", "answer")
    # Each row carries its answer's hash: a pick kept in the browser is restored only onto the same
    # answer, not onto a new answer to the same question written at the same path.
    data = json.dumps(
        [
            {**{k: "" if getattr(r, k) is None else getattr(r, k) for k in page_columns}, "h": text_hash(r.answer)[:16]}
            for r in drawn
        ]
    )
    cols = json.dumps(list(asked))
    goals = json.dumps(
        [
            {"prompt": p.prompt, "figure": p.figure, "label": p.label, "width": p.width, "need": p.active_need}
            for p in plan or []
        ]
    )
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>rag-eval labels</title><style>
body{{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em}}
section{{border:1px solid #ccc;border-radius:6px;padding:0 1em 1em;margin:1em 0}}
pre{{white-space:pre-wrap;background:#f6f6f6;padding:.5em}} .meta{{color:#666}}
.cut{{color:#a40;margin:.2em 0}} .unseen pre,pre.unseen{{color:#777}} .ask{{margin:.4em 0}} label{{margin-left:1em}} textarea{{width:100%}} .judges{{background:#eef;padding:.2em 1em}}
</style></head><body><h1>Label {len(drawn)} answers</h1>
<p>Answer each question yes or no (skip if unsure). Labels are kept in this browser while you work;
<b>Save labels</b> downloads <code>labels.csv</code> for <code>rag-eval report RUN_DIR --labels labels.csv</code>,
with every label on this page{f" ({already} answers came labelled from the labels file)" if already else ""}.</p>
<div id=progress></div>
<button id=save>Save labels</button>{"".join(items)}<button id=save2>Save labels</button>
<script>
const ROWS={data}, COLS={cols}, GOALS={goals}, KEY="rag-eval-labels:v2:"+location.pathname;
const AT={{}};ROWS.forEach((r,i)=>{{AT[JSON.stringify([r.question_id,r.prompt])]=i;}});
function ident(name){{const k=name.lastIndexOf("-"),r=ROWS[+name.slice(k+1)];return JSON.stringify([r.question_id,r.prompt,name.slice(0,k),r.h]);}}
function progress(){{const el=document.getElementById("progress");if(!GOALS.length){{el.textContent="";return;}}
el.innerHTML="<p>Progress toward the chosen interval width (labels an active draw needs):</p><ul>"+GOALS.map(g=>{{
let done=0;document.querySelectorAll(`section[data-prompt="${{CSS.escape(g.prompt)}}"]`).forEach(s=>{{const c=document.querySelector(`[name="${{g.label}}-${{s.dataset.i}}"]:checked`);if(c&&c.value!=="skip")done++;}});
const pct=Math.min(100,Math.round(100*done/Math.max(g.need,1)));
return `<li>${{g.figure}} (${{g.prompt}}): ${{done}} of ${{g.need}} labels for ±${{g.width}} <progress max=100 value=${{pct}}></progress></li>`;}}).join("")+"</ul>";}}
const saved=JSON.parse(localStorage.getItem(KEY)||"{{}}");
for(const [k,v] of Object.entries(saved)){{let id;try{{id=JSON.parse(k);}}catch(e){{continue;}}
const i=Array.isArray(id)?AT[JSON.stringify([id[0],id[1]])]:undefined;if(i===undefined||(id.length<4||id[3]!==ROWS[i].h))continue;const n=`${{id[2]}}-${{i}}`;
const el=document.querySelector(`[name="${{n}}"][value="${{v}}"]`)||document.querySelector(`textarea[name="${{n}}"]`);if(el){{if(el.type==="radio")el.checked=true;else el.value=v;}}}}
function reveal(){{document.querySelectorAll("section").forEach(s=>{{const i=s.dataset.i;
s.querySelector(".judges").hidden=!COLS.every(c=>document.querySelector(`[name="${{c}}-${{i}}"]:checked`));}});}}
document.addEventListener("change",e=>{{const t=e.target;if(!t.name)return;saved[ident(t.name)]=t.value;localStorage.setItem(KEY,JSON.stringify(saved));reveal();progress();}});
reveal();progress();
function q(v){{v=String(v??"");return /[",\\r\\n]/.test(v)?'"'+v.replace(/"/g,'""')+'"':v;}}
function save(){{const head=["question_id","prompt","weight","inclusion_probability",...COLS,"note","question","reference","answer"];
const lines=[head.join(",")];ROWS.forEach((r,i)=>{{const lab=COLS.map(c=>{{const el=document.querySelector(`[name="${{c}}-${{i}}"]:checked`);return el&&el.value!=="skip"?el.value:"";}});
const note=document.querySelector(`textarea[name="note-${{i}}"]`).value;
lines.push([r.question_id,r.prompt,r.weight,r.inclusion_probability,...lab,note,r.question,r.reference,r.answer].map(q).join(","));}});
const a=document.createElement("a");a.href=URL.createObjectURL(new Blob([lines.join("\\n")+"\\n"],{{type:"text/csv"}}));a.download="labels.csv";a.click();}}
document.getElementById("save").onclick=save;document.getElementById("save2").onclick=save;
</script></body></html>"""
    path.write_text(page, encoding="utf-8")


def _known_cell(raw: str | None) -> str | None:
    """A labels-file cell as the page's choice: yes, no, or None (blank or not a label)."""
    v = (raw or "").strip().lower()
    return "yes" if v in YES else "no" if v in NO else None


def _value(raw: str | None, where: str, column: str, problems: list[Problem]) -> bool | None:
    v = (raw or "").strip().lower()
    if v in ("", "skip", "-", "na", "n/a"):
        return None
    if v in YES:
        return True
    if v in NO:
        return False
    problems.append(
        Problem(f"{where} (column {column})", f"{raw!r} is not yes or no", "write yes, no, or leave it blank")
    )
    return None


def _probability(raw, where: str, problems: list[Problem]) -> float | None:
    if raw is None or str(raw).strip() == "":
        return None
    try:
        p = float(raw)
    except ValueError:
        p = float("nan")
    if not 0 < p <= 1:
        problems.append(
            Problem(
                f"{where} (column inclusion_probability)",
                f"{raw!r} is not a probability in (0, 1]",
                "keep the value rag-eval label wrote, or clear the column on every row",
            )
        )
        return None
    return p


def read_labels(
    path: Path,
    known: Mapping[tuple[str, str], str | None] | set[tuple[str, str]],
    criteria: Mapping[str, Criterion] | None = None,
) -> list[Label]:
    """The labelled answers of a CSV (``rag-eval label``'s) or JSON/JSONL file: the rows with yes or
    no under at least one label column (a blank row is left out; a blank column of a labelled row is
    None). Every problem raises DataError naming the file, line and column, blank rows checked too.
    ``known``: the run's (question id, prompt) pairs, mapped to the run's answer text
    (``known_answers``): a labelled row whose ``answer`` cell holds another text is refused, since
    its labels were given to another answer; ``criteria``: the run's criteria
    (``columns.criteria_of``), each a label column too, read as whether the answer passes."""
    criteria = criteria or {}
    columns = label_columns(criteria)
    if path.suffix.lower() in (".json", ".jsonl"):
        records = [(r.data, r.where) for r in read_records(path, "labels")]
    else:
        if twice := [p for p in header_problems(path, columns) if "is given" in p.what]:
            raise DataError(twice)
        text = read_text(path, "labels")
        reader = csv.DictReader(io.StringIO(text))
        missing = [c for c in ("question_id", "prompt") if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(
                Problem(
                    f"{path}:1",
                    f"the labels file has no {' or '.join(missing)} column",
                    "use the CSV written by rag-eval label (its header row names the columns)",
                )
            )
        # DictReader's line_num counts physical lines; the record started after the previous one.
        records, prev = [], 1
        for row in reader:
            records.append((row, f"{path}:{prev + 1}"))
            prev = reader.line_num
    # A column of an optional judge (citations_support) is read where the file has it.
    columns = {**columns, **optional_columns({k for row, _ in records for k in row})}
    labels: list[Label] = []
    problems: list[Problem] = misnamed_columns(records, columns)
    seen: dict[tuple[str, str], str] = {}
    for row, where in records:
        named = LabelsRow.of(row)
        qid, prompt = str(named.question_id or "").strip(), str(named.prompt or "").strip()
        if (qid, prompt) not in known:
            problems.append(
                Problem(
                    where,
                    f"question '{qid}' with prompt '{prompt}' is not an answer of this run",
                    "label the run the file was drawn from (rag-eval label RUN_DIR), or remove the row",
                )
            )
            continue
        if (qid, prompt) in seen:
            problems.append(
                Problem(
                    where,
                    f"question '{qid}' with prompt '{prompt}' is labelled twice (first at {seen[(qid, prompt)]})",
                    "keep one row",
                )
            )
            continue
        seen[(qid, prompt)] = where
        values = {}
        for c in columns:
            raw = row.get(c)
            values[c] = raw if isinstance(raw, bool) or raw is None else _value(str(raw), where, c, problems)
            if c in criteria:
                values[c] = passes(criteria[c], values[c])
        label = Label(qid, prompt, values, where, _probability(named.inclusion_probability, where, problems))
        changed = (
            _changed_answer(named, known[(qid, prompt)], qid, prompt, where)
            if isinstance(known, Mapping) and label.labelled
            else None
        )
        if changed is not None:
            problems.append(changed)
        labels.append(label)
    if problems:
        raise DataError(problems)
    # A row with no yes or no is an answer drawn and not labelled yet (the view writes a row for
    # every answer of its queue): it is no label, in any count or figure.
    labels = [lab for lab in labels if lab.labelled]
    if not labels:
        raise DataError(
            Problem(str(path), "no answer is labelled yet", f"fill in yes or no under {', '.join(columns)}")
        )
    return labels


def header_problems(path: Path, columns: Mapping[str, str]) -> list[Problem]:
    """What is wrong with a CSV labels file's columns before a row is read: a column name given twice
    (a reader keeps the last: the first's labels would be dropped, user trial 5 F6) and a filled
    column whose name is a label column misspelt (``misnamed_columns``). None for JSON files."""
    if not path.exists() or path.suffix.lower() in (".json", ".jsonl"):
        return []
    text = read_text(path, "labels")
    header = next(csv.reader(io.StringIO(text)), [])
    problems = [
        Problem(
            f"{path}:1 ({name})",
            f"column '{name}' is given {len(at)} times (columns {', '.join(map(str, at))}): "
            "all but the last would be dropped",
            "merge them into one column (keep every label in it), then remove the others",
        )
        for name in dict.fromkeys(header)
        if name and len(at := [i + 1 for i, h in enumerate(header) if h == name]) > 1
    ]
    reader = csv.DictReader(io.StringIO(text))
    records, prev = [], 1
    for row in reader:
        records.append((row, f"{path}:{prev + 1}"))
        prev = reader.line_num
    return problems + misnamed_columns(records, {**columns, **optional_columns(header)})


def _squashed(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def misnamed_columns(records: list[tuple[dict, str]], columns: Mapping[str, str]) -> list[Problem]:
    """A filled column whose name is a label column's misspelt (``namesapi``, ``Third_Party``): its
    labels would be dropped without a word (user trial 4 F11). Other extra columns (a person's own
    notes) are left alone."""
    wanted = [*columns, *(col for col, _ in OPTIONAL_LABELS.values())]
    squashed = {_squashed(c): c for c in wanted}
    # A column named after its judge (refusal, correctness, citations) is the likeliest slip: too far
    # from its label column (refused, correct, citations_support) for difflib (review 55 M9).
    for name, spec in JUDGES.items():
        if spec.human_label in wanted:
            squashed.setdefault(_squashed(name), spec.human_label)
    problems = []
    seen: set[str] = set()
    for row, where in records:
        for key, value in row.items():
            if not isinstance(key, str) or key in seen or key in COLUMNS or key in columns:
                continue
            if value is None or not str(value).strip():
                continue
            seen.add(key)
            close = squashed.get(_squashed(key)) or next(
                iter(difflib.get_close_matches(key.lower(), wanted, n=1, cutoff=0.8)), None
            )
            if close is not None:
                problems.append(
                    Problem(
                        f"{where} ({key})",
                        f"column '{key}' is no label column of this run, so its labels would be dropped",
                        f"did you mean '{close}'? rename the column (label columns: {', '.join(columns)})",
                    )
                )
    return problems


def figure_records(records: list[Judgement], judge: str, prompt: str, subset: str, answerable: dict) -> list[Judgement]:
    """The judged or uncertain records of one judge and prompt that a figure over ``subset``
    ("all", "answerable" or "unanswerable") is made of."""
    return [
        r
        for r in records
        if r.judge == judge
        and r.prompt == prompt
        and r.status in ("judged", "uncertain")
        and (subset == "all" or answerable.get(r.question_id) is (subset == "answerable"))
    ]


def _answerable(report: JudgedReport) -> dict[str, bool]:
    return {r.question_id: r.answerable for r in report.rows()}


def labelled_figures(
    report: JudgedReport, labels: list[Label], weights: dict[str, float], confidence: float
) -> dict[str, dict[str, LabelledFigure]]:
    """PPI figures beside the judge-only ones: ``{prompt: {figure: {ppi, human, label, agreement}}}``
    for every judged figure with a human label column. An uncertain verdict enters with what the
    judge leaned to (the labels correct it like any other)."""
    judges = report.judges
    if judges is None:
        return {}
    records = judges.records
    by_key = {(lab.question_id, lab.prompt): lab for lab in labels}
    answerable = _answerable(report)
    out: dict[str, dict[str, LabelledFigure]] = {}
    for prompt in sorted({r.prompt for r in records}):
        figs: dict[str, LabelledFigure] = {}
        for spec, fig in figures(judges.metrics):
            if spec.human_label is None or not spec.labelled(fig):
                continue
            rows = figure_records(records, spec.name, prompt, fig.subset, answerable)
            lab_y, lab_hat, lab_w, lab_pi, unl_hat, unl_w = [], [], [], [], [], []
            decided: list[bool] = []  # per labelled answer: whether the judge decided it (not a leaning)
            for r in rows:
                if r.status == "uncertain":
                    yhat = leaning_value(r.to_dict(), fig.verdict)
                    if yhat is None:
                        continue
                else:
                    yhat = float(r.verdict == fig.verdict) if fig.binary else _score(r)
                w = weights.get(r.question_id, 1.0)
                lab = by_key.get((r.question_id, prompt))
                value = lab.values.get(spec.human_label) if lab else None
                if lab is None or value is None:
                    unl_hat.append(yhat)
                    unl_w.append(w)
                else:
                    # Every binary figure is the share of the judge's positive verdict (refused,
                    # correct), which is what the label column records.
                    lab_y.append(float(value))
                    lab_hat.append(yhat)
                    decided.append(r.status != "uncertain")
                    lab_w.append(w)
                    lab_pi.append(lab.inclusion_probability)
            if not lab_y:
                continue
            y, yh = np.array(lab_y), np.array(lab_hat)
            est, human = estimates(
                y,
                yh,
                np.array(unl_hat),
                lab_pi,
                confidence=confidence,
                w=np.array(lab_w),
                w_unlabelled=np.array(unl_w) if unl_w else None,
            )
            figs[fig.name] = LabelledFigure(
                ppi=LabelledEstimate.load(est.to_dict()),
                human=LabelledEstimate.load(human.to_dict()),
                label=spec.human_label,
                # On the labelled answers the judge decided: an uncertain verdict's leaning is no decision.
                agreement_on_labelled=float(np.mean(((yh >= 0.5) == (y >= 0.5))[on]))
                if (on := np.array(decided)).any()
                else None,
                agreement_n=int(np.sum(decided)),
            )
        out[prompt] = figs
    return out


def _score(r: Judgement) -> float:
    """A judged score record's score."""
    return float(required(r.score, f"the score of judge {r.judge} on {r.question_id} ({r.prompt})"))


def estimates(
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_unlabelled: np.ndarray,
    pi: list[float | None],
    *,
    confidence: float,
    w: np.ndarray | None = None,
    w_unlabelled: np.ndarray | None = None,
    bounded: bool = True,
):
    """(prediction-powered, labels-only) estimates: weighted by each label's inverse inclusion
    probability when the labels were drawn with unequal probabilities (``rag-eval label``'s active
    draw), else PPI++ and the labels' plain mean."""
    known = [p for p in pi if p is not None]
    if len(known) == len(pi) and known and max(known) - min(known) > 1e-9:
        p = np.array(known)
        base = np.ones(len(y)) if w is None else np.asarray(w, float)
        est = active_mean(
            y, yhat, p, yhat_unlabelled, confidence=confidence, w=w, w_unlabelled=w_unlabelled, bounded=bounded
        )
        # A census (nothing left unlabelled) is its own figure; a sample is weighted by 1 / pi.
        hw = base if len(yhat_unlabelled) == 0 else base / p
        human = human_mean(y, confidence=confidence, w=hw, bounded=bounded)
        return (at_least_exact(est, y, human, w=hw) if bounded else est), human
    est = ppi_mean(y, yhat, yhat_unlabelled, confidence=confidence, w=w, w_unlabelled=w_unlabelled, bounded=bounded)
    return est, human_mean(y, confidence=confidence, w=w, bounded=bounded)


def human_outcomes(report: JudgedReport, labels: list[Label]) -> dict[tuple[str, str], str]:
    """The outcome of each labelled answer (yes or no under at least one column) with the labels in
    place of the judges' verdicts (a blank column keeps the judge's verdict), by the same
    attribution rules."""
    att = required(report.attribution, "the report's attribution section")
    threshold = UNRECORDED_FAITHFULNESS_THRESHOLD if att.faithfulness_threshold is None else att.faithfulness_threshold
    deciding = att.faithfulness_judge or (report.judges.faithfulness_judge if report.judges else None)
    by_key = {(lab.question_id, lab.prompt): lab for lab in labels if lab.labelled}
    out = {}
    for row in att.rows:
        lab = by_key.get((row.question_id, row.prompt))
        if lab is None:
            continue
        js = {}
        for name, j in row.judges.items():
            col = JUDGES[name].human_label if name in JUDGES else None
            value = lab.values.get(col) if col else None
            if value is not None and j.status != "skipped":
                spec = JUDGES[name]
                if spec.labels:
                    positive = spec.labels[0]  # "refused" / "correct"
                    update: dict[str, str | float] = {"verdict": positive if value else spec.labels[1]}
                else:
                    update = {"score": 1.0 if value else 0.0}
                j = j.model_copy(update={"status": "judged", "reason": "human label", **update})
            js[name] = j
        q = Question(row.question_id, row.question, {}, row.answerable, row.reference)
        retrieved = any(c.relevant for c in row.contexts)
        gen = Answer(question_id=row.question_id, prompt=row.prompt, answer=row.answer)
        out[(row.question_id, row.prompt)] = attribute(
            q, retrieved, gen, js, faithfulness_threshold=threshold, faithfulness_judge=deciding
        )[0]
    return out


def labelled_outcomes(
    report: JudgedReport, labels: list[Label], weights: dict[str, float], confidence: float
) -> dict[str, dict[str, LabelledFigure]]:
    """PPI shares of every outcome: ``{prompt: {outcome: {ppi, human}}}``."""
    att = required(report.attribution, "the report's attribution section")
    human = human_outcomes(report, labels)
    by_key = {(x.question_id, x.prompt): x for x in labels}
    out: dict[str, dict[str, LabelledFigure]] = {}
    for prompt in sorted({r.prompt for r in att.rows}):
        rows = [r for r in att.rows if r.prompt == prompt]
        lab = [r for r in rows if (r.question_id, prompt) in human]
        if not lab:
            continue
        pi = [by_key[(r.question_id, prompt)].inclusion_probability for r in lab]
        unl = [r for r in rows if (r.question_id, prompt) not in human]
        w_lab = np.array([weights.get(r.question_id, 1.0) for r in lab])
        w_unl = np.array([weights.get(r.question_id, 1.0) for r in unl]) if unl else None
        shares = {}
        for outcome in att.outcomes:
            y = np.array([float(human[(r.question_id, prompt)] == outcome) for r in lab])
            yh = np.array([float(r.outcome == outcome) for r in lab])
            yu = np.array([float(r.outcome == outcome) for r in unl])
            est, hum = estimates(y, yh, yu, pi, confidence=confidence, w=w_lab, w_unlabelled=w_unl)
            shares[outcome] = LabelledFigure(
                ppi=LabelledEstimate.load(est.to_dict()), human=LabelledEstimate.load(hum.to_dict())
            )
        out[prompt] = shares
    return out


def paired_differences(report: JudgedReport | dict, labels: list[Label], confidence: float) -> list[LabelledDifference]:
    """For every pair of prompts and labelled figure: the difference (first minus second) from the
    labels alone and by paired PPI, over the questions both prompts were judged on; questions
    labelled for both are the labelled pairs, the others are judged-only pairs."""
    report = ReportFile.load(report) if isinstance(report, dict) else report
    judges = required(report.judges, "the report's judges section")
    records = [r for r in judges.records if r.status == "judged"]
    answerable = _answerable(report)
    by_key = {(lab.question_id, lab.prompt): lab for lab in labels}
    prompts = sorted({r.prompt for r in records})
    out = []
    for spec, fig in figures(judges.metrics):
        if spec.human_label is None or not spec.labelled(fig) or spec.answer_independent:
            continue
        judged: dict[str, dict[str, float]] = {}
        for r in records:
            if r.judge == spec.name and (
                fig.subset == "all" or answerable.get(r.question_id) is (fig.subset == "answerable")
            ):
                value = float(r.verdict == fig.verdict) if fig.binary else _score(r)
                judged.setdefault(r.prompt, {})[r.question_id] = value
        for a, b in itertools.combinations(prompts, 2):
            common = sorted(set(judged.get(a, {})) & set(judged.get(b, {})))
            y, yh, yu, pi = [], [], [], []
            for q in common:
                diff = judged[a][q] - judged[b][q]
                la, lb = by_key.get((q, a)), by_key.get((q, b))
                va = la.values.get(spec.human_label) if la else None
                vb = lb.values.get(spec.human_label) if lb else None
                if la is None or va is None or vb is None:
                    yu.append(diff)
                else:
                    y.append(float(va) - float(vb))
                    yh.append(diff)
                    # Every prompt's answer to a question is drawn together: one probability.
                    pi.append(la.inclusion_probability)
            if not y:
                continue
            est, hum = estimates(np.array(y), np.array(yh), np.array(yu), pi, confidence=confidence, bounded=False)
            out.append(
                LabelledDifference(
                    metric=fig.name,
                    a=a,
                    b=b,
                    ppi=LabelledEstimate.load(est.to_dict()),
                    human=LabelledEstimate.load(hum.to_dict()),
                )
            )
    return out


def apply_labels(report: R, labels: list[Label], weights: dict[str, float], confidence: float, source: str) -> R:
    """The report with PPI figures: ``ppi`` inside each labelled judged figure and attribution
    share (so ``generation.<prompt>.<metric>.ppi`` is a summary figure and a gate may name it),
    and a ``labels`` section with what was labelled. The run's criteria (read back from its
    report) are judges with a label column while the figures are made. ``report``: the run's
    ``Report`` (or a ``ReportFile``), given back with the figures added."""
    criteria = criteria_of(report)
    with criteria_registered(criteria):
        figs = labelled_figures(report, labels, weights, confidence)
        outcomes = labelled_outcomes(report, labels, weights, confidence)
        comparisons = paired_differences(report, labels, confidence)
    judged = required(report.judges, "the report's judges section").figures
    shares = required(report.attribution, "the report's attribution section").shares
    for section, found in ((judged, figs), (shares, outcomes)):
        for prompt, by_name in found.items():
            for name, extra in by_name.items():
                target = section.get(prompt, {}).get(name)
                if target is not None:
                    target.ppi, target.human = extra.ppi, extra.human
    report.labels = LabelsSection(
        source=source,
        answers_labelled=sum(lab.labelled for lab in labels),
        per_column={
            c: sum(lab.values.get(c) is not None for lab in labels)
            for c in {**label_columns(criteria), **optional_columns({k for lab in labels for k in lab.values})}
        },
        figures=figs,
        outcomes=outcomes,
        comparisons=comparisons,
    )
    return report


def weights_of(run_dir: Path) -> dict[str, float]:
    """The audit's sampling weight of each question (1 when the whole test set was audited)."""
    return {g.question_id: 1.0 if g.weight is None else g.weight for g in _answers(run_dir)}


def known_answers(run_dir: Path) -> dict[tuple[str, str], str | None]:
    """The run's answers: (question id, prompt) to the answer's text (None where generation failed)."""
    return {(g.question_id, g.prompt): g.answer for g in _answers(run_dir)}


def answer_differs(cell: Any, run_answer: str | None) -> bool:
    """Whether a labels file's ``answer`` cell is another answer than the run's: it holds text, and
    other words (spaces and line ends, which a spreadsheet rewrites, do not count). A blank cell
    differs from nothing: the row is taken as labelling the run's answer."""
    shown = "" if cell is None else str(cell)
    return bool(shown.strip()) and shown.split() != (run_answer or "").split()


def _from_difference(words: list[str], at: int, n: int = 10) -> str:
    """``n`` words of an answer from a little before word ``at``, quoted, for a message."""
    begin = max(0, at - 3)
    piece = " ".join(words[begin : begin + n])
    return repr(("..." if begin else "") + piece + ("..." if begin + n < len(words) else ""))


def _changed_answer(named: LabelsRow, run_answer: str | None, qid: str, prompt: str, where: str) -> Problem | None:
    """The problem of a labelled row whose ``answer`` cell is not the run's answer: its labels are
    of another answer (an earlier run's, reused on a run whose answers changed) and would be counted
    as this answer's. None where the texts agree or the row has no answer cell to compare."""
    if not answer_differs(named.answer, run_answer):
        return None
    then, now = str(named.answer).split(), (run_answer or "").split()
    at = next((i for i, (a, b) in enumerate(zip(then, now, strict=False)) if a != b), min(len(then), len(now)))
    return Problem(
        where,
        f"the answer labelled for question '{qid}' with prompt '{prompt}' is not this run's answer, so its labels "
        f"are another answer's (they differ at word {at + 1}: labelled {_from_difference(then, at)}; this run's "
        f"{_from_difference(now, at) if now else '(none: its generation failed)' if run_answer is None else '(empty)'})",
        "a label belongs to the answer it was given for: label this run's answers (rag-eval label RUN_DIR "
        "--out NEW_FOLDER, or rag-eval view RUN_DIR) or remove the row; if the row's labels are of this run's "
        "answer and only the cell was changed (a spreadsheet rewrites numbers and long texts), clear its answer cell",
    )


def label_run(report: R, run_dir: Path, labels_path: Path, confidence: float) -> R:
    """Read a labels file for a run and add the PPI figures to its report."""
    labels = read_labels(labels_path, known_answers(run_dir), criteria_of(report))
    return apply_labels(report, labels, weights_of(run_dir), confidence, str(labels_path))
