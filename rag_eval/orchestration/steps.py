"""The steps every kind of audit shares (built-in retrievers, a deployed system, traces): the
inputs loaded and validated, the run folder opened or resumed and its status, the retrieval stage,
and the progress lines about reused work."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from rag_eval.cache_dirs import cache_root
from rag_eval.config import AuditConfig, resolved_config
from rag_eval.data.corpus import load_corpus
from rag_eval.data.frames import records_from
from rag_eval.data.testset import load_test_set, questions_from_records
from rag_eval.errors import ConfigError, Problem
from rag_eval.progress import say
from rag_eval.retrievers import factory
from rag_eval.retrievers.diagnosis import diagnose_with_fixes
from rag_eval.retrievers.lint import lint
from rag_eval.retrievers.stage import evaluate, question_records, write_records
from rag_eval.rundir import new_run_dir, write_json, write_text
from rag_eval.types import Corpus, Question


@dataclass
class Inputs:
    """The validated corpus and test set of an audit."""

    corpus: Corpus
    questions: list[Question]
    test_set_path: Path


def load_inputs(cfg: AuditConfig, corpus: Any = None, test_set: Any = None) -> Inputs:
    """Load the corpus and the test set (from the config's files, or rows given from Python); every
    problem raises DataError before anything runs."""
    loaded = load_corpus(cfg, corpus)
    if test_set is not None:
        questions = questions_from_records(records_from(test_set, "test set"), loaded, "test set (given)")
        return Inputs(loaded, questions, Path("test set (given)"))
    if cfg.test_set.path is None:
        raise ConfigError(
            Problem(
                cfg.where("test_set.source"),
                "test_set: {source: given} needs the questions passed from Python",
                "call rag_eval.audit(config, test_set=rows), or give test_set: {path: ...}",
            )
        )
    path = cfg.resolve_path(cfg.test_set.path)
    return Inputs(loaded, load_test_set(path, loaded), path)


def retrieval_stage(cfg: AuditConfig, inputs: Inputs, run_dir: Path, given: dict | None = None):
    """Stage 1 into a run folder: rankings, metrics, diagnoses, lint; writes retrieval.jsonl.
    ``given``: rankings made elsewhere (a deployed system's), by retriever name."""
    rankings = factory.run_retrievers(cfg, inputs.corpus, inputs.questions, cache_root(cfg.cache_folder), given)
    res = evaluate(cfg, inputs.corpus, inputs.questions, rankings)
    diagnoses = diagnose_with_fixes(cfg, inputs.corpus, res, cache_root(cfg.cache_folder))
    findings = lint(cfg, inputs.corpus, inputs.questions, res)
    show = cfg.retrieval.depth  # every ranked chunk: a rank beyond k is what a diagnosis needs
    write_records(run_dir / "retrieval.jsonl", question_records(res, inputs.corpus, show, diagnoses))
    return res, diagnoses, findings


def _keep_given(run_dir: Path, inputs: Inputs) -> None:
    """Inputs given from Python are written into the run folder (inputs/), so the run can be read
    back and repeated from files."""
    if inputs.corpus.source == "corpus (given)" or str(inputs.test_set_path) == "test set (given)":
        (run_dir / "inputs").mkdir(exist_ok=True)
    if inputs.corpus.source == "corpus (given)":
        rows = [{"id": c.id, "text": c.text, "title": c.title, "doc_id": c.doc_id} for c in inputs.corpus.chunks]
        write_text(run_dir / "inputs" / "corpus.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    if str(inputs.test_set_path) == "test set (given)":
        rows = [
            {
                "id": q.id,
                "question": q.question,
                "answer_in": q.qrels,
                **({"reference": q.reference} if q.reference else {}),
                "answerable": q.answerable,
            }
            for q in inputs.questions
        ]
        write_text(
            run_dir / "inputs" / "test_set.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        )


def _start(cfg: AuditConfig, out: str | None, given: Inputs | None = None) -> tuple[Inputs, Path]:
    inputs = given or load_inputs(cfg)
    n_ans = sum(q.answerable for q in inputs.questions)
    say(
        f"corpus: {len(inputs.corpus)} chunks from {inputs.corpus.source}; test set: "
        f"{len(inputs.questions)} questions ({n_ans} answerable)"
    )
    run_dir = new_run_dir(cfg, out)
    _keep_given(run_dir, inputs)
    return inputs, run_dir


def find_resumable(cfg: AuditConfig, out: str | None = None) -> Path | None:
    """The newest run folder of this config's name (exactly: ``demo`` never picks ``demo-strict``'s
    runs) that did not finish."""
    base = Path(out) if out else cfg.out_dir
    own = re.compile(re.escape(cfg.name) + r"-\d{8}-\d{6}(-\d+)?")
    runs = sorted(
        (p for p in base.glob(f"{cfg.name}-*") if p.is_dir() and own.fullmatch(p.name)),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for p in runs:
        try:
            status = json.loads((p / "status.json").read_text()).get("status")
        except (OSError, ValueError):
            status = None
        if status != "finished":
            return p
    return None


def _set_status(run_dir: Path, status: str) -> None:
    when = datetime.now(UTC).isoformat(timespec="seconds")
    write_json(run_dir / "status.json", {"status": status, "at": when})


def _open_run(
    cfg: AuditConfig, out: str | None, resume: Path | bool | None, given: Inputs | None = None
) -> tuple[Inputs, Path]:
    run_dir = None
    if resume is True:
        run_dir = find_resumable(cfg, out)
        say(f"resuming {run_dir}" if run_dir else "no unfinished run of this config: starting a new one")
    elif resume:
        run_dir = Path(resume)
        if not run_dir.is_dir():
            raise ConfigError(
                Problem(
                    str(run_dir),
                    "the run folder to resume does not exist",
                    "give a folder under runs/, or --resume alone for the newest unfinished run",
                )
            )
    if run_dir is None:
        return _start(cfg, out, given)
    inputs = given or load_inputs(cfg)
    _keep_given(run_dir, inputs)
    changed = config_changes(run_dir, cfg)
    if changed is not None:
        say(f"resuming {run_dir}: the config changed since ({changed}); work whose inputs changed is redone")

    write_text(run_dir / "config.yaml", yaml.safe_dump(resolved_config(cfg), sort_keys=False))
    return inputs, run_dir


def config_changes(run_dir: Path, cfg: AuditConfig) -> str | None:
    """The top-level config keys that differ from the run folder's saved config, or None."""
    try:
        saved = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return "no saved config"
    now = resolved_config(cfg)
    if saved.get("name") not in (None, cfg.name):
        raise ConfigError(
            Problem(
                str(run_dir),
                f"this run folder belongs to config '{saved.get('name')}', not '{cfg.name}'",
                "give a run folder of this config, or drop --resume to start fresh",
            )
        )
    keys = sorted(k for k in set(saved) | set(now) if saved.get(k) != now.get(k))
    return ", ".join(keys) if keys else None


def _say_reuse(what: str, reuse: dict) -> None:
    if reuse["reused"] or reuse["redone"]:
        redone = ", ".join(f"{n} because the {why} changed" for why, n in reuse["redone"].items())
        say(f"reused {reuse['reused']} finished {what}" + (f"; redoing {redone}" if redone else ""))


def _same_model(cfg: AuditConfig) -> bool:
    """Whether the generator and the judge are the same model (a judge grading its own answers)."""
    g, j = cfg.generation.llm, cfg.judges.llm
    return (g.provider, g.model, g.base_url, g.model_path) == (j.provider, j.model, j.base_url, j.model_path)
