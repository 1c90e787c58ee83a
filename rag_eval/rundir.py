"""The run folder: where every stage writes its records as soon as they exist."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from rag_eval.config import AuditConfig, resolved_config
from rag_eval.errors import DataError, Problem


def new_run_dir(cfg: AuditConfig, out: str | None = None) -> Path:
    """``<report.out>/<name>-<YYYYmmdd-HHMMSS>/``, made unique if two runs start in one second."""
    base = Path(out) if out else cfg.out_dir
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = base / f"{cfg.name}-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = base / f"{cfg.name}-{stamp}-{n}"
    path.mkdir(parents=True)
    write_text(path / "config.yaml", yaml.safe_dump(resolved_config(cfg), sort_keys=False))
    return path


def write_text(path: Path, text: str) -> None:
    """Write atomically: a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def read_jsonl(path: Path) -> list[dict]:
    """Records of a JSONL file; a torn last line (from a killed run) is ignored."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def read_finished(run_dir: Path, what: str = "the folder") -> tuple[dict, dict]:
    """(summary.json, report.json) of a run folder; a folder without them is a DataError."""
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(
            Problem(
                str(run_dir),
                f"{what} is not a finished rag-eval run folder ({exc})",
                "give a folder under runs/ written by rag-eval run, retrieval or compare, or rag_eval.audit() "
                "(it holds summary.json)",
            )
        ) from None
    return summary, report
