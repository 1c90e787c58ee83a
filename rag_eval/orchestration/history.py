"""A system's runs over time, read from the run folders (no other storage): each finished run's
headline figures with their intervals, and what changed since the run before (config keys, the
corpus, the test set, the rag-eval version)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_eval.base_records import Figure, Model
from rag_eval.errors import DataError, Problem, did_you_mean
from rag_eval.judges.judge_records import judge_settings, settings_changes
from rag_eval.orchestration.finished import Run, read_run
from rag_eval.report.history_html import CorpusNote
from rag_eval.report.history_records import HistoryData, HistoryRun, HistoryTestSet, RunChange
from rag_eval.report.report_records import Report, Summary
from rag_eval.rundir import read_status

IGNORED_KEYS = ("report", "gates")  # where runs are written and what they must pass change no figure


class SavedConfig(Model):
    """The sections of a run's saved config (its config.yaml, as written) that are read as a whole:
    the gates, the statistics settings and the judges' settings; every other key kept as written."""

    gates: Any = None
    stats: Any = None
    judges: Any = None


def headline_figures(summary: Summary | dict, report: Report | dict) -> dict[str, dict[str, Any]]:
    """``{figure name: {value, ci_low, ci_high, n}}``: each retriever's headline metrics (the
    report's table), each prompt's judged figures and its share of ``ok`` answers."""
    summary, report = Summary.load(summary), Report.load(report)
    out: dict[str, Figure] = {}
    table = report.retrieval.table if report.retrieval else []
    for name, figs in summary.retrieval.items():
        for m in table or list(figs):
            if m in figs:
                out[f"retrieval.{name}.{m}"] = figs[m]
    for prompt, judged in summary.generation.items():
        for m, e in judged.items():
            out[f"generation.{prompt}.{m}"] = e
    for prompt, shares in summary.attribution.items():
        if "ok" in shares:
            out[f"attribution.{prompt}.ok"] = shares["ok"]
    return {k: {x: getattr(e, x) for x in ("value", "ci_low", "ci_high", "n")} for k, e in out.items()}


def config_changes(before: dict, after: dict, prefix: str = "", depth: int = 3) -> list[str]:
    """Dotted keys whose values differ between two saved configs (down to ``depth`` levels)."""
    out = []
    for key in sorted(set(before) | set(after), key=str):
        if not prefix and key in IGNORED_KEYS:
            continue
        a, b = before.get(key), after.get(key)
        if a == b:
            continue
        name = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict) and depth > 1:
            out += config_changes(a, b, f"{name}.", depth - 1)
        else:
            out.append(name)
    return out


def _entry(path: Path) -> HistoryRun | str | None:
    """One run folder's entry; for a run that failed or did not finish, why (the reason it
    recorded); None for a folder that is no run."""
    status = read_status(path)
    if status is not None and not status.finished:
        return status.unfinished_why()
    try:
        run = read_run(path)
    except DataError:
        return None
    return run_entry(run)


def run_entry(run: Run) -> HistoryRun:
    """A finished run's entry in the history: its headline figures, config, corpus and test set."""
    ids = sorted({r.question_id for r in run.retrieval}) or sorted({r.question_id for r in run.report.rows()})
    s = run.summary
    return HistoryRun(
        run=run.path.name,
        path=str(run.path),
        name=s.name or run.path.name,
        created=started_at(run.path) or s.created,
        rag_eval_version=s.rag_eval_version,
        corpus=s.corpus.dump() if s.corpus else {},
        test_set=HistoryTestSet(**(s.test_set.dump() if s.test_set else {}), ids=ids),
        config=run.config,
        figures={k: Figure(**f) for k, f in headline_figures(s, run.report).items()},
        judges=judge_settings(run.report.judges.calibration, run.report.judges.records) if run.report.judges else {},
        changes=[],
    )


def started_at(path: Path) -> str | None:
    """When the run in ``path`` first started (status.json's ``created``: a resume keeps it), or None
    for a folder written before it was kept (its report's ``created`` is the last resume's time)."""
    status = read_status(path)
    return status.created if status is not None else None


def changes_between(prev: HistoryRun, cur: HistoryRun) -> list[RunChange]:
    """What changed from one run to the next: kind config, gates, corpus, test_set, judges (what decides
    a scored judge: its model, prompt, cut-offs, bands) or version."""
    out = []
    keys = config_changes(prev.config, cur.config)
    if keys:
        out.append(RunChange(kind="config", what="config: " + ", ".join(keys)))
    gates = config_changes(
        SavedConfig.load(prev.config).gates or {}, SavedConfig.load(cur.config).gates or {}, "gates.", 1
    )
    if gates:
        out.append(
            RunChange(kind="gates", what="gates changed: " + ", ".join(gates) + " (pass/fail is not comparable)")
        )
    pc, cc = CorpusNote.load(prev.corpus), CorpusNote.load(cur.corpus)
    if pc.fingerprint != cc.fingerprint:
        what = f"corpus: {pc.chunks} -> {cc.chunks} chunks ({cc.source})"
        out.append(RunChange(kind="corpus", what=what))
    pi, ci = set(prev.test_set.ids), set(cur.test_set.ids)
    if pi != ci:
        what = f"test set: {len(ci)} questions (+{len(ci - pi)} new, -{len(pi - ci)} gone)"
        out.append(RunChange(kind="test_set", what=what))
    judged = settings_changes(prev.judges, cur.judges)
    if judged:
        out.append(RunChange(kind="judges", what="judges: " + "; ".join(judged) + " (verdicts are not comparable)"))
    if prev.rag_eval_version != cur.rag_eval_version:
        out.append(RunChange(kind="version", what=f"rag-eval {prev.rag_eval_version} -> {cur.rag_eval_version}"))
    return out


def collect_history(runs_dir: Path, *, config: str | None = None) -> HistoryData:
    """Every config's finished runs in time order (each with its headline figures and the
    ``changes`` since the run before it, ``gates`` among them), and the runs left out with why
    (``unfinished``, ``unfinished_why``): what ``rag-eval history --json`` writes."""
    if not runs_dir.is_dir():
        raise DataError(
            Problem(str(runs_dir), "the runs folder does not exist", "give the folder holding run folders (e.g. runs/)")
        )
    entries: list[HistoryRun] = []
    reasons: dict[str, str] = {}
    for path in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        e = _entry(path)
        if isinstance(e, str):
            reasons[path.name] = e
        elif e is not None:
            entries.append(e)
    names = sorted({e.name for e in entries})
    if not entries:
        raise DataError(
            Problem(
                str(runs_dir),
                "no finished run folder here (a run folder holds summary.json)",
                "give the folder that report.out names (e.g. runs/), after rag-eval run or retrieval",
            )
        )
    if config is not None and config not in names:
        raise DataError(
            Problem(f"--config {config}", f"no run of config '{config}' in {runs_dir}", did_you_mean(config, names))
        )
    systems: dict[str, list[HistoryRun]] = {}
    for name in [config] if config else names:
        runs = sorted((e for e in entries if e.name == name), key=lambda e: (e.created, e.run))
        for i, e in enumerate(runs):
            e.changes = changes_between(runs[i - 1], e) if i else []
        systems[name] = runs
    return HistoryData(runs_dir=str(runs_dir), systems=systems, unfinished=list(reasons), unfinished_why=reasons)


def _fmt(e: Figure | None) -> str:
    if e is None or e.value is None or e.ci_low is None or e.ci_high is None:
        return "–"
    return f"{e.value:.2f} [{e.ci_low:.2f}, {e.ci_high:.2f}]"


def history_text(hist: HistoryData, columns: int = 4) -> str:
    """The history for the terminal: per config, one line per run with its first headline figures,
    and what changed."""
    lines = []
    for name, runs in hist.systems.items():
        figs = list(dict.fromkeys(f for r in runs for f in r.figures))
        # The figures that moved between runs first: runs that differ only in their answers or judges
        # would otherwise show the same first retrieval columns on every row.
        moved = [f for f in figs if len({_fmt(r.figures.get(f)) for r in runs}) > 1]
        shown = [f for f in figs if f in (moved + [f for f in figs if f not in moved])[:columns]]
        lines.append(
            f"{name}: {len(runs)} runs"
            + (
                f" ({'the figures that moved first; ' if moved else ''}all {len(figs)} figures in the HTML page)"
                if len(figs) > columns
                else ""
            )
        )
        lines.append("  " + "  ".join(["#  ", f"{'created':<25}", *(f"{f:<24}" for f in shown)]))
        for i, r in enumerate(runs, 1):
            lines.append(
                "  " + "  ".join([f"{i:<3}", f"{r.created:<25}", *(f"{_fmt(r.figures.get(f)):<24}" for f in shown)])
            )
            lines.append(f"       {r.run}")
            for c in r.changes:
                lines.append(f"       changed: {c.what}")
    if hist.unfinished:
        lines.append("unfinished runs left out:")
        lines += [f"  {run}: {hist.unfinished_why.get(run, 'did not finish')}" for run in hist.unfinished]
    return "\n".join(lines)


def resolve_baseline(path: str | Path, name: str) -> Path:
    """The baseline run folder: ``path`` itself, or, for a folder of run folders (e.g. the main
    branch's ``runs/``), its newest finished run of the config ``name``."""
    path = Path(path)
    if (path / "summary.json").exists() or (path / "status.json").exists() or not path.is_dir():
        return path
    try:
        return Path(collect_history(path, config=name).systems[name][-1].path)
    except DataError as exc:
        raise DataError(
            Problem(
                f"--baseline {path}",
                f"neither a run folder (it has no summary.json) nor a folder of runs of config '{name}' "
                f"({exc.problems[0].what})",
                "give the baseline's run folder, or the folder its runs are written to (its report.out)",
            )
        ) from None
