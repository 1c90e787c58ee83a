"""Running an audit's stages from a config: load and validate, retrieve, write records and report."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

from rag_eval.cache_dirs import cache_root
from rag_eval.config import AuditConfig, resolved_config
from rag_eval.data.corpus import load_corpus
from rag_eval.data.testset import load_test_set
from rag_eval.errors import ConfigError, Problem
from rag_eval.progress import say
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
    from rag_eval.data.frames import records_from
    from rag_eval.data.testset import questions_from_records

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
    from rag_eval.retrievers.diagnosis import diagnose_with_fixes
    from rag_eval.retrievers.factory import run_retrievers
    from rag_eval.retrievers.lint import lint
    from rag_eval.retrievers.stage import evaluate, question_records, write_records

    rankings = run_retrievers(cfg, inputs.corpus, inputs.questions, cache_root(cfg.cache_folder), given)
    res = evaluate(cfg, inputs.corpus, inputs.questions, rankings)
    diagnoses = diagnose_with_fixes(cfg, inputs.corpus, res, cache_root(cfg.cache_folder))
    findings = lint(cfg, inputs.corpus, inputs.questions, res)
    show = cfg.retrieval.depth  # every ranked chunk: a rank beyond k is what a diagnosis needs
    write_records(run_dir / "retrieval.jsonl", question_records(res, inputs.corpus, show, diagnoses))
    return res, diagnoses, findings


def write_report(run_dir: Path, report: dict) -> None:
    """report.json, summary.json and report.md from the report data."""
    from rag_eval.report.assemble import summary
    from rag_eval.report.html import render_html
    from rag_eval.report.markdown import render_markdown
    from rag_eval.rundir import write_json, write_text

    if "retrieval" not in report and "traces" in report:  # traces judged without labels
        from rag_eval.system.trace_audit import write_traces_report

        return write_traces_report(run_dir, report)
    write_json(run_dir / "report.json", report)
    write_json(run_dir / "summary.json", summary(report))
    write_text(run_dir / "report.md", render_markdown(report))
    write_text(run_dir / "report.html", render_html(report))


def _keep_given(run_dir: Path, inputs: Inputs) -> None:
    """Inputs given from Python are written into the run folder (inputs/), so the run can be read
    back and repeated from files."""
    import json

    from rag_eval.rundir import write_text

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
    from rag_eval.rundir import new_run_dir

    inputs = given or load_inputs(cfg)
    n_ans = sum(q.answerable for q in inputs.questions)
    say(
        f"corpus: {len(inputs.corpus)} chunks from {inputs.corpus.source}; test set: "
        f"{len(inputs.questions)} questions ({n_ans} answerable)"
    )
    run_dir = new_run_dir(cfg, out)
    _keep_given(run_dir, inputs)
    return inputs, run_dir


def run_retrieval(cfg: AuditConfig, *, out: str | None = None, inputs: Inputs | None = None) -> Path:
    """Stage 1 alone: writes retrieval.jsonl, summary.json and report.md; returns the run folder.
    ``inputs``: the corpus and test set already loaded (default: from the config's files)."""
    from rag_eval.report.assemble import build_report

    if cfg.system is not None:  # the system's retrieval comes with its replies: ask it, judge nothing
        from rag_eval.system.run import run_system_audit

        return run_system_audit(cfg.model_copy(update={"judges": None}), out=out, inputs=inputs)
    inputs, run_dir = _start(cfg, out, inputs)
    res, diagnoses, findings = retrieval_stage(cfg, inputs, run_dir)
    report = build_report(
        cfg, inputs.corpus, res, test_set_path=str(inputs.test_set_path), findings=findings, diagnoses=diagnoses
    )
    write_report(run_dir, report)
    return run_dir


def find_resumable(cfg: AuditConfig, out: str | None = None) -> Path | None:
    """The newest run folder of this config's name (exactly: ``demo`` never picks ``demo-strict``'s
    runs) that did not finish."""
    import json
    import re

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
    from datetime import datetime

    from rag_eval.rundir import write_json

    when = datetime.now(UTC).isoformat(timespec="seconds")
    write_json(run_dir / "status.json", {"status": status, "at": when})


def estimate_judge_calls(cfg: AuditConfig, questions: list[Question], generations: list[dict]) -> int:
    """Upper bound of the judge calls, from each judge's calls per answer in the registry (answer-
    independent judges once per question; statements estimated from the answer's sentences)."""
    from rag_eval.judges.registry import JUDGES
    from rag_eval.judges.scored import split_statements

    by_id = {q.id: q for q in questions}
    total, seen = 0, set()
    k = cfg.generation.top_k
    for g in generations:
        q = by_id.get(g["question_id"])
        if q is None or g.get("error") is not None:
            continue
        for name in cfg.judges.metrics:
            spec = JUDGES[name]
            if spec.applies(q.answerable, bool(q.reference), None) or (
                spec.answer_independent and (name, q.id) in seen
            ):
                continue
            seen.add((name, q.id))
            text = q.reference if "reference" in spec.needs and spec.answer_independent else g.get("answer") or ""
            n = max(1, len(split_statements(text or "")))
            total += spec.calls(k, n) + (spec.reason_calls(k, n) if cfg.judges.reasons == "quote" else 0)
    return total


def _eta(calls: int, seconds: float) -> str:
    if not calls:
        return "nothing to call"
    return f"about {calls} calls x {seconds:.1f} s = {calls * seconds / 60:.1f} min"


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
    import yaml

    from rag_eval.rundir import write_text

    write_text(run_dir / "config.yaml", yaml.safe_dump(resolved_config(cfg), sort_keys=False))
    return inputs, run_dir


def config_changes(run_dir: Path, cfg: AuditConfig) -> str | None:
    """The top-level config keys that differ from the run folder's saved config, or None."""
    import yaml

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


def run_audit(
    cfg: AuditConfig,
    *,
    out: str | None = None,
    use_cache: bool = True,
    resume: Path | bool | None = None,
    inputs: Inputs | None = None,
) -> Path:
    """Retrieval, generation, judges, attribution and report; returns the run folder.

    ``resume``: True continues the newest unfinished run of this config, a path continues that
    run; finished records are reused and only the missing work is done. ``inputs``: the corpus and
    test set already loaded (default: from the config's files).
    """
    from rag_eval.answers.generation import run_generation, select_questions
    from rag_eval.llm.session import LLMSession
    from rag_eval.report.assemble import attribution_section, build_report, generation_section
    from rag_eval.rundir import write_json

    if cfg.system is not None:
        from rag_eval.system.run import run_system_audit

        return run_system_audit(cfg, out=out, use_cache=use_cache, resume=resume, inputs=inputs)
    if cfg.generation is None:
        raise ConfigError(
            Problem(
                cfg.where("generation"),
                "rag-eval run needs a generation section",
                "add generation: {retriever: ..., top_k: 5}, or use rag-eval retrieval",
            )
        )
    inputs, run_dir = _open_run(cfg, out, resume, inputs)
    _set_status(run_dir, "started")
    config_path = str(Path(cfg.config_path).resolve()) if cfg.config_path else None
    res, diagnoses, findings = retrieval_stage(cfg, inputs, run_dir)
    report = build_report(
        cfg, inputs.corpus, res, test_set_path=str(inputs.test_set_path), findings=findings, diagnoses=diagnoses
    )
    report["config_path"] = config_path
    write_report(run_dir, report)
    g = cfg.generation
    from rag_eval.engine import make_engine

    session = LLMSession(
        cache_root(cfg.cache_folder), use_cache=use_cache, log_dir=run_dir, engine=make_engine(cfg.engine)
    )
    try:
        selected = select_questions(cfg, res)
        n_prompts = 1 if g.answers else len(g.prompts)
        sampled = f" (a stratified sample of {len(res.questions)})" if len(selected) < len(res.questions) else ""
        plan = "answers supplied" if g.answers else _eta(len(selected) * n_prompts, g.llm.expected_latency_s)
        say(
            f"generation: {len(selected)} questions{sampled} x {n_prompts} prompts on {g.retriever}'s top "
            f"{g.top_k}: {plan}"
        )
        records, gen_reuse = run_generation(cfg, inputs.corpus, res, session, run_dir)
        report["resume"] = {"generation": gen_reuse} if resume else None
        _say_reuse("answers", gen_reuse)
        report["generation"] = generation_section(cfg, records, len(selected), session.usage(), len(res.questions))
        write_report(run_dir, report)
        if cfg.judges is not None:
            from rag_eval.judges.judging import aggregate, run_judging

            measured = [r["latency_s"] for r in records if not r.get("cached") and r.get("latency_s")]
            latency = sum(measured) / len(measured) if measured else cfg.judges.llm.expected_latency_s
            calls = estimate_judge_calls(cfg, inputs.questions, records)
            say(
                f"judging {sum(r.get('error') is None for r in records)} answers with "
                f"{', '.join(cfg.judges.metrics)}: {_eta(calls, latency)} at most (cached calls are free)"
            )
            esc = cfg.judges.escalate
            if esc is not None:
                cap = f"at most {esc.max_calls} decisions" if esc.max_calls is not None else "no call limit"
                say(f"uncertain decisions are then asked again of {esc.llm.model or esc.llm.provider} ({cap})")
            judgements, judge_reuse = run_judging(cfg, inputs.corpus, inputs.questions, records, session, run_dir)
            if resume:
                report["resume"]["judgements"] = {k: judge_reuse[k] for k in ("reused", "redone")}
            _say_reuse("judgements", judge_reuse)
            weights = {r["question_id"]: r["weight"] for r in records if "weight" in r}
            report["judges"] = {
                "metrics": cfg.judges.metrics,
                "faithfulness_judge": cfg.judges.deciding_faithfulness,
                "faithfulness_threshold": cfg.judges.faithfulness_threshold,
                "calibration": judge_reuse.pop("calibration"),
                "same_model": _same_model(cfg),
                "weighted": bool(weights),
                "figures": aggregate(cfg, inputs.questions, judgements, weights),
                "records": judgements,
            }
            report["attribution"] = attribution_section(cfg, res, inputs.corpus, records, judgements)
            escalation = judge_reuse.pop("escalation", None)
            if escalation is not None:
                from rag_eval.judges.escalation import without_escalation

                report["judges"]["escalation"] = without_escalation(
                    escalation,
                    judgements,
                    lambda js: aggregate(cfg, inputs.questions, js, weights),
                    lambda js: attribution_section(cfg, res, inputs.corpus, records, js)["shares"],
                )
            if cfg.judges.labels:
                from rag_eval.judges.labels import label_run

                report = label_run(report, run_dir, cfg.resolve_path(cfg.judges.labels), cfg.stats.confidence)
        report["generation"]["usage"] = session.usage()
    finally:
        write_json(run_dir / "llm_usage.json", session.usage())
        session.close()
    write_report(run_dir, report)
    _set_status(run_dir, "finished")
    return run_dir


def _say_reuse(what: str, reuse: dict) -> None:
    if reuse["reused"] or reuse["redone"]:
        redone = ", ".join(f"{n} because the {why} changed" for why, n in reuse["redone"].items())
        say(f"reused {reuse['reused']} finished {what}" + (f"; redoing {redone}" if redone else ""))


def _same_model(cfg: AuditConfig) -> bool:
    """Whether the generator and the judge are the same model (a judge grading its own answers)."""
    g, j = cfg.generation.llm, cfg.judges.llm
    return (g.provider, g.model, g.base_url, g.model_path) == (j.provider, j.model, j.base_url, j.model_path)


def run_lint(cfg: AuditConfig, inputs: Inputs | None = None):
    """Test-set health findings, with the size check computed from an in-memory retrieval run."""
    from rag_eval.retrievers.factory import run_retrievers
    from rag_eval.retrievers.lint import lint
    from rag_eval.retrievers.stage import evaluate

    inputs = inputs or load_inputs(cfg)
    rankings = run_retrievers(cfg, inputs.corpus, inputs.questions, cache_root(cfg.cache_folder))
    res = evaluate(cfg, inputs.corpus, inputs.questions, rankings)
    return lint(cfg, inputs.corpus, inputs.questions, res)


def run_compare(
    cfg: AuditConfig,
    *,
    out: str | None = None,
    use_cache: bool = True,
    inputs: Inputs | None = None,
    settle: dict | None = None,
) -> Path:
    """Every prompt on the same retrieved contexts, then paired comparisons; returns the run folder.
    ``settle`` ({batch, seed}): judge a seeded random order of the questions a batch at a time and
    stop once an always-valid test settles the differences (``rag_eval/orchestration/sequential.py``)."""
    import json

    from rag_eval.orchestration.compare import check_same_contexts, comparison_section
    from rag_eval.rundir import read_jsonl

    if cfg.generation is None or cfg.judges is None or len(cfg.generation.prompts) < 2:
        raise ConfigError(
            Problem(
                cfg.where("generation.prompts"),
                "rag-eval compare needs two or more prompts and a judges section",
                "list the prompts under generation.prompts",
            )
        )
    inputs = inputs or load_inputs(cfg)
    sequential = None
    if settle is not None:
        from rag_eval.orchestration.sequential import run_until_settled

        if cfg.generation.sample:
            raise ConfigError(
                Problem(
                    cfg.where("generation.sample"),
                    "--stop-when-settled draws its own order of the questions",
                    "remove generation.sample, or drop --stop-when-settled",
                )
            )
        run_dir, sequential = run_until_settled(cfg, inputs, out=out, use_cache=use_cache, **settle)
    else:
        run_dir = run_audit(cfg, out=out, use_cache=use_cache, inputs=inputs)
    report = json.loads((run_dir / "report.json").read_text())
    generations = [r for r in read_jsonl(run_dir / "generation.jsonl") if r.get("error") is None]
    check_same_contexts(generations)
    report["comparison"] = comparison_section(cfg, report, {q.id: q.answerable for q in inputs.questions})
    if sequential is not None:
        report["comparison"]["sequential"] = sequential
    write_report(run_dir, report)
    return run_dir
