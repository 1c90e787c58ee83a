"""The run folders under RUNS_DIR as the view sees them: a browser's path never leaves RUNS_DIR
(only a folder directly inside it, by name, is a run), and run folders are only read."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from rag_eval.labels.columns import run_columns as run_label_columns
from rag_eval.labels.human import known_answers, labelled_line
from rag_eval.orchestration.history import headline_figures
from rag_eval.report.formatting import fmt
from rag_eval.report.report_records import Report, Summary
from rag_eval.rundir import RunFailures, read_report_json, read_status
from rag_eval.view.labels_file import as_shown, label_counts, labels_path, read_rows

HEADLINES_SHOWN = 6


class NotARun(LookupError):
    """A name from the browser that is not a run folder directly inside RUNS_DIR."""


def run_folder(runs_dir: Path, name: str) -> Path:
    """The run folder ``name`` directly inside ``runs_dir``; NotARun for anything else (``..``, an
    absolute path, a nested path, a link that leads out, a folder without report.json)."""
    if not name or name in (".", "..") or any(ch in name for ch in "/\\\x00") or Path(name).is_absolute():
        raise NotARun(name)
    root = runs_dir.resolve()
    path = (root / name).resolve()
    if path.parent != root or not path.is_dir():
        raise NotARun(name)
    return path


def _json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class ReportHead(BaseModel):
    """What the runs page reads of a report.json written before its summary.json: the config's
    name and when the run was made (the rest of the report is not read here)."""

    model_config = ConfigDict(extra="ignore")

    name: Any = None
    created: Any = None


@dataclass
class RunEntry:
    """One run folder in the list: its status, what its answers came to (outcomes and judged
    figures; the retrieval figures for a run without answers) and labels so far."""

    name: str
    status: str
    config: str = ""
    created: str = ""
    outcomes: list[tuple[str, str]] = field(default_factory=list)  # (prompt, "ok 14 · incorrect 3 ...")
    headlines: list[tuple[str, str]] = field(default_factory=list)
    more_figures: int = 0
    labelled: int = 0
    labelled_columns: dict[str, int] = field(default_factory=dict)  # answers with yes or no under each column
    has_report: bool = False
    has_answers: bool = False
    failures: RunFailures | None = None
    note: str = ""  # why a folder is listed but not opened

    @property
    def counted(self) -> str:
        """``3 answers labelled: correct 3, faithful 2, refused 1``."""
        return labelled_line(self.labelled, self.labelled_columns)


def run_status(run_dir: Path) -> str:
    """``finished``, ``finished with failures`` (answers or judgements whose every call failed),
    ``running``, ``failed``... as status.json says; ``finished`` for a folder with a report and no
    status file (older runs); ``no report`` otherwise."""
    status = read_status(run_dir)
    if status is not None and status.finished_with_failures:
        return "finished with failures"
    if status is not None and status.status:
        return status.status
    return "finished" if (run_dir / "report.json").exists() else "no report"


def run_failures(run_dir: Path) -> RunFailures | None:
    """What failed in a run that finished with failures (status.json's ``failures``), else None."""
    status = read_status(run_dir)
    return status.failures if status is not None and status.finished_with_failures else None


def failures_line(f: RunFailures) -> str:
    """``2 answers and 3 judgements failed; first error: ...``."""
    parts = [
        f"{n} {what}{'' if n == 1 else 's'}" for n, what in ((f.answers, "answer"), (f.judgements, "judgement")) if n
    ]
    first = f"; first error: {f.first_error}" if f.first_error else ""
    return f"{' and '.join(parts)} failed (every call){first}"


def labelled_count(run_dir: Path) -> tuple[int, dict[str, int]]:
    """Answers with at least one label in the run's labels file, and the answers with yes or no under
    each column (``label_counts``: a blank row counts nowhere). A row labelling another answer than
    the run's counts nowhere either, as the labelling page shows it blank (``as_shown``)."""
    rows = read_rows(labels_path(run_dir))
    if not rows:
        return label_counts(rows)
    report = load_report(run_dir) if (run_dir / "report.json").exists() else None
    return label_counts(as_shown(rows, known_answers(run_dir)), run_label_columns(report))


def _outcomes(summary: Summary) -> list[tuple[str, str]]:
    """Each prompt's outcome counts, most frequent first: ``ok 14 · incorrect 3 · uncertain 2``."""
    out = []
    for prompt, shares in summary.attribution.items():
        counts = sorted(((s.count, o) for o, s in shares.items() if s.count), key=lambda x: -x[0])
        if counts:
            out.append((prompt, " · ".join(f"{o} {n}" for n, o in counts)))
    return out


def _figures(summary: Summary, report: dict | None) -> dict[str, dict]:
    """The figures that tell runs of one config apart: each prompt's judged figures; the retrieval
    figures only for a run without answers (they are the same for every run of a config)."""
    figs = headline_figures(summary, report or {})
    judged = {k: v for k, v in figs.items() if k.startswith("generation.")}
    return judged or {k: v for k, v in figs.items() if k.startswith("retrieval.")}


def _entry(runs_dir: Path, p: Path) -> RunEntry | None:
    """The list's entry of one folder inside ``runs_dir``; None for a folder that holds no run. A
    link that leads out of ``runs_dir`` is listed, not read: the view opens only what is inside."""
    try:
        path = run_folder(runs_dir, p.name)
    except NotARun:
        if p.is_symlink():
            return RunEntry(
                name=p.name,
                status="not opened",
                note=f"a link to {p.resolve()}, not a folder directly inside {runs_dir}: the view follows a link "
                "only to a run folder inside it (move or copy the run here, or serve the folder that holds it)",
            )
        return None
    if not ((path / "report.json").exists() or (path / "status.json").exists()):
        return None
    raw_summary, report = _json(path / "summary.json") or {}, _json(path / "report.json")
    summary = Summary.load(raw_summary) if raw_summary else None
    figs = _figures(summary, report) if summary else {}
    shown = list(figs.items())[:HEADLINES_SHOWN]
    labelled, per_column = labelled_count(path)
    head = ReportHead.model_validate(report) if isinstance(report, dict) else ReportHead()
    return RunEntry(
        name=p.name,
        status=run_status(path),
        config=(summary.name if summary else "") or str(head.name or ""),
        created=(summary.created if summary else "") or str(head.created or ""),
        outcomes=_outcomes(summary) if summary else [],
        headlines=[(k, fmt(v, 2)) for k, v in shown],
        more_figures=len(figs) - len(shown),
        labelled=labelled,
        labelled_columns=per_column,
        has_report=report is not None,
        has_answers=(path / "generation.jsonl").exists(),
        failures=run_failures(path),
    )


def list_runs(runs_dir: Path) -> list[RunEntry]:
    """Every folder directly inside ``runs_dir`` that holds a run (report.json or status.json),
    newest first; a link to a folder outside it is listed as not opened."""
    entries = [_entry(runs_dir, p) for p in sorted(runs_dir.iterdir())] if runs_dir.is_dir() else []
    return sorted((e for e in entries if e is not None), key=lambda e: (e.created, e.name), reverse=True)


_reports: dict[Path, tuple[float, Report]] = {}


def load_report(run_dir: Path) -> Report:
    """The run's report.json, typed (read again only when the file changed)."""
    path = run_dir / "report.json"
    mtime = path.stat().st_mtime
    got = _reports.get(path)
    if got is None or got[0] != mtime:
        got = (mtime, Report.load(read_report_json(run_dir)))
        _reports[path] = got
    return got[1].model_copy(deep=True)
