"""rag-eval from Python: the same stages as the CLI, returning results with pandas views.

A config may be a path to a YAML file, a dict of the same shape, or an ``AuditConfig``. The corpus
and the test set may come from the config's files or be passed as lists of dicts, pandas
DataFrames or ``datasets.Dataset``s. Errors are the CLI's: ``rag_eval.errors.RagEvalError``
subclasses naming the file or row, what is wrong and how to fix it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from rag_eval import progress as prog
from rag_eval.answers.supplied import parse_rows
from rag_eval.cache_dirs import cache_root
from rag_eval.config import AuditConfig, config_from_dict, load_config
from rag_eval.data.frames import records_from
from rag_eval.data.inputs import load_inputs
from rag_eval.errors import ConfigError, Problem
from rag_eval.judges.judge_check import DEFAULT_CASES, read_case_files, run_judge_check
from rag_eval.llm.settings import LLMConfig
from rag_eval.orchestration.diff import RunDiff, diff_runs, write_diff
from rag_eval.orchestration.finished import Run, read_finished_run
from rag_eval.orchestration.finished import read_run as _read_run
from rag_eval.orchestration.history import resolve_baseline
from rag_eval.orchestration.runner import run_audit, run_compare, run_lint, run_retrieval
from rag_eval.orchestration.sources import LABELS_DRAWN, SuppliedAnswers, TracedAnswers
from rag_eval.report.gates import check_gates
from rag_eval.report.report_records import Report
from rag_eval.report.screen import one_screen
from rag_eval.rundir import RunStatus, read_finished, read_status
from rag_eval.system.trace_audit import traces_config
from rag_eval.testgen.question_writer import run_generate
from rag_eval.testgen.settings import TestGenConfig

ConfigLike = str | Path | dict | AuditConfig


def as_config(config: ConfigLike, *, base_dir: str | Path | None = None) -> AuditConfig:
    """An ``AuditConfig`` from a YAML path, a dict (paths relative to ``base_dir``, default the
    working folder) or an ``AuditConfig``."""
    if isinstance(config, AuditConfig):
        return config
    if isinstance(config, dict):
        inline = [key for key in _ROW_KEYS if _is_rows(config.get(key))]
        if inline:
            raise ConfigError(
                Problem(
                    f"config (dict) ({', '.join(inline)})",
                    "rows inline, which a config cannot hold (it says where rows come from)",
                    "pass the dict as it is to rag_eval.audit / retrieval / compare / lint (they take the rows "
                    "out), or give the rows as keyword arguments: rag_eval.audit(config, "
                    + ", ".join(f"{key}=rows" for key in inline)
                    + ")",
                )
            )
        return config_from_dict(config, base_dir)
    if isinstance(config, (str, Path)):
        return load_config(config)
    raise ConfigError(
        Problem(
            f"config ({type(config).__name__})",
            "a config must be a YAML path, a dict or an AuditConfig",
            "pass e.g. 'configs/demo.yaml' or a dict with name, corpus, test_set, retrieval",
        )
    )


# The sections of a config that rows may stand in for, from Python.
_ROW_KEYS = ("corpus", "test_set")


def _is_rows(value: Any) -> bool:
    """Rows where a config section belongs: a list or tuple, a pandas DataFrame, a datasets.Dataset."""
    return isinstance(value, (list, tuple)) or hasattr(value, "columns") or hasattr(value, "column_names")


def _config_with_given(config: ConfigLike, corpus: Any, test_set: Any, base_dir) -> tuple[AuditConfig, Any, Any]:
    """The config and the rows to load: rows a dict config carries inline (``{"corpus": [...],
    "test_set": [...]}``) are taken as the ``corpus`` / ``test_set`` arguments, and ``source:
    given`` is filled in where rows are passed and the config does not name a source."""
    if isinstance(config, dict):
        config = dict(config)
        given = {"corpus": corpus, "test_set": test_set}
        for key in _ROW_KEYS:
            if not _is_rows(config.get(key)):
                continue
            if given[key] is not None:
                raise ConfigError(
                    Problem(
                        f"config (dict) ({key})",
                        f"{key} rows are given twice: inline in the config and as the {key}= argument",
                        f"keep one: drop the config's {key} rows or the {key}= argument",
                    )
                )
            given[key] = config.pop(key)
        corpus, test_set = given["corpus"], given["test_set"]
        if corpus is not None and "corpus" not in config:
            config["corpus"] = {"source": "given"}
        if test_set is not None and "test_set" not in config:
            config["test_set"] = {"source": "given"}
    return as_config(config, base_dir=base_dir), corpus, test_set


def _inputs(cfg: AuditConfig, corpus: Any, test_set: Any):
    if corpus is None and test_set is None:
        return None

    return load_inputs(cfg, corpus, test_set)


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class Result:
    """A finished run: its folder, summary.json and report.json, with per-question tables."""

    run_dir: Path
    summary: dict = field(repr=False)
    report: dict = field(repr=False)
    config: AuditConfig | None = field(default=None, repr=False)
    # rag_eval.orchestration.diff.RunDiff against a baseline run, if one was given
    diff: Any = field(default=None, repr=False)

    @classmethod
    def from_dir(cls, run_dir: str | Path, config: AuditConfig | None = None) -> Result:
        run_dir = Path(run_dir)
        summary, report = read_finished(run_dir)
        return cls(run_dir, summary, report, config)

    @property
    def status(self) -> RunStatus | None:
        """status.json: finished (or failed, with the reason), and how the folder was opened."""
        return read_status(self.run_dir)

    @cached_property
    def typed_report(self) -> Report:
        """report.json as the typed report: ``typed_report.attribution.rows[0].outcome``,
        ``typed_report.judges.figures["baseline"]["correctness"].ci_low``."""
        return Report.load(self.report)

    def figure(self, name: str) -> dict:
        """A figure of summary.json by its dotted name (``retrieval.hybrid.hit@5``): value, interval, n."""
        node: Any = self.summary
        for part in name.split("."):
            if not isinstance(node, dict) or part not in node:
                raise KeyError(f"no figure '{name}' in {self.run_dir}/summary.json ('{part}' is missing)")
            node = node[part]
        return node

    def retrieval_df(self):
        """One row per question and retriever: rank of the first relevant chunk, miss, metrics,
        retrieved ids, diagnosis of a miss."""
        import pandas as pd  # noqa: PLC0415

        rows = []
        for r in _read_jsonl(self.run_dir / "retrieval.jsonl"):
            row = {k: v for k, v in r.items() if k not in ("metrics", "retrieved", "labels")}
            row["retrieved"] = [x["id"] for x in r.get("retrieved", [])]
            row.update(r.get("metrics") or {})
            rows.append(row)
        df = pd.DataFrame(rows)
        if "first_relevant_rank" in df:
            df["first_relevant_rank"] = df["first_relevant_rank"].astype("Int64")  # missing: not retrieved
        return df

    def generation_df(self):
        """One row per answer: question, prompt, contexts, answer, model, tokens, latency, cache hit."""
        import pandas as pd  # noqa: PLC0415

        return pd.DataFrame(_read_jsonl(self.run_dir / "generation.jsonl"))

    def judgements_df(self):
        """One row per judge and answer: status, score, verdict, probability, cut-off, reason."""
        import pandas as pd  # noqa: PLC0415

        return pd.DataFrame(_read_jsonl(self.run_dir / "judgements.jsonl"))

    def attribution_df(self):
        """One row per question and prompt: the outcome and why, with the answer and the reference."""
        import pandas as pd  # noqa: PLC0415

        rows = self.typed_report.rows()
        return pd.DataFrame([r.model_dump(exclude_unset=True, exclude={"judges", "contexts"}) for r in rows])

    def gates(self, gates: dict[str, str] | None = None) -> list:
        """Every gate's result (the config's gates unless ``gates`` is given)."""
        gates = gates if gates is not None else (self.config.gates if self.config else {})
        where = self.config.where("gates") if self.config else "gates"
        return check_gates(gates, self.summary, where, self.diff.to_json() if self.diff is not None else None)

    def __str__(self) -> str:
        return f"{one_screen(self.summary)}\nrun folder: {self.run_dir}"


def _quiet(progress: bool):
    prog.set_enabled(progress)


def audit(
    config: ConfigLike,
    *,
    corpus: Any = None,
    test_set: Any = None,
    out: str | Path | None = None,
    use_cache: bool = True,
    resume: bool | str | Path | None = None,
    base_dir: str | Path | None = None,
    progress: bool = False,
    baseline: str | Path | None = None,
) -> Result:
    """The whole audit (retrieval, generation, judges, attribution, report); a Result.

    ``corpus`` / ``test_set``: rows (list of dicts, DataFrame, Dataset) instead of the config's
    files. ``resume``: True for the newest unfinished run of this config, or a run folder.
    ``baseline``: a finished run folder to diff against (``diff.`` gates; diff.json in the run)."""
    _quiet(progress)
    cfg, corpus, test_set = _config_with_given(config, corpus, test_set, base_dir)
    baseline = _check_baseline(baseline, cfg)
    run_dir = run_audit(
        cfg,
        out=str(out) if out else None,
        use_cache=use_cache,
        resume=Path(resume) if isinstance(resume, (str, Path)) else resume,
        inputs=_inputs(cfg, corpus, test_set),
    )
    return _with_baseline(Result.from_dir(run_dir, cfg), baseline)


def _check_baseline(baseline: str | Path | None, cfg: AuditConfig) -> Path | None:
    """The baseline run folder (a folder of runs gives its newest finished run of this config); one
    that is not a finished run fails before the run starts."""
    if baseline is None:
        return None

    found = resolve_baseline(baseline, cfg.name)
    read_finished_run(found, "baseline")
    return found


def _with_baseline(result: Result, baseline: str | Path | None) -> Result:
    """The run diffed against the baseline: diff.json and diff.md in its folder, ``result.diff``."""
    if baseline is not None:
        result.diff = diff_runs(baseline, result.run_dir)
        write_diff(result.diff, result.run_dir)
    return result


def diff(base: str | Path | Result, new: str | Path | Result, *, pairs: dict[str, str] | None = None):
    """Two finished runs compared question by question (``rag_eval.orchestration.diff.RunDiff``: figures with paired
    intervals, tests and verdicts, the questions that moved, what could not be compared).
    ``pairs``: base name -> new name, for retrievers or prompts named differently."""

    def folder(x):
        return x.run_dir if isinstance(x, Result) else x

    return diff_runs(folder(base), folder(new), pairs=pairs)


def retrieval(
    config: ConfigLike,
    *,
    corpus: Any = None,
    test_set: Any = None,
    out: str | Path | None = None,
    base_dir: str | Path | None = None,
    progress: bool = False,
    baseline: str | Path | None = None,
) -> Result:
    """The retrieval stage alone (no LLM); a Result. ``baseline``: a run folder to diff against."""
    _quiet(progress)
    cfg, corpus, test_set = _config_with_given(config, corpus, test_set, base_dir)
    baseline = _check_baseline(baseline, cfg)
    run_dir = run_retrieval(cfg, out=str(out) if out else None, inputs=_inputs(cfg, corpus, test_set))
    result = Result.from_dir(run_dir, cfg.model_copy(update={"gates": _retrieval_gates(cfg)}))
    return _with_baseline(result, baseline)


def _retrieval_gates(cfg: AuditConfig) -> dict[str, str]:
    return {k: v for k, v in cfg.gates.items() if k.startswith(("retrieval", "diff.retrieval"))}


def compare(
    config: ConfigLike,
    *,
    corpus: Any = None,
    test_set: Any = None,
    out: str | Path | None = None,
    use_cache: bool = True,
    base_dir: str | Path | None = None,
    progress: bool = False,
    baseline: str | Path | None = None,
    stop_when_settled: bool = False,
    batch: int = 10,
    seed: int = 0,
) -> Result:
    """Every prompt on the same retrieved contexts, with paired comparisons; a Result.
    ``baseline``: a run folder to diff against. ``stop_when_settled``: questions in a seeded
    random order, ``batch`` at a time, until an always-valid test settles the differences."""
    _quiet(progress)
    cfg, corpus, test_set = _config_with_given(config, corpus, test_set, base_dir)
    baseline = _check_baseline(baseline, cfg)
    run_dir = run_compare(
        cfg,
        out=str(out) if out else None,
        use_cache=use_cache,
        inputs=_inputs(cfg, corpus, test_set),
        settle={"batch": batch, "seed": seed} if stop_when_settled else None,
    )
    return _with_baseline(Result.from_dir(run_dir, cfg), baseline)


def lint(config: ConfigLike, *, corpus: Any = None, test_set: Any = None, base_dir: str | Path | None = None) -> list:
    """Test-set health findings (``rag_eval.retrievers.lint.Finding``: code, severity, message, questions, fix)."""
    cfg, corpus, test_set = _config_with_given(config, corpus, test_set, base_dir)
    return run_lint(cfg, _inputs(cfg, corpus, test_set))


def judge_check(
    cases: str | Path | list[dict] | None = None,
    *,
    llm: dict | None = None,
    judges: list[str] | None = None,
    folds: int = 5,
    save: bool = False,
    progress: bool = False,
) -> list:
    """The probability-scored judges on labelled cases (a JSONL path, or a list of case dicts);
    out-of-fold figures per judge and source (``rag_eval.judges.judge_check.JudgeScore``)."""
    _quiet(progress)
    if cases is None or isinstance(cases, (str, Path)):
        cases = read_case_files([cases or DEFAULT_CASES])
    scores, _ = run_judge_check(
        list(cases), LLMConfig(**(llm or {})), cache_root(), None, judges=judges, folds=folds, save=save
    )
    return scores


def judge_answers(
    data: Any,
    *,
    judges: dict | None = None,
    name: str = "answers",
    out: str | Path = "runs/",
    use_cache: bool = True,
    progress: bool = False,
) -> Result:
    """Judge answers a system already produced: rows (list of dicts, DataFrame or Dataset) with
    question, contexts (passage texts), answer and optionally reference and answerable; Ragas'
    names (user_input, retrieved_contexts, response, reference / ground_truth) are accepted.
    ``judges``: the config's judges section (default: every default judge on the embedded model).
    Returns a Result with judgements and attribution (retrieval misses decided by context recall)."""
    _quiet(progress)
    rows = parse_rows(records_from(data, "answers"))
    cfg = config_from_dict(
        {
            "name": name,
            "corpus": {"source": "given"},
            "test_set": {"source": "given"},
            "retrieval": {"retrievers": {"supplied": {"type": "bm25"}}},
            "judges": judges or {},
            "report": {"out": str(out)},
        }
    )
    run_dir = run_audit(cfg, source=SuppliedAnswers(rows), use_cache=use_cache)
    return Result.from_dir(run_dir, cfg)


def judge_traces(
    files: str | Path | list[str | Path],
    *,
    config: ConfigLike | None = None,
    out: str | Path | None = None,
    labels: int = LABELS_DRAWN,
    seed: int | None = None,
    use_cache: bool = True,
    progress: bool = False,
) -> Result:
    """Audit production traces: OTLP JSON exports with OpenInference attributes (Phoenix and other
    OpenTelemetry exports). ``config``: a YAML path or dict with judges (default: every default
    judge on the embedded model) and, optionally, a corpus and a labelled test set to match the
    traces' questions to. ``labels``: traces drawn (seeded) to label. Returns a Result; skipped
    traces are counted by reason in ``report["traces"]``."""
    _quiet(progress)
    cfg = traces_config(config if config is not None else {"name": "traces"}, out)
    paths = [files] if isinstance(files, (str, Path)) else list(files)
    run_dir = run_audit(cfg, source=TracedAnswers(paths, labels, seed), use_cache=use_cache)
    return Result.from_dir(run_dir, cfg)


def generate(
    config: ConfigLike,
    *,
    out: str | Path = "questions.generated.jsonl",
    corpus: Any = None,
    base_dir: str | Path | None = None,
    use_cache: bool = True,
    progress: bool = False,
    **testgen: Any,
) -> dict:
    """A test set generated from the config's corpus (or ``corpus`` rows), every label verified,
    written to ``out``; returns the generation report. ``testgen`` overrides the config's testgen
    section (``n=100``, ``seed=1``, ``mix={...}``, ``llm={...}``)."""
    _quiet(progress)
    if isinstance(config, dict):
        config = {**config, "test_set": config.get("test_set", {"source": "given"})}
    cfg, corpus, _ = _config_with_given(config, corpus, None, base_dir)
    if testgen:
        merged = {**cfg.testgen.model_dump(exclude_none=True), **testgen}
        try:
            tg = TestGenConfig.model_validate(merged)
        except Exception as exc:  # pydantic's ValidationError, named for the user
            raise ConfigError(
                Problem("testgen options", str(exc).splitlines()[-1], "check the option's value")
            ) from None
        cfg = cfg.model_copy(update={"testgen": tg})
    return run_generate(cfg, Path(out), use_cache=use_cache, corpus=corpus)


def read_run(run_dir: str | Path) -> Run:
    """The typed records a run folder holds (``rag_eval.orchestration.finished.Run``): ``status``
    (``status.json``: finished, failed with its reason, ...), ``config`` as saved, ``summary`` and
    ``report``, and per question ``retrieval``, ``answers`` and ``judgements``. Run folders written
    by earlier versions read with the records they lack left empty."""
    return _read_run(run_dir)


def load_run(run_dir: str | Path) -> Result:
    """A finished run folder as a Result (its saved config's gates apply)."""
    run_dir = Path(run_dir)
    result = Result.from_dir(run_dir)
    try:
        raw = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
        result.config = config_from_dict(raw, run_dir)
    except (OSError, yaml.YAMLError, ConfigError):
        result.config = None
    if (run_dir / "diff.json").exists():  # a run made with --baseline: its diff, as recorded
        try:
            result.diff = RunDiff.from_json(json.loads((run_dir / "diff.json").read_text(encoding="utf-8")))
        except (ValueError, KeyError, TypeError):
            result.diff = None
    return result
