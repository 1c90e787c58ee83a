"""The run folders under RUNS_DIR as the view sees them: a browser's path never leaves RUNS_DIR
(only a folder directly inside it, by name, is a run), and run folders are only read."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from rag_eval.orchestration.history import headline_figures
from rag_eval.report.formatting import fmt
from rag_eval.report.report_records import Report
from rag_eval.view.labels_file import labelled_values, labels_path, read_rows

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


@dataclass
class RunEntry:
    """One run folder in the list: its status, headline figures and labels so far."""

    name: str
    status: str
    config: str = ""
    created: str = ""
    headlines: list[tuple[str, str]] = field(default_factory=list)
    more_figures: int = 0
    labelled: int = 0
    has_report: bool = False
    has_answers: bool = False


def run_status(run_dir: Path) -> str:
    """``finished``, ``running``, ``failed``... as status.json says; ``finished`` for a folder with a
    report and no status file (older runs); ``no report`` otherwise."""
    status = (_json(run_dir / "status.json") or {}).get("status")
    if status:
        return str(status)
    return "finished" if (run_dir / "report.json").exists() else "no report"


def labelled_count(run_dir: Path) -> int:
    """Answers with at least one label in the run's labels file."""
    return sum(
        any(v is not None for v in vals.values()) for vals in labelled_values(read_rows(labels_path(run_dir))).values()
    )


def list_runs(runs_dir: Path) -> list[RunEntry]:
    """Every folder directly inside ``runs_dir`` that holds a run (report.json or status.json),
    newest first."""
    out = []
    for p in sorted(runs_dir.iterdir()) if runs_dir.is_dir() else []:
        if not p.is_dir() or not ((p / "report.json").exists() or (p / "status.json").exists()):
            continue
        summary, report = _json(p / "summary.json") or {}, _json(p / "report.json")
        figs = headline_figures(summary, report or {}) if summary else {}
        shown = list(figs.items())[:HEADLINES_SHOWN]
        out.append(
            RunEntry(
                name=p.name,
                status=run_status(p),
                config=str(summary.get("name") or (report or {}).get("name") or ""),
                created=str(summary.get("created") or (report or {}).get("created") or ""),
                headlines=[(k, fmt(v, 2)) for k, v in shown],
                more_figures=len(figs) - len(shown),
                labelled=labelled_count(p),
                has_report=report is not None,
                has_answers=(p / "generation.jsonl").exists(),
            )
        )
    return sorted(out, key=lambda e: (e.created, e.name), reverse=True)


_reports: dict[Path, tuple[float, Report]] = {}


def load_report(run_dir: Path) -> Report:
    """The run's report.json, typed (read again only when the file changed)."""
    path = run_dir / "report.json"
    mtime = path.stat().st_mtime
    got = _reports.get(path)
    if got is None or got[0] != mtime:
        got = (mtime, Report.load(json.loads(path.read_text(encoding="utf-8"))))
        _reports[path] = got
    return got[1].model_copy(deep=True)
