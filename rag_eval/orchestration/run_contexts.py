"""What a finished run's generator and judges were given, read back from its folder: its saved config
(relative paths resolved where the run resolved them), its corpus, and how many characters of each
context they read. The labelling pages (``rag-eval label``'s labels.html and the view's) show each
context from these, cut where the model stopped reading."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from rag_eval.config import AuditConfig, config_from_dict, load_config
from rag_eval.data.corpus import load_corpus
from rag_eval.errors import RagEvalError
from rag_eval.judges.judging import context_chars
from rag_eval.report.report_records import Report
from rag_eval.rundir import read_jsonl
from rag_eval.system.trace_audit import passage_texts
from rag_eval.types import Chunk, Corpus


def run_config(run_dir: Path, report: Report) -> AuditConfig | None:
    """The run's saved config (``config.yaml``), its relative paths starting where the run's did: at
    the config file's folder (``report.config_path``, recorded absolute), so a run folder reads the
    same from any working folder; None when it cannot be read (a config of another version)."""
    try:
        raw = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
        home = Path(report.config_path).parent if report.config_path else run_dir
        return config_from_dict(raw, home, str(run_dir / "config.yaml"))
    except (OSError, yaml.YAMLError, RagEvalError):
        return None


class KeptChunk(BaseModel):
    """A chunk as a run kept it (a line of inputs/corpus.jsonl)."""

    model_config = ConfigDict(extra="ignore")

    id: Any
    text: Any = None
    title: Any = None
    doc_id: Any = None


def run_corpus(run_dir: Path, report: Report, cfg: AuditConfig | None) -> Corpus | None:
    """The run's corpus: its kept inputs (inputs/corpus.jsonl), else the one its config names; a
    traces run's passages (traces.jsonl) join it, by the ids its answers give them."""
    kept = read_jsonl(run_dir / "inputs" / "corpus.jsonl")
    corpus: Corpus | None = None
    if kept:
        chunks = [
            Chunk(str(c.id), str(c.text or ""), str(c.title or ""), str(c.doc_id or ""))
            for c in (KeptChunk.model_validate(r) for r in kept if "id" in r)
        ]
        corpus = Corpus(chunks, "corpus (given)")
    else:
        if cfg is None and report.config_path and Path(report.config_path).exists():
            try:
                cfg = load_config(report.config_path)
            except RagEvalError:
                cfg = None
        if cfg is not None:
            try:
                corpus = load_corpus(cfg)
            except RagEvalError:
                corpus = None
    if not (run_dir / "traces.jsonl").exists():
        return corpus
    held = corpus.chunks if corpus is not None else []
    ids = {c.id for c in held}
    traced = [Chunk(cid, text) for cid, text in passage_texts(run_dir).items() if cid not in ids]
    return Corpus([*held, *traced], corpus.source if corpus is not None else "traces") if traced else corpus


@dataclass
class RunContexts:
    """A run's corpus as its model read it: the chunks (None when the corpus cannot be read), how
    many characters of each context the generator and the judges were given (``max_chars``; None
    when the run's config cannot be read), the config as the run read it, and what may differ from
    the run."""

    corpus: Corpus | None
    max_chars: int | None
    config: AuditConfig | None = None
    notes: list[str] = field(default_factory=list)

    def text(self, cid: str) -> str | None:
        """The whole text of chunk ``cid``; None where the corpus does not hold it."""
        if self.corpus is None or cid not in self.corpus.index:
            return None
        return self.corpus.chunks[self.corpus.index[cid]].text

    def title(self, cid: str) -> str:
        """The title of chunk ``cid`` (shown to the generator and the judges before its text); ''
        where it has none or the corpus does not hold it."""
        if self.corpus is None or cid not in self.corpus.index:
            return ""
        return self.corpus.chunks[self.corpus.index[cid]].title.strip()


def run_contexts(run_dir: Path, report: Report) -> RunContexts:
    """The corpus and the contexts' cut of a run, read as the run read them."""
    cfg = run_config(run_dir, report)
    corpus = run_corpus(run_dir, report, cfg)
    notes = []
    if cfg is None:
        notes.append(
            f"{run_dir / 'config.yaml'} cannot be read: each context is shown whole, although the model may have "
            "seen only its beginning (generation.max_context_chars)"
        )
    if corpus is None:
        notes.append("the run's corpus cannot be read: the contexts' text is not available")
    elif (
        report.corpus
        and report.corpus.fingerprint
        and not (run_dir / "traces.jsonl").exists()  # the traces' passages joined it
        and corpus.fingerprint()[:16] != report.corpus.fingerprint
    ):
        notes.append(
            "the corpus changed since this run (its fingerprint differs from report.json's): the text shown may "
            "differ from what the model saw"
        )
    return RunContexts(corpus, context_chars(cfg) if cfg is not None else None, cfg, notes)
