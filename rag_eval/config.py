"""The audit configuration: the top-level model assembled from each stage's settings, loaded from YAML
with problems named by file and line."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from rag_eval.answers.settings import GenerationConfig
from rag_eval.config_base import Settings
from rag_eval.config_errors import problems_from
from rag_eval.config_yaml import line_of, read_yaml
from rag_eval.data.settings import CorpusConfig, TestSetConfig
from rag_eval.errors import ConfigError, DataError, Problem, did_you_mean
from rag_eval.judges.settings import JudgesConfig
from rag_eval.llm.settings import EngineConfig
from rag_eval.report.settings import ReportConfig, StatsConfig, parse_rule
from rag_eval.resources import resolve_shipped
from rag_eval.retrievers import settings as retriever_settings
from rag_eval.retrievers.settings import DiagnosisConfig, LintConfig, RetrievalConfig, SystemRetrieverConfig
from rag_eval.system import settings as system_settings
from rag_eval.system.settings import SystemConfig, with_system_defaults
from rag_eval.testgen.settings import TestGenConfig


class AuditConfig(Settings):
    """One audit, as written in a YAML file."""

    name: str = Field(
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="the audit's name (letters, digits, _ . -): run folders are <name>-<date>-<time>, and "
        "--resume finds this audit's runs by it",
    )
    corpus: CorpusConfig
    test_set: TestSetConfig
    retrieval: RetrievalConfig
    generation: GenerationConfig | None = None
    judges: JudgesConfig | None = None
    testgen: TestGenConfig = TestGenConfig()
    stats: StatsConfig = StatsConfig()
    lint: LintConfig = LintConfig()
    diagnosis: DiagnosisConfig = DiagnosisConfig()
    report: ReportConfig = ReportConfig()
    gates: dict[str, str] = Field(
        default_factory=dict,
        description='a figure of summary.json and its rule, e.g. {"retrieval.hybrid.hit@5": ">= 0.80"}: exit status 1 '
        'when one fails. Every run that judges answers also gets failures.not_judged_share: "<= 0" (the share of '
        "answers not judged because their model calls failed: the answer's, or every judge's of it) unless set "
        'here, e.g. "<= 0.1" to allow a tenth',
    )
    cache_dir: str | None = Field(
        None,
        description="folder of the caches (embeddings, BM25 indexes, model responses, saved server slots), relative "
        "to the config's folder; default ~/.cache/rag-eval; the RAG_EVAL_CACHE_DIR variable wins",
    )
    engine: EngineConfig = EngineConfig()
    system: SystemConfig | None = Field(
        None, description="the system where it runs (type: http, llamaindex or haystack), audited as a black box"
    )

    # Set by load_config / config_from_dict, not by the user.
    config_path: str | None = Field(None, exclude=True)
    base_dir: str | None = Field(None, exclude=True)
    _yaml_root: Any = PrivateAttr(None)  # the YAML's node tree, for the line of a key

    @field_validator("gates")
    @classmethod
    def _gate_rules(cls, gates: dict[str, str]) -> dict[str, str]:
        for figure, rule in gates.items():
            try:
                parse_rule(rule, figure)
            except ConfigError as exc:
                raise ValueError(f"gate {figure}: {exc.problems[0].what}") from None
        return gates

    @model_validator(mode="before")
    @classmethod
    def _system_defaults(cls, data: Any) -> Any:
        return with_system_defaults(data)

    @model_validator(mode="after")
    def _system_retriever_needs_system(self) -> AuditConfig:
        names = [n for n, r in self.retrieval.retrievers.items() if isinstance(r, SystemRetrieverConfig)]
        if names and self.system is None:
            raise ValueError(
                f"retriever '{names[0]}' has type system, but the config has no system: section; add one "
                "(type: http, llamaindex or haystack) or give the retriever another type"
            )
        if len(names) > 1:
            raise ValueError(f"only one retriever can have type system; got {', '.join(names)}")
        if self.system is not None and self.generation and self.generation.retriever != names[0]:
            raise ValueError(
                f"with a system: section, generation is the system's own answers on its own passages; "
                f"set generation.retriever to '{names[0]}' (or leave it out)"
            )
        return self

    @model_validator(mode="after")
    def _generation_retriever_exists(self) -> AuditConfig:
        g = self.generation
        if g and g.retriever not in self.retrieval.retrievers:
            raise ValueError(
                f"generation.retriever '{g.retriever}' is not a configured retriever; "
                + did_you_mean(g.retriever, list(self.retrieval.retrievers))
            )
        return self

    def resolve_path(self, value: str) -> Path:
        """An input path from the config: relative to the config's folder, else to the working folder."""
        p = Path(value).expanduser()
        if p.is_absolute() or not self._home:
            return p
        beside = Path(os.path.normpath(self._home / p))
        found = beside if beside.exists() or not p.exists() else p
        return found if found.exists() else resolve_shipped(p)  # data/python-docs/... from any folder

    def resolve_output(self, value: str) -> Path:
        """An output or cache folder from the config: relative to the config's folder, so that a run
        started from any working folder writes to the same place."""
        p = Path(value).expanduser()
        if p.is_absolute() or not self._home:
            return p
        return Path(os.path.normpath(self._home / p))

    @property
    def _home(self) -> Path | None:
        """The folder relative paths start from: the config file's, or base_dir for a config given as data."""
        if self.config_path:
            return Path(self.config_path).parent
        return Path(self.base_dir) if self.base_dir else None

    @property
    def out_dir(self) -> Path:
        """Where run folders go (``report.out``)."""
        return self.resolve_output(self.report.out)

    @property
    def cache_folder(self) -> str | None:
        """``cache_dir`` resolved like the other outputs (``RAG_EVAL_CACHE_DIR`` still wins)."""
        return str(self.resolve_output(self.cache_dir)) if self.cache_dir else None

    def where(self, dotted: str) -> str:
        """A config key for an error message: ``config.yaml:12 (test_set.path)`` (the line when known)."""
        steps = tuple(int(p) if p.isdigit() else p for p in dotted.split("."))
        line = line_of(self._yaml_root, steps) if self._yaml_root is not None else None
        if line is not None:
            return f"{self.config_path}:{line} ({dotted})"
        return f"{self.config_path or '<config>'}: {dotted}"

    def existing_path(self, dotted: str, value: str, what: str, folder: bool = False) -> Path:
        """An input path of the config (``resolve_path``); DataError naming the config line and the
        folders it was looked for in when there is no such file (or folder)."""
        path = self.resolve_path(value)
        if path.is_dir() if folder else path.is_file():
            return path
        kind = "folder" if folder else "file"
        if path.exists():
            raise DataError(
                Problem(
                    self.where(dotted),
                    f"the {what} path {value!r} is a {'file' if folder else 'folder'}, not a {kind} ({path})",
                    f"give the {what} {kind}",
                )
            )
        given = Path(value).expanduser()
        if given.is_absolute():
            why = f"no {given}"
        elif self._home is not None:
            home = self._home.resolve()
            why = (
                f"looked for {Path(os.path.normpath(home / given))}; relative paths start at the config's folder "
                f"({home}" + (f"; then the working folder, {Path.cwd()}" if home != Path.cwd().resolve() else "") + ")"
            )
        else:
            why = f"looked for {Path.cwd() / given}; relative paths start at the working folder"
        raise DataError(
            Problem(
                self.where(dotted),
                f"the {what} {kind} {value!r} does not exist ({why})",
                f"correct {dotted} in the config, relative to the config's folder",
            )
        )


# A retriever or system kind registered later rebuilds the whole config's schema too.
retriever_settings.HOLDERS.append(AuditConfig)
system_settings.held_by(AuditConfig)


def _read_plugins() -> None:
    """The retriever and system kinds of installed plug-ins, registered before a config is
    validated: their types join the config's schema (the judges' are read on their first lookup)."""
    retriever_settings.RETRIEVER_KINDS.load_plugins()
    system_settings.SYSTEM_KINDS.load_plugins()


def load_config(path: str | Path) -> AuditConfig:
    """Read and validate an audit config; every problem raises ConfigError naming file and line."""
    path = Path(path)
    root, raw = read_yaml(path)
    _read_plugins()
    try:
        cfg = AuditConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(problems_from(exc, str(path), root, raw, AuditConfig)) from None
    cfg.config_path = str(path)
    cfg._yaml_root = root
    return cfg


def config_from_dict(raw: Any, base_dir: str | Path | None = None, label: str = "config (dict)") -> AuditConfig:
    """Validate a config given as a mapping (the YAML's shape); relative paths start at ``base_dir``
    (default: the working folder). Problems raise ConfigError naming the key."""
    if not isinstance(raw, dict):
        raise ConfigError(
            Problem(
                label, f"a config must be a mapping, not {type(raw).__name__}", "pass a dict like configs/demo.yaml's"
            )
        )
    _read_plugins()
    try:
        cfg = AuditConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(problems_from(exc, label, None, raw, AuditConfig)) from None
    cfg.base_dir = str(Path(base_dir) if base_dir is not None else Path.cwd())
    return cfg


def resolved_config(cfg: AuditConfig) -> dict:
    """The config as run, for the run folder (it holds no secrets: keys are named by env var only).
    Settings that do not apply are left out (a heading chunker has no size or overlap)."""
    corpus: dict[str, Any] = (
        {"chunker": True, "extensions": True}
        if not cfg.corpus.folder
        else {"chunker": {"size": True, "overlap": True}}
        if cfg.corpus.chunker.type == "heading"
        else {}
    )
    exclude: dict[str, Any] = {"corpus": corpus, **({"testgen": True} if cfg.testgen == TestGenConfig() else {})}
    return cfg.model_dump(mode="json", exclude_none=True, exclude=exclude)
