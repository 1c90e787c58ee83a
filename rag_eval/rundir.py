"""The run folder: where every stage writes its records as soon as they exist.

``RunFolder`` opens one (new, or an unfinished one resumed), keeps its ``status.json``
(``started``, ``finished``, ``failed`` with the reason, ``interrupted``) and writes its records;
``read_run`` (``rag_eval.orchestration.finished``) reads a folder back as typed records.
"""

from __future__ import annotations

import json
import os
import re
import socket
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

import yaml

from rag_eval.base_records import Model, StageReuse
from rag_eval.config import AuditConfig, resolved_config
from rag_eval.data.inputs import Inputs
from rag_eval.errors import ConfigError, DataError, Problem
from rag_eval.text import record_lines

Status = Literal["started", "finished", "failed", "interrupted"]

WRITER = ".writer"  # the lock file a run folder's writing process holds (``lock_run``)


def _flock(fh: IO[str], exclusive: bool) -> bool:
    """An advisory lock on ``fh`` without waiting; False when another process holds it (True where
    the platform has no ``fcntl``: nothing is checked there)."""
    try:
        import fcntl  # noqa: PLC0415  (POSIX only)
    except ImportError:
        return True
    try:
        fcntl.flock(fh, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return True  # a file system without locks (some network mounts): nothing is checked there
    return True


def writer_of(run_dir: Path) -> str | None:
    """Who is writing ``run_dir`` now (``pid 123 on host since ...``), or None: no live process
    holds its lock. The lock dies with its process, a killed one too."""
    path = run_dir / WRITER
    if not path.exists():
        return None
    try:
        with path.open("r", encoding="utf-8") as fh:
            if _flock(fh, exclusive=False):
                return None
            return fh.read().strip() or "another process"
    except OSError:
        return None


def busy(run_dir: Path, who: str) -> ConfigError:
    """The error for a command that would write or read a run folder a live process is writing."""
    return ConfigError(
        Problem(
            str(run_dir),
            f"another rag-eval process is writing this run folder ({who})",
            "wait for it to finish, or stop it (Ctrl-C) and then resume it with --resume",
        )
    )


def not_being_written(run_dir: Path) -> None:
    """Refuse (``busy``) a folder a live process is writing: its records are not all there yet."""
    if (who := writer_of(run_dir)) is not None:
        raise busy(run_dir, who)


def finished_run(run_dir: Path, what: str) -> None:
    """Refuse (DataError) ``what`` on a run folder whose status.json says it did not finish: its
    report.json holds what was done before it stopped, which a re-render would show as a finished
    audit without its verdicts (user trial 5 F5). A folder without status.json (written before it
    existed) is let through."""
    status = read_status(run_dir)
    if status is None or status.finished:
        return
    raise DataError(
        Problem(
            str(run_dir / "status.json"),
            f"the run {status.unfinished_why()}, so {what} would show part of an audit as a whole one",
            "resume it first (rag-eval run CONFIG --resume RUN_DIR), then run this again",
        )
    )


def lock_run(run_dir: Path) -> IO[str]:
    """Take ``run_dir``'s writer lock for this process (held until the handle is closed, or the
    process ends); a ``busy`` error when a live process holds it."""
    fh = (run_dir / WRITER).open("a+", encoding="utf-8")
    # A reader (``writer_of``) holds a shared lock for an instant; a few tries over ~0.2 s keep a
    # resume starting in that instant from being refused in the name of a dead writer.
    for wait_s in (0.0, 0.02, 0.05, 0.13):
        time.sleep(wait_s)
        if _flock(fh, exclusive=True):
            break
    else:
        fh.seek(0)
        who = fh.read().strip() or "another process"
        fh.close()
        raise busy(run_dir, who)
    fh.seek(0)
    fh.truncate()
    fh.write(f"pid {os.getpid()} on {socket.gethostname()} since {datetime.now(UTC).isoformat(timespec='seconds')}\n")
    fh.flush()
    return fh


class RunFailures(Model):
    """What failed in a run that still finished: answers or judgements whose every model call
    failed, and the first error, word for word (``status.json``'s ``failures``)."""

    answers: int = 0
    judgements: int = 0
    first_error: str = ""

    @property
    def any(self) -> bool:
        return bool(self.answers or self.judgements)


class RunStatus(Model):
    """``status.json``: where the run stands, since when, and why it stopped when it failed.

    A run that finished with failed answers or judgements has status ``finished`` and a
    ``failures`` record (``finished_with_failures``): its figures exist but miss those answers."""

    status: str = ""
    at: str = ""
    reason: str | None = None
    opened: str | None = None  # how the folder was opened: new, resumed, or --resume finding nothing
    created: str | None = None  # when the run first started (a resume keeps it; None: written before it was kept)
    failures: RunFailures | None = None

    @property
    def finished(self) -> bool:
        return self.status == "finished"

    @property
    def finished_with_failures(self) -> bool:
        return self.finished and self.failures is not None and self.failures.any

    def unfinished_why(self) -> str:
        """Why the run has no finished results, in words: ``failed: <its reason>``, ``was
        interrupted``, or ``did not finish (status.json says 'started' since ...)``."""
        if self.status == "failed":
            return f"failed: {self.reason}" if self.reason else "failed (no reason recorded)"
        if self.status == "interrupted":
            return "was interrupted" + (f" ({self.reason})" if self.reason else "")
        since = f" since {self.at}" if self.at else ""
        return f"did not finish (status.json says '{self.status}'{since})"


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


def jsonl_text(records: Iterable[dict[str, Any]]) -> str:
    """One JSON object per line."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records of a JSONL file; a torn last line (from a killed run) is ignored."""
    if not path.exists():
        return []
    out = []
    for line in record_lines(path.read_text(encoding="utf-8")):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def read_status(run_dir: Path) -> RunStatus | None:
    """``status.json`` of a run folder, or None (a folder written before status.json existed)."""
    try:
        data = json.loads((run_dir / "status.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return RunStatus.load(data) if isinstance(data, dict) else None


def read_report_json(run_dir: Path, what: str = "the folder") -> dict[str, Any]:
    """report.json of a run folder (every figure and rendering comes from it); a folder without
    one is a DataError naming why (the reason a failed run recorded)."""
    try:
        report: dict[str, Any] = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _not_a_run(run_dir, what, exc) from None
    return report


def _not_a_run(run_dir: Path, what: str, exc: Exception) -> DataError:
    """The error for a folder that holds no finished run: the reason its run failed, where it recorded one."""
    status = read_status(run_dir)
    if status is not None and not status.finished:
        why = f"{what} run {status.unfinished_why()}"
    else:
        why = f"{what} is not a finished rag-eval run folder ({exc})"
    return DataError(
        Problem(
            str(run_dir),
            why,
            "give a folder under runs/ written by rag-eval run, retrieval or compare, or rag_eval.audit() "
            "(it holds summary.json)",
        )
    )


def find_resumable(cfg: AuditConfig, out: str | None = None) -> Path | None:
    """The newest run folder of this config's name (exactly: ``demo`` never picks ``demo-strict``'s
    runs) that did not finish."""
    for p in own_runs(cfg, out):
        status = read_status(p)
        if status is None or not status.finished:
            return p
    return None


def own_runs(cfg: AuditConfig, out: str | None = None) -> list[Path]:
    """This config's run folders under the runs folder, newest first."""
    base = Path(out) if out else cfg.out_dir
    own = re.compile(re.escape(cfg.name) + r"-\d{8}-\d{6}(-\d+)?")
    return sorted(
        (p for p in base.glob(f"{cfg.name}-*") if p.is_dir() and own.fullmatch(p.name)),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )


def config_changes(run_dir: Path, cfg: AuditConfig) -> str | None:
    """The top-level config keys that differ from the run folder's saved config, or None."""
    try:
        saved = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return "no saved config"
    now = resolved_config(cfg)
    saved_name = saved.get("name")
    if saved_name not in (None, cfg.name):
        raise ConfigError(
            Problem(
                str(run_dir),
                f"this run folder belongs to config '{saved_name}', not '{cfg.name}'",
                "give a run folder of this config, or drop --resume to start fresh",
            )
        )
    keys = sorted(k for k in set(saved) | set(now) if saved.get(k) != now.get(k))
    return ", ".join(keys) if keys else None


@dataclass
class RunFolder:
    """One run's folder: its status, its records, and what opening it did (``opened``: a line for
    the user, e.g. that ``--resume`` found nothing to resume and started a new run)."""

    path: Path
    resumed: bool = False
    opened: str = ""
    reuse: dict[str, StageReuse] = field(default_factory=dict)
    lock: IO[str] | None = None  # the writer lock, held while this process writes the folder

    def release(self) -> None:
        """Let another process write the folder (a resume after this run)."""
        if self.lock is not None:
            self.lock.close()
            self.lock = None

    @classmethod
    def create(cls, cfg: AuditConfig, out: str | None = None) -> RunFolder:
        """A new folder ``<report.out>/<name>-<stamp>/`` with the resolved config."""
        path = new_run_dir(cfg, out)
        return cls(path, opened=f"new run folder {path}", lock=lock_run(path))

    @classmethod
    def open(cls, cfg: AuditConfig, out: str | None = None, resume: Path | bool | None = None) -> RunFolder:
        """A new folder, or with ``resume`` the folder to continue: True for the newest unfinished
        run of this config (a new one when there is none, said in ``opened``), a path for that run."""
        if resume is True:
            found = find_resumable(cfg, out)
            if found is None:
                runs = own_runs(cfg, out)
                folder = cls.create(cfg, out)
                if runs:
                    status = read_status(runs[0])
                    at = f" at {status.at}" if status and status.at else ""
                    folder.opened = (
                        f"--resume: the newest run of config '{cfg.name}', {runs[0]}, finished{at}; nothing to "
                        f"resume, so a new run was started in {folder.path}"
                    )
                else:
                    folder.opened = (
                        f"--resume: no run of config '{cfg.name}' under {Path(out) if out else cfg.out_dir}; a new "
                        f"run was started in {folder.path}"
                    )
                return folder
            return cls._resumed(cfg, found)
        if resume:
            path = Path(resume)
            if not path.is_dir():
                raise ConfigError(
                    Problem(
                        str(path),
                        "the run folder to resume does not exist",
                        "give a folder under runs/, or --resume alone for the newest unfinished run",
                    )
                )
            return cls._resumed(cfg, path)
        return cls.create(cfg, out)

    @classmethod
    def _resumed(cls, cfg: AuditConfig, path: Path) -> RunFolder:
        # Two processes writing one folder would overwrite each other's records and report.
        lock = lock_run(path)
        try:
            changed = config_changes(path, cfg)
            status = read_status(path)
            was = f" ({status.status})" if status is not None else ""
            opened = f"resumed {path}{was}: finished records are reused"
            if changed is not None:
                opened += f"; the config changed since ({changed}): work whose inputs changed is redone"
            write_text(path / "config.yaml", yaml.safe_dump(resolved_config(cfg), sort_keys=False))
        except BaseException:
            # Not opened: the lock goes now, not when the error (kept by a notebook) is dropped.
            lock.close()
            raise
        return cls(path, resumed=True, opened=opened, lock=lock)

    def status(self) -> RunStatus | None:
        return read_status(self.path)

    def set_status(self, status: Status, reason: str | None = None, failures: RunFailures | None = None) -> None:
        """Write ``status.json``: the status, the time, for a failure its reason, and for a run that
        finished with failed answers or judgements what failed."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        before = read_status(self.path)
        created = before.created if before is not None else now
        record: dict[str, Any] = {
            "status": status,
            "at": now,
            **({"reason": reason} if reason is not None else {}),
            **({"failures": failures.model_dump()} if failures is not None and failures.any else {}),
            **({"opened": self.opened} if self.opened else {}),
            **({"created": created} if created else {}),
        }
        write_json(self.path / "status.json", record)

    def write_text(self, name: str, text: str) -> Path:
        write_text(self.path / name, text)
        return self.path / name

    def write_json(self, name: str, data: Any) -> Path:
        write_json(self.path / name, data)
        return self.path / name

    def write_records(self, name: str, records: Iterable[Model | dict[str, Any]]) -> Path:
        """A JSONL file of records (typed records written with the keys that were set)."""
        rows = (r.dump() if isinstance(r, Model) else r for r in records)
        return self.write_text(name, jsonl_text(rows))

    def read_records(self, name: str) -> list[dict[str, Any]]:
        return read_jsonl(self.path / name)

    def keep_given(self, inputs: Inputs) -> None:
        """Inputs given from Python are written into the run folder (inputs/), so the run can be read
        back and repeated from files."""
        if not inputs.given:
            return
        (self.path / "inputs").mkdir(exist_ok=True)
        if inputs.corpus.source == "corpus (given)":
            rows = [{"id": c.id, "text": c.text, "title": c.title, "doc_id": c.doc_id} for c in inputs.corpus.chunks]
            self.write_text("inputs/corpus.jsonl", jsonl_text(rows))
        if str(inputs.test_set_path) == "test set (given)":
            questions: list[dict[str, Any]] = [
                {
                    "id": q.id,
                    "question": q.question,
                    "answer_in": q.qrels,
                    **({"reference": q.reference} if q.reference else {}),
                    "answerable": q.answerable,
                }
                for q in inputs.questions
            ]
            self.write_text("inputs/test_set.jsonl", jsonl_text(questions))

    def reused(self, stage: str, reused: int, redone: dict[str, int], what: str | None = None) -> str | None:
        """Record what ``stage`` reused of a resumed run (the report's ``resume``); the line to say
        (``reused 12 finished answers; redoing ...``), or None when nothing was reused or redone."""
        if self.resumed:
            self.reuse[stage] = StageReuse(reused=reused, redone=dict(redone))
        if not (reused or redone):
            return None
        again = StageReuse(redone=redone).redone_text()
        return f"reused {reused} finished {what or stage}" + (f"; redoing {again}" if again else "")
