"""rag-eval from Python: the work of every command (each command of the CLI is one of these calls
plus printing), returning typed records with pandas views. An audit returns the ``Result`` that
``read_run`` reads back from its folder later.

A config may be a path to a YAML file, a dict of the same shape, or an ``AuditConfig``. The corpus
and the test set may come from the config's files or be passed as lists of dicts, pandas
DataFrames or ``datasets.Dataset``s. Errors are the CLI's: ``rag_eval.errors.RagEvalError``
subclasses naming the file or row, what is wrong and how to fix it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from rag_eval import progress as prog
from rag_eval.answers.generation import is_answers_file, read_answers_file
from rag_eval.answers.supplied import parse_rows
from rag_eval.cache_dirs import cache_root
from rag_eval.config import AuditConfig, config_from_dict, load_config
from rag_eval.data.frames import records_from
from rag_eval.data.inputs import Inputs, load_inputs
from rag_eval.data.settings import TestSetConfig
from rag_eval.errors import ConfigError, DataError, Problem, RagEvalError, did_you_mean
from rag_eval.judges.adapted import AdaptedCheck
from rag_eval.judges.cascade import CascadeRow, measure, second_opinions
from rag_eval.judges.judge_check import (
    DEFAULT_CASES,
    CheckExtra,
    JudgeScore,
    Prediction,
    as_cases,
    halueval_cases,
    read_case_files,
    run_judge_check,
)
from rag_eval.judges.registry import FAITHFUL_SHARE, JUDGES
from rag_eval.labels.columns import criteria_of
from rag_eval.labels.human import known_answers, label_run, read_labels, weights_of
from rag_eval.llm.settings import LLMConfig
from rag_eval.llm.usage import Usage
from rag_eval.orchestration.adapt import adapt_run
from rag_eval.orchestration.diff import RunDiff, diff_runs, write_diff
from rag_eval.orchestration.finished import Run, read_finished_run
from rag_eval.orchestration.finished import read_run as _read_run
from rag_eval.orchestration.history import collect_history, history_text, resolve_baseline
from rag_eval.orchestration.label_draw import DrawnLabels
from rag_eval.orchestration.label_draw import draw_labels as _draw_labels
from rag_eval.orchestration.runner import run_audit, run_compare, run_lint, run_retrieval
from rag_eval.orchestration.sources import LABELS_DRAWN, SuppliedAnswers, TracedAnswers
from rag_eval.preflight import preflight
from rag_eval.report.ci_outputs import write_ci_outputs
from rag_eval.report.diff_report import diff_gate_markdown, render_diff_markdown
from rag_eval.report.files import ADAPTED, LABELLED, write_report
from rag_eval.report.gates import GateResult, check_gates
from rag_eval.report.history_html import render_history_html
from rag_eval.report.history_records import HistoryData
from rag_eval.report.report_records import Report
from rag_eval.report.screen import one_screen
from rag_eval.resources import shipped_prompt, shipped_prompts
from rag_eval.retrievers.lint import Finding, fails, generic_labels, split_evidence
from rag_eval.retrievers.retrieval_records import QuestionRecord
from rag_eval.rundir import finished_run, not_being_written, write_json, write_text
from rag_eval.system.trace_audit import traces_config
from rag_eval.system.trial import describe, try_system
from rag_eval.testgen.question_writer import run_generate
from rag_eval.testgen.settings import TestGenConfig
from rag_eval.text import record_lines

ConfigLike = str | Path | dict | AuditConfig


def as_config(
    config: ConfigLike, *, base_dir: str | Path | None = None, test_set_file: str | Path | None = None
) -> AuditConfig:
    """An ``AuditConfig`` from a YAML path, a dict (paths relative to ``base_dir``, default the
    working folder) or an ``AuditConfig``; ``test_set_file`` (relative to the working folder) in
    place of its test set."""
    if test_set_file:
        cfg = as_config(config, base_dir=base_dir)
        return cfg.model_copy(update={"test_set": TestSetConfig(path=str(Path(test_set_file).resolve()))})
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


def _config_with_given(
    config: ConfigLike, corpus: Any, test_set: Any, base_dir, test_set_file: str | Path | None = None
) -> tuple[AuditConfig, Any, Any]:
    """The config and the rows to load: rows a dict config carries inline (``{"corpus": [...],
    "test_set": [...]}``) are taken as the ``corpus`` / ``test_set`` arguments, and ``source:
    given`` is filled in where rows are passed and the config does not name a source;
    ``test_set_file``: see ``as_config``."""
    if isinstance(config, dict):
        config = dict(config)
        corpus = _rows_of(config, "corpus", corpus)
        test_set = _rows_of(config, "test_set", test_set)
    return as_config(config, base_dir=base_dir, test_set_file=test_set_file), corpus, test_set


def _rows_of(config: dict, section: str, given: Any) -> Any:
    """The rows standing in for the dict config's ``section`` (one of ``_ROW_KEYS``): its inline
    rows, taken out of ``config``, else ``given``; where there are rows and the config names no
    source for the section, ``source: given`` is filled in."""
    if _is_rows(config.get(section)):
        if given is not None:
            raise ConfigError(
                Problem(
                    f"config (dict) ({section})",
                    f"{section} rows are given twice: inline in the config and as the {section}= argument",
                    f"keep one: drop the config's {section} rows or the {section}= argument",
                )
            )
        given = config.pop(section)
    if given is not None and section not in config:
        config[section] = {"source": "given"}
    return given


def _inputs(cfg: AuditConfig, corpus: Any, test_set: Any):
    if corpus is None and test_set is None:
        return None

    return load_inputs(cfg, corpus, test_set)


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in record_lines(path.read_text(encoding="utf-8")) if line.strip()]


@dataclass
class Result(Run):
    """A run folder read back as typed records: what ``audit()``, ``retrieval()``, ``compare()``,
    ``judge_answers()`` and ``judge_traces()`` return and what ``read_run()`` reads. Beside the
    records of ``rag_eval.orchestration.finished.Run`` (``status``, ``config`` as saved, ``summary``
    and ``report`` typed, per question ``retrieval``, ``answers`` and ``judgements``): the config the
    gates come from (``audit_config``), the diff against a baseline (``diff``), ``figure(name)``,
    ``gates()`` and four pandas views."""

    # The validated config: the one the run was made with, or the folder's config.yaml read back
    # (None where it no longer validates).
    audit_config: AuditConfig | None = field(default=None, repr=False)
    # rag_eval.orchestration.diff.RunDiff against a baseline run, if one was given
    diff: RunDiff | None = field(default=None, repr=False)
    # The gates the call that returned this result checked (its ``gates=``): each one's result, or
    # what kept them from being checked (a gate naming a figure the run lacks, a CI file not written).
    gate_results: list[GateResult] | None = field(default=None, repr=False)
    gate_problem: RagEvalError | OSError | None = field(default=None, repr=False)
    # Gates of the config this stage alone could not check (``retrieval()``: those on answers):
    # listed as skipped in the CI files, so a CI reader sees them left, not gone.
    unchecked_gates: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def read(cls, run_dir: str | Path, audit_config: AuditConfig | None = None) -> Result:
        """The run folder's records; without ``audit_config`` its config.yaml validated, and a
        ``diff.json`` (a run made with a baseline) read as its diff."""
        run = _read_run(run_dir)
        fields = {f.name: getattr(run, f.name) for f in dataclasses.fields(Run)}
        result = cls(**{**fields, "path": Path(run_dir)}, audit_config=audit_config)
        if audit_config is None:
            try:
                result.audit_config = config_from_dict(run.config, run.path) if run.config else None
            except ConfigError:
                result.audit_config = None
            result.diff = _recorded_diff(run.path)
        return result

    @property
    def run_dir(self) -> Path:
        """The run folder (``path``)."""
        return self.path

    @property
    def typed_report(self) -> Report:
        """An alias of ``report`` (report.json as typed records), kept for code written when
        ``report`` was a dict."""
        return self.report

    @cached_property
    def summary_json(self) -> dict:
        """summary.json as a dict (``summary`` is its typed record)."""
        return self.summary.dump()

    def figure(self, name: str) -> dict:
        """A figure of summary.json by its dotted name (``retrieval.hybrid.hit@5``): value, interval, n."""
        node: Any = self.summary_json
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
            rec = QuestionRecord.load(r)  # the line's columns as written, its chunks and metrics typed
            rows.append(
                {k: v for k, v in r.items() if k not in ("metrics", "retrieved", "labels")}
                | {"retrieved": [c.id for c in rec.retrieved]}
                | (rec.metrics or {})
            )
        df = pd.DataFrame(rows)
        # The rank as a nullable integer (missing: not retrieved).
        return df.astype({"first_relevant_rank": "Int64"}) if "first_relevant_rank" in df else df

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

        rows = self.report.rows()
        return pd.DataFrame([r.model_dump(exclude_unset=True, exclude={"judges", "contexts"}) for r in rows])

    def gates(self, gates: dict[str, str] | None = None) -> list[GateResult]:
        """Every gate's result (the config's gates unless ``gates`` is given)."""
        cfg = self.audit_config
        gates = gates if gates is not None else (cfg.gates if cfg else {})
        where = cfg.where("gates") if cfg else "gates"
        return check_gates(gates, self.summary_json, where, self.diff.to_json() if self.diff is not None else None)

    def __str__(self) -> str:
        return f"{one_screen(self.summary)}\nrun folder: {self.run_dir}"


def _recorded_diff(run_dir: Path) -> RunDiff | None:
    """diff.json of a run made with ``--baseline``, as recorded (None without one, or unreadable)."""
    if not (run_dir / "diff.json").exists():
        return None
    try:
        return RunDiff.from_json(json.loads((run_dir / "diff.json").read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError):
        return None


def _quiet(progress: bool):
    prog.set_enabled(progress)


@dataclass(frozen=True)
class Gates:
    """The gates an audit call checks once its run is written, in ``Result.gate_results`` (the
    config's gates: ``Result.gates()``). With ``files`` the CI files are written with them as
    ``ci_gates`` writes them: ``junit_xml`` (one test case per gate, in the JUnit suite ``suite``),
    ``summary_md``, and the Markdown summary appended to ``$GITHUB_STEP_SUMMARY`` when set."""

    suite: str = "audit"
    junit_xml: str | Path | None = None
    summary_md: str | Path | None = None
    files: bool = True


def _gated(result: Result, gates: Gates | None) -> Result:
    """``result`` with ``gates`` checked (and their CI files written); what kept them from being
    checked is left in ``gate_problem`` (the run itself is written and returned)."""
    if gates is None:
        return result
    try:
        result.gate_results = (
            ci_gates(result, gates.suite, junit_xml=gates.junit_xml, summary_md=gates.summary_md)
            if gates.files
            else result.gates()
        )
    except (RagEvalError, OSError) as exc:
        result.gate_problem = exc
    return result


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
    test_set_file: str | Path | None = None,
    gates: Gates | None = None,
) -> Result:
    """The whole audit (retrieval, generation, judges, attribution, report); a Result.

    ``corpus`` / ``test_set``: rows (list of dicts, DataFrame, Dataset) instead of the config's
    files; ``test_set_file``: a test set file in place of the config's (``as_config``).
    ``resume``: True for the newest unfinished run of this config, or a run folder.
    ``baseline``: a finished run folder to diff against (``diff.`` gates; diff.json in the run).
    ``gates``: the gates checked after the run, in ``result.gate_results`` (``Gates``)."""
    _quiet(progress)
    cfg, corpus, test_set = _config_with_given(config, corpus, test_set, base_dir, test_set_file)
    baseline = _check_baseline(baseline, cfg)
    run_dir = run_audit(
        cfg,
        out=str(out) if out else None,
        use_cache=use_cache,
        resume=Path(resume) if isinstance(resume, (str, Path)) else resume,
        inputs=_inputs(cfg, corpus, test_set),
        resume_with=_resume_command(cfg, corpus, test_set, test_set_file),
    )
    return _gated(_with_baseline(Result.read(run_dir, cfg), baseline), gates)


def _resume_command(cfg: AuditConfig, corpus: Any, test_set: Any, test_set_file: str | Path | None) -> str | None:
    """The command that continues this audit's run where it stopped; None where no command runs the
    same audit (its config or data given as Python objects)."""
    if cfg.config_path is None or corpus is not None or test_set is not None:
        return None
    given = f" --test-set {test_set_file}" if test_set_file else ""
    return f"rag-eval run {cfg.config_path}{given} --resume {{run_dir}}"


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


def diff(
    base: str | Path | Result,
    new: str | Path | Result,
    *,
    pairs: dict[str, str] | None = None,
    json_out: str | Path | None = None,
    md_out: str | Path | None = None,
) -> RunDiff:
    """Two finished runs compared question by question (``rag_eval.orchestration.diff.RunDiff``: figures with paired
    intervals, tests and verdicts, the questions that moved, what could not be compared).
    ``pairs``: base name -> new name, for retrievers or prompts named differently; ``json_out`` /
    ``md_out``: also write the diff there as JSON / Markdown (with both runs' evidence per question)."""

    def folder(x):
        return x.run_dir if isinstance(x, Result) else x

    found = diff_runs(folder(base), folder(new), pairs=pairs)
    if json_out:
        write_json(Path(json_out), found.to_json())
    if md_out:
        write_text(Path(md_out), render_diff_markdown(found.to_json()))
    return found


def retrieval(
    config: ConfigLike,
    *,
    corpus: Any = None,
    test_set: Any = None,
    out: str | Path | None = None,
    base_dir: str | Path | None = None,
    progress: bool = False,
    baseline: str | Path | None = None,
    test_set_file: str | Path | None = None,
    gates: Gates | None = None,
) -> Result:
    """The retrieval stage alone (no LLM); a Result. ``baseline``: a run folder to diff against;
    ``test_set_file``, ``gates``: as ``audit`` (the config's retrieval gates)."""
    _quiet(progress)
    cfg, corpus, test_set = _config_with_given(config, corpus, test_set, base_dir, test_set_file)
    baseline = _check_baseline(baseline, cfg)
    run_dir = run_retrieval(cfg, out=str(out) if out else None, inputs=_inputs(cfg, corpus, test_set))
    result = Result.read(run_dir, cfg.model_copy(update={"gates": _retrieval_gates(cfg)}))
    result.unchecked_gates = {k: cfg.gates[k] for k in unchecked_by_retrieval(cfg)}
    return _gated(_with_baseline(result, baseline), gates)


def _retrieval_gates(cfg: AuditConfig) -> dict[str, str]:
    return {k: v for k, v in cfg.gates.items() if k.startswith(("retrieval", "diff.retrieval"))}


def unchecked_by_retrieval(cfg: AuditConfig) -> list[str]:
    """The config's gates the retrieval stage alone cannot check (on answers, judges, attribution):
    ``rag-eval retrieval`` says it leaves them (user trial 4 F18: they vanished silently)."""
    return [k for k in cfg.gates if k not in _retrieval_gates(cfg)]


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
    test_set_file: str | Path | None = None,
    gates: Gates | None = None,
) -> Result:
    """Every prompt on the same retrieved contexts, with paired comparisons; a Result.
    ``baseline``: a run folder to diff against. ``stop_when_settled``: questions in a seeded
    random order, ``batch`` at a time, until an always-valid test settles the differences.
    ``test_set_file``, ``gates``: as ``audit``."""
    _quiet(progress)
    cfg, corpus, test_set = _config_with_given(config, corpus, test_set, base_dir, test_set_file)
    baseline = _check_baseline(baseline, cfg)
    run_dir = run_compare(
        cfg,
        out=str(out) if out else None,
        use_cache=use_cache,
        inputs=_inputs(cfg, corpus, test_set),
        settle={"batch": batch, "seed": seed} if stop_when_settled else None,
    )
    return _gated(_with_baseline(Result.read(run_dir, cfg), baseline), gates)


class Findings(list[Finding]):
    """What ``lint`` found: the findings (a list of ``rag_eval.retrievers.lint.Finding``), the
    config's ``lint.fail_on``, and whether they fail it (``failed``)."""

    def __init__(self, findings: list[Finding], fail_on: str, failed: bool):
        super().__init__(findings)
        self.fail_on = fail_on
        self.failed = failed


def lint(
    config: ConfigLike,
    *,
    corpus: Any = None,
    test_set: Any = None,
    base_dir: str | Path | None = None,
    test_set_file: str | Path | None = None,
) -> Findings:
    """Test-set health findings (``rag_eval.retrievers.lint.Finding``: code, severity, message,
    questions, fix), and whether they fail the config's ``lint.fail_on``; ``test_set_file``: as ``audit``."""
    cfg, corpus, test_set = _config_with_given(config, corpus, test_set, base_dir, test_set_file)
    findings = run_lint(cfg, _inputs(cfg, corpus, test_set))
    return Findings(findings, cfg.lint.fail_on, fails(cfg, findings))


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
    return Result.read(run_dir, cfg)


def judge_traces(
    files: str | Path | list[str | Path],
    *,
    config: ConfigLike | None = None,
    out: str | Path | None = None,
    labels: int = LABELS_DRAWN,
    seed: int | None = None,
    use_cache: bool = True,
    progress: bool = False,
    gates: Gates | None = None,
) -> Result:
    """Audit production traces: OTLP JSON exports with OpenInference attributes (Phoenix and other
    OpenTelemetry exports). ``config``: a YAML path or dict with judges (default: every default
    judge on the embedded model) and, optionally, a corpus and a labelled test set to match the
    traces' questions to. ``labels``: traces drawn (seeded) to label. ``gates``: as ``audit``.
    Returns a Result; skipped traces are counted by reason in ``report.traces``."""
    _quiet(progress)
    cfg = traces_config(config if config is not None else {"name": "traces"}, out)
    paths = [files] if isinstance(files, (str, Path)) else list(files)
    run_dir = run_audit(cfg, source=TracedAnswers(paths, labels, seed), use_cache=use_cache)
    return _gated(Result.read(run_dir, cfg), gates)


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
        config = {"test_set": {"source": "given"}, **config}  # generate reads no test set: it writes one
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


def read_run(run_dir: str | Path) -> Result:
    """A run folder read back: the same typed ``Result`` ``audit()`` returns. ``status``
    (``status.json``: finished, failed with its reason, ...), ``config`` as saved and
    ``audit_config`` validated (its gates apply), ``summary`` and ``report``, per question
    ``retrieval``, ``answers`` and ``judgements``, the diff of a run made with a baseline. Run
    folders written by earlier versions read with the records they lack left empty; a folder
    without report.json is a ``DataError`` naming why."""
    return Result.read(run_dir)


def load_run(run_dir: str | Path) -> Result:
    """A finished run folder as a Result: an alias of ``read_run``, kept for code written before
    the two returned the same record."""
    return read_run(run_dir)


@dataclass
class Validation:
    """What ``rag-eval validate`` checked: the config and its inputs (every check a run makes before
    its first model call passed), the system's reply to ``try_question`` (``trial_text`` shows it;
    ``trial_problem`` says why the reply is unusable), and the evidence quotes' findings."""

    config: AuditConfig
    inputs: Inputs
    generic: list[Finding]
    split: list[Finding]
    trial_text: str | None = None
    trial_problem: Problem | None = None


def prompt_text(name: str) -> str:
    """The text of a prompt rag-eval ships (``answer_strict.md``, ``judges/refusal.md``: a path
    under the source tree's ``prompts/``), to copy and edit; DataError naming the shipped ones."""
    known = shipped_prompts()
    wanted = name.removeprefix("prompts/")
    if wanted not in known:
        raise DataError(
            Problem(
                name,
                f"no prompt of that name ships with rag-eval; {did_you_mean(wanted, known)}",
                "name one by its path under prompts/ (rag-eval prompts lists them)",
            )
        )
    return shipped_prompt(wanted).read_text(encoding="utf-8")


def validate(config: ConfigLike, *, try_question: str | None = None) -> Validation:
    """The config checked, its corpus and test set loaded and every label resolved, and every check a
    run makes before its first model call made (a problem raises ``RagEvalError``); with
    ``try_question`` the configured system asked it once."""
    cfg = as_config(config)
    inputs = load_inputs(cfg)
    preflight(cfg)
    if cfg.generation is not None and cfg.generation.answers and is_answers_file(cfg.generation.answers):
        read_answers_file(cfg.resolve_path(cfg.generation.answers), [q.id for q in inputs.questions], inputs.corpus)
    result = Validation(cfg, inputs, generic_labels(cfg, inputs.questions), split_evidence(inputs.questions))
    if try_question:
        if cfg.system is None:
            raise ConfigError(
                Problem(str(config), "--try asks the system, but the config has no system: section", "add one")
            )
        trial = try_system(cfg, try_question)
        result.trial_text = describe(cfg, trial, inputs.corpus)
        if trial.reply.error is not None:
            result.trial_problem = Problem(
                cfg.where("system"),
                f"the system's reply to --try is unusable: {trial.reply.error}",
                "match answer, contexts and ids to the reply shown above (JSON paths such as $.sources[*].id)"
                if trial.status == 200
                else "check the URL, the body and that the service is up",
            )
    return result


def ci_gates(
    result: Result, suite: str, *, junit_xml: str | Path | None = None, summary_md: str | Path | None = None
) -> list[GateResult]:
    """Every gate's result (``result.gates()``), with the CI files asked for written: a JUnit XML
    file (one test case per gate), a Markdown summary of gates and figures (also appended to
    ``$GITHUB_STEP_SUMMARY`` when set). ``suite``: the JUnit suite's name (audit, retrieval, compare)."""
    results = result.gates() + [
        GateResult(figure, rule, None, True, f"skipped: {figure} is not checked by this stage", skipped=True)
        for figure, rule in result.unchecked_gates.items()
    ]
    extra = diff_gate_markdown(result.diff.to_json()) if result.diff is not None else None
    write_ci_outputs(
        results,
        result.summary_json,
        result.report.dump(),
        result.run_dir,
        suite,
        str(junit_xml) if junit_xml else None,
        str(summary_md) if summary_md else None,
        extra,
    )
    return results


@dataclass
class Rendered:
    """What ``render_report`` wrote: the report (re-decided with labels when given), which files it
    is (``kind``: None for the audit's own, ``labelled`` or ``adapted`` beside it) and their paths."""

    report: Report
    kind: str | None
    written: list[Path]


def render_report(
    run_dir: str | Path,
    *,
    labels: str | Path | None = None,
    confidence: float = 0.95,
    adapt: str | None = None,
    save: bool = True,
) -> Rendered:
    """A finished run's report files rendered again from its report.json (no model call). With
    ``labels`` (a filled-in labels file) the report gets prediction-powered figures; with ``adapt``
    (``both``, ``cutoff`` or ``weights``) the judges are adapted to the corpus with the labels and
    every verdict re-decided (``save``: the adaptation kept for later audits). A re-decided report
    is written beside the audit's own (``report.labelled.*``, ``report.adapted.*``), never over it."""
    run_dir = Path(run_dir)
    not_being_written(run_dir)  # its report is about to be written again by that process
    finished_run(run_dir, "its report rendered again")
    report = _read_run(run_dir).report
    if adapt and not labels:
        raise DataError(Problem("--adapt", "adapting the judges needs the run's labels", "add --labels FILE"))
    if not labels:
        return Rendered(report, None, write_report(run_dir, report))
    _labels_exist(Path(labels), run_dir)
    kind = LABELLED
    if adapt:
        found = read_labels(Path(labels), known_answers(run_dir), criteria_of(report))
        report = adapt_run(
            report,
            found,
            run_dir=run_dir,
            weights=weights_of(run_dir),
            how=adapt,
            confidence=confidence,
            source=str(labels),
            save=save,
        )
        kind = ADAPTED if report.adaptation is not None else LABELLED
    else:
        report = label_run(report, run_dir, Path(labels), confidence)
    return Rendered(report, kind, write_report(run_dir, report, kind))


def _labels_exist(labels: Path, run_dir: Path) -> None:
    """DataError for a labels file that is not there, naming the run's own where it has one (a path
    given relative to the run folder, as ``rag-eval label`` names it, is a common slip)."""
    if labels.exists():
        return
    own = run_dir / "labels" / labels.name
    fix = f"did you mean {own}? (rag-eval label writes it there)" if own.is_file() else "check the path"
    raise DataError(Problem(str(labels), "the labels file does not exist", fix))


def draw_labels(
    run_dir: str | Path,
    *,
    n: int = 30,
    seed: int = 0,
    active: bool = True,
    out: str | Path | None = None,
    width: float = 0.10,
) -> DrawnLabels:
    """A seeded sample of a finished run's answers for people to label: ``n`` questions (every
    prompt's answer to each) merged into ``out/labels.csv`` (default ``RUN_DIR/labels/``; every
    label the file holds kept) and labels.html beside it. ``active``: favour uncertain and
    outcome-deciding verdicts (else a plain random draw); ``width``: the interval half-width the
    page tracks progress toward. Read the filled-in file back with ``render_report(labels=...)``."""
    return _draw_labels(Path(run_dir), n, seed, active=active, out=Path(out) if out is not None else None, width=width)


@dataclass
class JudgeCheck:
    """What ``judge_check`` measured: out-of-fold figures per judge and source (``scores``:
    ``rag_eval.judges.judge_check.JudgeScore``), the model usage (``usage``: one dict per model), and
    with a second judge the cascade's rows (``rag_eval.judges.cascade.CascadeRow``) and that judge."""

    scores: list[JudgeScore]
    usage: list[dict]
    cascade: list[CascadeRow] = field(default_factory=list)
    second: LLMConfig | None = None

    @property
    def usages(self) -> list[Usage]:
        """The usage, typed."""
        return [Usage.load(u) for u in self.usage]

    @property
    def adapted(self) -> list[AdaptedCheck]:
        """Each judge adapted to a source (``adapt=N``), beside the saved judge on the same cases."""
        return [AdaptedCheck(**a) for s in self.scores if (a := CheckExtra.model_validate(s.extra).adapted) is not None]

    def to_json(self) -> dict:
        """What ``rag-eval judge-check --json`` writes."""
        cascade = [r.to_dict() for r in self.cascade]
        return {
            "scores": [s.to_dict() for s in self.scores],
            "usage": self.usage,
            **({"cascade": cascade} if cascade else {}),
        }


def judge_check(
    cases: str | Path | list[str | Path] | list[dict] | None = None,
    *,
    llm: dict | None = None,
    judges: list[str] | None = None,
    folds: int = 5,
    save: bool = False,
    progress: bool = False,
    threshold: float = FAITHFUL_SHARE,
    uncertain_target: float | None = None,
    adapt: int | None = None,
    prompts_dir: str | Path | None = None,
    criteria: str | Path | None = None,
    halueval: list[str] | None = None,
    second_judge: dict | None = None,
) -> JudgeCheck:
    """The probability-scored judges on labelled cases (JSONL paths, or a list of case dicts; default
    the shipped cases); out-of-fold figures per judge and source in ``.scores``. ``criteria``: a
    config whose judges.criteria are measured too; ``halueval``: HaluEval QA files as
    ``PATH[:START-STOP]``; ``adapt``: each judge also adapted with N labelled cases of each source;
    ``second_judge``: an ``llm`` section of a second judge, measured alone and in a cascade with the
    first. ``save`` keeps the cut-offs fitted on all cases for audits with this model and prompt."""
    _quiet(progress)
    if criteria:  # the config's own criteria become judges, measured on cases labelled for them
        criteria_cfg = load_config(criteria)
        if criteria_cfg.judges is None or not criteria_cfg.judges.criteria:
            raise ConfigError(
                Problem(str(criteria), "the config has no judges.criteria", "add criteria, or leave out --criteria")
            )
        if not prompts_dir and criteria_cfg.judges.prompts_dir:
            prompts_dir = str(criteria_cfg.resolve_path(criteria_cfg.judges.prompts_dir))
    rows = _judge_check_cases(cases, halueval or [])
    prompts = Path(prompts_dir) if prompts_dir else None
    scores, usage = run_judge_check(
        rows,
        LLMConfig(**(llm or {})),
        cache_root(),
        prompts,
        judges=judges,
        threshold=threshold,
        folds=folds,
        save=save,
        uncertain_target=uncertain_target,
        adapt=adapt,
    )
    check = JudgeCheck(scores, usage)
    if second_judge is not None:
        check.second = LLMConfig(**second_judge)
        check.cascade = cascade_rows(rows, scores, usage, check.second, prompts, threshold, folds, uncertain_target)
    return check


def _judge_check_cases(cases: str | Path | list[str | Path] | list[dict] | None, halueval: list[str]) -> list[dict]:
    """The labelled cases: given as dicts, or read from JSONL files (default the shipped cases),
    with HaluEval QA items (``PATH[:START-STOP]``) after them."""
    if cases is None or isinstance(cases, (str, Path)):
        rows = read_case_files([cases or DEFAULT_CASES])
    elif all(isinstance(c, dict) for c in cases):
        rows = [c for c in cases if isinstance(c, dict)]
    else:
        rows = read_case_files([c for c in cases if isinstance(c, (str, Path))])
    for spec in halueval:
        path, _, span = spec.partition(":")
        start, _, stop = span.partition("-")
        rows += halueval_cases(Path(path), int(start or 0), int(stop) if stop else None)
    return rows


def cascade_rows(
    cases: list[dict],
    scores: list[JudgeScore],
    usage: list[dict],
    second: LLMConfig,
    prompts: Path | None,
    threshold: float,
    folds: int,
    target: float | None,
) -> list[CascadeRow]:
    """First judge alone, second alone and the cascade on the cases, per probability-scored judge."""
    # Judges without a prompt of their own to ask again (Ragas) cannot be escalated.
    names = [n for n in dict.fromkeys(s.judge for s in scores) if JUDGES[n].family == "scored"]
    # The first judge's probabilities, as judge-check kept them per case.
    preds = {}
    for s in scores:
        if s.source == "all" and s.judge in names:
            extra = CheckExtra.model_validate(s.extra)
            got = {c.id: Prediction(probs=c.p, variant=c.variant) for c in extra.cases}
            preds[s.judge] = [got.get(c.id, Prediction(error="not judged")) for c in as_cases(cases)]
    ops, usage_second = second_opinions(cases, names, second, cache_root(), prompts)
    used = [Usage.load(u) for u in usage]
    first_usage = {"calls": sum(u.calls + u.cache_hits for u in used), "cost": sum(u.cost for u in used)}
    rows: list[CascadeRow] = []
    for name in names:
        rows += measure(
            name,
            cases,
            preds[name],
            ops[name],
            first_usage,
            usage_second,
            threshold=threshold,
            folds=folds,
            seed=0,
            target=target,
        )
    return rows


@dataclass
class History:
    """A system's runs over time (``data``: ``rag_eval.report.history_records.HistoryData``), as
    ``history()`` found them, and the files it wrote."""

    data: HistoryData
    written: list[Path]

    def __str__(self) -> str:
        return history_text(self.data)


def history(
    runs_dir: str | Path,
    *,
    config: str | None = None,
    html: str | Path | None = None,
    json_out: str | Path | None = None,
) -> History:
    """The finished runs under ``runs_dir`` (of one config name with ``config``) in time order with
    their headline figures and what changed between them; writes the HTML page plotting them
    (``html``, default ``RUNS_DIR/history.html``) and, with ``json_out``, the history as JSON."""
    data = collect_history(Path(runs_dir), config=config)
    page = Path(html) if html else Path(runs_dir) / "history.html"
    write_text(page, render_history_html(data))
    written = [page]
    if json_out:
        write_json(Path(json_out), data.dump())
        written.append(Path(json_out))
    return History(data, written)
