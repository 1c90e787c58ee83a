"""Finished run folders, read for comparing runs: summary, report, per-question records and the
saved config of each; and where a baseline run is found."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from rag_eval.errors import DataError, Problem
from rag_eval.orchestration.history import collect_history
from rag_eval.rundir import read_finished, read_jsonl


@dataclass
class RunView:
    """A finished run folder, read: its summary, report, per-question records and saved config."""

    path: Path
    summary: dict
    report: dict
    config: dict
    retrieval: dict[str, dict[str, dict]]  # retriever -> question id -> retrieval.jsonl record
    rows: dict[str, dict[str, dict]]  # prompt -> question id -> attribution row
    judgements: dict[tuple[str, str, str], dict]  # (judge, prompt, question id) -> judgements.jsonl record
    questions: dict[str, dict]  # question id -> {question, answerable}

    @property
    def fingerprint(self) -> str | None:
        return (self.report.get("corpus") or {}).get("fingerprint")

    @property
    def judges(self) -> list[str]:
        return list((self.report.get("judges") or {}).get("metrics", []))


def read_run(path: str | Path, role: str = "run") -> RunView:
    """A finished run folder; a folder that is not one (or did not finish) is a DataError."""
    path = Path(path).resolve()
    summary, report = read_finished(path, f"the {role}")
    status = _status(path)
    if status not in (None, "finished"):
        raise DataError(
            Problem(
                str(path),
                f"the {role} run did not finish (status.json says '{status}')",
                f"finish it with rag-eval run CONFIG --resume {path}, or give a finished run",
            )
        )
    try:
        config = yaml.safe_load((path / "config.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        config = {}
    retrieval: dict[str, dict[str, dict]] = {}
    questions: dict[str, dict] = {}
    for r in read_jsonl(path / "retrieval.jsonl"):
        retrieval.setdefault(r["retriever"], {})[r["question_id"]] = r
        questions.setdefault(r["question_id"], {"question": r.get("question", ""), "answerable": r["answerable"]})
    rows: dict[str, dict[str, dict]] = {}
    for row in (report.get("attribution") or {}).get("rows", []):
        rows.setdefault(row["prompt"], {})[row["question_id"]] = row
        questions.setdefault(row["question_id"], {"question": row["question"], "answerable": row["answerable"]})
        if not questions[row["question_id"]]["question"]:
            questions[row["question_id"]]["question"] = row["question"]
    judgements = {(j["judge"], j["prompt"], j["question_id"]): j for j in read_jsonl(path / "judgements.jsonl")}
    return RunView(path, summary, report, config, retrieval, rows, judgements, questions)


def _status(path: Path) -> str | None:
    try:
        return json.loads((path / "status.json").read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError):
        return None


def resolve_baseline(path: str | Path, name: str) -> Path:
    """The baseline run folder: ``path`` itself, or, for a folder of run folders (e.g. the main
    branch's ``runs/``), its newest finished run of the config ``name``."""
    path = Path(path)
    if (path / "summary.json").exists() or not path.is_dir():
        return path
    try:
        return Path(collect_history(path, config=name)["systems"][name][-1]["path"])
    except DataError as exc:
        raise DataError(
            Problem(
                f"--baseline {path}",
                f"neither a run folder (it has no summary.json) nor a folder of runs of config '{name}' "
                f"({exc.problems[0].what})",
                "give the baseline's run folder, or the folder its runs are written to (its report.out)",
            )
        ) from None
